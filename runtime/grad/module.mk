# SPDX-License-Identifier: MIT
#
# runtime/grad/: gradient identification (ddp_grad) and synchronisation (ddp_sync).
$(eval $(call ddp_module,grad,$(wildcard runtime/grad/*.c)))
