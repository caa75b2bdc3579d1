/* SPDX-License-Identifier: MIT
 *
 * ddp_kreg.c - module and kernel registry (see ddp_kreg.h).
 *
 * Module images are read lazily: an image handed over from memory that lies
 * in a loaded executable or shared library (cudart's fatbins) is read when
 * a kernel of it is first registered (cuLibraryGetKernel,
 * cuModuleGetFunction, or a launch of an unknown handle of it), not at
 * load; other images (files, buffers the program owns and may free) are
 * read at load.  A module none of whose kernels is ever asked for is never
 * read.
 *
 * Contract: reg_lock guards the module list, the record list and every
 * write to the hash table; read_lock serialises the deferred reading of
 * images; ddp_kreg_table_ is published with release stores
 * and read lock-free.  A retired (grown-out-of) table is kept until exit
 * because a reader may still be probing it.  Records and modules are never
 * freed while the process runs.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_kreg.h"
#include "ddp_kfamily.h"
#include "ddp_params.h"
#include "ddp_port.h"
#include "ddp_log.h"
#include "ddp_sig.h"

struct ddp_kreg_table *ddp_kreg_table_;
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t read_lock = PTHREAD_MUTEX_INITIALIZER; /* ddp_kmodule image/parsed/info */
static struct ddp_kmodule *modules;
static struct ddp_kfunc *kfuncs, **kfuncs_tail = &kfuncs;
static uint32_t kfunc_count;
static uint32_t kreg_arch; /* device SM the images are read for, 0 = highest */

char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

static char *demangle(const char *name)
{
	int status = 0;
	if (!name || name[0] != '_' || name[1] != 'Z')
		return NULL;
	char *d = __cxa_demangle(name, NULL, NULL, &status);
	return status == 0 ? d : NULL;
}

static struct ddp_kreg_table *table_new(size_t cap)
{
	struct ddp_kreg_table *t = calloc(1, sizeof *t + cap * sizeof(struct ddp_kreg_slot));
	if (t)
		t->mask = cap - 1;
	return t;
}

ddp_result ddp_kreg_init(void)
{
	if (!ddp_kreg_table_) {
		struct ddp_kreg_table *t = table_new(1024);
		if (!t)
			return DDP_ERR_NOMEM;
		__atomic_store_n(&ddp_kreg_table_, t, __ATOMIC_RELEASE);
	}
	return DDP_OK;
}

void ddp_kreg_set_arch(uint32_t arch)
{
	__atomic_store_n(&kreg_arch, arch, __ATOMIC_RELAXED);
}

/* reg_lock held. */
static void slot_put(struct ddp_kreg_table *t, const void *key, struct ddp_kfunc *val)
{
	for (size_t i = ddp_kreg_hash(key) & t->mask;; i = (i + 1) & t->mask) {
		const void *k = t->slots[i].key;
		if (k == key) {
			__atomic_store_n(&t->slots[i].val, val, __ATOMIC_RELEASE);
			return;
		}
		if (!k) {
			__atomic_store_n(&t->slots[i].val, val, __ATOMIC_RELEASE);
			__atomic_store_n(&t->slots[i].key, key, __ATOMIC_RELEASE);
			t->used++;
			return;
		}
	}
}

/* reg_lock held.  Maps key to val, growing the table at half load. */
static void map_put(const void *key, struct ddp_kfunc *val)
{
	struct ddp_kreg_table *t = ddp_kreg_table_;
	if (!t || !key)
		return;
	if ((t->used + 1) * 2 > t->mask + 1) {
		struct ddp_kreg_table *n = table_new((t->mask + 1) * 2);
		if (n) {
			for (size_t i = 0; i <= t->mask; i++)
				if (t->slots[i].key)
					slot_put(n, t->slots[i].key, t->slots[i].val);
			n->older = t;
			__atomic_store_n(&ddp_kreg_table_, n, __ATOMIC_RELEASE);
			t = n;
		} else if (t->used + 1 > t->mask) {
			return; /* full and cannot grow: stays unregistered */
		}
	}
	slot_put(t, key, val);
}

static struct ddp_kmodule *module_find(const void *handle)
{
	for (struct ddp_kmodule *m = modules; m; m = m->next)
		if (m->handle == handle && !m->unloaded)
			return m;
	return NULL;
}

/* Reads m's image into m->info (read_lock held, or m not yet published). */
static void module_read(struct ddp_kmodule *m, const void *image, size_t len)
{
	char err[256] = "";
	if (ddp_module_parse(image, len, __atomic_load_n(&kreg_arch, __ATOMIC_RELAXED), &m->info, err,
			     sizeof err) == DDP_OK) {
		m->parsed = 1;
		DDP_DEBUG(KREG, "module %p (%s): %zu kernels, sm_%u", m->handle, m->source, m->info.nkernels,
			  m->info.arch);
	} else {
		DDP_WARN("cannot read the kernels of module %s (%s); its kernels are "
			 "tracked by name only",
			 m->source, err[0] ? err : "unknown format");
	}
}

/* A module whose image was deferred is read now, once. */
static void module_ready(struct ddp_kmodule *m)
{
	if (!m || !__atomic_load_n(&m->image, __ATOMIC_ACQUIRE))
		return;
	pthread_mutex_lock(&read_lock);
	if (m->image) {
		module_read(m, m->image, 0);
		__atomic_store_n(&m->image, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&read_lock);
}

void ddp_kreg_module_loaded(const void *handle, int is_library, const void *image, size_t len,
			    const char *source)
{
	struct ddp_kmodule *m = calloc(1, sizeof *m);

	if (!m)
		return;
	m->handle = handle;
	m->is_library = is_library;
	snprintf(m->source, sizeof m->source, "%s", source ? source : "memory");
	if (image && !len && ddp_port_image_lasts(image)) {
		m->image = image; /* read when a kernel of it is first asked for */
		DDP_DEBUG(KREG, "module %p (%s): image at %p read at first use", handle, m->source, image);
	} else if (image) {
		module_read(m, image, len);
	}
	pthread_mutex_lock(&reg_lock);
	m->next = modules;
	modules = m;
	pthread_mutex_unlock(&reg_lock);
}

const struct ddp_kmodule *ddp_kreg_module(const void *handle)
{
	pthread_mutex_lock(&reg_lock);
	struct ddp_kmodule *m = module_find(handle);
	pthread_mutex_unlock(&reg_lock);
	return m;
}

void ddp_kreg_module_unloaded(const void *handle)
{
	pthread_mutex_lock(&reg_lock);
	struct ddp_kmodule *m = module_find(handle);
	if (m)
		m->unloaded = 1;
	pthread_mutex_unlock(&reg_lock);
	if (m) { /* its image may go with it: never read it now */
		pthread_mutex_lock(&read_lock);
		__atomic_store_n(&m->image, NULL, __ATOMIC_RELEASE);
		pthread_mutex_unlock(&read_lock);
	}
}

int ddp_kreg_is_optimizer_name(const char *name)
{
	/* one table of patterns (ddp_kfamily.def): the gradient tracker's, with DDP_OPT_KERNELS */
	return ddp_kfamily_classify(name, ddp_param_opt_kernels(), ddp_param_grad_reader_kernels()) == DDP_KF_OPT;
}

void ddp_kreg_apply_signature(struct ddp_kfunc *k)
{
	static __thread struct ddp_sig sig; /* 1.6 KB: keep it off the stack */

	if (!k->demangled || ddp_sig_parse(k->demangled, &sig) != DDP_OK)
		return;
	k->template_dtype = sig.template_dtype;
	if (sig.truncated)
		return;
	if (!k->layout_known) {
		/* no layout: only a parameter count with no offsets */
		return;
	}
	if (sig.nparams != k->nparams) {
		DDP_DEBUG(KREG, "%s: signature has %u parameters, layout %u; types ignored", k->name,
			  sig.nparams, k->nparams);
		return;
	}
	for (uint32_t i = 0; i < k->nparams; i++) {
		k->params[i].ptype = sig.params[i].ptype;
		k->params[i].dtype = sig.params[i].dtype;
		k->params[i].is_const = sig.params[i].is_const;
	}
	k->types_known = 1;
}

/* Builds a record (no lock needed: not yet published). */
static struct ddp_kfunc *kfunc_new(const void *handle, struct ddp_kmodule *m, const char *name)
{
	struct ddp_kfunc *k = calloc(1, sizeof *k);
	const struct ddp_kernel_info *ki = NULL;

	if (!k)
		return NULL;
	k->handle = handle;
	k->module = m;
	if (name) {
		k->name = strdup(name);
	} else {
		char buf[48];
		snprintf(buf, sizeof buf, "<unknown %p>", handle);
		k->name = strdup(buf);
	}
	if (!k->name) {
		free(k);
		return NULL;
	}
	module_ready(m);
	if (m && m->parsed && name)
		ki = ddp_module_find(&m->info, name);
	if (ki) {
		k->nparams = ki->nparams;
		k->param_bytes = ki->param_bytes;
		k->params = calloc(ki->nparams ? ki->nparams : 1, sizeof *k->params);
		if (k->params) {
			for (uint32_t i = 0; i < ki->nparams; i++) {
				k->params[i].offset = ki->params[i].offset;
				k->params[i].size = ki->params[i].size;
				k->params[i].flags = (uint8_t)ki->params[i].flags;
			}
			k->layout_known = 1;
		}
		if (ki->demangled && strcmp(ki->demangled, ki->name) != 0)
			k->demangled = strdup(ki->demangled);
	}
	if (!k->layout_known) {
		/* ask the driver: loop the index until it says "out of range" */
		size_t off, size, n = 0;
		int rc = 0;
		struct ddp_kparam_desc tmp[256];
		while (n < 256 && (rc = ddp_port_param_info(handle, n, &off, &size)) == 0) {
			memset(&tmp[n], 0, sizeof tmp[n]);
			tmp[n].offset = (uint32_t)off;
			tmp[n].size = (uint32_t)size;
			n++;
		}
		if (rc == 1 || n == 256) {
			k->params = calloc(n ? n : 1, sizeof *k->params);
			if (k->params) {
				memcpy(k->params, tmp, n * sizeof *tmp);
				k->nparams = (uint32_t)n;
				k->layout_known = 1;
				k->param_bytes = n ? tmp[n - 1].offset + tmp[n - 1].size : 0;
			}
		}
	}
	if (!k->demangled)
		k->demangled = demangle(k->name);
	if (!k->demangled)
		k->demangled = strdup(k->name);
	ddp_kreg_apply_signature(k);
	/* NCCL's kernels: extern "C" in old versions, C++ (mangled) since 2.19 */
	k->untracked = strncmp(k->name, "ncclDevKernel_", 14) == 0 ||
		       strncmp(k->name, "ncclKernel_", 11) == 0 ||
		       strncmp(k->demangled, "ncclDevKernel_", 14) == 0 ||
		       strncmp(k->demangled, "ncclKernel_", 11) == 0;
	k->optimizer = (uint8_t)ddp_kreg_is_optimizer_name(k->demangled);
	return k;
}

static void publish(struct ddp_kfunc *k)
{
	k->id = kfunc_count++;
	*kfuncs_tail = k;
	kfuncs_tail = &k->next;
}

struct ddp_kfunc *ddp_kreg_register(const void *handle, const void *mod, const char *name)
{
	struct ddp_kfunc *k, *old;

	if (!handle)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	struct ddp_kmodule *m = module_find(mod);
	old = ddp_kreg_lookup(handle);
	if (old && old->module == m && old->name && name && strcmp(old->name, name) == 0) {
		pthread_mutex_unlock(&reg_lock);
		return old;
	}
	k = kfunc_new(handle, m, name);
	if (k) {
		publish(k);
		map_put(handle, k);
		DDP_DEBUG(KREG, "kernel %s: %u params%s%s", k->demangled, k->nparams,
			  k->layout_known ? "" : " (layout unknown)", k->types_known ? ", typed" : "");
	}
	pthread_mutex_unlock(&reg_lock);
	return k;
}

void ddp_kreg_alias(const void *alias, struct ddp_kfunc *k)
{
	if (!alias || !k)
		return;
	pthread_mutex_lock(&reg_lock);
	map_put(alias, k);
	pthread_mutex_unlock(&reg_lock);
}

struct ddp_kfunc *ddp_kreg_discover(const void *handle)
{
	const char *name = NULL;
	struct ddp_kfunc *k;

	/* NULL is no kernel (the driver refuses the launch); it could never be
	 * found again, so each launch would build one more record */
	if (!handle)
		return NULL;
	pthread_mutex_lock(&reg_lock);
	k = ddp_kreg_lookup(handle);
	if (k) {
		pthread_mutex_unlock(&reg_lock);
		return k;
	}
	if (ddp_port_func_name(handle, &name) != 0)
		name = NULL;
	k = kfunc_new(handle, NULL, name);
	if (k) {
		publish(k);
		map_put(handle, k);
		DDP_DEBUG(KREG, "kernel %p discovered at launch: %s, %u params%s", handle, k->demangled,
			  k->nparams, k->layout_known ? "" : " (layout unknown)");
	}
	pthread_mutex_unlock(&reg_lock);
	return k;
}

struct ddp_kfunc *ddp_kreg_first(void)
{
	return __atomic_load_n(&kfuncs, __ATOMIC_ACQUIRE);
}
