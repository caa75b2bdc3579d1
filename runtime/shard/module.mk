# SPDX-License-Identifier: MIT
#
# runtime/shard/: input sharding: record formats and per-rank views.
$(eval $(call ddp_module,shard,$(wildcard runtime/shard/*.c)))
