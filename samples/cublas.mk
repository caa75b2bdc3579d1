# samples/cublas.mk - samples/cublas_mlp: the mlp model written with the CUDA
# runtime API and cuBLAS (docs/samples.md, docs/gpu.md).  Built by `make all`
# when the toolkit has cuBLAS; it runs only on a real GPU (the CPU device
# cannot run cudart or cuBLAS kernels), so no test here runs it: tests/gpu does.
#
#   $(BUILD)/samples/cublas_mlp          the trainer (cudart shared, -lcublas)
#   $(BUILD)/samples/obj/cublas_mlp/     its objects (SASS for CUDA_ARCHS)

CUBLAS_MLP := $(BUILD)/samples/cublas_mlp
CUBLAS_MLP_OBJ := $(BUILD)/samples/obj/cublas_mlp
CUBLAS_LIBDIR := $(firstword $(patsubst %/,%,$(dir $(wildcard $(CUDA_HOME)/lib64/libcublas.so $(CUDA_HOME)/lib/libcublas.so \
	$(CUDA_HOME)/targets/x86_64-linux/lib/libcublas.so))))
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
