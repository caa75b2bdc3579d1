# runtime/: what the hooks decide.  libddpcommon.a holds the pieces shared by
# libddp.so, the CPU device (tests/simcuda), ddprun and the tools.
RUNTIME_COMMON_SRCS := runtime/ddp_log.c runtime/ddp_params.c
RUNTIME_COMMON_OBJS := $(RUNTIME_COMMON_SRCS:%.c=$(BUILD)/%.o)
DDP_COMMON_LIB := $(BUILD)/lib/libddpcommon.a
# Libraries a user of libddpcommon.a links with.
DDP_COMMON_LIBS := -lelf -lzstd -llz4 -lstdc++ -lpthread -ldl

$(DDP_COMMON_LIB): $(RUNTIME_COMMON_OBJS)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

BINS += $(DDP_COMMON_LIB)
