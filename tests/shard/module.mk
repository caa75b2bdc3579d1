# tests/shard: input sharding and write safety end to end, with a preload
# library built from the file hooks alone (interpose/hook_file*.c,
# interpose/hook_write.c + libddpcommon.a), so these tests do not depend on
# the CUDA half of libddp.so.  Also: the ddp-shard-check tool and the
# "shard" fuzz target (tests/fuzz/shard).  Owner: sharding helper.

SHARD_HOOK_SRCS := $(wildcard interpose/hook_file.c interpose/hook_file_stat.c \
	interpose/hook_file_stdio.c interpose/hook_write.c)
SHARD_HOOK_OBJS := $(SHARD_HOOK_SRCS:interpose/%.c=$(BUILD)/tests/shard/obj/%.o)
SHARD_PRELOAD := $(BUILD)/tests/shard/libddp_files.so
SHARD_PROGS := $(addprefix $(BUILD)/tests/shard/,ckpt mmapsum stdio_read errno_keep)
SHARD_CHECK := $(BUILD)/bin/ddp-shard-check

$(BUILD)/tests/shard/obj/%.o: interpose/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -Iinterpose $(CFLAGS) -fvisibility=hidden -c $< -o $@

$(SHARD_PRELOAD): $(SHARD_HOOK_OBJS) $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,--exclude-libs,ALL -o $@ $(SHARD_HOOK_OBJS) \
		$(DDP_COMMON_LIB) -ldl -lpthread

$(BUILD)/tests/shard/%: tests/shard/progs/%.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< -o $@

$(SHARD_CHECK): $(BUILD)/tests/shard/progs/ddp_shard_check.o $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $^ -o $@ $(DDP_COMMON_LIBS)

BINS += $(SHARD_PRELOAD) $(SHARD_PROGS) $(SHARD_CHECK)
TESTS += tests/shard/test_shard_read.sh tests/shard/test_shard_check.sh \
	tests/shard/test_write_safety.sh tests/shard/test_errno.sh

$(eval $(call fuzz_target,shard,))
