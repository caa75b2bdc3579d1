# SPDX-License-Identifier: MIT
#
# runtime/grad/: gradient identification (ddp_grad) and synchronisation (ddp_sync).
$(eval $(call ddp_module,grad,$(wildcard runtime/grad/*.c)))
# TEMPORARY (until the port lands): ddp_sync.c still reaches the driver
# through interpose's HOOK_REAL.
$(BUILD)/runtime/grad/ddp_sync.o $(BUILD)/runtime/job/ddp_job.o: CPPFLAGS += -Iinterpose -I$(BUILD)/interpose
$(BUILD)/runtime/grad/ddp_sync.o $(BUILD)/runtime/job/ddp_job.o: $(BUILD)/interpose/hooks_sorted.h
