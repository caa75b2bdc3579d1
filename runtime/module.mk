# runtime/: what the hooks decide.  libddpcommon.a holds the pieces shared by
# libddp.so, the CPU device (tests/simcuda), ddprun and the tools.  Files are
# listed here by name (owner in brackets); a file that does not exist yet is
# skipped, so every listed file must compile whenever it exists.
RUNTIME_COMMON_SRCS := $(wildcard \
	runtime/ddp_log.c runtime/ddp_params.c runtime/ddp_dtype.c \
	runtime/ddp_fatbin.c runtime/ddp_cubin.c runtime/ddp_ptx.c runtime/ddp_demangle.c \
	runtime/ddp_rank.c runtime/ddp_shard.c runtime/ddp_shard_format.c \
	runtime/ddp_store_proto.c runtime/ddp_store_client.c)
RUNTIME_COMMON_OBJS = $(RUNTIME_COMMON_SRCS:%.c=$(BUILD)/%.o)
DDP_COMMON_LIB := $(BUILD)/lib/libddpcommon.a
# Libraries a user of libddpcommon.a links with.
DDP_COMMON_LIBS := -lelf -lzstd -llz4 -lstdc++ -lpthread -ldl

$(DDP_COMMON_LIB): $(RUNTIME_COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

BINS += $(DDP_COMMON_LIB)

# The element types (names, sizes, the averaging kernels): the kernels must
# vectorise at any -O level.
$(BUILD)/runtime/ddp_dtype.o: CFLAGS += -ftree-vectorize -fvect-cost-model=dynamic

# The collectives: compiled once, under $(BUILD)/runtime/, with libddp.so's
# flags (interpose/module.mk), and linked into libddp.so and the collectives'
# tests; not into libddpcommon.a.  Defined here, in the first fragment, so
# every other fragment may use the lists in its prerequisites.
DDP_COLL_SRCS := runtime/ddp_coll.c runtime/ddp_coll_host.c runtime/ddp_coll_nccl.c
DDP_COLL_OBJS = $(DDP_COLL_SRCS:%.c=$(BUILD)/%.o)
