# SPDX-License-Identifier: MIT
#
# tests/simcuda/module.mk - the CPU device: $(BUILD)/simcuda/libcuda.so.1
# (+ libcuda.so) from every tests/simcuda/sim_*.c (the driver half, and the
# kernel-execution half described in exec.mk), linked with libddpcommon.a,
# and the driver tests.
#
# Only the cu* entry points are exported (kernel libraries get the scheduler
# through sim_kernel_table.bind, sim_kernel_abi.h): -fvisibility=hidden, and
# libddpcommon.a's symbols are hidden with --exclude-libs.  -Bsymbolic-functions binds every reference to its own
# functions inside the library (the cuGetProcAddress table, the stub table,
# calls between entry points): an LD_PRELOADed library exporting cu* names
# (libddp.so) is never handed out or called by the driver, as with the real
# libcuda.  Two tables are generated from the installed cuda.h by
# sim_gen.sh: the CUresult names (sim_errors.inc) and the stubs for every
# entry point sim_api.def does not implement (sim_unsupported.inc).
#
# The driver tests are TESTS, not UNIT_TESTS: stream workers and fibers
# (threads, stack switches) confuse ASan, and the tests load libcuda.so.1.

SIMCUDA_DIR := $(BUILD)/simcuda
SIMCUDA_LIB := $(SIMCUDA_DIR)/libcuda.so.1
SIMCUDA_GEN := $(BUILD)/tests/simcuda/gen
SIMCUDA_SRCS := $(wildcard tests/simcuda/sim_*.c)
SIMCUDA_OBJS := $(SIMCUDA_SRCS:%.c=$(BUILD)/%.o)

$(SIMCUDA_OBJS): CPPFLAGS += -Itests -Itests/simcuda -I$(SIMCUDA_GEN)
$(SIMCUDA_OBJS): CFLAGS += -fvisibility=hidden

$(SIMCUDA_GEN)/sim_errors.inc: tests/simcuda/sim_gen.sh $(CUDA_INC)/cuda.h
	@mkdir -p $(dir $@)
	$(Q)tests/simcuda/sim_gen.sh errors $(CUDA_INC)/cuda.h > $@.tmp && mv $@.tmp $@

$(SIMCUDA_GEN)/sim_unsupported.inc: tests/simcuda/sim_gen.sh tests/simcuda/sim_api.def $(CUDA_INC)/cuda.h
	@mkdir -p $(dir $@)
	$(Q)tests/simcuda/sim_gen.sh unsupported "$(CC)" $(CUDA_INC) tests/simcuda/sim_api.def > $@.tmp && mv $@.tmp $@

$(BUILD)/tests/simcuda/sim_err.o: $(SIMCUDA_GEN)/sim_errors.inc
$(BUILD)/tests/simcuda/sim_unsupported.o: $(SIMCUDA_GEN)/sim_unsupported.inc

$(SIMCUDA_LIB): $(SIMCUDA_OBJS) $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libcuda.so.1 -Wl,-z,defs -Wl,--exclude-libs,ALL -Wl,-Bsymbolic-functions \
		-o $@ $(SIMCUDA_OBJS) $(DDP_COMMON_LIB) $(DDP_COMMON_LIBS)

$(SIMCUDA_DIR)/libcuda.so: $(SIMCUDA_LIB)
	$(Q)ln -sf libcuda.so.1 $@

BINS += $(SIMCUDA_LIB) $(SIMCUDA_DIR)/libcuda.so

# ---- driver tests: linked against the CPU device (rpath), or loading it
# with dlopen like cudart (test_loader links no libcuda at all).
SIMCUDA_RPATH := -Wl,-rpath,$(abspath $(SIMCUDA_DIR))

$(BUILD)/tests/simcuda/test_driver: $(BUILD)/tests/simcuda/test_driver.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread -ldl

$(BUILD)/tests/simcuda/test_alloc_modes: $(BUILD)/tests/simcuda/test_alloc_modes.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread

$(BUILD)/tests/simcuda/test_fault: $(BUILD)/tests/simcuda/test_fault.o $(SIMCUDA_DIR)/libcuda.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH)

$(BUILD)/tests/simcuda/test_loader: $(BUILD)/tests/simcuda/test_loader.o \
		$(BUILD)/tests/simcuda/kernels/test_kernels.fatbin.o $(SIMCUDA_LIB) $(BUILD)/tests/simcuda/test_loader.kern.so
	$(Q)$(CC) $(LDFLAGS) $< $(BUILD)/tests/simcuda/kernels/test_kernels.fatbin.o -o $@ $(SIMCUDA_RPATH) -ldl

# test_preload re-executes itself with libsim_preload_probe.so (next to it)
# in LD_PRELOAD and checks that cuGetProcAddress answers libcuda's own
# functions, not the preloaded ones (libcuda.so.1 is linked with
# -Bsymbolic-functions, as the real driver binds its own table).
$(BUILD)/tests/simcuda/libsim_preload_probe.so: tests/simcuda/test_preload_probe.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -fPIC -shared $< -o $@

$(BUILD)/tests/simcuda/test_preload: $(BUILD)/tests/simcuda/test_preload.o $(SIMCUDA_LIB) \
		$(BUILD)/tests/simcuda/libsim_preload_probe.so
	$(Q)$(CC) $(LDFLAGS) $< -o $@ $(SIMCUDA_RPATH) -ldl

$(BUILD)/tests/simcuda/test_driver.o $(BUILD)/tests/simcuda/test_fault.o $(BUILD)/tests/simcuda/test_loader.o \
	$(BUILD)/tests/simcuda/test_alloc_modes.o \
	$(BUILD)/tests/simcuda/test_preload.o: CPPFLAGS += -Itests

TESTS += $(BUILD)/tests/simcuda/test_driver $(BUILD)/tests/simcuda/test_fault $(BUILD)/tests/simcuda/test_loader \
	$(BUILD)/tests/simcuda/test_alloc_modes \
	$(BUILD)/tests/simcuda/test_preload

# ---- launch tests: kernels from real nvcc fatbins (embedded), host code in
# test_launch.kern.so next to the executable (exec.mk's sim_kernel_lib), and
# a deliberately mismatched kernel library for the refusal tests.
SIMCUDA_KDIR := $(BUILD)/tests/simcuda/kernels
SIMCUDA_LAUNCH_OBJS := $(BUILD)/tests/simcuda/test_launch.o $(SIMCUDA_KDIR)/test_kernels.fatbin.o \
	$(SIMCUDA_KDIR)/test_mismatch_dev.fatbin.o

$(BUILD)/tests/simcuda/test_launch.o: CPPFLAGS += -Itests

$(BUILD)/tests/simcuda/test_launch: $(SIMCUDA_LAUNCH_OBJS) $(SIMCUDA_DIR)/libcuda.so \
		$(BUILD)/tests/simcuda/test_launch.kern.so $(BUILD)/tests/simcuda/test_mismatch.kern.so
	$(Q)$(CC) $(LDFLAGS) $(SIMCUDA_LAUNCH_OBJS) -o $@ -L$(SIMCUDA_DIR) -lcuda $(SIMCUDA_RPATH) -lpthread

# Their kernel libraries are made in exec.mk: the top Makefile includes this
# fragment before exec.mk, so sim_kernel_lib is not defined yet here.

TESTS += $(BUILD)/tests/simcuda/test_launch tests/simcuda/timeline.sh
