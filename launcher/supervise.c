/* SPDX-License-Identifier: MIT
 *
 * supervise.c - the event loop of a running job: output, exits, signals,
 * failure handling and the progress watch.
 *
 * One poll(2) over a signalfd (SIGCHLD and --signals-to-handle; blocked in
 * ddprun, unblocked in the ranks) and the ranks' pipes.  ddprun is a child
 * subreaper, so every descendant of a rank that outlives its parent becomes
 * ddprun's child; that is how no process of the job survives ddprun.
 *
 * Rules:
 *  - the first rank that exits non-zero or dies on a signal is reported
 *    (`rank k (pid p) exited with code c` / `killed by signal SIGx`, plus its
 *    last stderr lines); the others get SIGTERM in their process groups, then
 *    SIGKILL after the grace period (DDPRUN_GRACE seconds, default 30 as
 *    torchrun's);
 *    ddprun exits with that rank's code (128+N for signal N);
 *  - a rank that exits with code 0 while a running rank waits for it in a
 *    collective it never finished (progress.c) is named as the cause and the
 *    job stops the same way; ddprun exits 1;
 *  - SIGTERM/SIGHUP to ddprun: forwarded to every rank's group, then the same
 *    grace and SIGKILL; SIGINT: forwarded, then SIGTERM after the grace
 *    period if ranks are still running, then SIGKILL after another; a second
 *    SIGINT sends SIGKILL at once; ddprun then exits 128+signal;
 *  - SIGUSR1, SIGUSR2, SIGQUIT to ddprun: forwarded to every rank's group,
 *    the job goes on (the signals ddprun takes: --signals-to-handle, as
 *    torchrun; one left out ends ddprun, and the guardian ends the job);
 *  - --timeout SEC (node 0, which holds the store): the rank whose training
 *    progress stopped SEC seconds ago first (progress.c) is named, with where
 *    it stopped, and the job stops; exit 124;
 *  - without --timeout, a rank that another waits for inside a collective
 *    and that made no progress for half of DDP_COLL_TIMEOUT is named the
 *    same way (before the waiter's own timeout would blame the waiter),
 *    exit 1;
 *  - ranks that have waited 1.5 s in collectives of different kinds on the
 *    status board can never meet: both are named, exit 1;
 *  - when every rank is gone, remaining descendants (daemons, orphans) get
 *    SIGTERM, then SIGKILL, and are reaped until ddprun has no child;
 *  - a progress line every DDPRUN_PROGRESS seconds (default 10; not with
 *    --quiet) and one end-of-job line (progress.c).
 *
 * Contract: main thread only.  Signals are consumed only through sigfd.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "launch.h"

double launch_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const char *sig_name(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);
	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "signal %d", sig);
	return buf;
}

/* Sends sig to every rank's process group (also after the rank itself was
 * reaped: its group may live on in its children). */
static void signal_groups(struct launch_job *job, int sig)
{
	for (int i = 0; i < job->nranks; i++)
		if (job->ranks[i].pid > 0)
			kill(-job->ranks[i].pid, sig);
}

/* Sends sig to every direct child of ddprun that is not a running rank
 * (reparented orphans).  Returns how many it found. */
static int signal_orphans(struct launch_job *job, int sig)
{
	pid_t self = getpid();
	int found = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;

	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char path[300], buf[512];
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
		buf[n] = '\0';
		char *close_paren = strrchr(buf, ')');
		char state;
		int ppid;
		if (!close_paren || sscanf(close_paren + 1, " %c %d", &state, &ppid) != 2)
			continue;
		if (ppid != self)
			continue;
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid == job->guard_pid && job->guard_fd >= 0)
			continue; /* the guardian leaves when told (launch_guard_stop) */
		int is_rank = 0;
		for (int i = 0; i < job->nranks; i++)
			if (job->ranks[i].pid == pid && job->ranks[i].running)
				is_rank = 1;
		if (is_rank)
			continue;
		kill(pid, sig);
		found++;
	}
	closedir(d);
	return found;
}

static void close_fd(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* Reads everything a rank's pipes hold right now. */
static void drain_rank(struct launch_job *job, int i)
{
	struct launch_rank *r = &job->ranks[i];
	int *fds[2] = { &r->out_fd, &r->err_fd };
	for (int k = 0; k < 2; k++) {
		int rc = 2;
		for (int rounds = 0; *fds[k] >= 0 && rc == 2 && rounds < 64; rounds++)
			rc = launch_output_read(i, k, *fds[k]);
		if (rc == 0)
			close_fd(fds[k]);
	}
}

/* Reaps what has exited; SIGKILLs everything left once deadline passes.
 * Returns when ddprun has no child left or at give_up. */
static void reap_all_until(struct launch_job *job, double give_up)
{
	for (;;) {
		pid_t pid = waitpid(-1, NULL, WNOHANG);
		if (pid > 0) {
			for (int i = 0; i < job->nranks; i++)
				if (job->ranks[i].pid == pid)
					job->ranks[i].running = 0;
			continue;
		}
		if (pid < 0 && errno == ECHILD)
			return;
		if (launch_now() >= give_up)
			return;
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* After the ranks: no descendant survives.  SIGTERM, a short wait, then
 * SIGKILL until no child is left. */
static void sweep_descendants(struct launch_job *job, double grace)
{
	if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
		return;
	signal_groups(job, SIGTERM);
	signal_orphans(job, SIGTERM);
	reap_all_until(job, launch_now() + (grace < 1.0 ? grace : 1.0));
	for (int round = 0; round < 100; round++) {
		signal_groups(job, SIGKILL);
		signal_orphans(job, SIGKILL);
		reap_all_until(job, launch_now() + 0.05);
		if (waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD)
			return;
	}
	launch_msg("warning: some processes of the job could not be reaped");
}

void launch_kill_all(struct launch_job *job)
{
	launch_guard_stop(job); /* ddprun sweeps the job itself */
	signal_groups(job, SIGKILL);
	signal_orphans(job, SIGKILL);
	sweep_descendants(job, 0.0);
}

struct sup_state {
	int first_fail; /* local index of the first failed rank, -1 */
	int stopping;   /* SIGTERM sent, waiting for the deadline    */
	int killed;     /* SIGKILL sent                              */
	double deadline;
	int interrupted; /* signal that stopped ddprun, 0 if none     */
	int sigints;
	int timed_out;  /* 1: --timeout, 2: the default watch        */
	int broken;     /* ddprun itself failed while supervising    */
	double term_at; /* after an interrupt: when to send SIGTERM  */
	int left;       /* local index of a rank that left while needed, -1 */
	int fewer;      /* ... and it had run fewer steps than a waiter  */
	int diverged;   /* ranks waited in different collectives     */
	double next_hb_check;
	double next_progress; /* when the next progress line is due, 0 off */
};

static void begin_stop(struct launch_job *job, struct sup_state *st, int sig)
{
	if (!st->stopping) {
		st->stopping = 1;
		st->deadline = launch_now() + job->grace;
	}
	signal_groups(job, sig);
	if (sig == SIGTERM)
		signal_groups(job, SIGCONT); /* a stopped rank acts on it only when continued */
}

static void rank_exited(struct launch_job *job, struct sup_state *st, int i, int status)
{
	struct launch_rank *r = &job->ranks[i];
	char name[32];

	r->running = 0;
	r->status = status;
	drain_rank(job, i);
	int failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	if (failed && st->first_fail < 0 && !st->stopping && !st->interrupted) {
		st->first_fail = i;
		if (r->alone)
			launch_msg("rank %d (pid %d) exited 0, but its program (%s) ran without libddp.so: something "
				   "between ddprun and it cleared LD_PRELOAD (env -i, sudo, apptainer --cleanenv), "
				   "so it ran alone (nothing it did was sharded or synchronised); pass the environment through",
				   r->rank, (int)r->pid, r->comm[0] ? r->comm : "?");
		else if (WIFEXITED(status))
			launch_msg("rank %d (pid %d) exited with code %d", r->rank, (int)r->pid,
				   WEXITSTATUS(status));
		else
			launch_msg("rank %d (pid %d) killed by signal %s", r->rank, (int)r->pid,
				   sig_name(WTERMSIG(status), name, sizeof name));
		launch_output_print_tail(i);
		int alive = 0;
		for (int k = 0; k < job->nranks; k++)
			alive += job->ranks[k].running;
		if (alive)
			launch_msg("stopping the other %d rank%s (SIGTERM, SIGKILL after %.1f s: DDPRUN_GRACE)",
				   alive, alive == 1 ? "" : "s", job->grace);
		begin_stop(job, st, SIGTERM);
	} else if (st->interrupted && !st->stopping) {
		/* the others got the forwarded signal too: give them a moment to
		 * act on it before SIGTERM */
		double t = launch_now() + (job->grace < 1.0 ? job->grace : 1.0);
		if (st->term_at == 0 || t < st->term_at)
			st->term_at = t;
	}
}

static void check_left(struct launch_job *job, struct sup_state *st);

/* The comm of process pid (a zombie keeps it), "" when unreadable. */
static void read_comm(pid_t pid, char *out, size_t cap)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)pid);
	out[0] = 0;
	FILE *f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(out, (int)cap, f))
		out[strcspn(out, "\n")] = 0;
	fclose(f);
}

/* Every rank that has exited, the clean exits (code 0) first: a rank that
 * left while the others needed it makes them fail soon after, so before a
 * failure is named, a rank that left (in this pass or an earlier one whose
 * check_left found nobody waiting yet: the others had not reached the
 * collective) is the cause to name when a failing rank waits for it. */
static void reap(struct launch_job *job, struct sup_state *st)
{
	int status, n = 0, clean = 0;
	pid_t pid;
	struct {
		int i, status;
	} ex[64];
	siginfo_t si;
	while (n < 64) {
		/* peek first: a rank's comm (its last image's name) is read before
		 * it is reaped, to tell whether that image had libddp */
		memset(&si, 0, sizeof si);
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == 0)
			break;
		pid = si.si_pid;
		int li = -1;
		for (int i = 0; i < job->nranks; i++)
			if (job->ranks[i].pid == pid && job->ranks[i].running)
				li = i;
		if (li >= 0)
			read_comm(pid, job->ranks[li].comm, sizeof job->ranks[li].comm);
		if (waitpid(pid, &status, 0) != pid)
			break;
		if (li < 0)
			continue; /* a reparented orphan, now reaped */
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && launch_progress_without_libddp(job, li)) {
			job->ranks[li].alone = 1;
			status = 1 << 8; /* exit 1: it did less than the job says */
		}
		ex[n].i = li;
		ex[n++].status = status;
	}
	for (int k = 0; k < n; k++)
		if (WIFEXITED(ex[k].status) && WEXITSTATUS(ex[k].status) == 0) {
			rank_exited(job, st, ex[k].i, ex[k].status);
			clean++;
		}
	if (clean < n)
		check_left(job, st);
	for (int k = 0; k < n; k++)
		if (!(WIFEXITED(ex[k].status) && WEXITSTATUS(ex[k].status) == 0))
			rank_exited(job, st, ex[k].i, ex[k].status);
}

static void on_signal(struct launch_job *job, struct sup_state *st, int sig)
{
	char name[32];
	sig_name(sig, name, sizeof name);
	if (sig == SIGINT) {
		if (++st->sigints == 1) {
			st->interrupted = st->interrupted ? st->interrupted : sig;
			launch_msg("interrupted (%s); passing it to the ranks (SIGTERM after %.1f s, then "
				   "SIGKILL after as long: DDPRUN_GRACE; again to kill them at once)",
				   name, job->grace);
			signal_groups(job, SIGINT);
			/* ranks that ignore it get SIGTERM after the grace period,
			 * then SIGKILL after another */
			if (st->term_at == 0 && !st->stopping)
				st->term_at = launch_now() + job->grace;
		} else {
			launch_msg("second %s; killing the ranks", name);
			signal_groups(job, SIGKILL);
			signal_orphans(job, SIGKILL);
			st->stopping = st->killed = 1;
			st->deadline = launch_now();
		}
		return;
	}
	/* SIGUSR1, SIGUSR2, SIGQUIT: passed on, the job goes on (Slurm's
	 * preempt-and-checkpoint sends SIGUSR1); what the ranks do with it is
	 * theirs (a rank that dies of it is a failed rank) */
	if (sig != SIGTERM && sig != SIGHUP) {
		int alive = 0;
		for (int i = 0; i < job->nranks; i++)
			alive += job->ranks[i].running;
		launch_msg("got %s; passed it to the %d running rank%s", name, alive, alive == 1 ? "" : "s");
		signal_groups(job, sig);
		return;
	}
	/* the same signal again, already passed on: `timeout` sends SIGTERM to
	 * ddprun and then to its whole process group, ddprun included */
	if (st->interrupted == sig && st->stopping)
		return;
	st->interrupted = st->interrupted ? st->interrupted : sig;
	launch_msg("got %s; passing it to the ranks (SIGKILL after %.1f s: DDPRUN_GRACE)", name, job->grace);
	begin_stop(job, st, sig);
}

static void check_progress(struct launch_job *job, struct sup_state *st)
{
	const struct launch_opts *o = job->o;
	double now = launch_now();
	double limit = o->timeout ? (double)o->timeout : job->stall_default;
	char why[1200];

	if (limit <= 0 || !job->store || st->stopping || now < st->next_hb_check)
		return;
	st->next_hb_check = now + (limit < 4 ? 0.25 : 1.0);
	/* without --timeout only a rank others wait for is named: before the
	 * waiters' own collective timeout blames them (launch_job.stall_default) */
	int stuck = launch_progress_stuck(job, now, limit, !o->timeout, why, sizeof why);
	if (stuck < 0)
		return;
	launch_msg("rank %d made no progress for %.0f s%s; stopping the job%s", stuck, limit, why,
		   o->timeout ? ""
			      : " (no --timeout: the default, half of DDP_COLL_TIMEOUT, after which "
				"the waiting ranks would fail)");
	int li = stuck - job->ranks[0].rank;
	if (li >= 0 && li < job->nranks)
		launch_output_print_tail(li);
	st->timed_out = o->timeout ? 1 : 2;
	begin_stop(job, st, SIGTERM);
}

/* Ranks waiting in collectives of different kinds can never meet: stop
 * the job, naming them, instead of waiting for a timeout.  A rank that just
 * left a collective may still show it for a moment (longer on a loaded
 * machine), hence 1.5 s of settling; 10 s where the rank further on may
 * still have the other's collective in flight (overlap). */
#define DIVERGE_SETTLE_S 1.5
#define DIVERGE_SETTLE_UNSURE_S 10.0
static void check_diverged(struct launch_job *job, struct sup_state *st)
{
	char why[600];
	if (st->stopping || st->interrupted || st->first_fail >= 0 || !job->status)
		return;
	if (!launch_progress_diverged(job, launch_now(), DIVERGE_SETTLE_S, DIVERGE_SETTLE_UNSURE_S, why,
				      sizeof why))
		return;
	st->diverged = 1;
	launch_msg("the ranks reached different collectives and can never meet: %s; a rank skipped or "
		   "added a step, or the ranks run with different settings; stopping the job",
		   why);
	begin_stop(job, st, SIGTERM);
}

/* A rank that exited 0 while a running rank waits for it in a collective:
 * the job cannot go on; name the rank that left. */
static void check_left(struct launch_job *job, struct sup_state *st)
{
	char why[600];
	if (st->stopping || st->interrupted || st->first_fail >= 0 || !job->status)
		return;
	for (int i = 0; i < job->nranks; i++) {
		struct launch_rank *r = &job->ranks[i];
		if (r->running || r->pid <= 0)
			continue;
		if (!launch_progress_needed(job, i, why, sizeof why))
			continue;
		st->left = i;
		/* every collective paired up, but not the steps: say so */
		char steps[600];
		if (WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0 &&
		    launch_progress_fewer_steps(job, i, steps, sizeof steps)) {
			st->fewer = 1;
			snprintf(why, sizeof why, "%s", steps);
		}
		launch_msg("rank %d (pid %d) exited with code %d while the others still need it: %s; "
			   "stopping the job",
			   r->rank, (int)r->pid,
			   WIFEXITED(r->status) ? WEXITSTATUS(r->status) : 128 + WTERMSIG(r->status), why);
		launch_output_print_tail(i);
		begin_stop(job, st, SIGTERM);
		return;
	}
}

/* The progress line, at most every job->progress_every seconds. */
static void check_report(struct launch_job *job, struct sup_state *st)
{
	double now = launch_now();
	if (!st->next_progress || st->stopping || now < st->next_progress)
		return;
	launch_progress_report(job, now);
	st->next_progress = now + job->progress_every;
}

static int some_exited(const struct launch_job *job)
{
	for (int i = 0; i < job->nranks; i++)
		if (!job->ranks[i].running)
			return 1;
	return 0;
}

int launch_supervise(struct launch_job *job, int sigfd)
{
	struct sup_state st = { .first_fail = -1, .left = -1 };
	const struct launch_opts *o = job->o;
	/* --quiet and -r 3 hide the ranks' output, not ddprun's progress line:
	 * a long quiet job still says it is alive */
	if (job->progress_every > 0)
		st.next_progress = job->start + job->progress_every;
	size_t nfds = 2 * (size_t)job->nranks + 3;
	struct pollfd *pfd = calloc(nfds, sizeof *pfd);
	int *who = calloc(nfds, sizeof *who);
	int code = 0;

	if (!pfd || !who) {
		launch_msg("out of memory");
		launch_kill_all(job);
		free(pfd);
		free(who);
		return 1;
	}

	for (;;) {
		int alive = 0, n = 0;
		for (int i = 0; i < job->nranks; i++)
			alive += job->ranks[i].running;
		if (!alive)
			break;
		pfd[n].fd = sigfd;
		pfd[n].events = POLLIN;
		who[n++] = -1;
		for (int i = 0; i < job->nranks; i++) {
			if (job->ranks[i].out_fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = job->ranks[i].out_fd, .events = POLLIN };
				who[n++] = 2 * i;
			}
			if (job->ranks[i].err_fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = job->ranks[i].err_fd, .events = POLLIN };
				who[n++] = 2 * i + 1;
			}
		}
		/* ddprun's own stdout/stderr when output waits for their reader
		 * (output.c never blocks on them) */
		int term[2], nterm = launch_term_pending(term);
		for (int k = 0; k < nterm; k++) {
			pfd[n] = (struct pollfd){ .fd = term[k], .events = POLLOUT };
			who[n++] = -2;
		}
		int ms = -1;
		if (st.stopping && !st.killed) {
			double left = st.deadline - launch_now();
			ms = left <= 0 ? 0 : (int)(left * 1000) + 1;
		} else if (st.killed) {
			ms = 100;
		}
		if (st.term_at > 0 && !st.stopping) {
			double left = st.term_at - launch_now();
			int t = left <= 0 ? 0 : (int)(left * 1000) + 1;
			if (ms < 0 || ms > t)
				ms = t;
		}
		if ((job->o->timeout || job->stall_default > 0) && job->store && !st.stopping) {
			double lim = job->o->timeout ? (double)job->o->timeout : job->stall_default;
			int hb_ms = lim < 4 ? 250 : 1000;
			if (ms < 0 || ms > hb_ms)
				ms = hb_ms;
		}
		if (job->status && !st.stopping && (ms < 0 || ms > 250))
			ms = 250; /* watch for ranks in different collectives */
		if (job->status && !st.stopping && some_exited(job) && (ms < 0 || ms > 200))
			ms = 200; /* watch for ranks waiting on one that left */
		if (st.next_progress && !st.stopping) {
			double left = st.next_progress - launch_now();
			int t = left <= 0 ? 0 : (int)(left * 1000) + 1;
			if (ms < 0 || ms > t)
				ms = t;
		}
		int ready = poll(pfd, (nfds_t)n, ms);
		if (ready < 0 && errno != EINTR) {
			launch_msg("poll failed: %s; stopping the job", strerror(errno));
			st.broken = 1; /* the ranks are killed below: never exit 0 */
			break;
		}
		for (int k = 0; ready > 0 && k < n; k++) {
			if (!pfd[k].revents || who[k] == -2)
				continue; /* -2: written at the next launch_term_pending */
			if (who[k] < 0) {
				struct signalfd_siginfo si;
				while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si) {
					if (si.ssi_signo == SIGCHLD)
						continue;
					on_signal(job, &st, (int)si.ssi_signo);
				}
				continue;
			}
			int i = who[k] / 2, is_err = who[k] % 2;
			int *fd = is_err ? &job->ranks[i].err_fd : &job->ranks[i].out_fd;
			if (*fd >= 0 && launch_output_read(i, is_err, *fd) == 0)
				close_fd(fd);
		}
		reap(job, &st);
		if (st.term_at > 0 && !st.stopping && launch_now() >= st.term_at) {
			int left = 0;
			for (int i = 0; i < job->nranks; i++)
				left += job->ranks[i].running;
			if (left && st.sigints == 1)
				launch_msg("%d rank%s still running after SIGINT; sending SIGTERM (SIGKILL after "
					   "%.1f s: DDPRUN_GRACE)",
					   left, left == 1 ? "" : "s", job->grace);
			begin_stop(job, &st, SIGTERM);
		}
		if (st.stopping && !st.killed && launch_now() >= st.deadline) {
			int left = 0;
			for (int i = 0; i < job->nranks; i++)
				left += job->ranks[i].running;
			if (left)
				launch_msg("%d rank%s still running after %.1f s; sending SIGKILL", left,
					   left == 1 ? "" : "s", job->grace);
			signal_groups(job, SIGKILL);
			signal_orphans(job, SIGKILL);
			st.killed = 1;
		}
		check_progress(job, &st);
		check_left(job, &st);
		check_diverged(job, &st);
		check_report(job, &st);
	}

	/* every rank is gone: what is left of the job goes too (the guardian
	 * leaves: ddprun sweeps itself) */
	launch_guard_stop(job);
	for (int i = 0; i < job->nranks; i++)
		drain_rank(job, i);
	sweep_descendants(job, st.killed ? 0.0 : job->grace);
	for (int i = 0; i < job->nranks; i++) {
		drain_rank(job, i);
		close_fd(&job->ranks[i].out_fd);
		close_fd(&job->ranks[i].err_fd);
	}
	launch_output_finish();

	if (st.first_fail >= 0) {
		int s = job->ranks[st.first_fail].status;
		code = WIFEXITED(s) ? WEXITSTATUS(s) : 128 + WTERMSIG(s);
	} else if (st.left >= 0) {
		int s = job->ranks[st.left].status;
		code = WIFEXITED(s) && WEXITSTATUS(s) ? WEXITSTATUS(s) : 1;
	} else if (st.diverged) {
		code = 1;
	} else if (st.timed_out) {
		code = st.timed_out == 1 ? 124 : 1; /* 124: the --timeout the user set */
	} else if (st.interrupted) {
		code = 128 + st.interrupted;
	} else if (st.broken) {
		code = 1;
	}
	if (!code)
		launch_progress_shard_unopened(job);
	char unequal[300] = "";
	if (!code && job->nranks > 1 && launch_progress_unequal_end(job, unequal, sizeof unequal)) {
		launch_msg("the ranks ended at different steps: %s; the job fails", unequal);
		code = 1;
	}
	char why[96] = "", sig[32];
	if (st.first_fail >= 0) {
		const struct launch_rank *r = &job->ranks[st.first_fail];
		if (r->alone)
			snprintf(why, sizeof why, "rank %d ran without libddp.so", r->rank);
		else if (WIFEXITED(r->status))
			snprintf(why, sizeof why, "rank %d exited with code %d", r->rank,
				 WEXITSTATUS(r->status));
		else
			snprintf(why, sizeof why, "rank %d killed by %s", r->rank,
				 sig_name(WTERMSIG(r->status), sig, sizeof sig));
	} else if (st.left >= 0 && st.fewer) {
		snprintf(why, sizeof why, "rank %d ran fewer optimizer steps than the others",
			 job->ranks[st.left].rank);
	} else if (st.left >= 0) {
		snprintf(why, sizeof why, "rank %d left while the others needed it", job->ranks[st.left].rank);
	} else if (st.diverged) {
		snprintf(why, sizeof why, "the ranks reached different collectives");
	} else if (st.timed_out && o->timeout) {
		snprintf(why, sizeof why, "stopped by --timeout %ld", o->timeout);
	} else if (st.timed_out) {
		snprintf(why, sizeof why, "a rank made no progress while the others waited for it");
	} else if (st.interrupted) {
		snprintf(why, sizeof why, "ddprun got %s", sig_name(st.interrupted, sig, sizeof sig));
	} else if (unequal[0]) {
		snprintf(why, sizeof why, "the ranks ended at different optimizer steps");
	}
	job->interrupted = st.interrupted;
	launch_progress_end(job, launch_now(), code, why);
	free(pfd);
	free(who);
	return code;
}
