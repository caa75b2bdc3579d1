# SPDX-License-Identifier: MIT
#
# runtime/job/: the job a rank joins: store connection, rank 0 hosting, communicator.
$(eval $(call ddp_module,job,$(wildcard runtime/job/*.c)))
