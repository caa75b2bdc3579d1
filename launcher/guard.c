/* SPDX-License-Identifier: MIT
 *
 * guard.c - no process of the job outlives ddprun, even when ddprun itself
 * is SIGKILLed.
 *
 * While ddprun lives, it is a child subreaper and sweeps every descendant
 * itself (supervise.c); the ranks have SIGKILL as parent-death signal.  But
 * a parent-death signal does not survive fork, so the ranks' own children
 * (and grandchildren that left with setsid) would outlive a SIGKILLed
 * ddprun.  The guardian covers that: a small process forked before the
 * ranks, in a session of its own (terminal signals to ddprun's process group
 * do not reach it), ignoring SIGINT/SIGTERM/SIGHUP, that blocks reading a
 * pipe whose only write end ddprun holds (close-on-exec, so the ranks never
 * hold it).  EOF there means ddprun is gone without saying goodbye: the
 * guardian then SIGKILLs, in rounds for up to 5 s, every process whose
 * environment carries the job's marker (DDPRUN_JOB_ID=<id>, which every
 * rank gets and passes on to what it starts), and exits.  A byte on the
 * pipe means a normal end: it exits at once.
 *
 * Limits: a descendant started with a cleared environment (env -i) carries
 * no marker; processes of another user cannot be read or killed.
 *
 * Contract: launch_guard_start is called on the main thread before any other
 * thread exists (the child uses malloc through opendir).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "launch.h"

/* Does /proc/<pid>/environ hold exactly the variable kv? */
static int has_marker(const char *pid, const char *kv, size_t kvlen)
{
	char path[300];
	static char buf[1 << 17];
	snprintf(path, sizeof path, "/proc/%s/environ", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	size_t n = 0;
	for (;;) {
		ssize_t r = read(fd, buf + n, sizeof buf - 1 - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == sizeof buf - 1)
			break;
	}
	close(fd);
	buf[n] = '\0';
	for (size_t i = 0; i + kvlen <= n;) {
		size_t len = strnlen(buf + i, n - i);
		if (len == kvlen && memcmp(buf + i, kv, kvlen) == 0)
			return 1;
		i += len + 1;
	}
	return 0;
}

/* SIGKILLs every process carrying kv; returns how many it found. */
static int kill_marked(const char *kv)
{
	size_t kvlen = strlen(kv);
	pid_t self = getpid();
	int found = 0;
	DIR *d = opendir("/proc");
	struct dirent *e;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid_t pid = (pid_t)atoi(e->d_name);
		if (pid == self || !has_marker(e->d_name, kv, kvlen))
			continue;
		if (kill(pid, SIGKILL) == 0)
			found++;
	}
	closedir(d);
	return found;
}

static void guard_main(int rfd, const char *kv)
{
	char c;
	ssize_t n;
	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	for (int fd = 0; fd < 3; fd++) { /* keep no terminal or pipe of ddprun's open */
		int nul = open("/dev/null", O_RDWR);
		if (nul >= 0 && nul != fd) {
			dup2(nul, fd);
			close(nul);
		}
	}
	n = DDP_EINTR_RETRY(read(rfd, &c, 1));
	if (n == 1)
		_exit(0); /* ddprun ended normally and swept the job itself */
	/* ddprun is gone: its ranks die by their parent-death signal; what
	 * they started is found by the marker */
	struct timespec nap = { 0, 20 * 1000 * 1000 };
	int quiet_rounds = 0;
	for (int round = 0; round < 250 && quiet_rounds < 10; round++) {
		quiet_rounds = kill_marked(kv) ? 0 : quiet_rounds + 1;
		nanosleep(&nap, NULL);
	}
	_exit(0);
}

ddp_result launch_guard_start(struct launch_job *job)
{
	int p[2];
	job->guard_fd = -1;
	job->guard_pid = 0;
	if (pipe2(p, O_CLOEXEC) != 0) {
		launch_msg("warning: no guardian process (pipe: %s): if ddprun is killed, what the "
			   "ranks started may survive it",
			   strerror(errno));
		return DDP_ERR_SYS;
	}
	pid_t pid = fork();
	if (pid < 0) {
		launch_msg("warning: no guardian process (fork: %s): if ddprun is killed, what the "
			   "ranks started may survive it",
			   strerror(errno));
		close(p[0]);
		close(p[1]);
		return DDP_ERR_SYS;
	}
	if (pid == 0) {
		close(p[1]);
		guard_main(p[0], job->job_marker);
	}
	close(p[0]);
	job->guard_fd = p[1];
	job->guard_pid = pid;
	return DDP_OK;
}

void launch_guard_stop(struct launch_job *job)
{
	if (job->guard_fd < 0)
		return;
	char c = 'q';
	if (write(job->guard_fd, &c, 1) < 0) {
		/* the guardian is gone already; nothing to tell it */
	}
	close(job->guard_fd);
	job->guard_fd = -1;
}
