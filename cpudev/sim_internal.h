/* SPDX-License-Identifier: MIT
 *
 * sim_internal.h - shared internals of the CPU device's driver half
 * (libcuda.so.1): handles, the per-stream work queues, the memory table, the
 * fault table and the checks every entry point starts with.
 *
 * cuda.h is included with __CUDA_API_VERSION_INTERNAL, the way the driver
 * itself is built: every exported name (cuMemAlloc_v2, cuMemcpyAsync_ptsz,
 * the legacy v1 names) then has its real prototype, and none of the
 * name-mapping macros remains, so the sim_*.c files spell every entry point
 * with its exported (decorated) name and the compiler checks the signature.
 *
 * Contract: the handle structs below are this library's; programs see only
 * opaque pointers.  Locks: each table has its own mutex (memory: sim_mem.c,
 * streams of a context: ctx->mu, a stream's queue: stream->mu, completion of
 * work: sim_done_mu); no lock is held while a work item (copy, kernel) runs.
 * Lock order: ctx->mu, then stream->mu, then sim_done_mu.
 */
#ifndef SIM_INTERNAL_H
#define SIM_INTERNAL_H

#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>
#include <cudaProfiler.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stddef.h>
#include <time.h>

#include "sim_settings.h"

#ifndef SIM_EXPORT
#define SIM_EXPORT __attribute__((visibility("default")))
#endif

#define SIM_DRIVER_VERSION 13000
#define SIM_DEVICE_COUNT 1
#define SIM_SM 90                       /* compute capability 9.0            */
#define SIM_SM_COUNT 132                /* multiprocessors (as an H100 SXM)  */
#define SIM_SM_THREADS 2048             /* threads per multiprocessor        */
#define SIM_SM_BLOCKS 32                /* resident blocks per multiprocessor */
#define SIM_SM_REGS 65536               /* registers per multiprocessor      */
#define SIM_SM_SHARED (228u * 1024)     /* shared memory per multiprocessor  */
#define SIM_BLOCK_SHARED_RESERVED 1024u /* reserved per block (as the GPU)   */
#define SIM_FUNC_REGS 32                /* registers per thread we report    */
#define SIM_DEVICE_MEM (16ull << 30)    /* what cuDeviceTotalMem reports     */

/* ---- global state (sim_ctx.c) */

extern atomic_int sim_initialized;      /* cuInit succeeded                  */
extern atomic_int sim_sticky;           /* sticky error (CUresult), 0 = none */
extern int sim_verbose;                 /* SIMCUDA_VERBOSE set               */

/* Prints one line `simcuda: ...` on stderr (always). */
void sim_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Same, only when SIMCUDA_VERBOSE is set. */
#define SIM_VERBOSE(...) do { if (sim_verbose) sim_msg(__VA_ARGS__); } while (0)

/* Entry checks.  sim_check_init: NOT_INITIALIZED before cuInit, then the
 * sticky error if any.  sim_check_ctx: that plus the current context
 * (INVALID_CONTEXT when none); *ctx may be NULL. */
CUresult sim_check_init(void);
CUresult sim_check_ctx(struct CUctx_st **ctx /* OUT, may be NULL */);

/* Fault table (DDP_SIM_FAIL=name:N[+][:code][,...]): counts this call of
 * the entry point `name` (its exported name, e.g. cuMemAlloc_v2); returns 0
 * when the call proceeds, else the rule's code (if it gave one) or dflt. */
int sim_fault_code(const char *name, int dflt);
/* The same with name's default code from sim_faults.def (else
 * CUDA_ERROR_UNKNOWN): the check every generated export runs first. */
int sim_fault_check(const char *name);
/* Returns from the calling entry point when the fault table says this call
 * of `name` fails: with the rule's code, else dflt. */
#define SIM_FAULT_CHECK(name, dflt) do { \
	int sim_f_ = sim_fault_code((name), (dflt)); \
	if (sim_f_) \
		return (CUresult)sim_f_; \
} while (0)
/* The same with name's default code (sim_faults.def): the check of every
 * generated export. */
#define SIM_FAULT_RETURN(name) do { \
	int sim_f_ = sim_fault_check(name); \
	if (sim_f_) \
		return (CUresult)sim_f_; \
} while (0)

/* Every entry point of sim_api.def is exported by a generated function
 * (sim_entry.c: the fault check, then the hand-written body), made from
 * its prototype in cuda.h (sim_gen.sh faults -> sim_faults.inc).  Here the
 * hand-written body's C name is bound to the symbol sim_impl_<symbol>, so
 * `SIM_EXPORT CUresult cuMemAlloc_v2(...)` in sim_mem.c defines
 * sim_impl_cuMemAlloc_v2 (kept out of the exports by the link's version
 * script), and calls between entry points inside the driver skip the
 * check.  SIM_FAULT_NONE rows (sim_faults.def's SIM_FAULT_OWN) keep their
 * name. */
#define SIM_FAULT_FN(sym, params, args) extern __typeof__(sym) sym __asm__("sim_impl_" #sym);
#define SIM_FAULT_NONE(sym)
#include "sim_faults.inc"
#undef SIM_FAULT_FN
#undef SIM_FAULT_NONE

/* ---- contexts */

#define SIM_MAGIC_CTX 0x43545831u
#define SIM_MAGIC_STREAM 0x5354524du
#define SIM_MAGIC_EVENT 0x45564e54u
#define SIM_MAGIC_MODULE 0x4d4f444cu
#define SIM_MAGIC_FUNC 0x46554e43u
#define SIM_MAGIC_LIB 0x4c494252u
#define SIM_MAGIC_DEAD 0xdeadbeefu

struct CUctx_st {
	uint32_t magic;
	int device;
	unsigned flags;
	int primary;                    /* the device's primary context        */
	unsigned long long id;
	pthread_mutex_t mu;             /* serialises enqueues on the legacy
					   and blocking streams (implicit sync) */
	struct CUstream_st *legacy;     /* the NULL stream                      */
};

/* Context-local storage of the export tables (sim_export.c): drops the
 * entries of a context that is destroyed or reset, calling their
 * destructors (no lock held). */
void sim_cls_context_gone(struct CUctx_st *c);

/* HMAC-MD2 answer of the integrity-check export table (sim_integrity.c). */
void sim_integrity_hash(const void *msg, size_t len, const void *devs, size_t dev_len, uint64_t result[2]);

/* The current context of the calling thread (NULL when none). */
struct CUctx_st *sim_ctx_current(void);
int sim_ctx_valid(const struct CUctx_st *c);

/* ---- streams and work items (sim_stream.c) */

enum sim_ds { SIM_DS_LEGACY = 0, SIM_DS_PER_THREAD = 1 };

struct sim_work;
/* Runs on the stream's worker; returns CUDA_SUCCESS or an error that becomes
 * the sticky error. */
typedef CUresult (*sim_work_fn)(struct sim_work *w);

struct sim_work {
	sim_work_fn run;
	void (*release)(struct sim_work *w); /* after run (or when dropped); NULL = free(w) */
	struct sim_work *next;
	uint64_t seq;                   /* set by sim_stream_enqueue           */
	struct CUstream_st *stream;     /* the stream it runs on               */
	const char *what;               /* for SIMCUDA_TIMELINE: a kernel's
					 * name or the kind of item           */
	/* item-specific data follows in the containing struct */
};

/* SIMCUDA_TIMELINE (sim_timeline.c): whether it is on (first call reads
 * it); a mark before an item runs; the item's line after it ran. */
struct sim_timeline_mark {
	struct timespec wall, cpu;
};
int sim_timeline_on(void);
void sim_timeline_now(struct sim_timeline_mark *m);
void sim_timeline_item(unsigned long long stream, const char *what, const struct sim_timeline_mark *start);

struct CUstream_st {
	uint32_t magic;
	unsigned flags;                 /* CU_STREAM_DEFAULT / NON_BLOCKING    */
	int priority;
	int kind;                       /* 0 user, 1 legacy, 2 per-thread      */
	unsigned long long id;
	struct CUctx_st *ctx;
	pthread_mutex_t mu;             /* guards the queue fields             */
	pthread_cond_t cv;              /* worker waits for work               */
	struct sim_work *head, *tail;
	uint64_t enq_seq;               /* last seq given out (mu)             */
	uint64_t done_seq;              /* last seq finished (sim_done_mu)     */
	int quit;                       /* worker must exit when queue empty   */
	pthread_t worker;
	struct CUstream_st *next_all;   /* every live stream, or the pool of
					   destroyed ones (sim_streams_mu)      */
	uint16_t gen;                   /* incarnation, in the handle's top bits */
};

extern pthread_mutex_t sim_done_mu;     /* guards every done_seq and event completion */
extern pthread_cond_t sim_done_cv;      /* broadcast when any work item finishes      */

/* Resolves a handle as the program passed it (0, CU_STREAM_LEGACY,
 * CU_STREAM_PER_THREAD or a stream) under the call's default-stream flavour.
 * Checks init and context.  *out holds a reference (sim_stream_unref). */
CUresult sim_stream_resolve(CUstream h, enum sim_ds ds, struct CUstream_st **out /* OUT */);

/* Queues w on s (taking the implicit legacy-stream dependencies into
 * account).  The stream owns w from here (it may already be freed when this
 * returns); *seq (may be NULL) gets its sequence number for
 * sim_stream_wait_seq. */
CUresult sim_stream_enqueue(struct CUstream_st *s, struct sim_work *w, uint64_t *seq /* OUT, may be NULL */);
/* Waits until s has finished seq; returns the sticky error if one arose. */
CUresult sim_stream_wait_seq(struct CUstream_st *s, uint64_t seq);
/* Creates a stream of ctx (kind 0/1/2). */
CUresult sim_stream_create(struct CUctx_st *ctx, unsigned flags, int priority, int kind,
			   struct CUstream_st **out /* OUT */);
/* Waits for all work of every stream of ctx queued so far. */
CUresult sim_ctx_sync_streams(struct CUctx_st *ctx);
/* Waits for every stream of every context (used by cuMemFree). */
void sim_sync_all(void);
/* Drains and stops the stream's worker (joined) and marks the stream dead;
 * the struct goes to a pool for the next stream, under a new generation.
 * Programs hold generation-tagged handles (sim_stream.c), so a stale handle
 * fails cleanly with CUDA_ERROR_INVALID_HANDLE, and the memory kept is the
 * peak number of streams alive at once, not the number ever created. */
void sim_stream_destroy(struct CUstream_st *s);
/* Destroys every stream of ctx, the legacy one included. */
void sim_ctx_destroy_streams(struct CUctx_st *ctx);
/* Sets the sticky error (first one wins). */
void sim_set_sticky(CUresult rc);

/* ---- memory (sim_mem.c) */

enum sim_ptr_kind { SIM_PTR_NONE = 0, SIM_PTR_DEVICE, SIM_PTR_HOST_PINNED, SIM_PTR_BAD };

#define SIM_RANGE_MANAGED 0x1u          /* cuMemAllocManaged: also host memory */
#define SIM_RANGE_GLOBAL 0x2u           /* a __device__/__constant__ variable's
					   storage in a kernel library (not in
					   the reservation, never freed)       */

struct sim_range {
	uintptr_t base;
	size_t size;                    /* as requested                        */
	enum sim_ptr_kind kind;
	unsigned long long id;
	struct CUctx_st *ctx;
	unsigned flags;                 /* SIM_RANGE_*                         */
	unsigned long long res;         /* VMM: the address reservation's id (0: not VMM) */
	struct sim_pool *pool;          /* stream-ordered: the pool it came from */
};

/* Classifies [p, p+n): SIM_PTR_DEVICE when it lies inside one device
 * allocation, SIM_PTR_HOST_PINNED inside one pinned host allocation,
 * SIM_PTR_BAD when it touches the device range without lying inside one
 * allocation, SIM_PTR_NONE for ordinary host memory.  r gets the allocation. */
enum sim_ptr_kind sim_mem_classify(uintptr_t p, size_t n, struct sim_range *r /* OUT, may be NULL */);
/* True when p lies in the device address reservation. */
int sim_mem_in_device_range(uintptr_t p);
/* Records [p, p+n), the storage of a device variable, as device memory
 * (SIM_RANGE_GLOBAL) so copies and kernels may use it; idempotent.
 * CUDA_ERROR_INVALID_VALUE when it overlaps another recorded range. */
CUresult sim_mem_register_global(uintptr_t p, size_t n, struct CUctx_st *ctx);

/* Device memory for the allocators (sim_mem.c): a new allocation of size
 * bytes (its own pages, guard page after) recorded with owner pool; and the
 * release of the one starting at base (SIM_PTR_DEVICE, not VMM). */
CUresult sim_mem_dev_alloc(struct CUctx_st *ctx, size_t size, struct sim_pool *pool, CUdeviceptr *out /* OUT */);
CUresult sim_mem_dev_release(uintptr_t base);
/* The VMM half (sim_vmm.c) uses: an aligned virtual range from the VMM part
 * of the device reservation (0 when none is left) and its return; committed
 * physical bytes against the device capacity (0, or -1 when full); table
 * entries for accessible mappings. */
uintptr_t sim_mem_va_reserve(size_t size, size_t align);
void sim_mem_va_release(uintptr_t base, size_t size);
int sim_mem_charge(size_t bytes);
void sim_mem_uncharge(size_t bytes);
int sim_mem_table_add(const struct sim_range *r);
int sim_mem_table_remove(uintptr_t base, struct sim_range *out /* OUT, may be NULL */);
unsigned long long sim_mem_next_id(void);

/* ---- stream-ordered pools (sim_vmm.c) */
struct sim_pool;
/* The device's current pool (cuDeviceSetMemPool), the default one at first. */
struct sim_pool *sim_pool_current(void);
CUresult sim_pool_alloc(struct sim_pool *p, struct CUstream_st *s, size_t size, CUdeviceptr *out /* OUT */);
/* An allocation of pool p was freed at once (cuMemFree): its accounting. */
void sim_pool_forget(struct sim_pool *p, const struct sim_range *r);
/* cuMemFreeAsync of r on s: the block returns to its pool when s reaches it. */
CUresult sim_pool_free_async(struct CUstream_st *s, const struct sim_range *r);

/* ---- copies (sim_copy.c) */
enum sim_copy_dir { SIM_COPY_ANY = 0, SIM_COPY_HTOD, SIM_COPY_DTOH, SIM_COPY_DTOD };

CUresult sim_copy_sync(enum sim_ds ds, CUdeviceptr dst, CUdeviceptr src, size_t n, enum sim_copy_dir dir);
CUresult sim_copy_async(enum sim_ds ds, CUdeviceptr dst, CUdeviceptr src, size_t n, enum sim_copy_dir dir,
			CUstream s);
CUresult sim_set_sync(enum sim_ds ds, CUdeviceptr dst, unsigned v, unsigned elem, size_t n);
CUresult sim_set_async(enum sim_ds ds, CUdeviceptr dst, unsigned v, unsigned elem, size_t n, CUstream s);

/* ---- impls of the SIM_STREAM entries (one prototype per impl) */
CUresult sim_mem_alloc_async(enum sim_ds ds, CUdeviceptr *dptr, size_t bytesize, CUstream s);
CUresult sim_mem_free_async(enum sim_ds ds, CUdeviceptr dptr, CUstream s);
CUresult sim_mem_alloc_from_pool_async(enum sim_ds ds, CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
				       CUstream s);
CUresult sim_mem_prefetch(enum sim_ds ds, CUdeviceptr p, size_t n, int dst_ok, unsigned flags, CUstream s);
/* 1 when dev names a valid prefetch target (CU_DEVICE_CPU or device 0). */
int sim_prefetch_dev_ok(CUdevice dev);
int sim_prefetch_loc_ok(CUmemLocation loc);
CUresult sim_stream_synchronize(enum sim_ds ds, CUstream s);
CUresult sim_stream_query(enum sim_ds ds, CUstream s);
CUresult sim_stream_wait_event(enum sim_ds ds, CUstream s, CUevent e, unsigned flags);
CUresult sim_stream_get_flags(enum sim_ds ds, CUstream s, unsigned *flags);
CUresult sim_stream_get_priority(enum sim_ds ds, CUstream s, int *priority);
CUresult sim_stream_get_ctx(enum sim_ds ds, CUstream s, CUcontext *pctx);
CUresult sim_stream_get_id(enum sim_ds ds, CUstream s, unsigned long long *id);
CUresult sim_stream_host_func(enum sim_ds ds, CUstream s, CUhostFn fn, void *user);
CUresult sim_stream_add_callback(enum sim_ds ds, CUstream s, CUstreamCallback cb, void *user, unsigned flags);
CUresult sim_stream_is_capturing(enum sim_ds ds, CUstream s, CUstreamCaptureStatus *status);
CUresult sim_stream_capture_info(enum sim_ds ds, CUstream s, CUstreamCaptureStatus *status, cuuint64_t *id,
				 CUgraph *graph, const CUgraphNode **deps, const CUgraphEdgeData **edges,
				 size_t *ndeps);
CUresult sim_event_record(enum sim_ds ds, CUevent e, CUstream s, unsigned flags);
CUresult sim_launch_kernel(enum sim_ds ds, CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
			   unsigned by, unsigned bz, unsigned shmem, CUstream s, void **params, void **extra);
CUresult sim_launch_kernel_ex(enum sim_ds ds, const CUlaunchConfig *config, CUfunction f, void **params,
			      void **extra);

/* ---- events (sim_event.c) */
struct CUevent_st {
	uint32_t magic;
	unsigned flags;
	struct CUctx_st *ctx;
	uint64_t rec_gen;               /* records issued (sim_done_mu)        */
	uint64_t done_gen;              /* records completed (sim_done_mu)     */
	struct timespec when;           /* time of the last completed record   */
	int timed;                      /* the completed record has a time     */
};

/* ---- modules and functions (sim_module.c) */
struct sim_kernel_entry;
struct ddp_kernel_info;

struct CUfunc_st {
	uint32_t magic;
	struct CUmod_st *mod;
	const struct ddp_kernel_info *info;      /* from the cubin                */
	const struct sim_kernel_entry *host;     /* host implementation; NULL in
						    trace mode (launches skipped) */
	int max_dyn_shared;                      /* cuFuncSetAttribute            */
};

/* Trace mode (sim_trace.c, SIMCUDA_UNKNOWN_KERNELS=skip): whether kernels
 * without host code get a function whose launches do nothing; the kernel is
 * named once when its function is made; each launch is counted (the exit
 * summary says the run computed nothing real). */
int sim_trace_skip_unknown(void);
void sim_trace_kernel_skipped(const char *name);
void sim_trace_launch_skipped(void);
/* A kernel without host code was refused (the default): the process exits 1
 * at its end, naming ddp-cpu-kernels (sim_trace.c). */
void sim_trace_kernel_refused(const char *name);

/* Validates a CUfunction or a CUkernel cast to one; NULL when invalid. */
struct CUfunc_st *sim_func_get(const void *handle);

#endif /* SIM_INTERNAL_H */
