# SPDX-License-Identifier: MIT
#
# runtime/grad/: gradient identification (ddp_grad*), synchronisation (ddp_sync*),
# early reductions (ddp_overlap*); ddp_*_int.h list the files of each.
$(eval $(call ddp_module,grad,$(wildcard runtime/grad/*.c)))
