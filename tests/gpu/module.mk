# tests/gpu/module.mk - the suite for a real GPU (tests/gpu/run.sh,
# docs/gpu.md).  In TESTS: skip.sh, which checks that the suite skips cleanly
# (exit 77, reason printed) on a machine without a GPU, and cpu_quick.sh,
# which runs its side-by-side parts on the CPU device and checks the report.
#
#   make gpu-test [GPU_REPORT_DIR=DIR]   run the suite (builds for the GPU's arch)
#   make gpu-suite-build                 everything the suite runs, for CUDA_ARCHS
#   make gpu-bundle                      copy libddp's shared-library deps next to
#                                        the build (for a GPU machine without them)

GPU_DIR := $(BUILD)/tests/gpu
GPU_COLL_BENCH := $(GPU_DIR)/coll_gpu_bench
GPU_REPORT_DIR ?= $(BUILD)/gpu-report

# The NCCL comparison needs nccl.h (types); NCCL itself is dlopen'ed at run time.
ifneq ($(NCCL_INC),)
BINS += $(GPU_COLL_BENCH)
endif

$(GPU_COLL_BENCH): $(GPU_DIR)/coll_gpu_bench.o $(BUILD)/tests/unit/test_coll_harness.o \
		$(call ddp_lib_files,coll $(DDP_COMMON_MODULES))
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ -L$(CUDA_HOME)/lib64/stubs -lcuda $(DDP_COMMON_LIBS) -ldl -lm

$(GPU_DIR)/coll_gpu_bench.o: tests/gpu/coll_gpu_bench.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -Itests -Itests/unit -Ilauncher $(CFLAGS) -c $< -o $@

# What run.sh needs on a GPU (and, for --cpu-device, on the CPU device).
GPU_SUITE_DEPS := $(BUILD)/bin/ddprun $(BUILD)/lib/libddp.so \
	$(BUILD)/samples/mlp $(BUILD)/samples/charlm $(BUILD)/samples/fused \
	$(BUILD)/data/mlp.rec $(BUILD)/data/charlm.rec \
	$(BUILD)/bench/launch_rate $(BUILD)/tests/e2e/interpose/progs/kernels.fatbin \
	$(if $(CUBLAS_LIBDIR),$(CUBLAS_MLP) $(BUILD)/samples/gpt $(BUILD)/data/gpt.bin) \
	$(if $(NCCL_INC),$(GPU_COLL_BENCH))
GPU_SUITE_SIM_DEPS := $(BUILD)/cpudev/lib/libcuda.so.1 $(BUILD)/samples/mlp.kern.so \
	$(if $(CUBLAS_LIBDIR),$(BUILD)/samples/gpt.kern.so) \
	$(BUILD)/samples/charlm.kern.so $(BUILD)/samples/fused.kern.so \
	$(BUILD)/tests/e2e/interpose/progs/kernels.kern.so \
	$(if $(NCCL_INC),$(BUILD)/cpudev/lib/nccl/libnccl.so.2)

.PHONY: gpu-test gpu-suite-build gpu-suite-sim-build gpu-bundle
gpu-suite-build: $(GPU_SUITE_DEPS)
gpu-suite-sim-build: $(GPU_SUITE_DEPS) $(GPU_SUITE_SIM_DEPS)

# Exit 77 (no GPU: the reason is printed) is not an error for make.
gpu-test:
	@BUILD=$(BUILD) tests/gpu/run.sh $(GPU_TEST_FLAGS) $(GPU_REPORT_DIR); rc=$$?; [ $$rc -eq 77 ] || exit $$rc

# libddp.so's and ddprun's non-libc dependencies (libelf, libzstd, liblz4,
# libz, libjansson), copied to $(BUILD)/gpu-deps; run.sh puts that folder on
# LD_LIBRARY_PATH when present.
gpu-bundle: $(BUILD)/lib/libddp.so $(DDPRUN)
	@mkdir -p $(BUILD)/gpu-deps
	$(Q)ldd $^ | awk '$$3 ~ /^\// && $$1 !~ /^(libc|libm|libgcc_s|libstdc\+\+|libpthread|libdl|librt)\.so/ { print $$3 }' \
		| sort -u | xargs -r cp -L -t $(BUILD)/gpu-deps

TESTS += tests/gpu/skip.sh tests/gpu/cpu_quick.sh
