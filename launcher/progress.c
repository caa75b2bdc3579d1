/* SPDX-License-Identifier: MIT
 *
 * progress.c - what ddprun knows of each rank's training progress, and the
 * two judgements made from it (supervise.c acts on them):
 *
 *  - --timeout SEC: a running rank whose last training progress (a kernel
 *    launch, an optimizer step, entering a collective) is SEC seconds old is
 *    stuck.  Ranks waiting inside one of libddp's collectives wait for the
 *    others: of the stuck ranks outside a collective, the one that stopped
 *    first is named; while a rank outside a collective still progresses,
 *    the waiters are left alone; when every running rank is stuck inside a
 *    collective, the one in the earliest collective (then the last to enter
 *    it) is named.  Progress is judged per rank
 *    against wall time: a rank spinning in its main thread, blocked in
 *    read(), stopped, or stuck inside a collective is caught although its
 *    heartbeat thread may still post.  A rank that never progressed counts
 *    from the job's start, once any rank has progressed (a rank hung before
 *    its first CUDA call); while no rank has, nobody is judged (a program
 *    that never reaches the driver).
 *    Without --timeout the same judgement runs with half of
 *    DDP_COLL_TIMEOUT, but names only a rank outside a collective that a
 *    running rank waits for.
 *  - two running ranks that each waited a while in collectives of
 *    different kinds can never meet (the same kind under different numbers
 *    is also what allreduces in flight, or a frozen rank, look like).
 *  - a rank that exited, with any code, while a running rank waits for it in
 *    a collective it never finished (or at the first rendezvous) stops the
 *    job at once, naming the rank that left.
 * And what is said about it: the progress line (at most every 10 s, on
 * ddprun's stderr, unless --quiet: steps/s and the step of each rank, the
 * share of time in collectives) and the end-of-job line.
 *
 * Sources: for local ranks, the status board (runtime/ddp_status.h), a
 * memfd that every rank's libddp writes (exact times, step, collective);
 * for ranks without a board slot (other nodes, programs posting heartbeats
 * with the store client directly), the store's per-rank heartbeat counter
 * and the time it last changed (node 0 only).
 *
 * Contract: main thread.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "ddp_status.h"
#include "launch.h"

ddp_result launch_status_create(struct launch_job *job)
{
	size_t len = (size_t)job->nranks * DDP_STATUS_SLOT_BYTES;
	long page = sysconf(_SC_PAGESIZE);
	len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
	job->status = NULL;
	job->status_fd = memfd_create("ddprun-status", MFD_CLOEXEC);
	if (job->status_fd < 0 || ftruncate(job->status_fd, (off_t)len) != 0)
		goto fail;
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, job->status_fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	job->status = p;
	return DDP_OK;
fail:
	launch_msg("warning: no status board (%s): --timeout and the watch for ranks that leave "
		   "early see less",
		   strerror(errno));
	if (job->status_fd >= 0)
		close(job->status_fd);
	job->status_fd = -1;
	return DDP_ERR_SYS;
}

void launch_status_free(struct launch_job *job)
{
	if (job->status) {
		size_t len = (size_t)job->nranks * DDP_STATUS_SLOT_BYTES;
		long page = sysconf(_SC_PAGESIZE);
		len = (len + (size_t)page - 1) / (size_t)page * (size_t)page;
		munmap(job->status, len);
		job->status = NULL;
	}
	if (job->status_fd >= 0)
		close(job->status_fd);
	job->status_fd = -1;
}

/* Local rank li's slot, when its libddp attached; else NULL. */
static struct ddp_status_slot *slot_of(struct launch_job *job, int li)
{
	if (!job->status || li < 0 || li >= job->nranks)
		return NULL;
	struct ddp_status_slot *s = &job->status[li];
	return DDP_STATUS_LOAD(s->magic) == DDP_STATUS_MAGIC ? s : NULL;
}

static int any_attached(struct launch_job *job)
{
	for (int i = 0; i < job->nranks; i++)
		if (slot_of(job, i))
			return 1;
	return 0;
}

static double ns_to_s(uint64_t ns)
{
	return (double)ns * 1e-9;
}

/* Appends what local rank li is doing to buf. */
static void describe(struct launch_job *job, int li, double now, char *buf, size_t cap)
{
	struct ddp_status_slot *s = slot_of(job, li);
	size_t o = strlen(buf);
	if (!s) {
		if (any_attached(job))
			snprintf(buf + o, cap - o, "it never reached its first CUDA call");
		return;
	}
	uint64_t step = DDP_STATUS_LOAD(s->step), in = DDP_STATUS_LOAD(s->coll_in);
	uint64_t done = DDP_STATUS_LOAD(s->coll_done);
	char name[sizeof s->coll_name + 1];
	for (size_t i = 0; i < sizeof s->coll_name; i++)
		name[i] = __atomic_load_n(&s->coll_name[i], __ATOMIC_RELAXED);
	name[sizeof s->coll_name] = '\0';
	if (step)
		o += (size_t)snprintf(buf + o, cap - o, "at step %llu, ", (unsigned long long)step);
	else
		o += (size_t)snprintf(buf + o, cap - o, "before its first optimizer step, ");
	if (o >= cap)
		return;
	if (in)
		snprintf(buf + o, cap - o, "inside collective #%llu (%s) for %.1f s", (unsigned long long)in,
			 name, now - ns_to_s(DDP_STATUS_LOAD(s->coll_since_ns)));
	else
		snprintf(buf + o, cap - o, "%llu collective%s done, not inside one", (unsigned long long)done,
			 done == 1 ? "" : "s");
}

/* Appends "rank j waits in collective #n (name)" for each running local
 * rank inside a collective numbered above `above` (at most 3 named). */
static int describe_waiters(struct launch_job *job, int skip, uint64_t above, char *buf, size_t cap)
{
	int n = 0;
	for (int j = 0; j < job->nranks; j++) {
		struct ddp_status_slot *s = slot_of(job, j);
		if (j == skip || !s || !job->ranks[j].running)
			continue;
		uint64_t in = DDP_STATUS_LOAD(s->coll_in);
		if (!in || in <= above)
			continue;
		size_t o = strlen(buf);
		if (n < 3) {
			char name[sizeof s->coll_name + 1];
			for (size_t i = 0; i < sizeof s->coll_name; i++)
				name[i] = __atomic_load_n(&s->coll_name[i], __ATOMIC_RELAXED);
			name[sizeof s->coll_name] = '\0';
			snprintf(buf + o, cap - o, "%srank %d waits in collective #%llu (%s)", n ? ", " : "",
				 job->ranks[j].rank, (unsigned long long)in, name);
		} else if (n == 3) {
			snprintf(buf + o, cap - o, ", ...");
		}
		n++;
	}
	return n;
}

int launch_progress_stuck(struct launch_job *job, double now, double limit, int needs_waiter, char *why,
			  size_t cap)
{
	int world = job->world_size, base = job->ranks[0].rank, any_seen = 0, busy = 0;
	int out_pick = -1, in_pick = -1;
	double timeout = limit, out_last = 0, in_last = 0;
	uint64_t in_seq = 0;

	why[0] = '\0';
	double *last = malloc(sizeof *last * (size_t)world);
	if (!last)
		return -1;
	for (int g = 0; g < world; g++) {
		struct ddp_status_slot *s = slot_of(job, g - base);
		last[g] = -1;
		if (s && DDP_STATUS_LOAD(s->progress) > 0) {
			last[g] = ns_to_s(DDP_STATUS_LOAD(s->last_ns));
		} else if (job->store) {
			uint64_t c;
			double age;
			if (ddp_store_server_progress(job->store, g, &c, &age) == DDP_OK && age >= 0)
				last[g] = now - age;
		}
		if (last[g] >= 0)
			any_seen = 1;
	}
	for (int g = 0; any_seen && g < world; g++) {
		int li = g - base;
		if (li >= 0 && li < job->nranks && !job->ranks[li].running)
			continue; /* finished here */
		struct ddp_status_slot *s = slot_of(job, li);
		uint64_t in = s ? DDP_STATUS_LOAD(s->coll_in) : 0;
		double l = last[g] >= 0 ? last[g] : job->start;
		int stalled = now - l >= timeout;
		if (!in && !stalled)
			busy = 1;
		if (!stalled)
			continue;
		if (!in && (out_pick < 0 || l < out_last)) {
			out_pick = g; /* stopped outside a collective: first one */
			out_last = l;
		} else if (in && (in_pick < 0 || in < in_seq || (in == in_seq && l > in_last))) {
			in_pick = g; /* all inside collectives: the one furthest behind */
			in_seq = in;
			in_last = l;
		}
	}
	free(last);
	/* ranks waiting inside a collective wait for the others: a rank that
	 * stopped outside one is the cause; while one still progresses outside
	 * a collective, the waiters are merely waiting for it */
	int stuck = out_pick >= 0 ? out_pick : busy ? -1 : in_pick;
	if (stuck < 0)
		return -1;
	int li = stuck - base;
	if (needs_waiter) {
		/* the default watch: only a rank outside a collective that a running
		 * local rank waits for in one */
		char tmp[8] = "";
		if (stuck != out_pick || describe_waiters(job, li, 0, tmp, sizeof tmp) == 0)
			return -1;
	}
	if (li >= 0 && li < job->nranks && any_attached(job)) {
		char what[512] = "", waiters[512] = "";
		describe(job, li, now, what, sizeof what);
		describe_waiters(job, li, 0, waiters, sizeof waiters);
		if (what[0] || waiters[0])
			snprintf(why, cap, " (%s%s%s)", what, what[0] && waiters[0] ? "; " : "", waiters);
	}
	return stuck;
}

/* Copies the collective name of slot s. */
static void coll_name(struct ddp_status_slot *s, char *name /* sizeof s->coll_name + 1 */)
{
	for (size_t i = 0; i < sizeof s->coll_name; i++)
		name[i] = __atomic_load_n(&s->coll_name[i], __ATOMIC_RELAXED);
	name[sizeof s->coll_name] = '\0';
}

/* Is process pid stopped (SIGSTOP, a debugger)?  Such a rank is frozen,
 * not waiting: whatever it shows is not where it will go next. */
static int is_stopped(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	return p && (p[2] == 'T' || p[2] == 't');
}

int launch_progress_diverged(struct launch_job *job, double now, double settle, double settle_unsure,
			     char *why, size_t cap)
{
	int first = -1;
	uint64_t first_in = 0, first_done = 0;
	char first_name[40], name[40];

	why[0] = '\0';
	for (int i = 0; i < job->nranks; i++) {
		struct ddp_status_slot *s = slot_of(job, i);
		if (!s || !job->ranks[i].running)
			continue;
		uint64_t in = DDP_STATUS_LOAD(s->coll_in), since = DDP_STATUS_LOAD(s->coll_since_ns);
		if (!in || !since || now - ns_to_s(since) < settle || is_stopped(job->ranks[i].pid))
			continue; /* not waiting, or not for long (it may still be on its way), or frozen */
		coll_name(s, name);
		uint64_t done = DDP_STATUS_LOAD(s->coll_done);
		if (first < 0) {
			first = i;
			first_in = in;
			first_done = done;
			memcpy(first_name, name, sizeof name);
			continue;
		}
		/* Proof that they can never meet: other kinds, and either the same
		 * number or the one further on has finished the collective the
		 * other waits in.  The same kind under another number is also what
		 * allreduces in flight, or a rank frozen inside one whose data went
		 * out, look like; and a rank whose board shows a collective entered
		 * on its main thread may still have an earlier one in flight (not
		 * finished) that the other waits for. */
		if (strcmp(name, first_name) == 0)
			continue;
		double waited = now - ns_to_s(since),
		       first_waited = now - ns_to_s(DDP_STATUS_LOAD(slot_of(job, first)->coll_since_ns));
		double need = settle;
		if (in != first_in && !(in > first_in ? done >= first_in : first_done >= in))
			need = settle_unsure; /* maybe an earlier one in flight: wait longer */
		if (waited < need || first_waited < need)
			continue;
		struct ddp_status_slot *f = slot_of(job, first);
		snprintf(why, cap,
			 "rank %d (step %llu) waits in collective #%llu (%s) and rank %d (step %llu) "
			 "in collective #%llu (%s), each for %.1f s or more",
			 job->ranks[first].rank, (unsigned long long)DDP_STATUS_LOAD(f->step),
			 (unsigned long long)first_in, first_name, job->ranks[i].rank,
			 (unsigned long long)DDP_STATUS_LOAD(s->step), (unsigned long long)in, name, need);
		return 1;
	}
	return 0;
}

int launch_progress_needed(struct launch_job *job, int left, char *why, size_t cap)
{
	struct ddp_status_slot *s = slot_of(job, left);
	/* what it finished; a rank that died inside collective n never finished n */
	uint64_t done = s ? DDP_STATUS_LOAD(s->coll_done) : 0;
	why[0] = '\0';
	return describe_waiters(job, left, done, why, cap) > 0;
}

int launch_progress_fewer_steps(struct launch_job *job, int left, char *why, size_t cap)
{
	struct ddp_status_slot *s = slot_of(job, left);
	char name[40], wname[40];
	why[0] = '\0';
	if (!s)
		return 0;
	/* the left rank's last step against the step the waiter's collective
	 * belongs to (numbered in program order: with overlap an allreduce
	 * starts before its step's update phase is marked) */
	uint64_t done = DDP_STATUS_LOAD(s->coll_done), dstep = DDP_STATUS_LOAD(s->done_step);
	uint64_t step = DDP_STATUS_LOAD(s->step);
	for (int j = 0; j < job->nranks; j++) {
		struct ddp_status_slot *w = slot_of(job, j);
		if (j == left || !w || !job->ranks[j].running)
			continue;
		uint64_t in = DDP_STATUS_LOAD(w->coll_in), istep = DDP_STATUS_LOAD(w->coll_in_step);
		if (!in || in <= done || !done || istep <= step)
			continue;
		for (size_t i = 0; i < sizeof s->done_name; i++)
			name[i] = __atomic_load_n(&s->done_name[i], __ATOMIC_RELAXED);
		name[sizeof s->done_name] = '\0';
		coll_name(w, wname);
		if (strcmp(name, wname) != 0)
			continue; /* another kind: the plain "left while needed" */
		snprintf(why, cap,
			 "rank %d waits in collective #%llu (%s of step %llu); rank %d ended at step %llu, "
			 "its last collective #%llu (%s of step %llu): the ranks ran different numbers of "
			 "optimizer steps (a rank skipped or added a step, or ended early)",
			 job->ranks[j].rank, (unsigned long long)in, wname, (unsigned long long)istep,
			 job->ranks[left].rank, (unsigned long long)step, (unsigned long long)done,
			 name[0] ? name : "?", (unsigned long long)dstep);
		return 1;
	}
	return 0;
}

int launch_progress_unequal_end(struct launch_job *job, char *why, size_t cap)
{
	int lo = -1, hi = -1;
	uint64_t slo = 0, shi = 0;
	why[0] = '\0';
	for (int i = 0; i < job->nranks; i++) {
		struct ddp_status_slot *s = slot_of(job, i);
		if (!s)
			return 0; /* a rank never attached: nothing to compare */
		uint64_t step = DDP_STATUS_LOAD(s->step);
		if (lo < 0 || step < slo)
			lo = i, slo = step;
		if (hi < 0 || step > shi)
			hi = i, shi = step;
	}
	if (lo < 0 || slo == shi)
		return 0;
	snprintf(why, cap,
		 "rank %d ended at optimizer step %llu and rank %d at step %llu: a rank skipped or added an update "
		 "the others did not, so their weights differ",
		 job->ranks[lo].rank, (unsigned long long)slo, job->ranks[hi].rank, (unsigned long long)shi);
	return 1;
}

int launch_progress_without_libddp(struct launch_job *job, int li)
{
	if (!job->status || !job->preload || job->world_size <= 1 || li < 0 || li >= job->nranks)
		return 0;
	const struct ddp_status_slot *s = &job->status[li];
	const struct launch_rank *r = &job->ranks[li];
	if (DDP_STATUS_LOAD(s->image_pid) != (int32_t)r->pid)
		return 1;
	return r->comm[0] && strncmp(s->image_comm, r->comm, sizeof r->comm - 1) != 0;
}

void launch_progress_shard_unopened(struct launch_job *job)
{
	const struct launch_opts *o = job->o;
	if (!job->status || !job->preload)
		return;
	for (int i = 0; i < o->shard.n && i < DDP_STATUS_SHARD_SPECS; i++) {
		int opened = 0;
		for (int k = 0; k < job->nranks && !opened; k++)
			opened = DDP_STATUS_LOAD(job->status[k].shard_opened[i]) != 0;
		if (!opened)
			launch_msg("warning: --shard %s: no rank%s opened a file it names, so nothing was sharded "
				   "through it: the program read its data elsewhere (another path, a copy, a "
				   "cache) and every rank may have read the same; name the files the program "
				   "opens",
				   o->shard.v[i], o->nnodes > 1 ? " on this node" : "");
	}
}

/* Summed over the attached local ranks: steps (the highest step), time in
 * collectives (ns, the one in progress included), ranks attached. */
struct progress_totals {
	uint64_t step_max, step_min, coll_ns;
	uint64_t avg_bytes; /* the most gradient bytes a rank averaged */
	int attached, aside;
};

static void totals(struct launch_job *job, uint64_t now_ns, struct progress_totals *t)
{
	memset(t, 0, sizeof *t);
	t->step_min = UINT64_MAX;
	for (int i = 0; i < job->nranks; i++) {
		struct ddp_status_slot *s = slot_of(job, i);
		if (!s)
			continue;
		uint64_t step = DDP_STATUS_LOAD(s->step), c = DDP_STATUS_LOAD(s->coll_ns);
		uint64_t since = DDP_STATUS_LOAD(s->coll_since_ns);
		if (DDP_STATUS_LOAD(s->coll_in) && since && now_ns > since)
			c += now_ns - since;
		t->attached++;
		t->coll_ns += c;
		t->aside += DDP_STATUS_LOAD(s->aside) != 0;
		uint64_t b = DDP_STATUS_LOAD(s->avg_bytes);
		if (b > t->avg_bytes)
			t->avg_bytes = b;
		if (step > t->step_max)
			t->step_max = step;
		if (step < t->step_min)
			t->step_min = step;
	}
	if (!t->attached)
		t->step_min = 0;
}

static uint64_t mono_ns(double now)
{
	return (uint64_t)(now * 1e9);
}

/* Appends "rank0 12, rank1 11" (at most 8 ranks, then "...") to buf. */
static void steps_per_rank(struct launch_job *job, char *buf, size_t cap)
{
	size_t o = strlen(buf);
	int shown = 0;
	for (int i = 0; i < job->nranks && o < cap; i++) {
		struct ddp_status_slot *s = slot_of(job, i);
		if (!s)
			continue;
		if (shown == 8) {
			snprintf(buf + o, cap - o, ", ...");
			break;
		}
		o += (size_t)snprintf(buf + o, cap - o, "%srank%d %llu", shown++ ? ", " : "",
				      job->ranks[i].rank, (unsigned long long)DDP_STATUS_LOAD(s->step));
	}
}

void launch_progress_report(struct launch_job *job, double now)
{
	static double last_t;
	static uint64_t last_step, last_coll;
	struct progress_totals t;
	char ranks[600] = "";

	totals(job, mono_ns(now), &t);
	if (!t.attached)
		return;
	double dt = now - (last_t > 0 ? last_t : job->start);
	double rate = dt > 0 ? (double)(t.step_max - last_step) / dt : 0;
	double share = dt > 0 ? (double)(t.coll_ns - last_coll) / 1e9 / dt / t.attached : 0;
	steps_per_rank(job, ranks, sizeof ranks);
	launch_msg("progress after %.0f s: %.1f steps/s; step %s; %.0f%% of the time in collectives",
		   now - job->start, rate, ranks, share > 1 ? 100.0 : share * 100);
	last_t = now;
	last_step = t.step_max;
	last_coll = t.coll_ns;
}

/* What libddp synchronised, for the end line: ", 1.5 MiB of gradients
 * averaged per rank", that the program synchronised itself, or that
 * nothing was (also when no rank's CUDA program ever joined the job). */
static void synced_what(struct launch_job *job, const struct progress_totals *t, char *buf, size_t cap)
{
	static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)t->avg_bytes;
	int u = 0;
	size_t o = strlen(buf);

	if (!job->preload || job->world_size <= 1 || o >= cap)
		return;
	if (!t->attached)
		snprintf(buf + o, cap - o, ", nothing synchronised (no CUDA program joined the job)");
	else if (t->aside)
		snprintf(buf + o, cap - o, ", the program synchronised itself (libddp stood aside)");
	else if (!t->avg_bytes)
		snprintf(buf + o, cap - o, ", nothing averaged");
	else {
		while (v >= 1024 && u < 4) {
			v /= 1024;
			u++;
		}
		snprintf(buf + o, cap - o, ", %.*f %s of gradients averaged per rank", u ? 1 : 0, v, unit[u]);
	}
}

void launch_progress_end(struct launch_job *job, double now, int code, const char *why)
{
	struct progress_totals t;
	char what[300] = "";

	totals(job, mono_ns(now), &t);
	double secs = now - job->start;
	if (t.attached) {
		/* a rank's share of collectives, over the time it was attached */
		double share = secs > 0 ? (double)t.coll_ns / 1e9 / secs / t.attached : 0;
		if (t.step_min == t.step_max)
			snprintf(what, sizeof what, ", %llu step%s, %.0f%% of the time in collectives",
				 (unsigned long long)t.step_max, t.step_max == 1 ? "" : "s",
				 share > 1 ? 100.0 : share * 100);
		else
			snprintf(what, sizeof what, ", %llu..%llu steps, %.0f%% of the time in collectives",
				 (unsigned long long)t.step_min, (unsigned long long)t.step_max,
				 share > 1 ? 100.0 : share * 100);
	}
	synced_what(job, &t, what, sizeof what);
	launch_msg("job %s after %.1f s: %d rank%s%s%s%s (exit %d)", code ? "failed" : "finished", secs,
		   job->nranks, job->nranks == 1 ? "" : "s", what, why && *why ? "; " : "", why ? why : "",
		   code);
	/* where the job's files went: the run folder of --log-dir, --trace */
	const struct launch_opts *o = job->o;
	if (o && o->log_dir && o->trace)
		launch_msg("logs: %s/rank<k>.log; traces: %s (ddprun report %s)", o->log_dir, o->trace, o->trace);
	else if (o && o->log_dir)
		launch_msg("logs: %s/rank<k>.log", o->log_dir);
	else if (o && o->trace)
		launch_msg("traces: %s (ddprun report %s)", o->trace, o->trace);
}
