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
 * defined twice with the same parameter sizes keeps its first definition,
 * with other sizes both (two builds of one source, as samples/torchlike's
 * CUDA 12 and CUDA 13 kernels: sim_kernels_find_sized picks by the module's
 * sizes).  The tables' device variables
 * (globals: __device__ / __constant__ storage, for cuModuleGetGlobal) are
 * indexed the same way; an entry without an address (a name the cubin has
 * but the source does not define, such as the compiler's math tables) is
 * left out.
 *
 * Later, when a module image is loaded from memory that belongs to a mapped
 * file other than the executable (a shared library that embeds its fatbin,
 * such as the cuBLAS stand-ins), "<that file>.kern.so" is loaded too if it
 * exists (sim_kernels_image_loaded); its entries rank after earlier ones.
 *
 * Contract: the first load runs under pthread_once; lookups and later loads
 * take one mutex (lookups happen once per function object or variable, not
 * per launch).  Libraries stay loaded until exit.
 */
#include "sim_exec.h"
#include "sim_settings.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t index_mu = PTHREAD_MUTEX_INITIALIZER; /* both indexes, searched, tried */
static size_t next_seq;                         /* load order of entries     */
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

static void index_dedupe(void);

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
		index_[nindex++] = (struct kentry){&t->entries[i], next_seq++};
	if (t->nglobals && t->globals) {
		struct gentry *gg = realloc(gindex, (ngindex + t->nglobals) * sizeof(*gindex));
		if (!gg) {
			fprintf(stderr, "simcuda: out of memory loading %s\n", path);
		} else {
			gindex = gg;
			for (uint32_t i = 0; i < t->nglobals; i++)
				if (t->globals[i].addr && t->globals[i].mangled)
					gindex[ngindex++] = (struct gentry){&t->globals[i], next_seq++};
		}
	}
	searched_add(path, "loaded");
}

static void load_all(void)
{
	char exe[4096], path[4200];
	const char *env = sim_setting_kernels();
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
	index_dedupe();
}

/* The absolute path of the file mapped at addr (from /proc/self/maps), or 0. */
static int mapped_file(const void *addr, char *path, size_t size)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[4400];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int off = 0;
		char *p;

		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &off) < 2 || !off)
			continue;
		if ((uintptr_t)addr < lo || (uintptr_t)addr >= hi)
			continue;
		p = line + off;
		p[strcspn(p, "\n")] = 0;
		if (p[0] == '/' && !strstr(p, " (deleted)") && strlen(p) < size) {
			strcpy(path, p);
			found = 1;
		}
		break;
	}
	fclose(f);
	return found;
}

void sim_kernels_image_loaded(const void *image)
{
	static char *tried[64];                 /* files already looked at */
	static size_t ntried;
	char file[4096], exe[4096], path[4200];
	ssize_t n;

	pthread_once(&load_once, load_all);
	if (!image || !mapped_file(image, file, sizeof(file)))
		return;                         /* heap, stack, anonymous memory */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0 && (exe[n] = 0, !strcmp(exe, file)))
		return;                         /* the program: loaded at start  */
	pthread_mutex_lock(&index_mu);
	for (size_t i = 0; i < ntried; i++)
		if (!strcmp(tried[i], file))
			goto out;
	if (ntried < sizeof(tried) / sizeof(tried[0]))
		tried[ntried++] = strdup(file);
	snprintf(path, sizeof(path), "%s.kern.so", file);
	if (access(path, F_OK) == 0) {
		load_one(path, 1);
		index_dedupe();
	}
out:
	pthread_mutex_unlock(&index_mu);
}

static int same_params(const struct sim_kernel_entry *a, const struct sim_kernel_entry *b)
{
	return a->nparams == b->nparams && !memcmp(a->param_size, b->param_size, a->nparams * sizeof(a->param_size[0]));
}

/* Sort both indexes by (name, load order), keep the first of each name (of
 * each name and parameter sizes, for kernels). */
static void index_dedupe(void)
{
	if (ngindex > 1) {
		size_t out = 1;
		qsort(gindex, ngindex, sizeof(*gindex), gentry_cmp);
		for (size_t i = 1; i < ngindex; i++)
			if (strcmp(gindex[i].g->mangled, gindex[out - 1].g->mangled))
				gindex[out++] = gindex[i];
		ngindex = out;
	}
	if (nindex > 1) {
		size_t out = 1;
		qsort(index_, nindex, sizeof(*index_), entry_cmp);
		for (size_t i = 1; i < nindex; i++) {
			size_t j = out;
			while (j > 0 && !strcmp(index_[i].e->mangled, index_[j - 1].e->mangled) &&
			       !same_params(index_[i].e, index_[j - 1].e))
				j--;
			if (j == 0 || strcmp(index_[i].e->mangled, index_[j - 1].e->mangled))
				index_[out++] = index_[i];
		}
		nindex = out;
	}
}

/* ---- lookups (index_mu held): the first position whose name is >= key */

static const char *kernel_name_at(size_t i)
{
	return index_[i].e->mangled;
}

static const char *global_name_at(size_t i)
{
	return gindex[i].g->mangled;
}

static size_t lower_name(size_t n, const char *key, const char *(*name_at)(size_t))
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(name_at(mid), key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

const struct sim_kernel_entry *sim_kernels_find(const char *mangled)
{
	return sim_kernels_find_sized(mangled, UINT32_MAX, NULL); /* no size matches: the first */
}

const struct sim_kernel_entry *sim_kernels_find_sized(const char *mangled, uint32_t nparams, const uint32_t *sizes)
{
	const struct sim_kernel_entry *found = NULL;

	pthread_once(&load_once, load_all);
	pthread_mutex_lock(&index_mu);
	for (size_t i = lower_name(nindex, mangled, kernel_name_at); i < nindex && !strcmp(kernel_name_at(i), mangled);
	     i++) {
		const struct sim_kernel_entry *e = index_[i].e;
		if (!found)
			found = e;
		if (e->nparams == nparams && (!nparams || !memcmp(e->param_size, sizes, nparams * sizeof(*sizes)))) {
			found = e;
			break;
		}
	}
	pthread_mutex_unlock(&index_mu);
	return found;
}

const struct sim_global_entry *sim_kernels_find_global(const char *mangled)
{
	const struct sim_global_entry *found = NULL;

	pthread_once(&load_once, load_all);
	pthread_mutex_lock(&index_mu);
	size_t i = lower_name(ngindex, mangled, global_name_at);
	if (i < ngindex && !strcmp(global_name_at(i), mangled))
		found = gindex[i].g;
	pthread_mutex_unlock(&index_mu);
	return found;
}

const char *sim_kernels_searched(void)
{
	pthread_once(&load_once, load_all);
	return searched;
}
