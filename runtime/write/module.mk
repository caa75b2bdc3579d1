# SPDX-License-Identifier: MIT
#
# runtime/write/: write safety policy: each rank's private overlay of the file
# system (depends on base and port only).
$(eval $(call ddp_module,write,$(wildcard runtime/write/*.c)))
