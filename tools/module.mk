# tools/: small command-line tools around the runtime.
DDP_PARAMS_TOOL := $(BUILD)/bin/ddp-params
DDPRUN_DOC_TOOL := $(BUILD)/bin/ddprun-doc

$(DDP_PARAMS_TOOL): $(BUILD)/tools/ddp_params_main.o $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS)
BINS += $(DDP_PARAMS_TOOL)

# ddprun's option table (launcher/options.def) for the docs
$(BUILD)/tools/ddprun_doc_main.o: CPPFLAGS += -Ilauncher
$(DDPRUN_DOC_TOOL): $(BUILD)/tools/ddprun_doc_main.o $(BUILD)/launcher/options.o $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS)
BINS += $(DDPRUN_DOC_TOOL)

# docs/configuration.md, docs/ddprun.1 and docs/launcher.md carry generated
# blocks between markers (the option table, the settings tables);
# `make docs-config` rewrites them, the test below fails when one is stale.
.PHONY: docs-config
docs-config: $(DDP_PARAMS_TOOL) $(DDPRUN_DOC_TOOL)
	$(Q)tools/update_config_doc.sh $(BUILD)/bin

TESTS += tools/test_config_doc.sh
