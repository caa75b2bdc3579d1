# tests/unit/shard.mk - unit tests of input sharding and rank info
# (runtime/ddp_shard*.c, runtime/base/ddp_rank.c).  Owner: sharding helper.
$(eval $(call unit_test,test_shard,tests/unit/test_shard.c,))
