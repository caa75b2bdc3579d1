/* SPDX-License-Identifier: MIT
 *
 * sim_kernels.c - loads the host-compiled kernel libraries of the CPU device
 * and finds kernels in them by mangled name.
 *
 * A kernel library (X.kern.so, built by exec.mk's sim_kernel_lib from the
 * same .cu as the program's fatbin) exports `sim_kernel_table`; right after
 * loading it the driver binds it to the scheduler (table.bind(&sim_exec_runtime),
 * sim_kernel_abi.h ABI 2).  Looked at,
 * once, on first use: "<realpath of /proc/self/exe>.kern.so" if it exists,
 * then each file of SIMCUDA_KERNELS (colon-separated; a missing file there is
 * reported).  All entries go into one array sorted by mangled name; a name
 * defined twice keeps its first definition.  The tables' device variables
 * (globals: __device__ / __constant__ storage, for cuModuleGetGlobal) are
 * indexed the same way; an entry without an address (a name the cubin has
 * but the source does not define, such as the compiler's math tables) is
 * left out.
 *
 * Contract: loading runs under pthread_once; afterwards the index is
 * read-only, so lookups from any thread need no lock.  Libraries stay loaded
 * until exit.
 */
#include "sim_exec.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
struct kentry {
	const struct sim_kernel_entry *e;
	size_t seq;                             /* load order: first wins */
};
static struct kentry *index_;                   /* sorted by mangled name */
static size_t nindex;
struct gentry {
	const struct sim_global_entry *g;
	size_t seq;
};
static struct gentry *gindex;                   /* sorted by mangled name */
static size_t ngindex;
static char searched[4096] = "none";            /* for error messages     */

static void searched_add(const char *path, const char *what)
{
	size_t len = strcmp(searched, "none") ? strlen(searched) : 0;

	snprintf(searched + len, sizeof(searched) - len, "%s%s (%s)", len ? ", " : "", path, what);
}

static int entry_cmp(const void *a, const void *b)
{
	const struct kentry *x = a, *y = b;
	int c = strcmp(x->e->mangled, y->e->mangled);

	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static int gentry_cmp(const void *a, const void *b)
{
	const struct gentry *x = a, *y = b;
	int c = strcmp(x->g->mangled, y->g->mangled);

	return c ? c : (x->seq > y->seq) - (x->seq < y->seq);
}

static void load_one(const char *path, int must_exist)
{
	const struct sim_kernel_table *t;
	struct kentry *grown;
	void *h;

	if (access(path, F_OK) != 0) {
		if (must_exist) {
			fprintf(stderr, "simcuda: SIMCUDA_KERNELS names %s, which does not exist\n", path);
			searched_add(path, "missing");
		}
		return;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "simcuda: cannot load kernel library %s: %s\n", path, dlerror());
		searched_add(path, "dlopen failed");
		return;
	}
	t = dlsym(h, "sim_kernel_table");
	if (!t) {
		fprintf(stderr, "simcuda: %s has no sim_kernel_table; build it with exec.mk's sim_kernel_lib\n", path);
		searched_add(path, "no sim_kernel_table");
		return;
	}
	if (t->abi_version != SIM_KERNEL_ABI_VERSION) {
		fprintf(stderr, "simcuda: %s was built for kernel ABI %u, this libcuda.so.1 speaks %u; rebuild it\n",
			path, t->abi_version, SIM_KERNEL_ABI_VERSION);
		searched_add(path, "wrong ABI version");
		return;
	}
	if (!t->bind || (t->count && !t->entries)) {
		fprintf(stderr, "simcuda: %s has a malformed sim_kernel_table; rebuild it with exec.mk's sim_kernel_lib\n", path);
		searched_add(path, "malformed sim_kernel_table");
		return;
	}
	/* The library's only link to the scheduler: no symbol lookups, so it
	 * works the same whether libcuda.so.1 is RTLD_GLOBAL or RTLD_LOCAL. */
	t->bind(&sim_exec_runtime);
	grown = realloc(index_, (nindex + t->count) * sizeof(*index_));
	if (!grown && nindex + t->count) {
		fprintf(stderr, "simcuda: out of memory loading %s\n", path);
		return;
	}
	index_ = grown;
	for (uint32_t i = 0; i < t->count; i++)
		index_[nindex] = (struct kentry){&t->entries[i], nindex}, nindex++;
	if (t->nglobals && t->globals) {
		struct gentry *gg = realloc(gindex, (ngindex + t->nglobals) * sizeof(*gindex));
		if (!gg) {
			fprintf(stderr, "simcuda: out of memory loading %s\n", path);
		} else {
			gindex = gg;
			for (uint32_t i = 0; i < t->nglobals; i++)
				if (t->globals[i].addr && t->globals[i].mangled)
					gindex[ngindex] = (struct gentry){&t->globals[i], ngindex}, ngindex++;
		}
	}
	searched_add(path, "loaded");
}

static void load_all(void)
{
	char exe[4096], path[4200];
	const char *env = getenv("SIMCUDA_KERNELS");
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n > 0) {
		exe[n] = 0;
		snprintf(path, sizeof(path), "%s.kern.so", exe);
		load_one(path, 0);
		if (!strcmp(searched, "none"))
			searched_add(path, "absent");
	}
	if (env && *env) {
		char *copy = strdup(env), *save = NULL;

		for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p; p = strtok_r(NULL, ":", &save))
			load_one(p, 1);
		free(copy);
	}
	if (ngindex > 1) {
		size_t out = 1;
		qsort(gindex, ngindex, sizeof(*gindex), gentry_cmp);
		for (size_t i = 1; i < ngindex; i++)
			if (strcmp(gindex[i].g->mangled, gindex[out - 1].g->mangled))
				gindex[out++] = gindex[i];
		ngindex = out;
	}
	if (nindex > 1) {
		/* Sort by (name, load order), keep the first of each name. */
		size_t out = 1;
		qsort(index_, nindex, sizeof(*index_), entry_cmp);
		for (size_t i = 1; i < nindex; i++)
			if (strcmp(index_[i].e->mangled, index_[out - 1].e->mangled))
				index_[out++] = index_[i];
		nindex = out;
	}
}

const struct sim_kernel_entry *sim_kernels_find(const char *mangled)
{
	size_t lo = 0, hi;

	pthread_once(&load_once, load_all);
	hi = nindex;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(mangled, index_[mid].e->mangled);
		if (!c)
			return index_[mid].e;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const struct sim_global_entry *sim_kernels_find_global(const char *mangled)
{
	size_t lo = 0, hi;

	pthread_once(&load_once, load_all);
	hi = ngindex;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(mangled, gindex[mid].g->mangled);
		if (!c)
			return gindex[mid].g;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

const char *sim_kernels_searched(void)
{
	pthread_once(&load_once, load_all);
	return searched;
}
