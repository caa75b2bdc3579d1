# SPDX-License-Identifier: MIT
#
# cpudev/cpukern/module.mk - CUDA C programs written in different styles,
# each built twice: by nvcc (the program) and by ddp-cpu-kernels (its CPU
# device kernel library, <program>.kern.so next to it), then run on the CPU
# device in two thread orders with their results checked against host
# references (docs/cpu-device-kernels.md "ddp-cpu-kernels").
#
#   rt_basic    runtime API, <<<>>>, intrinsics, atomics, printf, assert
#   cg_reduce   cooperative groups, tiles 32..2, warp shuffles and reductions
#   templ_ns    templates, namespaces, functors, extern "C"
#   bf16_half   cuda_bf16.h / cuda_fp16.h against the toolkit's host versions
#   mf          three .cu files, __constant__ in another file
#   drv_module  driver API, cuModuleLoadData of its embedded fatbin
#   llmc_like   llm.c's style: NVTX, launches across lines with NULL, the
#               runtime header's C++ overloads (cudaMallocHost with flags...)
#   darknet_like  a C framework's style: curand.h included, not used; a
#               dropout layer on cuRAND's device API
#   curand_dev  cuRAND's device API (XORWOW) against the toolkit's definition
# errors.sh: the command's one-line errors, output name, exports.

CPUK := $(BUILD)/cpudev/cpukern
CPUK_NVCC := $(NVCC) -std=c++17 -O2 -gencode arch=compute_90,code=sm_90
CPUK_RT := rt_basic cg_reduce templ_ns bf16_half llmc_like darknet_like curand_dev
CPUK_MF_SRCS := cpudev/cpukern/mf_main.cu cpudev/cpukern/mf_kernels.cu cpudev/cpukern/mf_more.cu
CPUK_PROGS := $(CPUK_RT) mf drv_module

$(addprefix $(CPUK)/,$(CPUK_RT)): $(CPUK)/%: cpudev/cpukern/%.cu cpudev/cpukern/check.cuh cpudev/cpukern/curand_xorwow_ref.h
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) $< -o $@

$(addsuffix .kern.so,$(addprefix $(CPUK)/,$(CPUK_RT))): $(CPUK)/%.kern.so: cpudev/cpukern/%.cu cpudev/cpukern/check.cuh \
		cpudev/cpukern/curand_xorwow_ref.h $(DDP_CPU_KERNELS) $(wildcard $(SIM_INC)/*.h $(SIM_INC)/nvtx3/*)
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $<

$(CPUK)/mf: $(CPUK_MF_SRCS) cpudev/cpukern/mf_kernels.cuh cpudev/cpukern/check.cuh
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) $(CPUK_MF_SRCS) -o $@

$(CPUK)/mf.kern.so: $(CPUK_MF_SRCS) cpudev/cpukern/mf_kernels.cuh $(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $(CPUK_MF_SRCS)

# The driver-API program carries its own fatbin as drv_module_fatbin.
$(CPUK)/drv_module.fatbin: cpudev/cpukern/drv_module.cu
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) -fatbin $< -o $@

$(CPUK)/drv_module_fatbin.o: $(CPUK)/drv_module.fatbin
	$(Q)printf '%s\n' '.section .rodata' '.balign 16' '.globl drv_module_fatbin' 'drv_module_fatbin:' \
		'.incbin "$<"' '.section .note.GNU-stack,"",@progbits' | $(CC) -c -x assembler - -o $@

$(CPUK)/drv_module: cpudev/cpukern/drv_module.cu $(CPUK)/drv_module_fatbin.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CPUK_NVCC) $< $(CPUK)/drv_module_fatbin.o -o $@ -L$(SIMCUDA_DIR) -lcuda -Xlinker -rpath -Xlinker $(abspath $(SIMCUDA_DIR))

$(CPUK)/drv_module.kern.so: cpudev/cpukern/drv_module.cu $(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $<

CPUK_ORDERS := forward random
$(CPUK)/run-%.sh: cpudev/cpukern/run.sh | $(foreach p,$(CPUK_PROGS),$(CPUK)/$(p) $(CPUK)/$(p).kern.so) $(SIMCUDA_LIB)
	@mkdir -p $(dir $@)
	@p=$*; printf '#!/bin/sh\nSIMCUDA_THREAD_ORDER=%s exec cpudev/cpukern/run.sh %s\n' "$${p##*-}" "$${p%-*}" > $@ && chmod +x $@

TESTS += $(foreach p,$(CPUK_PROGS),$(foreach o,$(CPUK_ORDERS),$(CPUK)/run-$(p)-$(o).sh)) cpudev/cpukern/errors.sh
BINS += $(DDP_CPU_KERNELS)

# recipe.sh: the three commands of docs/cpu-device.md on a small trainer
# (cpudev/cpukern/recipe) that nvcc builds here as its user would; the test
# runs ddp-cpu-kernels, the plain run and ddprun itself.
$(CPUK)/recipe/train: cpudev/cpukern/recipe/train.cu cpudev/cpukern/recipe/kernels.cu \
		cpudev/cpukern/recipe/include/toy_model.cuh
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) -Icpudev/cpukern/recipe/include cpudev/cpukern/recipe/train.cu cpudev/cpukern/recipe/kernels.cu -o $@

cpudev/cpukern/recipe.sh: | $(CPUK)/recipe/train $(DDP_CPU_KERNELS) $(SIMCUDA_LIB) $(BUILD)/lib/libddp.so $(BUILD)/bin/ddprun
TESTS += cpudev/cpukern/recipe.sh
