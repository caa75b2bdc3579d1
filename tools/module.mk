# tools/: small command-line tools around the runtime.
DDP_PARAMS_TOOL := $(BUILD)/bin/ddp-params

$(DDP_PARAMS_TOOL): $(BUILD)/tools/ddp_params_main.o $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS)
BINS += $(DDP_PARAMS_TOOL)

# docs/configuration.md carries the generated table between two markers;
# `make docs-config` rewrites it, the test below fails when it is stale.
.PHONY: docs-config
docs-config: $(DDP_PARAMS_TOOL)
	$(Q)tools/update_config_doc.sh $(DDP_PARAMS_TOOL) docs/configuration.md

TESTS += tools/test_config_doc.sh
