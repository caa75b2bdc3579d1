/* SPDX-License-Identifier: MIT
 *
 * launch.h - the pieces of ddprun (launcher/) and how they talk.
 *
 *   main.c       subcommand dispatch, the order of the steps below
 *   options.c    options.def -> struct launch_opts (command line + DDPRUN_*)
 *   devices.c    GPU detection (in a forked child) and per-rank devices
 *   spawn.c      per-rank environment, fork/exec with exec-failure detection
 *   output.c     the ranks' pipes -> prefixed whole lines, log files
 *   supervise.c  the event loop: exits, signals, failure handling, timeouts
 *   progress.c   the progress watch: --timeout, a rank that left while others wait
 *   guard.c      the guardian that kills the job's processes if ddprun is killed
 *   fallbacks.c  weak stand-ins for pieces other areas provide
 *
 * Contract: ddprun is single-threaded except for whatever the store server
 * runs inside itself; every function here is called from the main thread.
 */
#ifndef LAUNCH_H
#define LAUNCH_H

#include <stddef.h>
#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include "ddp_err.h"

#define DDPRUN_VERSION "0.1.0"

/* ---- options (options.c) ---- */
enum launch_opt_type {
	LOPT_INT,
	LOPT_STR,
	LOPT_ENUM,
	LOPT_FLAG,
	LOPT_COUNT,
	LOPT_LIST,
	LOPT_ACTION
};

struct launch_list {
	const char **v; /* values, in order given */
	int n;
};

enum launch_opt_id {
#define LAUNCH_OPT(field, lng, shrt, env, type, def, meta, lo, hi, help) LOPT_ID_##field,
#include "options.def"
#undef LAUNCH_OPT
	LOPT_COUNT_
};

#define LOPT_FIELD_INT long
#define LOPT_FIELD_STR const char *
#define LOPT_FIELD_ENUM int
#define LOPT_FIELD_FLAG int
#define LOPT_FIELD_COUNT int
#define LOPT_FIELD_LIST struct launch_list
#define LOPT_FIELD_ACTION int

struct launch_opts {
#define LAUNCH_OPT(field, lng, shrt, env, type, def, meta, lo, hi, help) LOPT_FIELD_##type field;
#include "options.def"
#undef LAUNCH_OPT
	unsigned char set[LOPT_COUNT_]; /* 1 env, 2 command line, 0 default */
	char **prog_argv;               /* PROGRAM ARGS..., NULL-terminated  */
};

enum {
	LAUNCH_DEVICE_AUTO,
	LAUNCH_DEVICE_GPU,
	LAUNCH_DEVICE_CPU
};
enum {
	LAUNCH_BACKEND_AUTO,
	LAUNCH_BACKEND_NCCL,
	LAUNCH_BACKEND_HOST
};

/* Fills o from defaults, DDPRUN_* and argv (argv[0] is "ddprun").  Prints one
 * `ddprun: ...` line per problem.  Returns DDP_ERR_INVALID on a bad option.
 * *action is set to LOPT_ID_help or LOPT_ID_version when one was asked for
 * (and -1 otherwise); the caller prints and exits. */
ddp_result launch_options_parse(int argc, char **argv, struct launch_opts *o, int *action);

/* -n auto|gpu|cpu before main.c counts them */
#define LAUNCH_NPROC_AUTO (-1L)
#define LAUNCH_NPROC_GPU (-2L)
#define LAUNCH_NPROC_CPU (-3L)
/* Applies options given in another option's terms (--rdzv-endpoint). */
ddp_result launch_options_resolve(struct launch_opts *o);

/* --signals-to-handle: "SIGTERM,SIGUSR1" (SIG optional, any case) into *out;
 * one `ddprun:` line and DDP_ERR_INVALID for a signal ddprun does not pass on. */
ddp_result launch_parse_signals(const char *list, sigset_t *out);

/* Frees what launch_options_parse allocated inside *o (its lists). */
void launch_options_free(struct launch_opts *o);
/* Cross-option checks (multi-node needs, list syntax, ...). */
ddp_result launch_options_validate(const struct launch_opts *o);
void launch_options_help(int fd);
/* The option table as --help lines, man page entries (.TP), a markdown
 * table, or the man page's examples: what tools/ddprun_doc_main.c writes
 * into docs/ddprun.1, docs/launcher.md and docs/configuration.md. */
enum launch_doc { LAUNCH_DOC_HELP, LAUNCH_DOC_MAN, LAUNCH_DOC_MD, LAUNCH_DOC_MAN_EXAMPLES };
void launch_options_doc(int fd, enum launch_doc fmt);

/* Parses "0,2-3" into a bitmap of n entries (1 = listed).  Values must be
 * < n.  Returns DDP_ERR_INVALID with a message naming `what` otherwise. */
ddp_result launch_parse_rank_list(const char *what, const char *s, int n, unsigned char *out);

/* ---- devices (devices.c) ---- */
struct launch_devices {
	int use_gpu;       /* 1: GPUs; 0: the CPU device                  */
	int ngpus;         /* GPUs in the list below                       */
	char **gpu_ids;    /* ids for CUDA_VISIBLE_DEVICES, one per GPU    */
	char *simcuda_dir; /* CPU device: dir holding libcuda.so.1         */
};
ddp_result launch_devices_plan(const struct launch_opts *o, const char *self_dir, int no_preload,
			       struct launch_devices *d /* OUT */);
/* Frees what launch_devices_plan allocated. */
void launch_devices_free(struct launch_devices *d);
/* Number of GPUs the driver sees (0 when none or no driver); never
 * initialises CUDA in this process. */
int launch_devices_detect(void);

/* ---- the job ---- */
struct launch_rank {
	int rank; /* global rank                          */
	int local_rank;
	pid_t pid;          /* 0 before start; also its pgid        */
	int running;        /* not yet reaped                       */
	int status;         /* wait status once reaped              */
	char comm[16];      /* its comm when it exited ("" unknown) */
	int alone;          /* exited 0 having run without libddp   */
	char **envp;        /* the rank's environment               */
	int env_first_set;  /* envp[env_first_set..]: set by ddprun */
	int out_fd, err_fd; /* our ends of its pipes (-1 closed)   */
};

struct launch_job {
	struct launch_opts *o;
	int nranks; /* ranks on this node            */
	int world_size;
	struct launch_rank *ranks;
	struct ddp_store_server *store; /* node 0 only                 */
	int port;                       /* the store's port (DDP_STORE_PORT) */
	int prog_port;                  /* MASTER_PORT: the program's own (torch.distributed) */
	const char *master_addr;
	char secret[65];
	char *self_dir; /* directory of the ddprun binary */
	char *preload;  /* libddp.so path, NULL if none  */
	struct launch_devices dev;
	char *write_dir;
	int write_said;        /* ddprun said the shared folders (notice.c): DDP_WRITE_SAID=1 */
	char *shard_files;     /* DDP_SHARD_FILES: the --shard files as checked at launch */
	double grace;          /* seconds between SIGTERM and SIGKILL (DDPRUN_GRACE) */
	sigset_t forward;      /* signals passed to the ranks (--signals-to-handle) */
	int restart_count;     /* this attempt (--max-restarts): TORCHELASTIC_RESTART_COUNT */
	int interrupted;       /* after launch_supervise: the stopping signal ddprun got, 0 */
	const char *run_id;    /* TORCHELASTIC_RUN_ID */
	double progress_every; /* seconds between progress lines (DDPRUN_PROGRESS; 0 off) */
	double stall_default;  /* without --timeout: a rank others wait for is named after
				   * this many seconds without progress (half DDP_COLL_TIMEOUT) */
	double start;          /* launch_now() when the ranks started */
	/* the status board (runtime/ddp_status.h): one slot per local rank */
	int status_fd; /* memfd, -1 when none                 */
	struct ddp_status_slot *status;
	/* the guardian (guard.c) and the job's marker variable */
	char job_marker[64]; /* "DDPRUN_JOB_ID=<pid>.<hex>"          */
	int guard_fd;        /* write end of its pipe, -1 when none */
	pid_t guard_pid;
};

/* guard.c: starts the guardian (before any thread); a warning and
 * DDP_ERR_SYS when it cannot. */
ddp_result launch_guard_start(struct launch_job *job);
/* Tells the guardian the job ended normally (it exits). */
void launch_guard_stop(struct launch_job *job);

/* progress.c: the status board (created before the ranks start). */
ddp_result launch_status_create(struct launch_job *job);
void launch_status_free(struct launch_job *job);
/* The rank that made no progress for `limit` seconds (global rank), or -1
 * (--timeout, or the default watch).  needs_waiter: name it only when a
 * running local rank waits for it inside a collective.  *why gets what it
 * was doing and who waits for it. */
int launch_progress_stuck(struct launch_job *job, double now, double limit, int needs_waiter, char *why,
			  size_t cap);
/* A local rank that exited (index `left`) while a running local rank waits
 * for it in a collective: returns 1 and describes the waiter in *why. */
int launch_progress_needed(struct launch_job *job, int left, char *why, size_t cap);
/* The same exit seen as a divergence: rank `left` ended at an earlier
 * optimizer step than the one the collective a running local rank waits in
 * belongs to, the same kind as its own last one (a rank that skipped a
 * whole step runs every collective paired with the others' next step's,
 * and only its end shows it).  Returns 1 and describes both sides in *why
 * (replacing launch_progress_needed's): collective number, kind and step
 * on each side. */
int launch_progress_fewer_steps(struct launch_job *job, int left, char *why, size_t cap);

/* Local rank li exited 0 (its comm in ranks[li].comm): did its last image
 * run without libddp.so (no image of the rank's own process marked the
 * board, or the last one that did is not the one that exited: a wrapper
 * such as env -i dropped LD_PRELOAD before exec)?  Only for jobs of more
 * than one rank with libddp preloaded. */
int launch_progress_without_libddp(struct launch_job *job, int li);

/* At the end of a job that exited 0: one warning per --shard spec no
 * process of any local rank opened a file of (the program read its data
 * elsewhere: every rank may have read the same). */
void launch_progress_shard_unopened(struct launch_job *job);

/* After every local rank exited 0: did they end at different optimizer
 * steps (each rank's last step as libddp counted it)?  Then one of them
 * skipped or added an update the others did not, and their weights
 * differ, even where no collective was left to show it (the last step,
 * the value checks off).  Returns 1 and names the lowest and highest rank
 * and step in *why. */
int launch_progress_unequal_end(struct launch_job *job, char *why, size_t cap);

/* Two running local ranks (not stopped) waiting inside collectives of
 * different kinds (an allreduce and a hash exchange): they can never meet (a
 * rank skipped or added a step, ranks run with different settings).  Each
 * board shows the lowest collective its rank is inside (overlapped
 * allreduces in flight included).  Each must have waited `settle` seconds
 * when the numbers are equal or the one further on finished the other's;
 * else (a board caught between an op's numbering and its entry)
 * `settle_unsure`.  Returns 1 and says which, with their steps and
 * collective numbers, in *why. */
int launch_progress_diverged(struct launch_job *job, double now, double settle, double settle_unsure,
			     char *why, size_t cap);

/* The progress line: steps/s, each local rank's step, the share of time in
 * collectives since the last line (nothing when no rank has a board slot). */
void launch_progress_report(struct launch_job *job, double now);
/* The end-of-job line: exit code, time, steps, collectives; why (may be
 * NULL) says what ended it. */
void launch_progress_end(struct launch_job *job, double now, int code, const char *why);

/* notice.c: says once, at start, which folders the ranks other than 0
 * write in place (DDP_REDIRECT_TMP=0, a shared working folder); sets
 * job->write_said when the ranks are to leave it to ddprun. */
void launch_write_notice(struct launch_job *job);

/* spawn.c */
ddp_result launch_build_env(struct launch_job *job);
/* Frees the ranks' environments (launch_build_env), before a restart. */
void launch_env_free(struct launch_job *job);
/* Frees what run() and launch_build_env allocated in *job (not the store). */
void launch_job_free(struct launch_job *job);
/* Prints the plan of --dry-run. */
void launch_print_plan(const struct launch_job *job);
/* Starts every rank.  On exec failure of any rank, prints
 * `ddprun: cannot run 'prog': reason`, kills the ones started and sets
 * *exit_code to 127 (not found) or 126; returns DDP_ERR_INVALID. */
ddp_result launch_spawn_all(struct launch_job *job, int *exit_code);

/* output.c */
ddp_result launch_output_init(const struct launch_job *job);
/* Reads what is available on fd (non-blocking) of local rank idx.  Returns
 * 0 at EOF or error (the caller closes fd), 1 when it would block, 2 when it
 * stopped early (more may be waiting: call again to drain). */
int launch_output_read(int idx, int is_err, int fd);
/* Flushes a partial last line of each stream and closes log files. */
void launch_output_finish(void);
/* Prints the last stderr lines of rank (at most 10) as ddprun messages. */
void launch_output_print_tail(int idx);
/* Everything ddprun writes to its stdout (fd 1) or stderr (fd 2) while a job
 * runs, launch_msg included: never blocks.  What the reader does not take
 * waits (16 MiB at most per stream); beyond that it is dropped and counted
 * (said once). */
void launch_term_write(int fd, const char *p, size_t n);
/* Tries to write what waits; puts in fds the descriptors that still hold
 * some (to poll for POLLOUT) and returns how many (0..2). */
int launch_term_pending(int fds[2]);
/* After the job: waits for the readers to take what is left (until a signal
 * arrives on sigfd, when sigfd >= 0) and says how much was dropped. */
void launch_term_finish(int sigfd);

/* supervise.c: runs the job until every rank and child is gone; returns
 * ddprun's exit code. */
int launch_supervise(struct launch_job *job, int sigfd);
/* Kills (SIGKILL) every started rank group and reaps all children. */
void launch_kill_all(struct launch_job *job);
double launch_now(void);

/* ddprun's own messages: "ddprun: ...\n" on stderr, one write. */
void launch_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- provided by other areas (weak fallbacks in fallbacks.c) ---- */
int launch_report_main(int argc, char **argv);
int launch_inspect_main(int argc, char **argv);

#include "ddp_store_server.h"

#endif /* LAUNCH_H */
