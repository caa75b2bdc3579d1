# bench/coll.mk - host allreduce bandwidth benchmark (helper G).  `make build/bench/coll_bench && build/bench/coll_bench`
# (see docs/collectives.md for the options and the last results).
$(BUILD)/bench/coll_bench: $(BUILD)/bench/coll/coll_bench.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(BUILD)/launcher/store_server.o $(DDP_COLL_OBJS) $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS) -lm
$(BUILD)/bench/coll/coll_bench.o: CPPFLAGS += -Itests -Itests/unit -Ilauncher
BINS += $(BUILD)/bench/coll_bench
