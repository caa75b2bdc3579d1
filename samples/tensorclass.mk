# samples/tensorclass.mk - samples/tensorclass: a tiny MLP trained with a
# C++ Matrix class over five .cu files, written as community C++ CUDA
# trainers are (docs/samples.md "tensorclass"): runtime API, its own
# first-fit device pool or cudaMallocAsync (--alloc), a host constructor, a
# key=value config read with std::ifstream, out-of-place SGD.
#
#   $(BUILD)/samples/tensorclass           the trainer (nvcc's static cudart)
#   $(BUILD)/samples/tensorclass.kern.so   its kernels for the CPU device:
#                                          ddp-cpu-kernels over all five files
#   $(BUILD)/samples/obj/tensorclass/      its objects
# tests/e2e/samples/tensorclass.sh runs it.

TC_SRCS := $(addprefix samples/tensorclass/,main.cu matrix.cu allocator.cu rng.cu model.cu)
TC_OBJ := $(BUILD)/samples/obj/tensorclass
TC := $(BUILD)/samples/tensorclass
TC_NVCC_FLAGS := $(NVCC_FLAGS) $(NVCC_ARCH_FLAGS) -Xcompiler -Wall,-Wextra,-Werror

BINS += $(TC) $(TC).kern.so

$(TC_OBJ)/%.o: samples/tensorclass/%.cu samples/tensorclass/tensorclass.cuh
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $(TC_NVCC_FLAGS) -c $< -o $@

$(TC): $(TC_SRCS:samples/tensorclass/%.cu=$(TC_OBJ)/%.o)
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) $^ -o $@

$(TC).kern.so: $(TC_SRCS) samples/tensorclass/tensorclass.cuh $(DDP_CPU_KERNELS) | $(SIM_LIBCUDA_SO)
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $(TC_SRCS)

.PHONY: tensorclass
tensorclass: $(TC) $(TC).kern.so
