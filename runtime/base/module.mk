# SPDX-License-Identifier: MIT
#
# runtime/base/: errors, logs, settings (params.def), element types, per-thread counters, traces, rank.
$(eval $(call ddp_module,base,$(wildcard runtime/base/*.c)))

# The averaging kernels must vectorise at any -O level.
$(BUILD)/runtime/base/ddp_dtype.o: CFLAGS += -ftree-vectorize -fvect-cost-model=dynamic
