/* SPDX-License-Identifier: MIT
 *
 * rankprog.c - a rank program for the launcher tests (tests/e2e/launcher).
 *
 *   rankprog env NAME...          print NAME=value (newlines as \n) or NAME<unset>,
 *                                 plus SECRET_OK=yes|no (64 hex digits, not
 *                                 in any argv of this process or its parent)
 *   rankprog exit R CODE          rank R writes 12 numbered stderr lines and
 *                                 exits CODE; the others wait to be stopped;
 *                                 R=-1: every rank exits CODE at once
 *   rankprog signal R SIGNO       rank R kills itself with SIGNO; others wait
 *   rankprog orphan MARKER [R C]  each rank starts a grandchild that leaves
 *                                 the process group (setsid), ignores SIGTERM
 *                                 and sleeps with MARKER in its argv; then rank
 *                                 R (default 1) exits C (default 5), the others
 *                                 wait; R=-1: every rank exits 0 at once
 *   rankprog spam N LEN           N lines of exactly LEN chars on stdout, in
 *                                 random-sized write(2)s; 3 lines on stderr;
 *                                 then a last line without a newline
 *   rankprog trap                 print "ready", wait; SIGINT/SIGTERM print
 *                                 "got SIGx" and exit 0
 *   rankprog ignore               ignore SIGINT and SIGTERM, print "ready", wait
 *   rankprog barrier              connect to the store (DDP_STORE_ADDR/PORT,
 *                                 DDP_STORE_SECRET), barrier of WORLD_SIZE,
 *                                 print "barrier ok"
 *   rankprog heartbeat R STALL    post a progress counter that grows every
 *                                 20 ms; rank R stops after STALL seconds
 *                                 (R=-1: none); everybody ends after 3 s
 *   rankprog sleeper MARKER       (internal) the grandchild of `orphan`
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ddp_store.h"

static int my_rank(void)
{
	const char *r = getenv("RANK");
	return r ? atoi(r) : -1;
}

static void say(int fd, const char *s)
{
	size_t n = strlen(s);
	while (n) {
		ssize_t w = write(fd, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void wait_forever(void)
{
	for (int i = 0; i < 30; i++)
		sleep(1);
	_exit(99);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* 1 when needle occurs in the NUL-separated cmdline of pid. */
static int in_cmdline(pid_t pid, const char *needle)
{
	char path[64], buf[65536];
	snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		if (!buf[i])
			buf[i] = ' ';
	buf[n] = '\0';
	return strstr(buf, needle) != NULL;
}

static int mode_env(int argc, char **argv)
{
	for (int i = 2; i < argc; i++) {
		const char *v = getenv(argv[i]);
		printf("%s", argv[i]);
		if (!v) {
			printf("<unset>\n");
			continue;
		}
		putchar('=');
		for (const char *p = v; *p; p++)
			if (*p == '\n')
				printf("\\n");
			else
				putchar(*p);
		putchar('\n');
	}
	const char *s = getenv("DDP_STORE_SECRET");
	int ok = s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64 &&
		 !in_cmdline(getpid(), s) && !in_cmdline(getppid(), s);
	printf("SECRET_OK=%s\n", ok ? "yes" : "no");
	return 0;
}

static int mode_spam(int argc, char **argv)
{
	if (argc < 4)
		return 2;
	long n = atol(argv[2]), len = atol(argv[3]);
	int rank = my_rank();
	size_t cap = (size_t)(len + 1) * 64, used = 0;
	char *buf = malloc(cap);
	unsigned seed = (unsigned)(rank * 7919 + 1);

	if (!buf || len < 20)
		return 2;
	for (long i = 0; i < n; i++) {
		char *line = buf + used;
		int h = snprintf(line, (size_t)len + 1, "%d %07ld ", rank, i);
		memset(line + h, 'a' + rank % 26, (size_t)(len - h));
		line[len] = '\n';
		used += (size_t)len + 1;
		if (used + (size_t)len + 1 > cap || i == n - 1) {
			/* write in random pieces so lines arrive split */
			size_t off = 0;
			while (off < used) {
				seed = seed * 1103515245u + 12345u;
				size_t piece = 1 + (seed >> 8) % 4096;
				if (piece > used - off)
					piece = used - off;
				ssize_t w = write(1, buf + off, piece);
				if (w <= 0)
					return 1;
				off += (size_t)w;
			}
			used = 0;
		}
	}
	for (int i = 0; i < 3; i++) {
		char l[64];
		snprintf(l, sizeof l, "stderr line %d of rank %d\n", i, rank);
		say(2, l);
	}
	say(1, "tail-without-newline");
	return 0;
}

static void on_sig(int sig)
{
	say(1, sig == SIGINT ? "got SIGINT\n" : "got SIGTERM\n");
	_exit(0);
}

static int mode_orphan(int argc, char **argv)
{
	int who = argc > 3 ? atoi(argv[3]) : 1, code = argc > 4 ? atoi(argv[4]) : 5;
	pid_t pid = fork();
	if (pid == 0) {
		setsid();
		execl("/proc/self/exe", "rankprog", "sleeper", argv[2], (char *)NULL);
		_exit(127);
	}
	sleep_ms(300); /* the grandchild is up */
	if (who < 0)
		return 0;
	if (my_rank() == who)
		return code;
	wait_forever();
	return 0;
}

static int mode_barrier(void)
{
	struct ddp_store *s;
	const char *addr = getenv("DDP_STORE_ADDR"), *port = getenv("DDP_STORE_PORT");
	const char *secret = getenv("DDP_STORE_SECRET"), *ws = getenv("WORLD_SIZE");
	if (!addr || !port || !secret || !ws) {
		say(2, "rankprog: store variables missing\n");
		return 1;
	}
	if (ddp_store_connect(addr, atoi(port), secret, my_rank(), 10.0, &s) != DDP_OK)
		return 1;
	ddp_result rc = ddp_store_barrier(s, "rankprog", atoi(ws), 10.0);
	ddp_store_close(s);
	if (rc != DDP_OK)
		return 1;
	printf("barrier ok\n");
	return 0;
}

static int mode_heartbeat(int argc, char **argv)
{
	static volatile uint64_t progress;
	struct ddp_store *s;
	int stuck = argc > 2 ? atoi(argv[2]) : -1;
	double stall = argc > 3 ? atof(argv[3]) : 0.3;
	const char *secret = getenv("DDP_STORE_SECRET");

	if (!secret || ddp_store_connect(getenv("DDP_STORE_ADDR"), atoi(getenv("DDP_STORE_PORT")), secret,
					 my_rank(), 10.0, &s) != DDP_OK)
		return 1;
	if (ddp_store_heartbeat_start(s, &progress, 0.05) != DDP_OK)
		return 1;
	printf("heartbeat started\n");
	fflush(stdout);
	for (int i = 0; i < 150; i++) {
		if (!(my_rank() == stuck && i * 0.02 >= stall))
			progress = progress + 1;
		sleep_ms(20);
	}
	ddp_store_close(s);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		return 2;
	const char *m = argv[1];
	if (!strcmp(m, "env"))
		return mode_env(argc, argv);
	if (!strcmp(m, "exit") && argc > 3) {
		if (atoi(argv[2]) == -1)
			return atoi(argv[3]);
		if (my_rank() == atoi(argv[2])) {
			for (int i = 1; i <= 12; i++) {
				char l[64];
				snprintf(l, sizeof l, "failing line %d\n", i);
				say(2, l);
			}
			return atoi(argv[3]);
		}
		say(1, "waiting\n");
		wait_forever();
	}
	if (!strcmp(m, "signal") && argc > 3) {
		if (my_rank() == atoi(argv[2])) {
			sleep_ms(100);
			signal(atoi(argv[3]), SIG_DFL);
			raise(atoi(argv[3]));
			return 1;
		}
		wait_forever();
	}
	if (!strcmp(m, "orphan") && argc > 2)
		return mode_orphan(argc, argv);
	if (!strcmp(m, "sleeper")) {
		signal(SIGTERM, SIG_IGN);
		signal(SIGHUP, SIG_IGN);
		/* keeps the rank's stdout/stderr pipes open, on purpose */
		for (int i = 0; i < 60; i++)
			sleep(1);
		return 0;
	}
	if (!strcmp(m, "spam"))
		return mode_spam(argc, argv);
	if (!strcmp(m, "trap")) {
		signal(SIGINT, on_sig);
		signal(SIGTERM, on_sig);
		say(1, "ready\n");
		wait_forever();
	}
	if (!strcmp(m, "ignore")) {
		signal(SIGINT, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		say(1, "ready\n");
		wait_forever();
	}
	if (!strcmp(m, "barrier"))
		return mode_barrier();
	if (!strcmp(m, "heartbeat"))
		return mode_heartbeat(argc, argv);
	fprintf(stderr, "rankprog: unknown mode %s\n", m);
	return 2;
}
