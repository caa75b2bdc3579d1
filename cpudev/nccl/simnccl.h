/* SPDX-License-Identifier: MIT
 *
 * simnccl.h - internals of the CPU device's NCCL stand-in (libnccl.so.2,
 * docs/cpu-device.md "NCCL"): the communicator, the shared segment the ranks
 * exchange data through, and the pieces of a launch.
 *
 * What it is: a libnccl.so.2 whose collectives are enqueued on the caller's
 * CUstream of the CPU device (one cuLaunchHostFunc per launch) and run there,
 * in stream order and asynchronously to the calling thread, moving the data
 * between the rank processes through a POSIX shared-memory segment named
 * after the ncclUniqueId.  It validates a program's use of the NCCL API
 * (ordering on streams, non-blocking communicators, groups, asynchronous
 * errors, abort) -- not NCCL's algorithms, speed or numerics.
 *
 * Layout of the segment: struct sn_seg (one cache line per rank: pid, barrier
 * epoch, abort flag, the descriptor of the collective it is in), then one
 * slot of SN_SLOT bytes per rank.  A collective runs chunk by chunk: every
 * rank copies its chunk into its slot, barrier; every rank reduces all slots
 * in rank order into its own output, barrier (the slots may be reused).
 *
 * Contract: a communicator's launches run one at a time in issue order (a
 * ticket per launch, whatever stream it is on), so the barrier epoch and
 * the segment belong to the launch running.  c->mu guards the tickets, the
 * pending queue of a non-blocking communicator and the last error; state,
 * aborted and refs are atomics.  A communicator's memory is never freed
 * (destroy/abort poison it), so a late host function or a caller that uses
 * a destroyed handle finds a dead communicator, not freed memory; the
 * segment is unmapped by the last reference.
 */
#ifndef SIMNCCL_H
#define SIMNCCL_H

#include <cuda.h>
#include <nccl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SN_EXPORT __attribute__((visibility("default")))
#define SN_MAX_RANKS 64
#define SN_SLOT (1u << 20)        /* bytes per rank per chunk               */
#define SN_ID_MAGIC 0x4c43434e4d495355ull /* "USIMNCCL" in the unique id   */
#define SN_LIVE 0x6c697665u
#define SN_DEAD 0xdeadc0deu

enum sn_kind { SN_ALLREDUCE = 1, SN_BROADCAST = 2 };

/* What a rank posts for the collective it is in; all ranks must agree. */
struct sn_desc {
	uint64_t opno;            /* collectives of this comm so far, from 1   */
	uint64_t count;
	int32_t kind, dtype, redop, root;
};

struct sn_rank {
	_Atomic int pid;          /* 0 until the rank joined                   */
	_Atomic int aborted;      /* the rank aborted its communicator         */
	_Atomic uint64_t epoch;   /* barriers passed                           */
	struct sn_desc desc;      /* written before the epoch that publishes it */
} __attribute__((aligned(64)));

struct sn_seg {
	uint64_t magic;
	_Atomic int nranks;       /* set by the first rank (CAS)               */
	_Atomic int joined;
	struct sn_rank r[SN_MAX_RANKS];
};

#define SN_HDR_BYTES ((sizeof(struct sn_seg) + 4095) & ~(size_t)4095)
/* Sparse: only the slots of the ranks that exist are ever touched. */
#define SN_SEG_BYTES (SN_HDR_BYTES + (size_t)SN_MAX_RANKS * SN_SLOT)
#define SN_SLOTS(c) ((unsigned char *)(c)->seg + SN_HDR_BYTES)

struct sn_op {
	enum sn_kind kind;
	const void *send;
	void *recv;
	size_t count;
	ncclDataType_t dtype;
	ncclRedOp_t redop;
	int root;
	uint64_t opno;
};

/* One host function on the stream: a single collective, or a group's. */
struct sn_launch {
	struct sn_comm *c;
	CUstream stream;
	uint64_t ticket;          /* issue order within the comm, from 1       */
	int n;
	struct sn_op op[];
};

struct sn_comm {
	_Atomic unsigned magic;   /* SN_LIVE, SN_DEAD after destroy/abort      */
	int rank, nranks, blocking;
	CUdevice dev;
	CUcontext ctx;            /* the device's primary context (NCCL's)     */
	CUdeviceptr work;         /* a device buffer, as NCCL keeps its own    */
	struct sn_seg *seg;       /* SN_SEG_BYTES mapped                        */
	char name[64];            /* shm name; "" once unlinked                */
	_Atomic int state;        /* ncclSuccess, ncclInProgress or the error  */
	_Atomic int aborted;
	_Atomic int refs;         /* the handle + each launch in flight        */
	uint64_t epoch;           /* barrier epoch (the running launch)        */
	uint64_t opno;            /* collectives issued (caller thread)        */
	/* (mu) */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	uint64_t issued, ran;     /* launch tickets handed out / finished      */
	struct sn_launch *pending;/* non-blocking: one launch to enqueue       */
	int quit;
	pthread_t thr;            /* non-blocking: init, then enqueues         */
	int thr_started;
	char err[256];            /* last error of this comm                   */
	/* statistics (the running launch or the caller; written at the end) */
	_Atomic uint64_t n_launch, n_allreduce, n_broadcast, n_groups, bytes;
	ncclUniqueId id;
};

/* The driver entry points the stand-in uses (through cuGetProcAddress). */
struct sn_driver {
	CUresult (*cuCtxGetCurrent)(CUcontext *);
	CUresult (*cuCtxSetCurrent)(CUcontext);
	CUresult (*cuCtxGetDevice)(CUdevice *);
	CUresult (*cuDeviceGet)(CUdevice *, int);
	CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*cuStreamGetCtx)(CUstream, CUcontext *);
	CUresult (*cuLaunchHostFunc)(CUstream, CUhostFn, void *);
	CUresult (*cuPointerGetAttribute)(void *, CUpointer_attribute, CUdeviceptr);
	CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
	CUresult (*cuMemFree)(CUdeviceptr);
	CUresult (*cuGetErrorName)(CUresult, const char **);
};

/* NULL (with the reason in sn_set_error) when libcuda.so.1 is missing. */
const struct sn_driver *sn_drv(void);

/* Settings, read once: SIMNCCL_FAULT, SIMNCCL_DEAD_PEER, NCCL_DEBUG. */
struct sn_settings {
	int drop_rank;            /* fault drop:R: R's contribution left out, -1 */
	int kill_rank;            /* fault kill:R:N / stop:R:N                 */
	uint64_t kill_op;
	int kill_sig;
	int hang_on_dead_peer;    /* SIMNCCL_DEAD_PEER=hang                    */
	int debug;                /* NCCL_DEBUG=WARN or INFO                   */
	const char *stats_dir;    /* SIMNCCL_STATS: write counts at destroy    */
};
const struct sn_settings *sn_settings(void);

/* Records the last error (global and, with c, the comm's); printed with
 * NCCL_DEBUG=WARN, or always when loud (API misuse). */
void sn_set_error(struct sn_comm *c, int loud, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Runs one launch's collectives (on the stream's worker).  Sets the comm's
 * asynchronous error on failure. */
void sn_run_launch(struct sn_launch *l);

/* Size of one element of dt; 0 when the stand-in does not know it. */
size_t sn_dtype_size(ncclDataType_t dt);

/* Drops a reference; the last one unmaps the segment. */
void sn_unref(struct sn_comm *c);

#endif /* SIMNCCL_H */
