# launcher/: ddprun.  Every launcher/*.c (command line, spawning, output,
# supervision, report, inspect) is linked into $(BUILD)/bin/ddprun with the
# common runtime modules (the store server among them: runtime/store), and
# jansson (`ddprun report` reads the ranks' JSON with it).
LAUNCHER_SRCS := $(wildcard launcher/*.c)
LAUNCHER_OBJS := $(LAUNCHER_SRCS:%.c=$(BUILD)/%.o)
DDPRUN := $(BUILD)/bin/ddprun

$(BUILD)/launcher/%.o: CPPFLAGS += -Ilauncher

$(DDPRUN): $(LAUNCHER_OBJS) $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(LDFLAGS) $(LAUNCHER_OBJS) $(DDP_COMMON_LIB) -o $@ $(DDP_COMMON_LIBS) -ljansson

BINS += $(DDPRUN)

# The command-line parser is outside input: fuzzed (tests/fuzz/cmdline).
$(BUILD)/tests/fuzz/cmdline/fuzz.o: CPPFLAGS += -Ilauncher
$(eval $(call fuzz_target,cmdline,launcher/options.c,-Ilauncher))
