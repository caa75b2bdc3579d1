# tests/e2e/interpose.mk: the interposer end to end on the CPU device
# (tests/e2e/interpose/run.sh): samples unchanged under LD_PRELOAD, the three
# ways to reach the hooks (exported symbols, dlsym, cuGetProcAddress with
# flags 0/1/2), bad input, traces, summaries, report, inspect.
IP_DIR := $(BUILD)/tests/e2e/interpose
IP_FATBIN := $(IP_DIR)/progs/kernels.fatbin
IP_KERN := $(IP_DIR)/progs/kernels.kern.so
IP_PROGS := $(IP_DIR)/drv_direct $(IP_DIR)/drv_loader

$(IP_DIR)/drv_direct: tests/e2e/interpose/progs/drv_direct.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda -ldl

$(IP_DIR)/drv_loader: tests/e2e/interpose/progs/drv_loader.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $< -o $@ -ldl

$(eval $(call sim_kernel_lib,$(IP_KERN),tests/e2e/interpose/progs/kernels.cu,$(IP_FATBIN)))

BINS += $(IP_PROGS) $(IP_FATBIN) $(IP_KERN)
TESTS += tests/e2e/interpose/run.sh
