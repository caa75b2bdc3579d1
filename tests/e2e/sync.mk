# tests/e2e/sync.mk: gradient synchronisation end to end on the CPU device
# (tests/e2e/sync/*.sh): ddprun -n N with batch B equals one process at N*B
# (mlp -n 2/-n 3, --accum, cublas_mlp static and shared cudart, charlm clipping and AMP skips, fused bf16 struct),
# --init urandom, the DDP_SYNC=off negative control, and the failure paths.
# Each script skips (exit 77) when the CPU device, samples or data are missing.
TESTS += tests/e2e/sync/mlp.sh tests/e2e/sync/cublas_mlp.sh tests/e2e/sync/charlm.sh tests/e2e/sync/fused.sh \
	tests/e2e/sync/failures.sh tests/e2e/sync/patterns.sh tests/e2e/sync/gpt_n1.sh tests/e2e/sync/gpt.sh tests/e2e/sync/gpt_layers.sh \
	tests/e2e/sync/overlap.sh tests/e2e/sync/torchlike.sh tests/e2e/sync/generic.sh tests/e2e/sync/nccl.sh tests/e2e/sync/nccl_failures.sh \
	tests/e2e/sync/host_waits.sh tests/e2e/sync/gpt_log.sh tests/e2e/sync/unseen.sh \
	tests/e2e/sync/nonames.sh tests/e2e/sync/report_run.sh

# hiddenupd: a trainer written for never_late.sh (an update libddp cannot
# find, one it finds, and evaluation only); its CPU-device kernels beside it.
TESTS += tests/e2e/sync/never_late.sh tests/e2e/sync/inspect.sh
$(BUILD)/tests/e2e/progs/hiddenupd: $(BUILD)/tests/e2e/progs/hiddenupd.o $(BUILD)/tests/e2e/progs/hiddenupd.fatbin.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda
BINS += $(BUILD)/tests/e2e/progs/hiddenupd $(BUILD)/tests/e2e/progs/hiddenupd.kern.so
$(eval $(call sim_kernel_lib,$(BUILD)/tests/e2e/progs/hiddenupd.kern.so,tests/e2e/progs/hiddenupd.cu,$(BUILD)/tests/e2e/progs/hiddenupd.fatbin))

# evalonly: an evaluation program (load weights, forward over the rank's
# shard, write predictions) for evalonly.sh; its CPU-device kernels beside it.
TESTS += tests/e2e/sync/evalonly.sh
$(BUILD)/tests/e2e/progs/evalonly: $(BUILD)/tests/e2e/progs/evalonly.o $(BUILD)/tests/e2e/progs/evalonly.fatbin.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda
BINS += $(BUILD)/tests/e2e/progs/evalonly $(BUILD)/tests/e2e/progs/evalonly.kern.so
$(eval $(call sim_kernel_lib,$(BUILD)/tests/e2e/progs/evalonly.kern.so,tests/e2e/progs/evalonly.cu,$(BUILD)/tests/e2e/progs/evalonly.fatbin))

# w2v_cbow and mf_hogwild: trainers whose update is fused into the compute
# kernel (a word2vec CBOW kernel adding into its embedding tables, a Hogwild
# matrix factorisation kernel named sgd_update), written with the runtime
# API as their communities write them, for fused_update.sh (issue 33); their
# CPU-device kernels beside them, built as a user builds them.
TESTS += tests/e2e/sync/fused_update.sh
FUSED_PROGS := $(BUILD)/tests/e2e/progs/w2v_cbow $(BUILD)/tests/e2e/progs/mf_hogwild
BINS += $(FUSED_PROGS) $(addsuffix .kern.so,$(FUSED_PROGS))
$(FUSED_PROGS): $(BUILD)/tests/e2e/progs/%: tests/e2e/progs/%.cu
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $(NVCC_FLAGS) $(NVCC_ARCH_FLAGS) -Xcompiler -Wall,-Wextra,-Werror $< -o $@
$(addsuffix .kern.so,$(FUSED_PROGS)): $(BUILD)/tests/e2e/progs/%.kern.so: tests/e2e/progs/%.cu $(DDP_CPU_KERNELS) \
		$(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $<
