# SPDX-License-Identifier: MIT
#
# cpudev/cudart.mk - CUDA runtime-API programs on the CPU device
# (docs/cpu-device.md "cudart").
#
#   $(BUILD)/cpudev/cudart/test_cudart_static   main.cu, nvcc's default static cudart,
#       linked against the toolkit's cuBLAS/cuBLASLt (run on the stand-ins)
#   $(BUILD)/cpudev/cudart/test_cudart_shared   the same object, -cudart shared
#   $(BUILD)/cpudev/cudart/test_cudart_static.kern.so   main.cu's kernels for the
#       CPU device, built by ddp-cpu-kernels from the same mixed host/device
#       file; the shared program's .kern.so is a link to it
#   $(BUILD)/cpudev/cudart/tiny (+ tiny.kern.so, ddp-cpu-kernels)
#       tiny.cu, a ten-line program as a new user writes it
#   $(BUILD)/cpudev/cudart/nullfree   nullfree.cu: cudaFree(0), cudaFreeAsync(0),
#       cudaFreeHost(NULL), zero-byte copies, against the documented answers
#
# Tests (cpudev/cudart/run.sh): each program plain and under libddp
# (LD_PRELOAD, its hook log must show the launches, the cuBLAS GEMMs among
# them with their typed signatures, and the allocations), the export-table
# negative controls, the tiny program with and without its kernel library,
# trace mode.  Only sm_90 SASS in the programs: the CPU device reads sm_90,
# and it keeps nvcc's time down.  Needs the toolkit's cuBLAS (CUBLAS_LIBDIR,
# samples/cublas.mk) and the stand-ins (cpudev/cublas.mk).

ifneq ($(and $(CUBLAS_LIBDIR),$(SIMBLAS_LT)),)
CUDART_T := $(BUILD)/cpudev/cudart
CUDART_T_NVCC := $(NVCC) -std=c++17 -O2 -gencode arch=compute_90,code=sm_90 -Xcompiler -Wall,-Wextra,-Werror
CUDART_T_BLAS := -L$(CUBLAS_LIBDIR) -lcublas -lcublasLt -Xlinker -rpath -Xlinker $(CUBLAS_LIBDIR)

$(CUDART_T)/main.o: cpudev/cudart/main.cu
	@mkdir -p $(dir $@)
	$(Q)$(CUDART_T_NVCC) -c $< -o $@

$(CUDART_T)/test_cudart_static: $(CUDART_T)/main.o
	$(Q)$(NVCC) $< -o $@ $(CUDART_T_BLAS)

$(CUDART_T)/test_cudart_shared: $(CUDART_T)/main.o
	$(Q)$(NVCC) -cudart shared $< -o $@ $(CUDART_T_BLAS)

$(CUDART_T)/test_cudart_static.kern.so: cpudev/cudart/main.cu $(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $<

$(CUDART_T)/test_cudart_shared.kern.so: $(CUDART_T)/test_cudart_static.kern.so
	$(Q)ln -sf test_cudart_static.kern.so $@

$(CUDART_T)/tiny: cpudev/cudart/tiny.cu
	@mkdir -p $(dir $@)
	$(Q)$(NVCC) -arch=sm_90 $< -o $@

$(CUDART_T)/tiny.kern.so: cpudev/cudart/tiny.cu $(DDP_CPU_KERNELS) $(SIM_INC)/sim_kernel.h
	@mkdir -p $(dir $@)
	$(Q)$(DDP_CPU_KERNELS) -o $@ $<

$(CUDART_T)/nullfree: cpudev/cudart/nullfree.cu
	@mkdir -p $(dir $@)
	$(Q)$(CUDART_T_NVCC) $< -o $@

CUDART_T_PROGS := $(CUDART_T)/nullfree $(CUDART_T)/test_cudart_static $(CUDART_T)/test_cudart_shared $(CUDART_T)/tiny \
	$(CUDART_T)/test_cudart_static.kern.so $(CUDART_T)/test_cudart_shared.kern.so $(CUDART_T)/tiny.kern.so \
	$(SIMCUDA_LIB) $(SIMBLAS_BLAS) $(BUILD)/lib/libddp.so
CUDART_T_CASES := static-plain static-ddp shared-plain shared-ddp tiny nullfree

$(CUDART_T)/run-%.sh: cpudev/cudart/run.sh | $(CUDART_T_PROGS)
	@mkdir -p $(dir $@)
	@printf '#!/bin/sh\nexec cpudev/cudart/run.sh %s\n' "$*" > $@ && chmod +x $@

TESTS += $(foreach c,$(CUDART_T_CASES),$(CUDART_T)/run-$(c).sh)
endif
