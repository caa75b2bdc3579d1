# launcher/: ddprun.  Every launcher/*.c (ours, the store server, report,
# inspect) is linked into $(BUILD)/bin/ddprun with libddpcommon.a.
LAUNCHER_SRCS := $(wildcard launcher/*.c)
LAUNCHER_OBJS := $(LAUNCHER_SRCS:%.c=$(BUILD)/%.o)
DDPRUN := $(BUILD)/bin/ddprun

# --shard specs are checked before any rank starts when the runtime has the
# checker (runtime/ddp_shard*.c); until then the library checks them.
LAUNCH_HAVE_SHARD_CHECK := $(if $(shell grep -ls '^ddp_result ddp_shard_check_spec' $(filter runtime/ddp_shard%,$(RUNTIME_COMMON_SRCS)) 2>/dev/null),1,)
$(BUILD)/launcher/%.o: CPPFLAGS += -Ilauncher $(if $(LAUNCH_HAVE_SHARD_CHECK),-DLAUNCH_HAVE_SHARD_CHECK=1,)

$(DDPRUN): $(LAUNCHER_OBJS) $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $(LAUNCHER_OBJS) $(DDP_COMMON_LIB) -o $@ $(DDP_COMMON_LIBS)

BINS += $(DDPRUN)
# the checker's arrival (or change) rebuilds the option checks
$(BUILD)/launcher/options.o: $(filter runtime/ddp_shard%.c,$(RUNTIME_COMMON_SRCS))
