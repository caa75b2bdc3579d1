# tests/shard: input sharding and write safety end to end, with libddp.so
# preloaded into programs that make no CUDA call (its driver stage never
# runs: interpose/hook_init.c).  Also: the ddp-shard-check tool and the
# "shard" fuzz target (tests/fuzz/shard).  Owner: sharding helper.

SHARD_PRELOAD := $(LIBDDP)
SHARD_PROGS := $(addprefix $(BUILD)/tests/shard/,ckpt mmapsum stdio_read errno_keep overlay spawn_read ifstream_read)
SHARD_CHECK := $(BUILD)/bin/ddp-shard-check

$(BUILD)/tests/shard/%: tests/shard/progs/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< -o $@

# a C++ reader built as C++ trainers are (g++, libstdc++'s std::ifstream)
$(BUILD)/tests/shard/ifstream_read: tests/shard/progs/ifstream_read.cc
	@mkdir -p $(dir $@)
	$(Q)$(CXX) $(CPPFLAGS) $(CXXFLAGS) $(LDFLAGS) $< -o $@

$(SHARD_CHECK): $(BUILD)/tests/shard/progs/ddp_shard_check.o $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS)

BINS += $(SHARD_PROGS) $(SHARD_CHECK)
TESTS += tests/shard/test_shard_read.sh tests/shard/test_shard_check.sh \
	tests/shard/test_write_safety.sh tests/shard/test_write_failclosed.sh tests/shard/test_errno.sh \
	tests/shard/test_write_overlay.sh tests/shard/test_shard_children.sh tests/shard/test_write_private.sh \
	tests/shard/test_shard_readers.sh tests/shard/test_shard_launch.sh tests/shard/test_write_unix.sh

$(eval $(call fuzz_target,shard,))
$(eval $(call fuzz_target,write_path,))
