# interpose/: libddp.so, the LD_PRELOAD library.
#
# Built from every interpose/*.c (the cu* hooks here, the file hooks of
# interpose/hook_file*.c / hook_write*.c), the runtime files listed below,
# the collectives (DDP_COLL_SRCS from runtime/module.mk: their tests link the
# same objects) and libddpcommon.a.  Compiled with -fvisibility=hidden and
# linked with --exclude-libs,ALL: only what is marked DDP_EXPORT (the hooked
# cu* symbols, dlsym, the file hooks) is exported.  -z defs makes a missing
# hand-written hook body a link error.
LIBDDP := $(BUILD)/lib/libddp.so
LIBDDP_RUNTIME_SRCS := runtime/ddp_alloc.c runtime/ddp_kreg.c runtime/ddp_launch.c \
	runtime/ddp_sig.c runtime/ddp_trace.c runtime/ddp_stats.c runtime/ddp_summary.c \
	runtime/ddp_inspect.c runtime/ddp_init.c \
	runtime/ddp_grad.c runtime/ddp_sync.c runtime/ddp_job.c runtime/ddp_status.c
LIBDDP_SRCS := $(sort $(wildcard interpose/*.c)) $(LIBDDP_RUNTIME_SRCS) $(DDP_COLL_SRCS)
LIBDDP_OBJS := $(LIBDDP_SRCS:%.c=$(BUILD)/%.o)
# Without ddprun (torchrun, srun, mpirun) rank 0 hosts the store itself
# (runtime/ddp_job.c): launcher/store_server.c, compiled again for the
# library (hidden symbols, like every object of it) in its own object.
LIBDDP_OBJS += $(BUILD)/interpose/store/store_server.o
$(BUILD)/interpose/store/store_server.o: launcher/store_server.c
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(CPPFLAGS) -Ilauncher $(CFLAGS) -c $< -o $@
$(BUILD)/runtime/ddp_job.o: CPPFLAGS += -Ilauncher
LIBDDP_HOOKS_H := $(BUILD)/interpose/hooks_sorted.h
# runtime/ddp_rank.c (rank from ddprun/torchrun/Slurm/MPI) when it exists.
LIBDDP_RANK_SRC := $(wildcard runtime/ddp_rank.c)

$(LIBDDP_OBJS): CPPFLAGS += -Iinterpose -I$(BUILD)/interpose $(if $(LIBDDP_RANK_SRC),-DDDP_HAVE_RANK)
$(LIBDDP_OBJS): CFLAGS += -fvisibility=hidden
$(LIBDDP_OBJS): $(LIBDDP_HOOKS_H)
$(BUILD)/runtime/ddp_init.o: $(LIBDDP_RANK_SRC)

$(LIBDDP_HOOKS_H): interpose/hooks.def interpose/gen_sorted.sh
	@mkdir -p $(dir $@)
	$(Q)sh interpose/gen_sorted.sh $< > $@.tmp && mv $@.tmp $@

$(LIBDDP): $(LIBDDP_OBJS) $(DDP_COMMON_LIB)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-z,defs -Wl,--exclude-libs,ALL $(LIBDDP_OBJS) \
		$(DDP_COMMON_LIB) -o $@ $(DDP_COMMON_LIBS)

BINS += $(LIBDDP)
# launcher/report.c and launcher/inspect.c (ddprun) need nothing from the
# library: report carries its own JSON reader, inspect runs the program.
