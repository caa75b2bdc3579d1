/* SPDX-License-Identifier: MIT
 *
 * ddp_alloc.c - the allocation table (see ddp_alloc.h for the layout).
 *
 * Contract: table_lock serialises writers and guards the counters' updates;
 * `seq` is odd while a writer changes the array.  Readers copy entries with
 * relaxed atomic loads and validate with the sequence (seqlock), so a torn
 * read is retried, never used.  The array region is reserved with mmap at
 * init and never moves.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include "ddp_alloc.h"
#include "ddp_port.h"
#include "ddp_log.h"

#if defined(__x86_64__) || defined(__i386__)
#define cpu_relax() __builtin_ia32_pause()
#else
#define cpu_relax() __asm__ __volatile__("" ::: "memory")
#endif

static struct ddp_alloc_ent *table; /* sorted by base, [0, count)     */
static size_t table_cap;
static size_t table_count; /* written under lock, read atomically */
static unsigned table_seq; /* seqlock sequence               */
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t next_id = 1;
static struct ddp_alloc_stats st; /* under table_lock               */

ddp_result ddp_alloc_init(size_t max_entries)
{
	size_t bytes = max_entries * sizeof(struct ddp_alloc_ent);
	void *p;

	if (table)
		return DDP_OK;
	if (max_entries == 0)
		return DDP_ERR_INVALID;
	p = DDP_SYS(mmap64)(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
			    -1, 0);
	if (p == MAP_FAILED) {
		DDP_WARN("allocation table: mmap of %zu bytes failed: %s", bytes, strerror(errno));
		return DDP_ERR_NOMEM;
	}
	table_cap = max_entries;
	table_count = 0;
	memset(&st, 0, sizeof st);
	next_id = 1;
	__atomic_store_n(&table, (struct ddp_alloc_ent *)p, __ATOMIC_RELEASE);
	return DDP_OK;
}

void ddp_alloc_fini(void)
{
	if (table)
		DDP_SYS(munmap)(table, table_cap * sizeof(struct ddp_alloc_ent));
	table = NULL;
	table_cap = table_count = 0;
}

/* ---- writer side (table_lock held) */
static void write_begin(void)
{
	__atomic_store_n(&table_seq, table_seq + 1, __ATOMIC_RELAXED);
	atomic_thread_fence(memory_order_release);
}

static void write_end(void)
{
	__atomic_store_n(&table_seq, table_seq + 1, __ATOMIC_RELEASE);
}

static void store_ent(struct ddp_alloc_ent *dst, const struct ddp_alloc_ent *src)
{
	__atomic_store_n(&dst->base, src->base, __ATOMIC_RELAXED);
	__atomic_store_n(&dst->size, src->size, __ATOMIC_RELAXED);
	uint64_t meta;
	memcpy(&meta, &src->id, sizeof meta);
	__atomic_store_n((uint64_t *)(void *)&dst->id, meta, __ATOMIC_RELAXED);
}

static void load_ent(struct ddp_alloc_ent *dst, const struct ddp_alloc_ent *src)
{
	dst->base = __atomic_load_n(&src->base, __ATOMIC_RELAXED);
	dst->size = __atomic_load_n(&src->size, __ATOMIC_RELAXED);
	uint64_t meta = __atomic_load_n((const uint64_t *)(const void *)&src->id, __ATOMIC_RELAXED);
	memcpy(&dst->id, &meta, sizeof meta);
}

/* Moves entries [from, count) to start at `to` (either direction). */
static void move_tail(size_t from, size_t to)
{
	size_t n = table_count - from;
	if (to > from) {
		for (size_t i = n; i-- > 0;)
			store_ent(&table[to + i], &table[from + i]);
	} else {
		for (size_t i = 0; i < n; i++)
			store_ent(&table[to + i], &table[from + i]);
	}
}

/* First index whose base >= addr (writer side, plain reads are fine). */
static size_t lower_bound(uint64_t addr)
{
	size_t lo = 0, hi = table_count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (table[mid].base < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void count_free(const struct ddp_alloc_ent *e)
{
	st.live_count--;
	st.live_bytes -= e->size;
	st.total_frees++;
	st.step_frees++;
	st.step_bytes_freed += e->size;
}

ddp_result ddp_alloc_insert(uint64_t base, uint64_t size, enum ddp_alloc_kind kind, unsigned creator,
			    uint32_t *id)
{
	ddp_result rc = DDP_OK;
	struct ddp_alloc_ent e;

	if (!table)
		return DDP_ERR_INTERNAL;
	if (size == 0)
		size = 1;
	if (base + size < base)
		size = UINT64_MAX - base;
	pthread_mutex_lock(&table_lock);
	size_t pos = lower_bound(base);
	/* stale overlaps: the entry before pos reaching past base, and entries
	 * starting inside [base, base+size) */
	size_t first = pos, last = pos;
	if (pos > 0 && table[pos - 1].base + table[pos - 1].size > base)
		first = pos - 1;
	while (last < table_count && table[last].base < base + size)
		last++;
	if (last - first >= 1 || table_count < table_cap) {
		write_begin();
		for (size_t i = first; i < last; i++) {
			DDP_DEBUG(ALLOC, "stale allocation 0x%llx+%llu replaced by 0x%llx+%llu",
				  (unsigned long long)table[i].base, (unsigned long long)table[i].size,
				  (unsigned long long)base, (unsigned long long)size);
			count_free(&table[i]);
			st.stale++;
		}
		e.base = base;
		e.size = size;
		e.id = next_id++;
		e.kind = (uint8_t)kind;
		e.pad = 0;
		e.creator = (uint16_t)creator;
		/* the new entry replaces [first, last) */
		if (last - first != 1) {
			move_tail(last, first + 1);
			__atomic_store_n(&table_count, table_count - (last - first) + 1, __ATOMIC_RELAXED);
		}
		store_ent(&table[first], &e);
		write_end();
		st.live_count++;
		st.live_bytes += size;
		if (st.live_bytes > st.peak_bytes)
			st.peak_bytes = st.live_bytes;
		st.total_allocs++;
		st.total_bytes += size;
		st.step_allocs++;
		st.step_bytes_alloc += size;
		if (id)
			*id = e.id;
	} else {
		st.dropped++;
		rc = DDP_ERR_NOMEM;
	}
	pthread_mutex_unlock(&table_lock);
	if (rc == DDP_ERR_NOMEM)
		DDP_WARN_ONCE("allocation table full (%zu entries): new allocations are not "
			      "tracked; raise DDP_ALLOC_MAX",
			      table_cap);
	return rc;
}

ddp_result ddp_alloc_remove(uint64_t base, struct ddp_alloc_ent *out)
{
	ddp_result rc = DDP_ERR_INVALID;

	if (!table)
		return DDP_ERR_INTERNAL;
	pthread_mutex_lock(&table_lock);
	size_t pos = lower_bound(base);
	if (pos < table_count && table[pos].base == base) {
		if (out)
			*out = table[pos];
		count_free(&table[pos]);
		write_begin();
		move_tail(pos + 1, pos);
		__atomic_store_n(&table_count, table_count - 1, __ATOMIC_RELAXED);
		write_end();
		rc = DDP_OK;
	}
	pthread_mutex_unlock(&table_lock);
	return rc;
}

size_t ddp_alloc_remove_range(uint64_t base, uint64_t size)
{
	size_t n = 0;

	if (!table || size == 0)
		return 0;
	pthread_mutex_lock(&table_lock);
	size_t first = lower_bound(base), last = first;
	while (last < table_count && table[last].base < base + size &&
	       table[last].base + table[last].size <= base + size)
		last++;
	n = last - first;
	if (n) {
		for (size_t i = first; i < last; i++)
			count_free(&table[i]);
		write_begin();
		move_tail(last, first);
		__atomic_store_n(&table_count, table_count - n, __ATOMIC_RELAXED);
		write_end();
	}
	pthread_mutex_unlock(&table_lock);
	return n;
}

int ddp_alloc_find(uint64_t addr, struct ddp_alloc_ent *out)
{
	const struct ddp_alloc_ent *t = __atomic_load_n(&table, __ATOMIC_ACQUIRE);
	struct ddp_alloc_ent e;
	unsigned s1, s2;
	int found;

	if (!t)
		return 0;
	do {
		s1 = __atomic_load_n(&table_seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			cpu_relax();
			continue;
		}
		size_t n = __atomic_load_n(&table_count, __ATOMIC_RELAXED);
		if (n > table_cap)
			n = table_cap;
		/* last entry with base <= addr */
		size_t lo = 0, hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (__atomic_load_n(&t[mid].base, __ATOMIC_RELAXED) <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		found = 0;
		if (lo > 0) {
			load_ent(&e, &t[lo - 1]);
			found = addr - e.base < e.size;
		}
		atomic_thread_fence(memory_order_acquire);
		s2 = __atomic_load_n(&table_seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			break;
	} while (1);
	if (found && out)
		*out = e;
	return found;
}

size_t ddp_alloc_snapshot(struct ddp_alloc_ent *out, size_t max)
{
	size_t n;

	if (!table)
		return 0;
	pthread_mutex_lock(&table_lock);
	n = table_count;
	if (out && max)
		memcpy(out, table, (n < max ? n : max) * sizeof *out);
	pthread_mutex_unlock(&table_lock);
	return n;
}

void ddp_alloc_stats(struct ddp_alloc_stats *out)
{
	pthread_mutex_lock(&table_lock);
	*out = st;
	pthread_mutex_unlock(&table_lock);
}

void ddp_alloc_step_reset(void)
{
	pthread_mutex_lock(&table_lock);
	st.step_allocs = st.step_frees = st.step_bytes_alloc = st.step_bytes_freed = 0;
	pthread_mutex_unlock(&table_lock);
}

const char *ddp_alloc_kind_name(enum ddp_alloc_kind k)
{
	static const char *const names[DDP_ALLOC_NKIND] = { "plain", "async", "managed", "vmm" };
	return (unsigned)k < DDP_ALLOC_NKIND ? names[k] : "?";
}

int ddp_alloc_covers(uint64_t addr, uint64_t bytes, struct ddp_alloc_ent *first)
{
	struct ddp_alloc_ent e, f;
	uint64_t end = addr + bytes, at = addr;

	if (!bytes)
		bytes = 1, end = addr + 1;
	if (end < addr || !ddp_alloc_find(addr, &f))
		return 0;
	e = f;
	/* walk adjacent VMM mappings (each a separate entry) to the end; each
	 * step is its own lock-free lookup, so a concurrent unmap makes the
	 * answer 0, never a torn walk */
	while (e.base + e.size < end) {
		at = e.base + e.size;
		struct ddp_alloc_ent n;
		if (e.kind != DDP_ALLOC_VMM || !ddp_alloc_find(at, &n) || n.base != at ||
		    n.kind != DDP_ALLOC_VMM)
			return 0;
		e = n;
	}
	if (first)
		*first = f;
	return 1;
}
