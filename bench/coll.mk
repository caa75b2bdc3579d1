# bench/coll.mk - host allreduce bandwidth benchmark (helper G).  `make build/bench/coll_bench && build/bench/coll_bench`
# (see docs/collectives.md for the options and the last results).
$(BUILD)/bench/coll_bench: $(BUILD)/bench/coll/coll_bench.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES))
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS) -lm
$(BUILD)/bench/coll/coll_bench.o: CPPFLAGS += -Itests -Itests/unit -Ilauncher
BINS += $(BUILD)/bench/coll_bench
