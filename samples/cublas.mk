# samples/cublas.mk - samples/cublas_mlp: the mlp model written with the CUDA
# runtime API and cuBLAS (docs/samples.md, docs/gpu.md).  Built by `make all`
# when the toolkit has cuBLAS.  On a GPU, tests/gpu runs it; on the CPU device
# it runs on the cuBLAS stand-ins (cpudev/cublas.mk) and
# tests/e2e/sync/cublas_mlp.sh trains it under ddprun.
#
#   $(BUILD)/samples/cublas_mlp          the trainer (cudart shared, -lcublas)
#   $(BUILD)/samples/cublas_mlp_static   the same through the static cudart
#   $(BUILD)/samples/cublas_mlp.kern.so  its kernels for the CPU device
#                                        (+ cublas_mlp_static.kern.so link)
#   $(BUILD)/samples/obj/cublas_mlp/     its objects (SASS for CUDA_ARCHS)

CUBLAS_MLP := $(BUILD)/samples/cublas_mlp
CUBLAS_MLP_OBJ := $(BUILD)/samples/obj/cublas_mlp
# Host code through nvcc's host compiler with the project's warnings.
CUBLAS_NVCC_FLAGS := $(NVCC_FLAGS) $(NVCC_ARCH_FLAGS) -Xcompiler -Wall,-Wextra,-Werror -I$(CUDA_INC)

ifneq ($(CUBLAS_LIBDIR),)
BINS += $(CUBLAS_MLP)
endif

$(CUBLAS_MLP_OBJ)/main.o: samples/cublas_mlp/main.cu samples/cublas_mlp/kernels.cuh samples/common/sample.h
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $(CUBLAS_NVCC_FLAGS) -c $< -o $@

$(CUBLAS_MLP_OBJ)/kernels.o: samples/cublas_mlp/kernels.cu samples/cublas_mlp/kernels.cuh samples/common/nn_kernels.cuh
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $(CUBLAS_NVCC_FLAGS) -c $< -o $@

# sample.o (samples/module.mk) brings the shared option parser, data reader,
# PRNG and save writer; its unused driver-API helpers need the driver stub.
$(CUBLAS_MLP): $(CUBLAS_MLP_OBJ)/main.o $(CUBLAS_MLP_OBJ)/kernels.o $(BUILD)/samples/common/sample.o
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) -cudart shared $^ -o $@ -L$(CUBLAS_LIBDIR) -lcublas -L$(CUDA_HOME)/lib64/stubs -lcuda -lm \
		-Xlinker -rpath -Xlinker $(CUBLAS_LIBDIR)

.PHONY: cublas_mlp
cublas_mlp: $(CUBLAS_MLP)

# ---- the CPU device (docs/cpu-device.md): its kernels as host code, and a
# second build through the static cudart (nvcc's default).  The kernel
# library is built the way a user builds one for their own program: one
# ddp-cpu-kernels command over the program's .cu files.
CUBLAS_MLP_STATIC := $(BUILD)/samples/cublas_mlp_static

$(BUILD)/samples/cublas_mlp.kern.so: samples/cublas_mlp/main.cu samples/cublas_mlp/kernels.cu \
		samples/cublas_mlp/kernels.cuh samples/common/nn_kernels.cuh samples/common/sample.h \
		$(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ samples/cublas_mlp/main.cu samples/cublas_mlp/kernels.cu

$(CUBLAS_MLP_STATIC): $(CUBLAS_MLP_OBJ)/main.o $(CUBLAS_MLP_OBJ)/kernels.o $(BUILD)/samples/common/sample.o
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $^ -o $@ -L$(CUBLAS_LIBDIR) -lcublas -L$(CUDA_HOME)/lib64/stubs -lcuda -lm \
		-Xlinker -rpath -Xlinker $(CUBLAS_LIBDIR)
$(CUBLAS_MLP_STATIC).kern.so: $(BUILD)/samples/cublas_mlp.kern.so
	$(Q)ln -sf cublas_mlp.kern.so $@

ifneq ($(CUBLAS_LIBDIR),)
BINS += $(BUILD)/samples/cublas_mlp.kern.so $(CUBLAS_MLP_STATIC) $(CUBLAS_MLP_STATIC).kern.so
endif
cublas_mlp: $(BUILD)/samples/cublas_mlp.kern.so $(CUBLAS_MLP_STATIC) $(CUBLAS_MLP_STATIC).kern.so
