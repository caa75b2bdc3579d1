# samples/gpt.mk - samples/gpt: a small GPT-2-style trainer written as
# llm.c is (runtime API, cuBLASLt + cuBLAS, bf16, one .cu with its kernel
# header), and its data (docs/samples.md).  Built by `make all` when the
# toolkit has cuBLAS (CUBLAS_LIBDIR, samples/cublas.mk).
#
#   $(BUILD)/samples/gpt            the trainer: nvcc's defaults (static
#                                   cudart), -lcublas -lcublasLt of the toolkit
#   $(BUILD)/samples/gpt.kern.so    its kernels for the CPU device, built the
#                                   way a user would: ddp-cpu-kernels on the
#                                   program's own .cu file
#   $(BUILD)/data/gpt.bin           a token shard (ddp-mkdata --kind gpt)

GPT := $(BUILD)/samples/gpt
GPT_OBJ := $(BUILD)/samples/obj/gpt
GPT_SRC := samples/gpt/train_gpt.cu
GPT_DEPS := samples/gpt/kernels.cuh samples/common/sample.h
GPT_DATA := $(BUILD)/data/gpt.bin

BINS += $(GPT_DATA)
ifneq ($(CUBLAS_LIBDIR),)
BINS += $(GPT) $(GPT).kern.so
endif

# host code through nvcc's host compiler with the project's warnings
$(GPT_OBJ)/train_gpt.o: $(GPT_SRC) $(GPT_DEPS)
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $(NVCC_FLAGS) $(NVCC_ARCH_FLAGS) -Xcompiler -Wall,-Wextra,-Werror -I$(CUDA_INC) -c $< -o $@

# sample.o (samples/module.mk): option parser and PRNG; its unused
# driver-API helpers need the driver stub
$(GPT): $(GPT_OBJ)/train_gpt.o $(BUILD)/samples/common/sample.o
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $^ -o $@ -L$(CUBLAS_LIBDIR) -lcublas -lcublasLt -L$(CUDA_HOME)/lib64/stubs -lcuda -lm \
		-Xlinker -rpath -Xlinker $(CUBLAS_LIBDIR)

$(GPT).kern.so: $(GPT_SRC) $(GPT_DEPS) $(DDP_CPU_KERNELS) | $(SIM_LIBCUDA_SO)
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $(GPT_SRC)

$(GPT_DATA): $(BUILD)/bin/ddp-mkdata
	@mkdir -p $(dir $@)
	$(Q)$(BUILD)/bin/ddp-mkdata --kind gpt --out $@

.PHONY: gpt
gpt: $(GPT) $(GPT).kern.so $(GPT_DATA)
