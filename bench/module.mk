# bench/: the launch-rate benchmark of libddp (bench/run.sh prints the
# figures; docs/interposer.md records them).  Built by `make all`, never run
# by `make test` (no timed assertions in tests).
BENCH_DIR := $(BUILD)/bench
BENCH_NULLDRV := $(BENCH_DIR)/nulldrv/libcuda.so.1
BENCH_LAUNCH := $(BENCH_DIR)/launch_rate

$(BENCH_NULLDRV): bench/nulldrv.c bench/nullk.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fvisibility=hidden -shared -Wl,-soname,libcuda.so.1 $< -o $@

$(BENCH_LAUNCH): bench/launch_rate.c bench/nullk.h
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda -pthread

BINS += $(BENCH_NULLDRV) $(BENCH_LAUNCH)

.PHONY: bench
bench: $(BENCH_NULLDRV) $(BENCH_LAUNCH) $(LIBDDP)
	@BUILD=$(BUILD) bench/run.sh
