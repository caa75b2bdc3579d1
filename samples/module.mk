# samples/: single-GPU trainers written against the CUDA Driver API, and the
# tool that builds their data (docs/samples.md).
#
#   $(BUILD)/samples/{mlp,charlm,fused}   the trainers (kernels embedded as a fatbin)
#   $(BUILD)/samples/<name>.kern.so       the same kernels built for the CPU device
#   $(BUILD)/bin/ddp-mkdata               the data tool
#   $(BUILD)/data/{mlp,charlm}.rec        the data sets
#
# The executables sit at $(BUILD)/samples/<name>, so their objects cannot live
# in a directory of that name: they go to $(BUILD)/samples/obj/<name>/ (the
# embedded symbol is therefore samples_obj_<name>_kernels_fatbin).

SAMPLE_NAMES := mlp charlm fused patterns torchlike generic
SAMPLE_BINS := $(SAMPLE_NAMES:%=$(BUILD)/samples/%)
SAMPLE_KERN_SOS := $(SAMPLE_NAMES:%=$(BUILD)/samples/%.kern.so)
SAMPLE_DATA := $(BUILD)/data/mlp.rec $(BUILD)/data/charlm.rec
SAMPLE_LDLIBS := -L$(CUDA_HOME)/lib64/stubs -lcuda -lm
MKDATA := $(BUILD)/bin/ddp-mkdata

BINS += $(SAMPLE_BINS) $(MKDATA) $(SAMPLE_DATA)

$(BUILD)/samples/obj/%/kernels.fatbin: samples/%/kernels.cu samples/common/nn_kernels.cuh
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) -fatbin $(NVCC_FLAGS) $(NVCC_ARCH_FLAGS) -o $@ $<

$(BUILD)/samples/obj/fused/kernels.fatbin: samples/fused/tensor_list.h

# torchlike: PyTorch's kernel names need its per-file namespaces (includes)
# and, like PyTorch's build, relaxed constexpr (std::array, std::multiplies
# in device code) and extended lambdas (GPU_LAMBDA); its host half has the
# allocator in a file of its own.  --layout cuda12 loads the same kernels
# built with the 4 KB structs of CUDA <= 12 (same names, other sizes) from
# libtorchlike_cuda12.so, which embeds that fatbin and, on the CPU device,
# brings its own kernel library (<library>.kern.so).
TORCHLIKE_INC := samples/torchlike/foreach_ns.inc samples/torchlike/fused_adam.inc
TORCHLIKE12_FATBIN := $(BUILD)/samples/obj/torchlike/kernels_cuda12.fatbin
TORCHLIKE12_SO := $(BUILD)/samples/libtorchlike_cuda12.so
$(BUILD)/samples/obj/torchlike/kernels.fatbin: $(TORCHLIKE_INC)
$(BUILD)/samples/obj/torchlike/kernels.fatbin $(TORCHLIKE12_FATBIN): NVCC_FLAGS += --expt-relaxed-constexpr --extended-lambda
$(TORCHLIKE12_FATBIN): samples/torchlike/kernels_cuda12.cu samples/torchlike/kernels.cu $(TORCHLIKE_INC)
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) -fatbin $(NVCC_FLAGS) $(NVCC_ARCH_FLAGS) -o $@ $<
$(TORCHLIKE12_SO): $(TORCHLIKE12_FATBIN).o
	$(Q)$(CC) $(LDFLAGS) -shared $^ -o $@
$(BUILD)/samples/obj/torchlike/alloc.o: samples/torchlike/alloc.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@
$(BUILD)/samples/torchlike: $(BUILD)/samples/obj/torchlike/alloc.o | $(TORCHLIKE12_SO)
BINS += $(TORCHLIKE12_SO) $(TORCHLIKE12_SO).kern.so

$(BUILD)/samples/obj/%/main.o: samples/%/main.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(SAMPLE_BINS): $(BUILD)/samples/%: $(BUILD)/samples/obj/%/main.o $(BUILD)/samples/common/sample.o \
		$(BUILD)/samples/obj/%/kernels.fatbin.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(SAMPLE_LDLIBS)

$(MKDATA): $(BUILD)/samples/data/mkdata.o
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@

$(BUILD)/data/%.rec: $(MKDATA)
	@mkdir -p $(dir $@)
	$(Q)$(MKDATA) --kind $* --out $@

# The CPU device's kernel libraries, made by the simcuda build's function
# sim_kernel_lib (cpudev/exec.mk, included before this fragment).
BINS += $(SAMPLE_KERN_SOS)
$(foreach s,$(SAMPLE_NAMES),$(eval $(call sim_kernel_lib,$(BUILD)/samples/$(s).kern.so,samples/$(s)/kernels.cu,$(BUILD)/samples/obj/$(s)/kernels.fatbin)))
$(eval $(call sim_kernel_lib,$(TORCHLIKE12_SO).kern.so,samples/torchlike/kernels_cuda12.cu,$(TORCHLIKE12_FATBIN)))

.PHONY: samples
samples: $(SAMPLE_BINS) $(MKDATA) $(SAMPLE_DATA) $(SAMPLE_KERN_SOS) $(TORCHLIKE12_SO) $(TORCHLIKE12_SO).kern.so
