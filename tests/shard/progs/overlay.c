/* SPDX-License-Identifier: MIT
 *
 * overlay.c - programs written for write safety's cases (issue 21, 1-6), run
 * by tests/shard/test_write_overlay.sh as rank 0 and rank 1 with libddp.so
 * preloaded.  Each mode does what a training program does and checks, as the
 * program itself would, that it reads back what it wrote; it prints what it
 * saw and exits 1 on the first surprise ("overlay: ..." on stderr).  $RANK
 * goes into everything written, so whose data a file holds is visible.
 *
 *   cache DATA CACHE   load CACHE if it exists, else build it from DATA
 *                      (uppercased) and save it; prints "cache <content>"
 *                      or "built <content>"; crash=1 in the environment:
 *                      abort() right after saving
 *   paths DIR          writes DIR/<name> through every path form (cwd and
 *                      root magic links, dirfd-relative, /proc/self/fd and
 *                      /dev/fd of a dirfd, a linked folder, a hard link,
 *                      rename onto a magic path); each is read back
 *   plant DIR TARGET   symlink TARGET DIR/planted (a rank plants a link)
 *   write DIR NAME     writes "rank K" to DIR/NAME (O_CREAT|O_TRUNC)
 *   latest DIR         the "latest" idiom: ckpt, symlink latest.tmp, rename
 *                      to latest; reads DIR/latest back; renames a folder
 *                      over an empty one; unlinks and links
 *   trunc DIR          O_APPEND and O_TRUNC without O_CREAT of existing
 *                      DIR/app, DIR/trunc; a /proc/self/fd/N reopen with
 *                      O_TRUNC of DIR/reopen; reads each back
 *   dirs DIR           mkdir DIR/new, rmdir DIR/empty (rank 0's, empty),
 *                      mkdir it again, rmdir DIR/full must fail ENOTEMPTY;
 *                      mkdir DIR/run, chdir into it, write, chdir .. and back
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *rank = "0";

#define FAIL(...)                                                   \
	do {                                                        \
		fprintf(stderr, "overlay: rank %s: ", rank);        \
		fprintf(stderr, __VA_ARGS__);                       \
		fprintf(stderr, " (%s)\n", strerror(errno));        \
		exit(1);                                            \
	} while (0)

static void put(const char *path, int flags, const char *text)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		FAIL("open %s", path);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		FAIL("write %s", path);
	if (close(fd) != 0)
		FAIL("close %s", path);
}

static void put_fd(int fd, const char *what, const char *text)
{
	if (fd < 0)
		FAIL("open %s", what);
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		FAIL("write %s", what);
	close(fd);
}

/* Content of path (static buffer), NULL when it cannot be opened. */
static const char *get(const char *path)
{
	static char buf[4096];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, sizeof buf - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void expect(const char *path, const char *want)
{
	const char *got = get(path);

	if (!got)
		FAIL("read back %s", path);
	if (strcmp(got, want) != 0) {
		errno = 0;
		FAIL("%s holds '%s', not '%s'", path, got, want);
	}
}

static int mode_cache(const char *data, const char *cache)
{
	const char *c = get(cache);
	char built[4096];

	if (c) {
		printf("cache %s\n", c);
		return 0;
	}
	c = get(data);
	if (!c)
		FAIL("read %s", data);
	snprintf(built, sizeof built, "%s", c);
	for (char *p = built; *p; p++)
		if (*p >= 'a' && *p <= 'z')
			*p = (char)(*p - 'a' + 'A');
	put(cache, O_WRONLY | O_CREAT | O_TRUNC, built);
	expect(cache, built);
	printf("built %s\n", built);
	fflush(stdout);
	if (getenv("crash") && !strcmp(getenv("crash"), "1"))
		abort();
	return 0;
}

static int mode_paths(const char *dir)
{
	char me[64], p[PATH_MAX], cwd[2048];
	int dfd;

	snprintf(me, sizeof me, "rank %s", rank);
	if (!getcwd(cwd, sizeof cwd))
		FAIL("getcwd");
	snprintf(p, sizeof p, "/proc/self/cwd/%s/cwd.txt", dir);
	put(p, O_WRONLY | O_CREAT | O_TRUNC, me);
	expect(p, me);
	snprintf(p, sizeof p, "/proc/self/root%s/%s/root.txt", cwd, dir);
	put(p, O_WRONLY | O_CREAT | O_TRUNC, me);
	expect(p, me);
	dfd = open(dir, O_RDONLY | O_DIRECTORY);
	if (dfd < 0)
		FAIL("open folder %s", dir);
	put_fd(openat(dfd, "at.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644), "at.txt", me);
	snprintf(p, sizeof p, "%s/at.txt", dir);
	expect(p, me);
	snprintf(p, sizeof p, "/proc/self/fd/%d/fd.txt", dfd);
	put(p, O_WRONLY | O_CREAT | O_TRUNC, me);
	expect(p, me);
	snprintf(p, sizeof p, "/dev/fd/%d/devfd.txt", dfd);
	put(p, O_WRONLY | O_CREAT | O_TRUNC, me);
	expect(p, me);
	/* a linked folder: "linkdir" -> dir, made by the test */
	put("linkdir/viadir.txt", O_WRONLY | O_CREAT | O_TRUNC, me);
	snprintf(p, sizeof p, "%s/viadir.txt", dir);
	expect(p, me);
	expect("linkdir/cwd.txt", me); /* written by name, read through the link */
	/* a hard link: dir/hard2.txt is a second name of dir/hard1.txt */
	snprintf(p, sizeof p, "%s/hard2.txt", dir);
	put(p, O_WRONLY | O_TRUNC, me);
	expect(p, me);
	/* rename onto a magic path */
	snprintf(p, sizeof p, "%s/ren.tmp", dir);
	put(p, O_WRONLY | O_CREAT | O_TRUNC, me);
	char q[PATH_MAX];
	snprintf(q, sizeof q, "/proc/self/fd/%d/ren.txt", dfd);
	if (rename(p, q) != 0)
		FAIL("rename %s %s", p, q);
	snprintf(p, sizeof p, "%s/ren.txt", dir);
	expect(p, me);
	snprintf(p, sizeof p, "%s/ren.tmp", dir);
	if (access(p, F_OK) == 0) {
		errno = 0;
		FAIL("%s still there after its rename", p);
	}
	close(dfd);
	printf("paths ok\n");
	return 0;
}

static int mode_latest(const char *dir)
{
	char me[64], ck[PATH_MAX], tmp[PATH_MAX], lat[PATH_MAX], p[PATH_MAX], t[PATH_MAX];
	ssize_t n;

	snprintf(me, sizeof me, "ckpt of rank %s", rank);
	snprintf(ck, sizeof ck, "%s/ckpt", dir);
	snprintf(tmp, sizeof tmp, "%s/latest.tmp", dir);
	snprintf(lat, sizeof lat, "%s/latest", dir);
	put(ck, O_WRONLY | O_CREAT | O_TRUNC, me);
	unlink(tmp);
	if (symlink("ckpt", tmp) != 0)
		FAIL("symlink ckpt %s", tmp);
	if (rename(tmp, lat) != 0)
		FAIL("rename %s %s", tmp, lat);
	expect(lat, me);
	n = readlink(lat, t, sizeof t - 1);
	if (n != 4 || memcmp(t, "ckpt", 4) != 0)
		FAIL("readlink %s", lat);
	if (access(tmp, F_OK) == 0 || errno != ENOENT)
		FAIL("%s is still there", tmp);
	/* a folder renamed over an empty one */
	snprintf(p, sizeof p, "%s/d1", dir);
	if (mkdir(p, 0755) != 0 && errno != EEXIST)
		FAIL("mkdir %s", p);
	snprintf(t, sizeof t, "%s/d1/f", dir);
	put(t, O_WRONLY | O_CREAT | O_TRUNC, me);
	snprintf(t, sizeof t, "%s/d2/f", dir);
	unlink(t); /* an earlier run's */
	snprintf(t, sizeof t, "%s/d2", dir);
	rmdir(t);
	if (mkdir(t, 0755) != 0)
		FAIL("mkdir %s", t);
	if (rename(p, t) != 0)
		FAIL("rename %s %s", p, t);
	snprintf(t, sizeof t, "%s/d2/f", dir);
	expect(t, me);
	struct stat st;
	if (stat(p, &st) == 0 || errno != ENOENT)
		FAIL("%s is still there after its rename", p);
	/* unlink a file rank 0 made (DIR/old, made by the test), link */
	snprintf(p, sizeof p, "%s/old", dir);
	if (unlink(p) != 0)
		FAIL("unlink %s", p);
	if (stat(p, &st) == 0 || errno != ENOENT)
		FAIL("%s is still there after unlink", p);
	snprintf(t, sizeof t, "%s/ckpt.link", dir);
	unlink(t);
	if (link(ck, t) != 0)
		FAIL("link %s %s", ck, t);
	expect(t, me);
	printf("latest ok\n");
	return 0;
}

static int mode_trunc(const char *dir)
{
	char p[PATH_MAX], want[256], me[64];
	int fd, rd;

	snprintf(me, sizeof me, "rank %s", rank);
	snprintf(p, sizeof p, "%s/app", dir);
	put(p, O_WRONLY | O_APPEND, me);
	snprintf(want, sizeof want, "orig\n%s", me);
	expect(p, want);
	snprintf(p, sizeof p, "%s/trunc", dir);
	put(p, O_WRONLY | O_TRUNC, me);
	expect(p, me);
	snprintf(p, sizeof p, "%s/reopen", dir);
	rd = open(p, O_RDONLY);
	if (rd < 0)
		FAIL("open %s", p);
	char magic[64];
	snprintf(magic, sizeof magic, "/proc/self/fd/%d", rd);
	fd = open(magic, O_WRONLY | O_TRUNC);
	put_fd(fd, magic, me);
	close(rd);
	expect(p, me);
	printf("trunc ok\n");
	return 0;
}

static int mode_dirs(const char *dir)
{
	char p[PATH_MAX];
	struct stat st;

	snprintf(p, sizeof p, "%s/new", dir);
	if (mkdir(p, 0755) != 0)
		FAIL("mkdir %s", p);
	if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode))
		FAIL("stat %s after mkdir", p);
	if (mkdir(p, 0755) == 0 || errno != EEXIST)
		FAIL("second mkdir %s", p);
	snprintf(p, sizeof p, "%s/new/f", dir);
	put(p, O_WRONLY | O_CREAT | O_TRUNC, rank);
	expect(p, rank);
	snprintf(p, sizeof p, "%s/empty", dir);
	if (rmdir(p) != 0)
		FAIL("rmdir %s", p);
	if (stat(p, &st) == 0 || errno != ENOENT)
		FAIL("%s still there after rmdir", p);
	if (mkdir(p, 0755) != 0)
		FAIL("mkdir %s again", p);
	snprintf(p, sizeof p, "%s/full", dir);
	if (rmdir(p) == 0 || errno != ENOTEMPTY)
		FAIL("rmdir %s (not empty) did not fail with ENOTEMPTY", p);
	/* a run folder made, then entered (as hydra does) */
	char home[PATH_MAX];
	if (!getcwd(home, sizeof home))
		FAIL("getcwd");
	snprintf(p, sizeof p, "%s/run", dir);
	if (mkdir(p, 0755) != 0)
		FAIL("mkdir %s", p);
	if (chdir(p) != 0)
		FAIL("chdir %s", p);
	put("log.txt", O_WRONLY | O_CREAT | O_TRUNC, rank);
	expect("log.txt", rank);
	if (chdir("..") != 0)
		FAIL("chdir ..");
	expect("run/log.txt", rank);
	expect("full/f", "f\n"); /* rank 0's, seen from there */
	if (chdir(home) != 0)
		FAIL("chdir %s", home);
	snprintf(p, sizeof p, "%s/run/log.txt", dir);
	expect(p, rank);
	printf("dirs ok\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (getenv("RANK"))
		rank = getenv("RANK");
	if (argc == 4 && !strcmp(argv[1], "cache"))
		return mode_cache(argv[2], argv[3]);
	if (argc == 3 && !strcmp(argv[1], "paths"))
		return mode_paths(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "plant")) {
		char p[PATH_MAX];
		snprintf(p, sizeof p, "%s/planted", argv[2]);
		if (symlink(argv[3], p) != 0)
			FAIL("symlink %s %s", argv[3], p);
		return 0;
	}
	if (argc == 4 && !strcmp(argv[1], "write")) {
		char p[PATH_MAX], me[64];
		snprintf(p, sizeof p, "%s/%s", argv[2], argv[3]);
		snprintf(me, sizeof me, "rank %s", rank);
		put(p, O_WRONLY | O_CREAT | O_TRUNC, me);
		expect(p, me);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "latest"))
		return mode_latest(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "trunc"))
		return mode_trunc(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "dirs"))
		return mode_dirs(argv[2]);
	fprintf(stderr, "usage: overlay cache|paths|plant|write|latest|trunc|dirs ...\n");
	return 2;
}
