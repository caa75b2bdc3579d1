# interpose/: libddp.so, the LD_PRELOAD library.
#
# Built from every interpose/*.c (the cu* hooks, the file hooks of
# interpose/hook_file*.c / hook_write.c, the start-up hook_init.c) and every
# runtime module's archive.  Compiled with -fvisibility=hidden and linked
# with --exclude-libs,ALL: only what is marked DDP_EXPORT (the hooked cu*
# symbols, dlsym, the file hooks) is exported.  -z defs makes a missing
# hand-written hook body a link error.
LIBDDP := $(BUILD)/lib/libddp.so
LIBDDP_SRCS := $(sort $(wildcard interpose/*.c))
LIBDDP_OBJS := $(LIBDDP_SRCS:%.c=$(BUILD)/%.o)
LIBDDP_HOOKS_H := $(BUILD)/interpose/hooks_sorted.h

$(LIBDDP_OBJS): CPPFLAGS += -Iinterpose -I$(BUILD)/interpose
$(LIBDDP_OBJS): CFLAGS += -fvisibility=hidden
$(LIBDDP_OBJS): $(LIBDDP_HOOKS_H)

$(LIBDDP_HOOKS_H): interpose/hooks.def interpose/gen_sorted.sh
	@mkdir -p $(dir $@)
	$(Q)sh interpose/gen_sorted.sh $< > $@.tmp && mv $@.tmp $@

$(LIBDDP): $(LIBDDP_OBJS) $(DDP_ALL_LIB_FILES)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-z,defs -Wl,--exclude-libs,ALL $(LIBDDP_OBJS) \
		$(DDP_ALL_LIBS) -o $@ $(DDP_COMMON_LIBS)

BINS += $(LIBDDP)
