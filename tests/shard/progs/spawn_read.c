/* SPDX-License-Identifier: MIT
 * spawn_read.c - `spawn_read FILE`: reads FILE in two halves and, between
 * them, starts children the three ways programs do while a data file is open:
 * vfork() whose child closes every inherited fd before it exits (close,
 * close_range), posix_spawn of /bin/true (glibc makes it with a clone that
 * shares this memory), and fork() whose child closes the fd.  Writes the
 * bytes read to stdout.  Under --shard the output must be this rank's view:
 * a child running in the parent's memory must not drop the parent's view. */

#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define FAIL(...) do { fprintf(stderr, "spawn_read: " __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

static int reap(pid_t pid)
{
	int st;
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	int fd = argc > 1 ? open(argv[1], O_RDONLY) : -1;
	if (fd < 0)
		FAIL("cannot open");
	off_t size = lseek(fd, 0, SEEK_END);
	if (size < 2 || lseek(fd, 0, SEEK_SET) != 0)
		FAIL("size");
	char *buf = malloc((size_t)size);
	off_t half = size / 2;
	if (!buf || read(fd, buf, (size_t)half) != half)
		FAIL("first half");

	pid_t pid = vfork();
	if (pid == 0) {
		close(fd);
		close_range(3, ~0U, 0);
		_exit(0);
	}
	if (reap(pid) != 0)
		FAIL("vfork child");
	char *const av[] = {"true", NULL};
	if (posix_spawn(&pid, "/bin/true", NULL, NULL, av, environ) != 0 || reap(pid) != 0)
		FAIL("posix_spawn");
	pid = fork();
	if (pid == 0) {
		close(fd);
		_exit(0);
	}
	if (reap(pid) != 0)
		FAIL("fork child");

	if (lseek(fd, 0, SEEK_CUR) != half)
		FAIL("position %lld after the children, %lld before", (long long)lseek(fd, 0, SEEK_CUR), (long long)half);
	if (read(fd, buf + half, (size_t)(size - half)) != size - half)
		FAIL("second half");
	fwrite(buf, 1, (size_t)size, stdout);
	return 0;
}
