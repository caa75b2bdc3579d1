# SPDX-License-Identifier: MIT
#
# cpudev/module.mk - the CPU device: $(BUILD)/cpudev/lib/libcuda.so.1
# (+ libcuda.so) from every cpudev/sim_*.c (the driver half, and the
# kernel-execution half described in exec.mk), linked with libddpcommon.a,
# and the driver tests.
#
# Only the cu* entry points are exported (kernel libraries get the scheduler
# through sim_kernel_table.bind, sim_kernel_abi.h): -fvisibility=hidden,
# libddpcommon.a's symbols are hidden with --exclude-libs, and libcuda.map
# keeps the hand-written bodies (sim_impl_*, behind the generated exports
# of sim_entry.c that run the fault check) local.  -Bsymbolic-functions binds every reference to its own
# functions inside the library (the cuGetProcAddress table, the stub table,
# calls between entry points): an LD_PRELOADed library exporting cu* names
# (libddp.so) is never handed out or called by the driver, as with the real
# libcuda.  Three tables are generated from the installed cuda.h by
# sim_gen.sh: the CUresult names (sim_errors.inc), the stubs for every
# entry point sim_api.def does not implement (sim_unsupported.inc), and the
# prototype of every one it implements (sim_faults.inc: sim_entry.c's
# exports, each checking the fault table first).
#
# The driver tests are TESTS, not UNIT_TESTS: stream workers and fibers
# (threads, stack switches) confuse ASan, and the tests load libcuda.so.1.

SIMCUDA_DIR := $(BUILD)/cpudev/lib
SIMCUDA_LIB := $(SIMCUDA_DIR)/libcuda.so.1
SIMCUDA_GEN := $(BUILD)/cpudev/gen
SIMCUDA_SRCS := $(wildcard cpudev/sim_*.c)
SIMCUDA_OBJS := $(SIMCUDA_SRCS:%.c=$(BUILD)/%.o)

$(SIMCUDA_OBJS): CPPFLAGS += -Itests -Icpudev -I$(SIMCUDA_GEN)
$(SIMCUDA_OBJS): CFLAGS += -fvisibility=hidden

$(SIMCUDA_GEN)/sim_errors.inc: cpudev/sim_gen.sh $(CUDA_INC)/cuda.h
	@mkdir -p $(dir $@)
	$(Q)cpudev/sim_gen.sh errors $(CUDA_INC)/cuda.h > $@.tmp && mv $@.tmp $@

$(SIMCUDA_GEN)/sim_unsupported.inc: cpudev/sim_gen.sh cpudev/sim_api.def $(CUDA_INC)/cuda.h
	@mkdir -p $(dir $@)
	$(Q)cpudev/sim_gen.sh unsupported "$(CC)" $(CUDA_INC) cpudev/sim_api.def > $@.tmp && mv $@.tmp $@

$(SIMCUDA_GEN)/sim_faults.inc: cpudev/sim_gen.sh cpudev/sim_api.def cpudev/sim_faults.def $(CUDA_INC)/cuda.h
	@mkdir -p $(dir $@)
	$(Q)cpudev/sim_gen.sh faults "$(CC)" $(CUDA_INC) cpudev/sim_api.def cpudev/sim_faults.def > $@.tmp && mv $@.tmp $@

$(BUILD)/cpudev/sim_err.o: $(SIMCUDA_GEN)/sim_errors.inc
$(BUILD)/cpudev/sim_unsupported.o: $(SIMCUDA_GEN)/sim_unsupported.inc
# sim_internal.h includes sim_faults.inc (each object's .d names it after its first build)
$(SIMCUDA_OBJS): | $(SIMCUDA_GEN)/sim_faults.inc

$(SIMCUDA_LIB): $(SIMCUDA_OBJS) $(DDP_COMMON_LIB) cpudev/libcuda.map
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libcuda.so.1 -Wl,-z,defs -Wl,--exclude-libs,ALL -Wl,-Bsymbolic-functions \
		-Wl,--version-script=cpudev/libcuda.map -o $@ $(SIMCUDA_OBJS) $(DDP_COMMON_LIB) $(DDP_COMMON_LIBS)

$(SIMCUDA_DIR)/libcuda.so: $(SIMCUDA_LIB)
	$(Q)ln -sf libcuda.so.1 $@

BINS += $(SIMCUDA_LIB) $(SIMCUDA_DIR)/libcuda.so

# ---- driver tests: linked against the CPU device (rpath), or loading it
# with dlopen like cudart (test_loader links no libcuda at all).
SIMCUDA_RPATH := -Wl,-rpath,$(abspath $(SIMCUDA_DIR))

$(BUILD)/cpudev/test_driver: $(BUILD)/cpudev/test_driver.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread -ldl

$(BUILD)/cpudev/test_alloc_modes: $(BUILD)/cpudev/test_alloc_modes.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread

$(BUILD)/cpudev/test_null_answers: $(BUILD)/cpudev/test_null_answers.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread

$(BUILD)/cpudev/test_fault: $(BUILD)/cpudev/test_fault.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH)

$(BUILD)/cpudev/test_fault_all: $(BUILD)/cpudev/test_fault_all.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -ldl

$(BUILD)/cpudev/test_loader: $(BUILD)/cpudev/test_loader.o \
		$(BUILD)/cpudev/kernels/test_kernels.fatbin.o $(SIMCUDA_LIB) $(BUILD)/cpudev/test_loader.kern.so
	$(Q)$(CC) $(LDFLAGS) $< $(BUILD)/cpudev/kernels/test_kernels.fatbin.o -o $@ $(SIMCUDA_RPATH) -ldl

# test_preload re-executes itself with libsim_preload_probe.so (next to it)
# in LD_PRELOAD and checks that cuGetProcAddress answers libcuda's own
# functions, not the preloaded ones (libcuda.so.1 is linked with
# -Bsymbolic-functions, as the real driver binds its own table).
$(BUILD)/cpudev/libsim_preload_probe.so: cpudev/test_preload_probe.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -shared $< -o $@

$(BUILD)/cpudev/test_preload: $(BUILD)/cpudev/test_preload.o $(SIMCUDA_LIB) \
		$(BUILD)/cpudev/libsim_preload_probe.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ $(SIMCUDA_RPATH) -ldl

$(BUILD)/cpudev/test_driver.o $(BUILD)/cpudev/test_fault.o $(BUILD)/cpudev/test_loader.o \
	$(BUILD)/cpudev/test_alloc_modes.o $(BUILD)/cpudev/test_null_answers.o \
	$(BUILD)/cpudev/test_preload.o: CPPFLAGS += -Itests

TESTS += $(BUILD)/cpudev/test_driver $(BUILD)/cpudev/test_fault $(BUILD)/cpudev/test_fault_all $(BUILD)/cpudev/test_loader \
	$(BUILD)/cpudev/test_alloc_modes $(BUILD)/cpudev/test_null_answers \
	$(BUILD)/cpudev/test_preload

# ---- launch tests: kernels from real nvcc fatbins (embedded), host code in
# test_launch.kern.so next to the executable (exec.mk's sim_kernel_lib), and
# a deliberately mismatched kernel library for the refusal tests.
SIMCUDA_KDIR := $(BUILD)/cpudev/kernels
SIMCUDA_LAUNCH_OBJS := $(BUILD)/cpudev/test_launch.o $(SIMCUDA_KDIR)/test_kernels.fatbin.o \
	$(SIMCUDA_KDIR)/test_mismatch_dev.fatbin.o

$(BUILD)/cpudev/test_launch.o: CPPFLAGS += -Itests

$(BUILD)/cpudev/test_launch: $(SIMCUDA_LAUNCH_OBJS) $(SIMCUDA_DIR)/libcuda.so \
		$(BUILD)/cpudev/test_launch.kern.so $(BUILD)/cpudev/test_mismatch.kern.so
	$(Q)$(CC) $(LDFLAGS) $(SIMCUDA_LAUNCH_OBJS) -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread

# Their kernel libraries are made in exec.mk: the top Makefile includes this
# fragment before exec.mk, so sim_kernel_lib is not defined yet here.

TESTS += $(BUILD)/cpudev/test_launch cpudev/timeline.sh

# The settings (SIMCUDA_*, DDP_SIM_FAIL) are one table, sim_settings.def:
# sim_settings.h makes the getters, settings_doc.sh the table of
# docs/cpu-device.md (`make docs-cpudev` rewrites it; the test fails when
# it is stale or when a setting is read around the table).
.PHONY: docs-cpudev
docs-cpudev:
	$(Q)cpudev/settings_doc.sh cpudev/sim_settings.def docs/cpu-device.md

TESTS += cpudev/test_settings_doc.sh

# What cudart 13.2 and PyTorch's wheel ask of the driver (issue 20): the test
# kernels' fatbin embedded, copied and edited by the test.
$(BUILD)/cpudev/test_realrt.o: CPPFLAGS += -Itests

$(BUILD)/cpudev/test_realrt: $(BUILD)/cpudev/test_realrt.o $(SIMCUDA_KDIR)/test_kernels.fatbin.o \
		$(SIMCUDA_DIR)/libcuda.so $(SIMCUDA_DIR)/libnvidia-ml.so.1
	$(Q)$(CC) $(LDFLAGS) $(BUILD)/cpudev/test_realrt.o $(SIMCUDA_KDIR)/test_kernels.fatbin.o -o $@ \
		-L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread -ldl

TESTS += $(BUILD)/cpudev/test_realrt
