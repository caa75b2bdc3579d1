/* SPDX-License-Identifier: MIT
 *
 * hang_inject.c - a preloaded shim for the failure tests: on the rank named
 * by HANG_RANK, the HANG_AFTER-th read(2) of a regular file (a trainer's
 * per-step data read) does HANG_MODE instead of reading:
 *   spin   burn the CPU in the calling thread forever
 *   read   block in read(2) on a pipe that nobody writes
 *   stop   raise(SIGSTOP): every thread of the process stops
 *   exit0  exit(0) at once, as a rank that thinks it is done
 *   exit0-stop-parent  SIGSTOP the parent (ddprun), then _exit(0) (no exit
 *          handlers: they would talk to ddprun's store): the test continues
 *          ddprun once the other ranks have given up on this one, so ddprun
 *          finds them already out of the collective (progress.sh)
 * Just before, it writes "hang-inject: rank R MODE now (at T ms)" on stderr (T: CLOCK_REALTIME).  Other
 * ranks, and every read before, pass through (dlsym RTLD_NEXT: libddp's
 * hook when it is preloaded after this shim).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*real)(int, void *, size_t);
	static long count;
	static int armed = -1;
	static const char *mode;
	static long after;
	struct stat st;

	if (!real)
		real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	if (armed < 0) {
		const char *r = getenv("HANG_RANK"), *me = getenv("RANK"), *a = getenv("HANG_AFTER");
		mode = getenv("HANG_MODE");
		after = a ? atol(a) : 1;
		armed = r && me && mode && strcmp(r, me) == 0;
	}
	if (armed && fd > 2 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && ++count == after) {
		char msg[128];
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		int len = snprintf(msg, sizeof msg, "hang-inject: rank %s %s now (at %lld ms)\n", getenv("RANK"), mode,
				   (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000);
		if (write(2, msg, (size_t)len) < 0)
			_exit(99);
		if (strcmp(mode, "spin") == 0) {
			for (volatile unsigned long i = 0;; i++)
				;
		} else if (strcmp(mode, "read") == 0) {
			int p[2];
			char c;
			if (pipe(p) == 0)
				real(p[0], &c, 1);
		} else if (strcmp(mode, "stop") == 0) {
			raise(SIGSTOP);
		} else if (strcmp(mode, "exit0") == 0) {
			exit(0);
		} else if (strcmp(mode, "exit0-stop-parent") == 0) {
			kill(getppid(), SIGSTOP);
			_exit(0);
		}
	}
	return real(fd, buf, n);
}
