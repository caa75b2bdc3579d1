# bench/coll.mk - host allreduce bandwidth benchmark (helper G).  `make build/bench/coll_bench && build/bench/coll_bench`
# (see docs/collectives.md for the options and the last results).
$(BUILD)/bench/coll_bench: $(BUILD)/bench/coll/coll_bench.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES))
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS) -lm
$(BUILD)/bench/coll/coll_bench.o: CPPFLAGS += -Itests -Itests/unit -Ilauncher
BINS += $(BUILD)/bench/coll_bench

# bucket_bench: per-range vs staged vs span buckets on the CPU device (docs/gradient-sync.md).
$(BUILD)/bench/bucket_bench: $(BUILD)/bench/coll/bucket_bench.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES)) $(SIMCUDA_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $(filter %.o %.a,$^) -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) $(DDP_COMMON_LIBS) -lm -pthread
$(BUILD)/bench/coll/bucket_bench.o: CPPFLAGS += -Itests -Itests/unit -Ilauncher
BINS += $(BUILD)/bench/bucket_bench
