# SPDX-License-Identifier: MIT
#
# runtime/track/: allocation table, kernel registry, launch decoder, inspector, exit summary.
$(eval $(call ddp_module,track,$(wildcard runtime/track/*.c)))
