# SPDX-License-Identifier: MIT
#
# tests/simcuda/cudart.mk - CUDA runtime-API programs on the CPU device
# (docs/cpu-device.md "cudart").
#
#   $(BUILD)/tests/simcuda/cudart/test_cudart_static   main.cu, nvcc's default static cudart
#   $(BUILD)/tests/simcuda/cudart/test_cudart_shared   the same object, -cudart shared
#   $(BUILD)/tests/simcuda/cudart/test_cudart_static.kern.so   kernels.cu for the CPU
#       device (sim_kernel_lib); the shared program's .kern.so is a link to it
#   $(BUILD)/tests/simcuda/cudart/tiny                 tiny.cu, a ten-line program as a new
#       user writes it (no kernel library: its launch is refused, or skipped in
#       trace mode)
#
# Tests (tests/simcuda/cudart/run.sh): each program plain and under libddp
# (LD_PRELOAD, its hook log must show the launches and allocations), the
# export-table negative controls, the tiny program, trace mode.  Only sm_90
# SASS in the programs: the CPU device reads sm_90, and it keeps nvcc's time
# down.

CUDART_T := $(BUILD)/tests/simcuda/cudart
CUDART_T_NVCC := $(NVCC) -std=c++17 -O2 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror

$(CUDART_T)/main.o: tests/simcuda/cudart/main.cu tests/simcuda/cudart/kernels.cu
	@mkdir -p $(dir $@)
	$(Q)$(CUDART_T_NVCC) -c $< -o $@

$(CUDART_T)/test_cudart_static: $(CUDART_T)/main.o
	$(Q)$(NVCC) $< -o $@

$(CUDART_T)/test_cudart_shared: $(CUDART_T)/main.o
	$(Q)$(NVCC) -cudart shared $< -o $@

$(CUDART_T)/tiny: tests/simcuda/cudart/tiny.cu
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_90 $< -o $@

$(eval $(call sim_kernel_lib,$(CUDART_T)/test_cudart_static.kern.so,tests/simcuda/cudart/kernels.cu,$(CUDART_T)/kernels.fatbin))

$(CUDART_T)/test_cudart_shared.kern.so: $(CUDART_T)/test_cudart_static.kern.so
	$(Q)ln -sf test_cudart_static.kern.so $@

CUDART_T_PROGS := $(CUDART_T)/test_cudart_static $(CUDART_T)/test_cudart_shared $(CUDART_T)/tiny \
	$(CUDART_T)/test_cudart_static.kern.so $(CUDART_T)/test_cudart_shared.kern.so $(SIMCUDA_LIB) $(BUILD)/lib/libddp.so
CUDART_T_CASES := static-plain static-ddp shared-plain shared-ddp tiny

$(CUDART_T)/run-%.sh: tests/simcuda/cudart/run.sh | $(CUDART_T_PROGS)
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec tests/simcuda/cudart/run.sh %s\n' "$*" > $@ && chmod +x $@

TESTS += $(foreach c,$(CUDART_T_CASES),$(CUDART_T)/run-$(c).sh)
