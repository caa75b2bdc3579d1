# SPDX-License-Identifier: MIT
#
# tests/cpukern/module.mk - CUDA C programs written in different styles,
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
# errors.sh: the command's one-line errors, output name, exports.

CPUK := $(BUILD)/tests/cpukern
CPUK_NVCC := $(NVCC) -std=c++17 -O2 -gencode arch=compute_90,code=sm_90
CPUK_RT := rt_basic cg_reduce templ_ns bf16_half
CPUK_MF_SRCS := tests/cpukern/mf_main.cu tests/cpukern/mf_kernels.cu tests/cpukern/mf_more.cu
CPUK_PROGS := $(CPUK_RT) mf drv_module

$(addprefix $(CPUK)/,$(CPUK_RT)): $(CPUK)/%: tests/cpukern/%.cu tests/cpukern/check.cuh
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) $< -o $@

$(addsuffix .kern.so,$(addprefix $(CPUK)/,$(CPUK_RT))): $(CPUK)/%.kern.so: tests/cpukern/%.cu tests/cpukern/check.cuh \
		$(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $<

$(CPUK)/mf: $(CPUK_MF_SRCS) tests/cpukern/mf_kernels.cuh tests/cpukern/check.cuh
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) $(CPUK_MF_SRCS) -o $@

$(CPUK)/mf.kern.so: $(CPUK_MF_SRCS) tests/cpukern/mf_kernels.cuh $(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $(CPUK_MF_SRCS)

# The driver-API program carries its own fatbin as drv_module_fatbin.
$(CPUK)/drv_module.fatbin: tests/cpukern/drv_module.cu
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) -fatbin $< -o $@

$(CPUK)/drv_module_fatbin.o: $(CPUK)/drv_module.fatbin
	$(Q)printf '%s\n' '.section .rodata' '.balign 16' '.globl drv_module_fatbin' 'drv_module_fatbin:' \
		'.incbin "$<"' '.section .note.GNU-stack,"",@progbits' | $(CC) -c -x assembler - -o $@

$(CPUK)/drv_module: tests/cpukern/drv_module.cu $(CPUK)/drv_module_fatbin.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CPUK_NVCC) $< $(CPUK)/drv_module_fatbin.o -o $@ -L$(SIMCUDA_DIR) -lcuda -Xlinker -rpath -Xlinker $(abspath $(SIMCUDA_DIR))

$(CPUK)/drv_module.kern.so: tests/cpukern/drv_module.cu $(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $<

CPUK_ORDERS := forward random
$(CPUK)/run-%.sh: tests/cpukern/run.sh | $(foreach p,$(CPUK_PROGS),$(CPUK)/$(p) $(CPUK)/$(p).kern.so) $(SIMCUDA_LIB)
	@mkdir -p $(dir $@)
	@p=$*; printf '#!/bin/sh\nSIMCUDA_THREAD_ORDER=%s exec tests/cpukern/run.sh %s\n' "$${p##*-}" "$${p%-*}" > $@ && chmod +x $@

TESTS += $(foreach p,$(CPUK_PROGS),$(foreach o,$(CPUK_ORDERS),$(CPUK)/run-$(p)-$(o).sh)) tests/cpukern/errors.sh
BINS += $(DDP_CPU_KERNELS)

# recipe.sh: the three commands of docs/cpu-device.md on a small trainer
# (tests/cpukern/recipe) that nvcc builds here as its user would; the test
# runs ddp-cpu-kernels, the plain run and ddprun itself.
$(CPUK)/recipe/train: tests/cpukern/recipe/train.cu tests/cpukern/recipe/kernels.cu \
		tests/cpukern/recipe/include/toy_model.cuh
	@mkdir -p $(dir $@)
	$(Q)$(CPUK_NVCC) -Itests/cpukern/recipe/include tests/cpukern/recipe/train.cu tests/cpukern/recipe/kernels.cu -o $@

tests/cpukern/recipe.sh: | $(CPUK)/recipe/train $(DDP_CPU_KERNELS) $(SIMCUDA_LIB) $(BUILD)/lib/libddp.so $(BUILD)/bin/ddprun
TESTS += tests/cpukern/recipe.sh
