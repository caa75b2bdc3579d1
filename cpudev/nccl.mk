# SPDX-License-Identifier: MIT
#
# cpudev/nccl.mk - the CPU device's NCCL stand-in (cpudev/nccl,
# docs/cpu-device.md "NCCL"): $(BUILD)/cpudev/lib/nccl/libnccl.so.2.
#
# In a directory of its own, NOT next to libcuda.so.1: ddprun puts that
# directory on the ranks' LD_LIBRARY_PATH, and a program that links NCCL
# itself must not get the stand-in by accident.  libddp loads it only when
# asked: DDP_NCCL_LIB=<path>, or `ddprun --device cpu --backend nccl`
# (launcher/spawn.c points DDP_NCCL_LIB at it when the variable is unset).
# Built when nccl.h is installed; only the nccl* names are exported.

ifneq ($(NCCL_INC),)
SIMNCCL_DIR := $(SIMCUDA_DIR)/nccl
SIMNCCL_LIB := $(SIMNCCL_DIR)/libnccl.so.2
SIMNCCL_OBJS := $(BUILD)/cpudev/nccl/nccl_api.o $(BUILD)/cpudev/nccl/nccl_run.o

$(SIMNCCL_OBJS): CFLAGS += -fvisibility=hidden

$(BUILD)/cpudev/nccl/libnccl.ver:
	@mkdir -p $(dir $@)
	$(Q)printf '{\n  global: nccl*;\n  local: *;\n};\n' > $@

$(SIMNCCL_LIB): $(SIMNCCL_OBJS) $(BUILD)/cpudev/nccl/libnccl.ver
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libnccl.so.2 -Wl,-z,defs \
		-Wl,--version-script,$(BUILD)/cpudev/nccl/libnccl.ver -o $@ $(SIMNCCL_OBJS) -ldl -lpthread -lrt

BINS += $(SIMNCCL_LIB)
endif
