/* SPDX-License-Identifier: MIT
 *
 * sim_timeline.c - the CPU device's execution timeline:
 * SIMCUDA_TIMELINE=DIR writes DIR/simcuda.<pid>.timeline, one line per
 * stream work item as the stream's worker ran it:
 *
 *     <stream id> <start s> <end s> <worker CPU s> <what>
 *
 * (CLOCK_MONOTONIC seconds, comparable between the processes of one
 * machine; the worker thread's CPU time during the item; <what> is the
 * kernel's name, "copy" (memsets too), "host function", "event record",
 * "event wait", "stream wait" or "pool free").  A kernel whose wall time exceeds its CPU
 * time waited for a core; two ranks whose CPU times differ for the same
 * kernels ran at different speeds.  The device-side view that ddprun's
 * trace (host calls) does not have: docs/overlap.md uses it to tell the
 * ranks' skew apart.  Off (one branch per item) when unset; a file that
 * cannot be opened is reported once and the run goes on without it.
 *
 * Contract: any worker thread; lines are written whole (stdio's lock).
 */
#include "sim_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_once_t sim_timeline_once = PTHREAD_ONCE_INIT;
static FILE *sim_timeline_file;

static void sim_timeline_open(void)
{
	const char *dir = sim_setting_timeline();
	char path[4096];

	if (!dir || !*dir)
		return;
	snprintf(path, sizeof path, "%s/simcuda.%d.timeline", dir, (int)getpid());
	sim_timeline_file = fopen(path, "we");
	if (!sim_timeline_file)
		sim_msg("SIMCUDA_TIMELINE: cannot write %s; no timeline", path);
}

int sim_timeline_on(void)
{
	pthread_once(&sim_timeline_once, sim_timeline_open);
	return sim_timeline_file != NULL;
}

void sim_timeline_now(struct sim_timeline_mark *m)
{
	clock_gettime(CLOCK_MONOTONIC, &m->wall);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &m->cpu);
}

static double sim_timeline_s(const struct timespec *t)
{
	return (double)t->tv_sec + (double)t->tv_nsec * 1e-9;
}

void sim_timeline_item(unsigned long long stream, const char *what, const struct sim_timeline_mark *start)
{
	struct sim_timeline_mark end;

	sim_timeline_now(&end);
	fprintf(sim_timeline_file, "%llu %.6f %.6f %.6f %s\n", stream, sim_timeline_s(&start->wall),
		sim_timeline_s(&end.wall), sim_timeline_s(&end.cpu) - sim_timeline_s(&start->cpu),
		what ? what : "?");
}
