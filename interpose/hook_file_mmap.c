/* SPDX-License-Identifier: MIT
 *
 * hook_file_mmap.c - mmap of a sharded fd (docs/sharding.md, "mmap").
 *
 * A block view that does not wrap is the real file shifted: virtual byte
 * v >= H (the header's size) is real byte v + D, D = first record * record
 * size.  mmap of such a view maps the real file itself, MAP_PRIVATE, from
 * the page that holds real byte off + D, and returns the address of that
 * byte: the kernel pages the records in on demand, nothing is copied.  The
 * header bytes in the range (rewritten, or the real header of a raw file)
 * and the bytes past the view's end on its last page are written into the
 * private mapping (copy-on-write of those pages only); whole pages past the
 * view's end are mapped anonymous (zeros), so the next rank's records never
 * show.  A numpy memmap per batch (nanoGPT's loader) then costs an open and
 * a map, as without --shard.
 *
 * The address is not page-aligned when D is not a multiple of the page
 * size: munmap, mprotect, madvise and msync of an address inside such a
 * mapping are moved down to its page (a table of these mappings), so
 * Python's mmap object and numpy unmap it whole.  Every other view
 * (stride, a wrapped pad slice, MAP_FIXED, a full table) gets an anonymous
 * copy of the requested bytes, as before.
 *
 * Contract: any thread.  The table holds at most SHIFTED_MAX mappings and
 * is guarded by a mutex; the unmap family costs one relaxed load when it is
 * empty.  A shared writable mapping of a view is refused (EACCES).
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "ddp_log.h"
#if __has_include("ddp_export.h")
#include "ddp_export.h"
#endif
#ifndef DDP_EXPORT
#define DDP_EXPORT __attribute__((visibility("default")))
#endif
#include "hook_file.h"

#define REAL(fn) (ddp_libc_.fn ? ddp_libc_.fn : (hook_libc_resolve(), ddp_libc_.fn))
#define SHIFTED_MAX 1024

/* A mapping whose returned address is not its start. */
struct shifted {
	uintptr_t base; /* page-aligned start of the real mapping */
	size_t len;     /* its length                             */
};

static struct shifted shifted[SHIFTED_MAX];
static int n_shifted; /* entries in use (relaxed reads outside the lock) */
static pthread_mutex_t shifted_lock = PTHREAD_MUTEX_INITIALIZER;

static uintptr_t page_size(void)
{
	static uintptr_t ps;
	uintptr_t p = __atomic_load_n(&ps, __ATOMIC_RELAXED);

	if (!p) {
		long v = sysconf(_SC_PAGESIZE);
		p = v > 0 ? (uintptr_t)v : 4096;
		__atomic_store_n(&ps, p, __ATOMIC_RELAXED);
	}
	return p;
}

static int shifted_add(uintptr_t base, size_t len)
{
	int ok = 0;

	pthread_mutex_lock(&shifted_lock);
	if (n_shifted < SHIFTED_MAX) {
		shifted[n_shifted].base = base;
		shifted[n_shifted].len = len;
		__atomic_store_n(&n_shifted, n_shifted + 1, __ATOMIC_RELAXED);
		ok = 1;
	}
	pthread_mutex_unlock(&shifted_lock);
	return ok;
}

/* Moves *addr (and grows *len) down to its page when it lies in a shifted
 * mapping; drop: the call unmaps, so forget a mapping it covers whole. */
static void shifted_align(void **addr, size_t *len, int drop)
{
	uintptr_t a = (uintptr_t)*addr, down;

	if (!__atomic_load_n(&n_shifted, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&shifted_lock);
	for (int i = 0; i < n_shifted; i++) {
		struct shifted *s = &shifted[i];

		if (a < s->base || a - s->base >= s->len)
			continue;
		down = a & ~(page_size() - 1);
		*len += a - down;
		*addr = (void *)down;
		if (drop && down == s->base && *len >= s->len) {
			*s = shifted[n_shifted - 1];
			__atomic_store_n(&n_shifted, n_shifted - 1, __ATOMIC_RELAXED);
		}
		break;
	}
	pthread_mutex_unlock(&shifted_lock);
}

/* Maps [off, off+len) of the block view o on fd from the real file, or
 * returns MAP_FAILED with errno 0 when this view cannot be mapped so. */
static void *map_block(struct hook_shard_open *o, int fd, size_t len, int prot, int flags, uint64_t off)
{
	const struct ddp_shard_view *v = &o->view;
	const uintptr_t P = page_size();
	uint64_t D = v->first * v->record_bytes, start, lead, vis, done;
	size_t maplen;
	unsigned char *m, *p;
	int e;

	errno = 0;
	if (v->step != 1 || v->count == 0 || v->first + v->count > v->src_records || (flags & MAP_FIXED) ||
	    off >= v->size)
		return MAP_FAILED;
	start = (off + D) & ~(uint64_t)(P - 1);
	lead = off + D - start;
	if (__builtin_add_overflow((uint64_t)len, lead, &done) || done > SIZE_MAX - P)
		return MAP_FAILED;
	maplen = (size_t)done;
	flags = (flags & ~(MAP_TYPE | MAP_SHARED_VALIDATE)) | MAP_PRIVATE;
	m = REAL(mmap64)(NULL, maplen, prot | PROT_READ | PROT_WRITE, flags, fd, (off64_t)start);
	if (m == MAP_FAILED)
		return m;
	p = m + lead;
	/* the header's bytes in range: the view's, not the shifted file's */
	if (off < v->header_bytes &&
	    hook_shard_pread_view(
		    o, fd, p, (size_t)(v->header_bytes - off < len ? v->header_bytes - off : len), off) < 0)
		goto fail;
	/* past the view's end: zeros on its last page, anonymous pages after */
	vis = v->size - off;
	if (vis < len) {
		uintptr_t end = (uintptr_t)(p + vis), next = (end + P - 1) & ~(P - 1);
		uintptr_t stop = (uintptr_t)(m + maplen);

		memset((void *)end, 0, (next < stop ? next : stop) - end);
		if (next < stop && REAL(mmap64)((void *)next, stop - next, PROT_READ | PROT_WRITE,
						MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
			goto fail;
	}
	if (!(prot & PROT_WRITE) && REAL(mprotect)(m, maplen, prot) != 0)
		goto fail;
	if (lead && !shifted_add((uintptr_t)m, maplen)) {
		REAL(munmap)(m, maplen);
		errno = 0; /* the table is full: copy instead */
		return MAP_FAILED;
	}
	return p;
fail:
	e = errno;
	REAL(munmap)(m, maplen);
	errno = e ? e : EIO;
	return MAP_FAILED;
}

/* An anonymous private mapping filled with the virtual bytes. */
static void *map_copy(struct hook_shard_open *o, int fd, void *addr, size_t len, int prot, int flags,
		      uint64_t off)
{
	void *p;

	flags = (flags & ~(MAP_TYPE | MAP_SHARED_VALIDATE)) | MAP_PRIVATE | MAP_ANONYMOUS;
	p = REAL(mmap64)(addr, len, PROT_READ | PROT_WRITE, flags, -1, 0);
	if (p == MAP_FAILED)
		return p;
	if (hook_shard_pread_view(o, fd, p, len, off) < 0) {
		int e = errno;
		REAL(munmap)(p, len);
		errno = e;
		return MAP_FAILED;
	}
	if (prot != (PROT_READ | PROT_WRITE))
		REAL(mprotect)(p, len, prot);
	return p;
}

static void *do_mmap(void *addr, size_t len, int prot, int flags, int fd, off64_t off)
{
	struct hook_shard_open *o = (flags & MAP_ANONYMOUS) ? NULL : hook_shard_get(fd);
	void *p;

	if (!o) {
		if (!REAL(mmap64))
			return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
		return ddp_libc_.mmap64(addr, len, prot, flags, fd, off);
	}
	/* as the kernel: an offset off a page boundary is EINVAL */
	if (off < 0 || len == 0 || ((uint64_t)off & (page_size() - 1))) {
		errno = EINVAL;
		return MAP_FAILED;
	}
	if (prot & PROT_WRITE && (flags & MAP_TYPE) == MAP_SHARED) {
		errno = EACCES;
		return MAP_FAILED;
	}
	p = map_block(o, fd, len, prot, flags, (uint64_t)off);
	if (p != MAP_FAILED || errno)
		return p;
	return map_copy(o, fd, addr, len, prot, flags, (uint64_t)off);
}

/* The unmap family: the address moved down to its page inside a shifted
 * mapping, then the real call (the syscall while libc's table is being
 * filled: an allocator preloaded with us unmaps from inside dlvsym). */
static int do_munmap(void *addr, size_t len)
{
	shifted_align(&addr, &len, 1);
	if (!REAL(munmap))
		return (int)syscall(SYS_munmap, addr, len);
	return ddp_libc_.munmap(addr, len);
}

static int do_mprotect(void *addr, size_t len, int prot)
{
	shifted_align(&addr, &len, 0);
	if (!REAL(mprotect))
		return (int)syscall(SYS_mprotect, addr, len, prot);
	return ddp_libc_.mprotect(addr, len, prot);
}

static int do_madvise(void *addr, size_t len, int advice)
{
	shifted_align(&addr, &len, 0);
	if (!REAL(madvise))
		return (int)syscall(SYS_madvise, addr, len, advice);
	return ddp_libc_.madvise(addr, len, advice);
}

static int do_msync(void *addr, size_t len, int flags)
{
	shifted_align(&addr, &len, 0);
	if (!REAL(msync))
		return (int)syscall(SYS_msync, addr, len, flags);
	return ddp_libc_.msync(addr, len, flags);
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_MMAP
#include "hook_libc_gen.h"
