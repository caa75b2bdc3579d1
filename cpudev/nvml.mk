# SPDX-License-Identifier: MIT
#
# cpudev/nvml.mk - the CPU device's NVML stand-in (cpudev/nvml/nvml.c,
# docs/cpu-device.md "NVML"): $(BUILD)/cpudev/lib/libnvidia-ml.so.1 next to
# libcuda.so.1, as the driver installs them; only the nvml* names exported.
# Its test is cpudev/test_realrt.c (nvml_as_pytorch_asks).
SIMNVML_LIB := $(SIMCUDA_DIR)/libnvidia-ml.so.1
SIMNVML_OBJ := $(BUILD)/cpudev/nvml/nvml.o

$(SIMNVML_OBJ): CFLAGS += -fvisibility=hidden

$(SIMNVML_LIB): $(SIMNVML_OBJ)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) -shared -Wl,-soname,libnvidia-ml.so.1 -Wl,-z,defs -o $@ $(SIMNVML_OBJ)

BINS += $(SIMNVML_LIB)
