# SPDX-License-Identifier: MIT
#
# runtime/coll/: collectives: host shared memory and NCCL (loaded at run time).
$(eval $(call ddp_module,coll,$(wildcard runtime/coll/*.c)))
