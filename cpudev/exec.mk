# SPDX-License-Identifier: MIT
#
# cpudev/exec.mk - the kernel-execution half of the CPU device
# (sim_exec.c, sim_fiber.c, sim_kernels.c go into libcuda.so.1 through
# module.mk), the registry generator sim-kernreg, the function that builds a
# program's kernel library, and the execution tests.
#
#   $(eval $(call sim_kernel_lib,OUT.kern.so,SRC.cu,FATBIN))
#       OUT.kern.so: SRC.cu compiled by g++ with sim_kernel.h forced in, plus
#       the registry generated from FATBIN (the Makefile's $(BUILD)/X.fatbin).
#       It imports nothing from libcuda.so.1 and does not link it (kernel ABI
#       2, sim_kernel_abi.h: the driver binds it at load), so it works however
#       the program loads libcuda.so.1.  Building it also builds
#       $(BUILD)/cpudev/lib/libcuda.so.1 (order-only: the programs that use the
#       library need the CPU device) unless a 4th argument `nolibcuda` is
#       given (tests that link the scheduler into the executable).
#       Name it <program>.kern.so next to the program and the CPU device finds
#       it; else list it in SIMCUDA_KERNELS.  The build fails when g++ does
#       not define a kernel under nvcc's mangled name.
#
# The execution tests are TESTS, not UNIT_TESTS: fibers switch stacks, which
# ASan does not follow.

SIM_KERNREG := $(BUILD)/bin/sim-kernreg
SIM_INC := cpudev/include
SIM_LIBCUDA_SO := $(BUILD)/cpudev/lib/libcuda.so.1
SIM_DYN_SHARED_BYTES := 233472
SIM_KERN_CXXFLAGS = -std=c++17 $(OPT) -g -fPIC $(WARN) -Wno-unknown-pragmas -Wno-unused-parameter \
	$(SANFLAGS) -MMD -MP -I$(SIM_INC) -include $(SIM_INC)/sim_kernel.h

$(BUILD)/cpudev/kernreg/%.o: cpudev/kernreg/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

$(SIM_KERNREG): $(BUILD)/cpudev/kernreg/sim_kernreg.o $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS)
BINS += $(SIM_KERNREG)

# ---- ddp-cpu-kernels: the kernel library of any CUDA C program, for users
# (docs/cpu-device-kernels.md).  Its paths are compiled in, so it runs from
# any directory.  SIM_POISON_DIR holds one #error file per CUDA toolkit
# header (kernreg/poison.sh), searched after the CPU device's headers.
DDP_CPU_KERNELS := $(BUILD)/bin/ddp-cpu-kernels
SIM_POISON_DIR := $(BUILD)/cpudev/lib/include-poison
SIM_CUDA_VERSION := $(or $(shell sed -n 's/^\#define CUDA_VERSION \([0-9]*\).*/\1/p' $(CUDA_INC)/cuda.h 2>/dev/null),13000)

$(SIM_POISON_DIR)/.stamp: cpudev/kernreg/poison.sh
	$(Q)sh cpudev/kernreg/poison.sh $(CUDA_INC) $(SIM_POISON_DIR) && touch $@

$(BUILD)/cpudev/kernreg/ddp_cpu_kernels.o: CPPFLAGS += -DSIM_INC_DIR='"$(abspath $(SIM_INC))"' \
	-DSIM_POISON_DIR='"$(abspath $(SIM_POISON_DIR))"' -DSIM_KERNREG_PATH='"$(abspath $(SIM_KERNREG))"' \
	-DSIM_SCRIPT_DIR='"$(abspath cpudev/kernreg)"' -DSIM_NVCC='"$(NVCC)"' \
	-DSIM_CUDA_H='"$(CUDA_INC)/cuda.h"' -DSIM_DYN_SHARED_BYTES=$(SIM_DYN_SHARED_BYTES) \
	-DSIM_CUDA_VERSION=$(SIM_CUDA_VERSION)
$(BUILD)/cpudev/kernreg/ddp_cpu_kernels.o: cpudev/exec.mk

$(DDP_CPU_KERNELS): $(BUILD)/cpudev/kernreg/ddp_cpu_kernels.o | $(SIM_KERNREG) $(SIM_POISON_DIR)/.stamp
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $< -o $@
BINS += $(DDP_CPU_KERNELS)

define sim_kernel_lib
$(patsubst %.kern.so,%.reg.cpp,$(1)): $(3) $$(SIM_KERNREG)
	@mkdir -p $$(dir $$@)
	$$(Q)$$(SIM_KERNREG) $(3) $(2) > $$@.tmp && mv $$@.tmp $$@
$(patsubst %.kern.so,%.reg.o,$(1)): $(patsubst %.kern.so,%.reg.cpp,$(1)) $(2)
	$$(Q)$$(CXX) $$(SIM_KERN_CXXFLAGS) -c $$< -o $$@
$(patsubst %.kern.so,%.dynsh.o,$(1)): $(patsubst %.kern.so,%.reg.o,$(1))
	$$(Q)cpudev/kernreg/dynshared.sh $$< $$(SIM_DYN_SHARED_BYTES) | $$(CC) -c -x assembler - -o $$@
$(1): $(patsubst %.kern.so,%.reg.o,$(1)) $(patsubst %.kern.so,%.dynsh.o,$(1)) $$(SIM_KERNREG) $(if $(4),,| $$(SIM_LIBCUDA_SO))
	$$(Q)$$(CXX) $$(LDFLAGS) -shared -Wl$$(comma)-z$$(comma)defs -o $$@ \
		$(patsubst %.kern.so,%.reg.o,$(1)) $(patsubst %.kern.so,%.dynsh.o,$(1))
	$$(Q)cpudev/kernreg/check_names.sh $$(SIM_KERNREG) $(3) $$@ || { rm -f $$@; exit 1; }
endef

# ---- tests: the scheduler linked into the test, no driver needed
SIM_EXEC_TEST_OBJS := $(addprefix $(BUILD)/cpudev/exec-test/,sim_exec.o sim_fiber.o sim_kernels.o test_exec.o)

$(BUILD)/cpudev/exec-test/%.o: cpudev/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -Itests -Icpudev -fvisibility=hidden -c $< -o $@

$(BUILD)/cpudev/test_exec: $(SIM_EXEC_TEST_OBJS) $(DDP_COMMON_LIB) $(BUILD)/cpudev/test_exec.kern.so \
		$(BUILD)/cpudev/kernels/exec_kernels.fatbin
	$(Q)$(CC) $(LDFLAGS) -rdynamic $(SIM_EXEC_TEST_OBJS) $(DDP_COMMON_LIB) -o $@ $(DDP_COMMON_LIBS)

# exec_kernels.cu has kernels instantiated with lambdas (GPU_LAMBDA)
$(BUILD)/cpudev/kernels/exec_kernels.fatbin: NVCC_FLAGS += --extended-lambda
$(eval $(call sim_kernel_lib,$(BUILD)/cpudev/test_exec.kern.so,cpudev/kernels/exec_kernels.cu,$(BUILD)/cpudev/kernels/exec_kernels.fatbin,nolibcuda))

# The driver tests' kernel libraries (module.mk's test_launch, test_loader; that fragment
# is included before this one, so it cannot call sim_kernel_lib itself).
$(eval $(call sim_kernel_lib,$(BUILD)/cpudev/test_launch.kern.so,cpudev/kernels/test_kernels.cu,$(BUILD)/cpudev/kernels/test_kernels.fatbin))
$(eval $(call sim_kernel_lib,$(BUILD)/cpudev/test_loader.kern.so,cpudev/kernels/test_kernels.cu,$(BUILD)/cpudev/kernels/test_kernels.fatbin))
$(eval $(call sim_kernel_lib,$(BUILD)/cpudev/test_mismatch.kern.so,cpudev/kernels/test_mismatch_host.cu,$(BUILD)/cpudev/kernels/test_mismatch_host.fatbin))

SIM_EXEC_ORDERS := forward reverse random
$(BUILD)/cpudev/run-test_exec-%.sh: $(BUILD)/cpudev/test_exec
	@printf '#!/bin/sh\nSIMCUDA_THREAD_ORDER=%s exec %s\n' "$*" "$<" > $@ && chmod +x $@
$(BUILD)/cpudev/run-test_exec-badorder.sh: $(BUILD)/cpudev/test_exec
	@printf '#!/bin/sh\nSIMCUDA_THREAD_ORDER=sideways exec %s order_setting\n' "$<" > $@ && chmod +x $@
TESTS += $(foreach o,$(SIM_EXEC_ORDERS) badorder,$(BUILD)/cpudev/run-test_exec-$(o).sh)
