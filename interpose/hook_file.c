/* SPDX-License-Identifier: MIT
 *
 * hook_file.c - libc file hooks of libddp.so: each rank sees its shard of the
 * --shard files (DESIGN.md section 6, docs/sharding.md).
 *
 * The program opens its data files as always.  When an open returns an fd
 * for a sharded file, a view (struct hook_shard_open) is attached to that fd
 * in a fixed table indexed by fd; read, pread, readv, preadv, lseek, mmap,
 * fstat and close of that fd then work on the rank's virtual file
 * (ddp_shard_view_read), and the real fd is only ever read with pread.  Every
 * other fd costs one table load and passes through.  dup/dup2/dup3/
 * fcntl(F_DUPFD) make the new fd share the view (and its position, as the
 * kernel shares the offset).  Whether an opened path is sharded: its name
 * must equal the name (or the real name) of a file matched at init, then
 * fstat's device and inode must match: one fstat per open of such a name.
 * Under ddprun, a view is built only from the bytes ddprun saw at launch
 * (DDP_SHARD_FILES): a file that changed since is refused (view_unchanged).
 * This file also holds the lazy init and the table of real functions;
 * stat-family hooks live in hook_file_stat.c, stdio in hook_file_stdio.c,
 * write redirection in hook_write.c.
 *
 * Contract: any thread may enter any hook at any time, also before init and
 * from inside libc.  Init runs once (first path-based hook), allocates the
 * file table and is never undone.  The fd table is read with acquire loads
 * and written with atomic exchanges; a view's position is guarded by its
 * mutex.  No allocation on the read path (views allocate at open only).
 * Never crash the host: trouble is logged and the call passes through.
 * Limits: a view that is closed by one thread while another reads the same
 * fd is the program's race, as with the kernel's fd table.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_rank.h"
#include "ddp_shard.h"
#if __has_include("ddp_export.h")
#include "ddp_export.h"
#endif
#ifndef DDP_EXPORT
#define DDP_EXPORT __attribute__((visibility("default")))
#endif
#include "hook_file.h"
#include "ddp_status.h"

extern void __chk_fail(void) __attribute__((noreturn));

/* The real function, resolving on first use (NULL only while resolving). */
#define REAL(fn) (ddp_libc_.fn ? ddp_libc_.fn : (hook_libc_resolve(), ddp_libc_.fn))

/* ---- sharded files and lazy init ------------------------------------ */

struct shard_file {
	dev_t dev;
	ino_t ino;
	int spec;              /* index in specs[]                   */
	char *path;            /* as matched by the spec's glob      */
	const char *name;      /* basename of path                   */
	const char *real_name; /* basename of realpath(path)         */
	pthread_mutex_t lock;  /* guards the stat cache below        */
	uint64_t cache_size;   /* real size the cache was made for   */
	int64_t cache_mtime_ns;
	uint64_t cache_vsize; /* virtual size; valid when cache_ok  */
	int cache_ok;
	int fixed;                        /* 1: ddprun listed it (DDP_SHARD_FILES), 2: it did not */
	int stale_said;                   /* the "changed since launch" line was logged */
	struct ddp_shard_fixed at_launch; /* size, mtime, dev, ino when fixed == 1 */
};

static struct ddp_shard_spec specs[DDP_SHARD_MAX_SPECS];
_Static_assert(DDP_SHARD_MAX_SPECS <= DDP_STATUS_SHARD_SPECS, "a status-board mark per --shard spec");
static struct shard_file *files; /* written once by init */
static int n_files;
static int shard_on; /* n_files > 0, after init */
static struct hook_shard_open *fd_views[HOOK_FD_MAX];

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* Adds the files one spec matches. */
static void add_spec_files(int si)
{
	glob_t g;
	int grc = glob(specs[si].path, 0, NULL, &g);

	if (grc != 0) {
		DDP_WARN("--shard %s matches no file; it is not sharded", specs[si].path);
		return;
	}
	for (size_t i = 0; i < g.gl_pathc; i++) {
		struct stat64 st;
		char real[PATH_MAX];
		struct shard_file *nf, *f;

		if (hook_real_fstatat(AT_FDCWD, g.gl_pathv[i], &st, 0) != 0 || !S_ISREG(st.st_mode))
			continue;
		nf = realloc(files, sizeof *files * (size_t)(n_files + 1));
		if (!nf)
			break;
		files = nf;
		f = &files[n_files];
		memset(f, 0, sizeof *f);
		f->dev = st.st_dev;
		f->ino = st.st_ino;
		f->spec = si;
		f->path = strdup(g.gl_pathv[i]);
		f->real_name = realpath(g.gl_pathv[i], real) ? strdup(base_name(real)) : NULL;
		if (!f->path)
			break;
		f->name = base_name(f->path);
		if (ddp_param_shard_files())
			f->fixed = ddp_shard_snapshot_find(ddp_param_shard_files(), f->path, &f->at_launch)
					   ? 1
					   : 2;
		pthread_mutex_init(&f->lock, NULL);
		n_files++;
		DDP_DEBUG(SHARD, "sharding %s (spec %d)", f->path, si);
	}
	globfree(&g);
}

void hook_shard_setup(void)
{
	const char *v = ddp_param_shard();
	char err[512];
	int n = 0;

	if (!v || !*v)
		return;
	if (ddp_shard_parse_list(v, specs, DDP_SHARD_MAX_SPECS, &n, err, sizeof err) != DDP_OK) {
		DDP_ERROR("%s; input files are not sharded", err);
		return;
	}
	for (int i = 0; i < n; i++)
		add_spec_files(i);
	__atomic_store_n(&shard_on, n_files > 0, __ATOMIC_RELEASE);
}

int hook_shard_active(void)
{
	return __atomic_load_n(&shard_on, __ATOMIC_ACQUIRE);
}

static int shard_lookup(dev_t dev, ino_t ino)
{
	for (int i = 0; i < n_files; i++)
		if (files[i].ino == ino && files[i].dev == dev)
			return i;
	return -1;
}

int hook_shard_candidate(const char *path)
{
	const char *b;

	if (!hook_shard_active() || !path)
		return 0;
	b = base_name(path);
	for (int i = 0; i < n_files; i++)
		if (strcmp(b, files[i].name) == 0 || (files[i].real_name && strcmp(b, files[i].real_name) == 0))
			return 1;
	return 0;
}

/* ---- views ------------------------------------------------------------ */

static ssize_t real_pread_cb(void *ctx, void *buf, size_t n, uint64_t off)
{
	int fd = (int)(intptr_t)ctx;

	if (!REAL(pread64))
		return syscall(SYS_pread64, fd, buf, n, (off64_t)off);
	return ddp_libc_.pread64(fd, buf, n, (off64_t)off);
}

/* Is file fi, open on fd with real size `size`, the file ddprun checked at
 * launch (DDP_SHARD_FILES)?  When it changed (or appeared) since, every rank
 * could split different bytes: one line, and the open fails (ESTALE). */
static int view_unchanged(int fd, int fi, uint64_t size)
{
	struct shard_file *f = &files[fi];
	struct stat64 st;
	int said;

	if (!f->fixed)
		return 1; /* no ddprun (torchrun, srun): the rank's own view */
	if (f->fixed == 2) {
		if (!__atomic_exchange_n(&f->stale_said, 1, __ATOMIC_RELAXED))
			DDP_ERROR("--shard %s: %s was not there when ddprun checked the --shard files at "
				  "launch; every rank must split the same files: run again once the files are "
				  "complete",
				  specs[f->spec].path, f->path);
		errno = ESTALE;
		return 0;
	}
	if (!REAL(fstat64) || ddp_libc_.fstat64(fd, &st) != 0)
		return 1;
	int64_t mt = (int64_t)st.st_mtim.tv_sec * 1000000000LL + st.st_mtim.tv_nsec;
	if (size == f->at_launch.size && mt == f->at_launch.mtime_ns && (uint64_t)st.st_ino == f->at_launch.ino)
		return 1;
	said = __atomic_exchange_n(&f->stale_said, 1, __ATOMIC_RELAXED);
	if (!said)
		DDP_ERROR("--shard %s: %s changed since ddprun checked it at launch (%llu bytes then, %llu "
			  "now%s); the ranks would split different bytes and some records would be seen by "
			  "nobody: refusing it; run again once nothing writes the file",
			  specs[f->spec].path, f->path, (unsigned long long)f->at_launch.size,
			  (unsigned long long)size,
			  (uint64_t)st.st_ino != f->at_launch.ino ? ", another file by that name"
			  : mt != f->at_launch.mtime_ns           ? ", modified since"
								  : "");
	errno = ESTALE;
	return 0;
}

/* Builds the view of file fi for this rank from the open real fd. */
static struct hook_shard_open *view_create(int fd, int fi, uint64_t size)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	const struct shard_file *f = &files[fi];
	size_t want = size < DDP_SHARD_HEAD_MAX ? (size_t)size : DDP_SHARD_HEAD_MAX;
	unsigned char *head = malloc(want ? want : 1);
	struct hook_shard_open *o = NULL;
	struct ddp_shard_layout l;
	char err[512];
	ssize_t got;

	if (!head)
		goto out_nomem;
	if (!view_unchanged(fd, fi, size))
		goto out_free_head;
	got = want ? real_pread_cb((void *)(intptr_t)fd, head, want, 0) : 0;
	if (got != (ssize_t)want) {
		DDP_ERROR("cannot read the header of %s: %s", f->path,
			  got < 0 ? strerror(errno) : "short read");
		errno = EIO;
		goto out_free_head;
	}
	if (ddp_shard_layout_resolve(&specs[f->spec], f->path, head, want, size, &l, err, sizeof err) !=
	    DDP_OK) {
		DDP_ERROR("%s; refusing to open it unsharded", err);
		errno = EINVAL;
		goto out_free_head;
	}
	o = calloc(1, sizeof *o);
	if (!o)
		goto out_nomem_head;
	if (ddp_shard_view_init(&specs[f->spec], &l, ri->rank, ri->world_size, &o->view) != DDP_OK) {
		DDP_ERROR("--shard %s: file too large to shard", f->path);
		errno = EINVAL;
		goto out_free_view;
	}
	if (l.fmt != DDP_SHARD_FMT_RAW) {
		o->header = malloc(l.header_bytes ? (size_t)l.header_bytes : 1);
		if (!o->header)
			goto out_nomem_view;
		if (ddp_shard_format_rewrite(&l, head, o->view.count, o->header) != DDP_OK) {
			DDP_ERROR("--shard %s: cannot rewrite its header", f->path);
			errno = EINVAL;
			free(o->header);
			goto out_free_view;
		}
	}
	o->refs = 1;
	o->file = fi;
	ddp_status_shard_opened(f->spec); /* ddprun: this spec was read through */
	pthread_mutex_init(&o->lock, NULL);
	DDP_INFO(SHARD, "%s: %s, rank %d of %d sees %llu of %llu records (%llu bytes)", f->path,
		 ddp_shard_fmt_name(l.fmt), ri->rank, ri->world_size, (unsigned long long)o->view.count,
		 (unsigned long long)l.record_count, (unsigned long long)o->view.size);
	free(head);
	return o;
out_nomem_view:
	errno = ENOMEM;
out_free_view:
	free(o);
out_free_head:
	free(head);
	return NULL;
out_nomem_head:
	free(head);
out_nomem:
	DDP_ERROR("out of memory opening sharded %s", f->path);
	errno = ENOMEM;
	return NULL;
}

static void view_unref(struct hook_shard_open *o)
{
	if (o && __atomic_sub_fetch(&o->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		pthread_mutex_destroy(&o->lock);
		free(o->header);
		free(o);
	}
}

static void view_ref(struct hook_shard_open *o)
{
	__atomic_add_fetch(&o->refs, 1, __ATOMIC_ACQ_REL);
}

struct hook_shard_open *hook_shard_get(int fd)
{
	if (fd < 0 || fd >= HOOK_FD_MAX)
		return NULL;
	return __atomic_load_n(&fd_views[fd], __ATOMIC_ACQUIRE);
}

/* Sets fd's view (NULL clears), dropping what was there.  Nothing in a
 * vfork child (hook_memory_borrowed: the table is its parent's). */
static void view_set(int fd, struct hook_shard_open *o)
{
	if (fd < 0 || fd >= HOOK_FD_MAX || (!o && !hook_shard_get(fd)))
		return;
	if (hook_memory_borrowed()) {
		view_unref(o);
		return;
	}
	view_unref(__atomic_exchange_n(&fd_views[fd], o, __ATOMIC_ACQ_REL));
}

int hook_shard_after_open(int fd, const char *path, int flags)
{
	struct hook_shard_open *o;
	struct stat64 st;
	int fi, saved = errno; /* a successful open leaves errno alone */

	if (fd < 0)
		return fd;
	if (hook_shard_get(fd))
		view_set(fd, NULL); /* stale: fd was closed behind our back */
	if (!hook_shard_candidate(path) || (flags & (O_PATH | O_DIRECTORY)))
		return fd;
	if (!REAL(fstat64) || ddp_libc_.fstat64(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		errno = saved;
		return fd;
	}
	fi = shard_lookup(st.st_dev, st.st_ino);
	if (fi < 0)
		return fd;
	if ((flags & O_ACCMODE) != O_RDONLY) {
		DDP_WARN("%s is sharded but opened for writing; this fd sees the whole file", path);
		errno = saved;
		return fd;
	}
	if (fd >= HOOK_FD_MAX) {
		DDP_WARN("%s opened as fd %d (>= %d); this fd sees the whole file", path, fd, HOOK_FD_MAX);
		errno = saved;
		return fd;
	}
	/* The view copies anyway, and O_DIRECT would refuse the unaligned
	 * reads of the header and the records: drop it before the first read. */
	if (flags & O_DIRECT) {
		int fl = REAL(fcntl)(fd, F_GETFL);
		if (fl >= 0)
			ddp_libc_.fcntl(fd, F_SETFL, fl & ~O_DIRECT);
	}
	o = view_create(fd, fi, (uint64_t)st.st_size);
	if (!o) {
		int e = errno;
		REAL(close)(fd);
		errno = e;
		return -1;
	}
	view_set(fd, o);
	errno = saved;
	return fd;
}

static void patch(struct hook_shard_open *o, int64_t *size, int64_t *blocks)
{
	*size = (int64_t)o->view.size;
	*blocks = (int64_t)((o->view.size + 511) / 512);
}

/* Virtual size of file fi of real size/mtime, cached per file. */
static int file_vsize(int fi, uint64_t size, int64_t mtime_ns, uint64_t *vsize)
{
	struct shard_file *f = &files[fi];
	struct hook_shard_open *o;
	int ok = 0, fd;

	pthread_mutex_lock(&f->lock);
	if (f->cache_ok && f->cache_size == size && f->cache_mtime_ns == mtime_ns) {
		*vsize = f->cache_vsize;
		pthread_mutex_unlock(&f->lock);
		return 1;
	}
	pthread_mutex_unlock(&f->lock);
	fd = REAL(open64)(f->path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	o = view_create(fd, fi, size);
	REAL(close)(fd);
	if (o) {
		pthread_mutex_lock(&f->lock);
		f->cache_size = size;
		f->cache_mtime_ns = mtime_ns;
		f->cache_vsize = *vsize = o->view.size;
		f->cache_ok = ok = 1;
		pthread_mutex_unlock(&f->lock);
		view_unref(o);
	}
	return ok;
}

void hook_shard_patch_stat(int fd, struct stat64 *st)
{
	struct hook_shard_open *o = hook_shard_get(fd);
	uint64_t vs;
	int fi;

	if (o) {
		int64_t size, blocks;
		patch(o, &size, &blocks);
		st->st_size = size;
		st->st_blocks = blocks;
		return;
	}
	/* an fd without a view sees the whole file, and so does its size */
	if (fd >= 0 || !hook_shard_active() || !S_ISREG(st->st_mode))
		return;
	fi = shard_lookup(st->st_dev, st->st_ino);
	if (fi < 0)
		return;
	int saved = errno; /* the stat succeeded: errno stays the program's */
	int ok = file_vsize(fi, (uint64_t)st->st_size,
			    (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec, &vs);
	errno = saved;
	if (!ok)
		return;
	st->st_size = (off64_t)vs;
	st->st_blocks = (blkcnt64_t)((vs + 511) / 512);
}

void hook_shard_patch_statx(int fd, struct statx *stx)
{
	struct hook_shard_open *o = hook_shard_get(fd);
	uint64_t vs;
	int fi;

	if (!(stx->stx_mask & STATX_SIZE))
		return;
	if (o) {
		stx->stx_size = o->view.size;
		stx->stx_blocks = (o->view.size + 511) / 512;
		return;
	}
	if (fd >= 0 || !hook_shard_active() || !(stx->stx_mask & STATX_INO) || !S_ISREG(stx->stx_mode))
		return;
	fi = shard_lookup(makedev(stx->stx_dev_major, stx->stx_dev_minor), stx->stx_ino);
	if (fi < 0)
		return;
	int saved = errno;
	int ok = file_vsize(fi, stx->stx_size,
			    (int64_t)stx->stx_mtime.tv_sec * 1000000000 + stx->stx_mtime.tv_nsec, &vs);
	errno = saved;
	if (!ok)
		return;
	stx->stx_size = vs;
	stx->stx_blocks = (vs + 511) / 512;
}

/* ---- fd-level virtual I/O ------------------------------------------- */

static ssize_t view_pread(struct hook_shard_open *o, int fd, void *buf, size_t n, uint64_t off)
{
	return ddp_shard_view_read(&o->view, o->header, real_pread_cb, (void *)(intptr_t)fd, buf, n, off);
}

static ssize_t view_read_at_pos(struct hook_shard_open *o, int fd, const struct iovec *iov, int cnt, int64_t off)
{
	ssize_t total = 0;
	uint64_t pos;

	pthread_mutex_lock(&o->lock);
	pos = off < 0 ? o->pos : (uint64_t)off;
	for (int i = 0; i < cnt; i++) {
		ssize_t g = view_pread(o, fd, iov[i].iov_base, iov[i].iov_len, pos);

		if (g < 0) {
			if (total == 0)
				total = -1;
			break;
		}
		total += g;
		pos += (uint64_t)g;
		if ((size_t)g < iov[i].iov_len)
			break;
	}
	if (off < 0 && total > 0)
		o->pos = pos;
	pthread_mutex_unlock(&o->lock);
	return total;
}

ssize_t hook_shard_read(int fd, void *buf, size_t n)
{
	struct hook_shard_open *o = hook_shard_get(fd);
	struct iovec iov = { buf, n };

	if (!o) {
		if (!REAL(read))
			return syscall(SYS_read, fd, buf, n);
		return ddp_libc_.read(fd, buf, n);
	}
	return view_read_at_pos(o, fd, &iov, 1, -1);
}

off64_t hook_shard_lseek(int fd, off64_t off, int whence)
{
	struct hook_shard_open *o = hook_shard_get(fd);
	int64_t base, r;

	if (!o) {
		if (!REAL(lseek64))
			return syscall(SYS_lseek, fd, off, whence);
		return ddp_libc_.lseek64(fd, off, whence);
	}
	pthread_mutex_lock(&o->lock);
	switch (whence) {
	case SEEK_SET: base = 0; break;
	case SEEK_CUR: base = (int64_t)o->pos; break;
	case SEEK_END: base = (int64_t)o->view.size; break;
	case SEEK_DATA:
	case SEEK_HOLE:
		if (off < 0 || (uint64_t)off >= o->view.size) {
			pthread_mutex_unlock(&o->lock);
			errno = ENXIO;
			return -1;
		}
		r = whence == SEEK_DATA ? off : (int64_t)o->view.size;
		o->pos = (uint64_t)r;
		pthread_mutex_unlock(&o->lock);
		return r;
	default:
		pthread_mutex_unlock(&o->lock);
		errno = EINVAL;
		return -1;
	}
	if (__builtin_add_overflow(base, (int64_t)off, &r) || r < 0) {
		pthread_mutex_unlock(&o->lock);
		errno = EINVAL;
		return -1;
	}
	o->pos = (uint64_t)r;
	pthread_mutex_unlock(&o->lock);
	return r;
}

int hook_shard_close(int fd)
{
	view_set(fd, NULL);
	if (!REAL(close))
		return (int)syscall(SYS_close, fd);
	return ddp_libc_.close(fd);
}

/* ---- open ------------------------------------------------------------- */

static int do_open(int dirfd, const char *path, int flags, mode_t mode)
{
	char buf[PATH_MAX];
	const char *p;
	int fd;

	HOOK_LAUNDER(path);
	p = path;
	hook_file_init();
	if (hook_file_ready() && path)
		hook_write_output_gate(dirfd, path, flags);
	if (hook_file_ready() && path && hook_write_active()) {
		p = hook_write_map_open(dirfd, path, flags, buf, sizeof buf);
		if (!p)
			return -1;
		if (p != path)
			dirfd = AT_FDCWD;
	}
	if (dirfd == AT_FDCWD) {
		if (!REAL(open64))
			return (int)syscall(SYS_openat, AT_FDCWD, p, flags, mode);
		fd = ddp_libc_.open64(p, flags, mode);
	} else {
		if (!REAL(openat64))
			return (int)syscall(SYS_openat, dirfd, p, flags, mode);
		fd = ddp_libc_.openat64(dirfd, p, flags, mode);
	}
	return hook_shard_after_open(fd, path, flags);
}

int hook_file_open(int dirfd, const char *path, int flags, mode_t mode)
{
	return do_open(dirfd, path, flags, mode);
}

static mode_t open_mode(int flags, va_list ap)
{
	return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

DDP_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_open(AT_FDCWD, path, flags, mode);
}

DDP_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_open(AT_FDCWD, path, flags, mode);
}

DDP_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_open(dirfd, path, flags, mode);
}

DDP_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
	va_list ap;
	va_start(ap, flags);
	mode_t mode = open_mode(flags, ap);
	va_end(ap);
	return do_open(dirfd, path, flags, mode);
}

/* _FORTIFY_SOURCE variants (no mode argument). */
/* ---- read family ---------------------------------------------------- */

static ssize_t do_read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return hook_shard_read(fd, buf, n);
}

static ssize_t do_pread(int fd, void *buf, size_t n, off64_t off)
{
	struct hook_shard_open *o = hook_shard_get(fd);

	if (!o) {
		if (!REAL(pread64))
			return syscall(SYS_pread64, fd, buf, n, off);
		return ddp_libc_.pread64(fd, buf, n, off);
	}
	if (off < 0) {
		errno = EINVAL;
		return -1;
	}
	return view_pread(o, fd, buf, n, (uint64_t)off);
}

static ssize_t do_pread_chk(int fd, void *buf, size_t n, off64_t off, size_t buflen)
{
	if (n > buflen)
		__chk_fail();
	return do_pread(fd, buf, n, off);
}

DDP_EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	struct hook_shard_open *o = hook_shard_get(fd);

	if (!o)
		return REAL(readv)(fd, iov, cnt);
	if (cnt < 0) {
		errno = EINVAL;
		return -1;
	}
	return view_read_at_pos(o, fd, iov, cnt, -1);
}

static ssize_t do_preadv(int fd, const struct iovec *iov, int cnt, off64_t off, int flags, int v2)
{
	struct hook_shard_open *o = hook_shard_get(fd);

	if (!o) {
		if (v2)
			return REAL(preadv64v2)(fd, iov, cnt, off, flags);
		return REAL(preadv64)(fd, iov, cnt, off);
	}
	if (cnt < 0 || (off < 0 && !(v2 && off == -1))) {
		errno = EINVAL;
		return -1;
	}
	return view_read_at_pos(o, fd, iov, cnt, off);
}

/* Copy offloads would move the real bytes: refuse them on a sharded fd so
 * the caller falls back to read/write (cat, cp and Python do). */
DDP_EXPORT ssize_t copy_file_range(int in, off64_t *in_off, int out, off64_t *out_off, size_t n, unsigned flags)
{
	if (hook_shard_get(in)) {
		errno = EXDEV;
		return -1;
	}
	if (!REAL(copy_file_range)) {
		errno = ENOSYS;
		return -1;
	}
	return ddp_libc_.copy_file_range(in, in_off, out, out_off, n, flags);
}

DDP_EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t n)
{
	if (hook_shard_get(in)) {
		errno = EINVAL;
		return -1;
	}
	return REAL(sendfile64)(out, in, (off64_t *)off, n);
}

DDP_EXPORT ssize_t sendfile64(int out, int in, off64_t *off, size_t n)
{
	if (hook_shard_get(in)) {
		errno = EINVAL;
		return -1;
	}
	return REAL(sendfile64)(out, in, off, n);
}

DDP_EXPORT ssize_t splice(int in, off64_t *in_off, int out, off64_t *out_off, size_t n, unsigned flags)
{
	if (hook_shard_get(in)) {
		errno = EINVAL;
		return -1;
	}
	return REAL(splice)(in, in_off, out, out_off, n, flags);
}

/* ---- mmap: an anonymous copy of the virtual bytes -------------------- */

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	struct hook_shard_open *o = (flags & MAP_ANONYMOUS) ? NULL : hook_shard_get(fd);
	void *p;

	if (!o) {
		if (!REAL(mmap64))
			return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
		return ddp_libc_.mmap64(addr, len, prot, flags, fd, off);
	}
	if (off < 0 || len == 0 || (prot & PROT_WRITE && (flags & MAP_TYPE) == MAP_SHARED)) {
		errno = len == 0 || off < 0 ? EINVAL : EACCES;
		return MAP_FAILED;
	}
	flags = (flags & ~(MAP_TYPE | MAP_SHARED_VALIDATE)) | MAP_PRIVATE | MAP_ANONYMOUS;
	p = REAL(mmap64)(addr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return p;
	if (view_pread(o, fd, p, len, (uint64_t)off) < 0) {
		int e = errno;
		munmap(p, len);
		errno = e;
		return MAP_FAILED;
	}
	if (prot != (PROT_READ | PROT_WRITE))
		mprotect(p, len, prot);
	return p;
}

/* ---- close and dup ---------------------------------------------------- */

/* After a dup-like call made newfd a copy of oldfd. */
static int after_dup(int oldfd, int newfd)
{
	struct hook_shard_open *o;

	if (newfd < 0)
		return newfd;
	o = hook_shard_get(oldfd);
	if (o && newfd < HOOK_FD_MAX)
		view_ref(o);
	view_set(newfd, newfd < HOOK_FD_MAX ? o : NULL);
	return newfd;
}

DDP_EXPORT int dup2(int fd, int fd2)
{
	int r = REAL(dup2)(fd, fd2);
	return fd == fd2 ? r : after_dup(fd, r);
}

static int do_fcntl(int fd, int cmd, va_list ap)
{
	/* every fcntl argument is an int or a pointer: pass it on as a word */
	void *arg = va_arg(ap, void *);
	int r = REAL(fcntl)(fd, cmd, arg);

	if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
		return after_dup(fd, r);
	return r;
}

DDP_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	int r = do_fcntl(fd, cmd, ap);
	va_end(ap);
	return r;
}

DDP_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	int r = do_fcntl(fd, cmd, ap);
	va_end(ap);
	return r;
}

DDP_EXPORT int close_range(unsigned first, unsigned last, int flags)
{
	int r;

	if (!REAL(close_range)) {
		errno = ENOSYS;
		return -1;
	}
	r = ddp_libc_.close_range(first, last, flags);
	if (r == 0 && !(flags & CLOSE_RANGE_CLOEXEC))
		for (unsigned fd = first; fd <= last && fd < HOOK_FD_MAX; fd++)
			if (hook_shard_get((int)fd))
				view_set((int)fd, NULL);
	return r;
}

DDP_EXPORT void closefrom(int lowfd)
{
	for (int fd = lowfd < 0 ? 0 : lowfd; fd < HOOK_FD_MAX; fd++)
		if (hook_shard_get(fd))
			view_set(fd, NULL);
	if (REAL(closefrom))
		ddp_libc_.closefrom(lowfd);
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_FILE
#include "hook_libc_gen.h"
