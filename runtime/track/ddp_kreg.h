/* SPDX-License-Identifier: MIT
 *
 * ddp_kreg.h - the module and kernel registry: for every CUfunction or
 * CUkernel the program launches, its module, mangled and demangled names and
 * parameter layout, with each parameter's kind (pointer / scalar / struct),
 * element type and const-ness, computed once and cached on the handle.
 *
 * Sources, best first: the module image (parsed ONCE at load with
 * ddp_module_parse and kept per module), the driver's cuFuncGetParamInfo /
 * cuKernelGetParamInfo (through the port, ddp_port.h), and the
 * demangled signature (types, const-ness).  An extern "C" kernel has a layout
 * but no types: its 8-byte parameters are checked against the allocation
 * table by the launch decoder.
 *
 * Handles map to records through a lock-free open-addressing hash table:
 * launches look up without a lock; registration (module load, GetFunction,
 * first launch of an unknown handle) takes reg_lock.  Records are never freed
 * before exit, so a pointer returned by a lookup stays valid.
 *
 * Contract: ddp_kreg_init once (library init).  ddp_kreg_lookup from any
 * thread, lock-free, no allocation.  Everything else takes reg_lock.
 */
#ifndef DDP_KREG_H
#define DDP_KREG_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"
#include "ddp_fatbin.h"

struct ddp_kparam_desc {
	uint32_t offset;  /* byte offset in the parameter area             */
	uint32_t size;    /* bytes                                         */
	uint8_t ptype;    /* enum ddp_ptype (ddp_sig.h)                    */
	uint8_t dtype;    /* enum ddp_dtype: pointee for pointers          */
	uint8_t is_const; /* read-only pointee                              */
	uint8_t flags;    /* DDP_KPARAM_POINTER from the cubin             */
};

struct ddp_kmodule {
	const void *handle; /* CUmodule or CUlibrary                  */
	int is_library;
	int parsed;        /* info is valid                          */
	const void *image; /* not read yet: read at the first kernel
					asked for (read_lock); NULL once read  */
	int unloaded;
	struct ddp_module_info info; /* parse result, owned                    */
	char source[128];            /* file name, or "memory"                 */
	struct ddp_kmodule *next;    /* reg_lock                               */
};

struct ddp_kfunc {
	const void *handle;         /* the first handle registered            */
	struct ddp_kmodule *module; /* NULL when unknown                      */
	char *name;                 /* mangled name (or "<unknown 0x...>")    */
	char *demangled;            /* demangled signature, or name           */
	uint32_t id;                /* registration order, from 0             */
	uint32_t nparams;
	uint32_t param_bytes;
	uint8_t layout_known;     /* params[].offset/size are valid         */
	uint8_t types_known;      /* params[].ptype from the signature      */
	uint8_t untracked;        /* ncclDevKernel_* / ncclKernel_*         */
	uint8_t template_dtype;   /* enum ddp_dtype of the first template arg */
	uint8_t optimizer;        /* name matches an optimizer pattern      */
	uint8_t warned;           /* a bad launch was reported (atomic)     */
	uint8_t sync_class;       /* ddp_sync: 0 unknown, else 1 + enum ddp_kfamily (atomic) */
	uint8_t sync_scan_state;  /* ddp_sync: 0 not built, 1 sync_scan ready, 2 always decode (atomic) */
	uint16_t sync_nscan;      /* ddp_sync: entries of sync_scan           */
	uint32_t *sync_scan;      /* ddp_sync: the 8-byte words that may hold a
				      * pointer: (param << 16) | byte offset in it */
	uint8_t sync_torch_state; /* ddp_torch_launch: 0 not learned, else enum ddp_xt */
	uint8_t sync_boundary;    /* ddp_sync: ends an iteration (DDP_KM_BOUNDARY) */
	void *sync_torch;         /* ddp_torch_launch: struct ddp_torch_kernel */
	char sync_kname[64];      /* ddp_sync: the function's own name (labels) */
	struct ddp_kparam_desc *params; /* nparams entries                     */
	/* launches is written by every launch (atomic add, any thread): alone
	 * on its cache line, so that the fields above, read on every launch
	 * (sync_class, sync_scan...), are not invalidated by it */
	char pad_before_[64];
	uint64_t launches; /* atomic                                 */
	char pad_after_[56];
	struct ddp_kfunc *next; /* all records, registration order        */
	void *user;             /* for the inspector (lazily allocated)   */
};

/* Creates the registry.  Kernel names and parameter layouts the images do
 * not give come from the driver through the port (ddp_port_func_name,
 * ddp_port_param_info). */
ddp_result ddp_kreg_init(void);

/* The device SM module images are read for (0 = highest in the image). */
void ddp_kreg_set_arch(uint32_t arch);

/* A module or library was loaded from image (len 0: unknown) or file.
 * Parses the image once; a bad image is a warning, never an error. */
void ddp_kreg_module_loaded(const void *handle, int is_library, const void *image, size_t len,
			    const char *source);
/* The loaded module of a handle, or NULL (tests, inspection).  Its image
 * is read lazily (ddp_kreg.c): `image` non-NULL means not read yet. */
const struct ddp_kmodule *ddp_kreg_module(const void *handle);

void ddp_kreg_module_unloaded(const void *handle);

/* handle (CUfunction or CUkernel) is kernel `name` of module `mod`. */
struct ddp_kfunc *ddp_kreg_register(const void *handle, const void *mod, const char *name);

/* alias (a CUfunction from cuKernelGetFunction) is the same kernel as k. */
void ddp_kreg_alias(const void *alias, struct ddp_kfunc *k);

/* Lock-free lookup; NULL when the handle was never registered. */
static inline struct ddp_kfunc *ddp_kreg_lookup(const void *handle);

/* For a handle never registered: build a record from what the driver
 * tells (name, parameter info); a record is always returned (possibly
 * with layout_known 0) so that the work is done once. NULL on OOM and for
 * a NULL handle. */
struct ddp_kfunc *ddp_kreg_discover(const void *handle);

/* All records in registration order (valid until exit). */
struct ddp_kfunc *ddp_kreg_first(void);

/* Is this kernel an optimizer step by name?  The same patterns (and
 * DDP_OPT_KERNELS / DDP_GRAD_READER_KERNELS) as the gradient tracker:
 * ddp_kfamily_classify; a gradient reader (norm, unscale) is not one. */
int ddp_kreg_is_optimizer_name(const char *name);

/* Fills k's parameter types from its demangled signature (exposed for the
 * unit tests). */
void ddp_kreg_apply_signature(struct ddp_kfunc *k);

/* ---- the hash table, inline for the launch path */
struct ddp_kreg_slot {
	const void *key;
	struct ddp_kfunc *val;
};
struct ddp_kreg_table {
	size_t mask;
	size_t used;
	struct ddp_kreg_table *older; /* retired tables, freed at exit */
	struct ddp_kreg_slot slots[];
};
extern struct ddp_kreg_table *ddp_kreg_table_;

static inline size_t ddp_kreg_hash(const void *h)
{
	uint64_t x = (uint64_t)(uintptr_t)h;
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return (size_t)x;
}

static inline struct ddp_kfunc *ddp_kreg_lookup(const void *handle)
{
	struct ddp_kreg_table *t = __atomic_load_n(&ddp_kreg_table_, __ATOMIC_ACQUIRE);
	if (!t || !handle)
		return NULL;
	for (size_t i = ddp_kreg_hash(handle) & t->mask;; i = (i + 1) & t->mask) {
		const void *k = __atomic_load_n(&t->slots[i].key, __ATOMIC_ACQUIRE);
		if (k == handle)
			return __atomic_load_n(&t->slots[i].val, __ATOMIC_ACQUIRE);
		if (!k)
			return NULL;
	}
}

#endif /* DDP_KREG_H */
