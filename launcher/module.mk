# launcher/: ddprun.  Every launcher/*.c (ours, the store server, report,
# inspect) is linked into $(BUILD)/bin/ddprun with libddpcommon.a.
LAUNCHER_SRCS := $(wildcard launcher/*.c)
LAUNCHER_OBJS := $(LAUNCHER_SRCS:%.c=$(BUILD)/%.o)
DDPRUN := $(BUILD)/bin/ddprun

$(BUILD)/launcher/%.o: CPPFLAGS += -Ilauncher

$(DDPRUN): $(LAUNCHER_OBJS) $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $(LAUNCHER_OBJS) $(DDP_COMMON_LIB) -o $@ $(DDP_COMMON_LIBS)

BINS += $(DDPRUN)

# The command-line parser is outside input: fuzzed (tests/fuzz/cmdline).
$(BUILD)/tests/fuzz/cmdline/fuzz.o: CPPFLAGS += -Ilauncher
$(eval $(call fuzz_target,cmdline,launcher/options.c,-Ilauncher))
