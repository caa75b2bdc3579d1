# tests/: shared test machinery.  Unit tests live next to their area's
# fragment; this file holds the generic rules.
#
# $(eval $(call unit_test,NAME,SOURCES,EXTRA_LIBS[,MODULES])) defines
# $(BUILD)/tests/unit/NAME from SOURCES, linked with the runtime MODULES named
# (runtime/module.mk) and the common ones, and adds it to TESTS and UNIT_TESTS.
define unit_test
$(BUILD)/tests/unit/$(1): $(patsubst %.c,$(BUILD)/%.o,$(2)) $$(call ddp_lib_files,$(4) $$(DDP_COMMON_MODULES))
	@mkdir -p $$(dir $$@)
	$$(Q)$$(CC) $$(LDFLAGS) $$(filter %.o,$$^) $$(call ddp_libs,$(4) $$(DDP_COMMON_MODULES)) -o $$@ $(3) $$(DDP_COMMON_LIBS)
TESTS += $(BUILD)/tests/unit/$(1)
UNIT_TESTS += $(BUILD)/tests/unit/$(1)
endef

# $(eval $(call fuzz_target,NAME,SOURCES[,CLANG_FLAGS])) builds tests/fuzz/NAME/fuzz.c (+ SOURCES)
# twice: $(BUILD)/fuzz/NAME with clang's libFuzzer for `make fuzz`, and
# $(BUILD)/tests/fuzz/replay-NAME with gcc and tests/fuzz/replay_main.c, run
# by `make test` over tests/fuzz/NAME/corpus.
define fuzz_target
FUZZ_TARGETS += $(1)
$(BUILD)/fuzz/$(1): tests/fuzz/$(1)/fuzz.c $(2) $(RUNTIME_COMMON_SRCS)
	@mkdir -p $$(dir $$@)
	$$(Q)clang -g -O1 -fsanitize=fuzzer,address,undefined -MMD -MF $$@.d $$(CPPFLAGS) $(3) $$(filter %.c,$$^) -o $$@ $$(filter-out -lstdc++,$$(DDP_COMMON_LIBS)) -lstdc++
$(BUILD)/tests/fuzz/replay-$(1): $(BUILD)/tests/fuzz/$(1)/fuzz.o $(patsubst %.c,$(BUILD)/%.o,$(2)) \
		$(BUILD)/tests/fuzz/replay_main.o $(DDP_COMMON_LIB)
	@mkdir -p $$(dir $$@)
	$$(Q)$$(CC) $$(LDFLAGS) $$^ -o $$@ $$(DDP_COMMON_LIBS)
$(BUILD)/tests/fuzz/run-$(1).sh: $(BUILD)/tests/fuzz/replay-$(1)
	@printf '#!/bin/sh\nexec %s %s\n' "$$<" "tests/fuzz/$(1)/corpus" > $$@ && chmod +x $$@
TESTS += $(BUILD)/tests/fuzz/run-$(1).sh
UNIT_TESTS += $(BUILD)/tests/fuzz/run-$(1).sh
endef

$(eval $(call unit_test,test_log,tests/unit/test_log.c,))
