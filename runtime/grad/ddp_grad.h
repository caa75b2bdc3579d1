/* SPDX-License-Identifier: MIT
 *
 * ddp_grad.h - the step and gradient tracker: from the stream of kernel
 * launches it learns which buffers are gradients (G) and which are
 * parameters or optimizer state (P), and decides WHEN to average G and
 * broadcast P.  It does no I/O itself: each launch returns a plan
 * (ddp_plan.h), the actions it needs in order, which one executor carries
 * out (ddp_sync_exec.c on the driver; tests/unit/test_grad.c's on host
 * memory); only measurements (calibration) and liveness are asked while it
 * decides (struct ddp_grad_ops).
 *
 * The rules (docs/gradient-sync.md tells the story):
 * - Kernels come in three classes (decided by name, by the caller):
 *   optimizer, gradient reader (unscale, inf check, grad norm, clipping),
 *   other (forward, backward, anything).
 * - Buffers are RANGES of allocations: an argument covers [ptr, ptr + ext),
 *   where the caller bounds ext by an element-count argument of the launch
 *   when one fits (else the rest of the allocation).  A trainer that carves
 *   one allocation into tensors has one record per tensor range.
 * - Roles by who writes.  At an optimizer launch an argument is written
 *   (parameter or optimizer state, P) or read-only (a gradient candidate).
 *   The signature decides when the kernel is typed and const-correct (at
 *   least one typed const pointer); calibration decides otherwise, and also
 *   when the signature's "writes" contradicts a reader's evidence (a
 *   reader-revealed gradient passed non-const): snapshot, run the launch,
 *   compare the argument's range, restore.  A read-only range is a gradient
 *   (G) when its element count pairs with a P range (whatever its size: a
 *   32-byte bias is a parameter) of the same launch (fp32 master or same element size) -- per
 *   range, not per allocation.
 * - Readers: before the first step ends, a reader's large inputs (typed
 *   const pointers; every argument when the reader is not const-correct)
 *   are CANDIDATES: averaged there (so that the norm or the inf check sees
 *   the average), but they become G only where an optimizer launch of the
 *   same step reads them; a candidate no optimizer reads is dropped.  A
 *   const-correct reader's outputs (non-const pointers) are never G.
 * - Every G record has a dirty flag.  A non-optimizer launch that may write
 *   it (a non-const or untyped pointer overlapping the range) sets it.  A
 *   reader or optimizer launch that touches a dirty G first averages ALL
 *   dirty G (in the order G were first seen, never by address; adjacent
 *   ranges of one allocation in one collective) and clears them.
 * - P ranges are broadcast from rank 0 before their first update, once per
 *   range however many launches touch it.
 * - Steps: the first optimizer launch outside an update phase begins a step;
 *   the phase ends when forward/backward work of the next step begins: the
 *   first launch that writes a G range, the next reader launch, or (while no
 *   G is known) the first non-optimizer launch.  Launches between optimizer
 *   launches (a bf16 cast of updated master weights) stay in the phase.
 * - Updates from the data flow (launches of class "other" that are not
 *   explicit; ddp_flow.h keeps the evidence): while no update is known, an
 *   elementwise launch touching a parameter (a whole allocation launches
 *   read and none wrote) and a same-sized whole allocation written after
 *   the parameter's first read (the gradient) is a CUT: every dirty G is
 *   averaged, the parameter broadcast, a step begins.  The launches that
 *   follow until one touches an updated parameter are the update (learned
 *   by identity in step 1): their writes of G they averaged leave it clean,
 *   and what they wrote before an optimizer launch reads it is state
 *   (DDP_GE_FLOW_STATE), never G.  A launch of the phase that is not one of
 *   them ends the step (from step 2).
 * - Nothing silent: the first step ending with no G known, or the second
 *   ending with nothing ever averaged, is an error (strict mode).
 *
 * Explicit launches (L->explicit_ranges: PyTorch's multi-tensor, norm
 * cleanup and elementwise kernels, decoded by ddp_torch_args.c): every
 * argument is a tensor's exact range with its list's access, so nothing is
 * calibrated or paired and no allocation is taken whole.  Gradients are a
 * role of a consumer's list, whatever their address this step:
 * - a reader's or fused optimizer's gradient list (L->grad_list), and a
 *   generic foreach optimizer op's read-only list none of whose ranges an
 *   optimizer launch of this update phase wrote (and that is not the
 *   parameters read beside the gradients, as Adam's weight decay does: a
 *   list no launch of step 1 wrote while another list of the launch was
 *   written; learned as (kernel, list) for later steps), are named gradients: each
 *   is averaged before the launch unless it was averaged in this epoch and
 *   no bounded write touched it since;
 * - the epoch advances when an update phase ends (also when the launch
 *   that opened it comes again: the next step), at a boundary launch, and
 *   when a reader names a gradient it already named in this epoch (the
 *   next iteration without an optimizer step recognised in between);
 *   a gradient named in an epoch and not in the next is forgotten (the
 *   caching allocator gives its bytes to other tensors);
 * - ranges an optimizer launch reads and writes are parameters or state
 *   (broadcast before their first update); write-only ones are outputs;
 * - a neutral consumer averages the gradients it reads that need it, and
 *   its writes leave them averaged; it neither begins nor ends a step;
 * - a gradient-list tensor that is a first-step device copy of a range the
 *   step wrote (ddp_grad_copied) stands for its source: the source is
 *   averaged, the copy made again (ops.copy) and taken as state;
 * - an update phase also ends at the next forward: a launch pointing at a
 *   parameter or state range the open update rewrote.
 *
 * Contract: one tracker per process; the caller serialises calls (one lock
 * in ddp_sync.c).  Measurement callbacks are made from inside
 * ddp_grad_launch, before the plan holds any action that moves bytes.
 * Memory: the tables grow with malloc (slow path only).  A callback error
 * stops processing and is returned; the caller treats it as fatal.
 */
#ifndef DDP_GRAD_H
#define DDP_GRAD_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_dtype.h"
#include "ddp_err.h"
#include "ddp_kfamily.h"
#include "ddp_plan.h"

/* Element types are enum ddp_dtype (ddp_dtype.h), stored in uint8_t fields.
 * Only reducible types (f32, f16, bf16) make a gradient; the tracker treats
 * any other one as unknown. */

/* Kernel classes: the families of runtime/track/ddp_kfamily.def. */
enum ddp_grad_kclass {
	DDP_GK_OTHER = DDP_KF_OTHER,
	DDP_GK_READER = DDP_KF_READER,   /* reads gradients before the optimizer */
	DDP_GK_OPT = DDP_KF_OPT,         /* optimizer step                        */
	DDP_GK_NEUTRAL = DDP_KF_NEUTRAL, /* neutral consumer (ddp_kfamily.h)      */
};

enum ddp_grad_access { /* same values as enum ddp_access (ddp_launch.h) */
	DDP_GA_UNKNOWN = 0,
	DDP_GA_READ = 1,
	DDP_GA_WRITE = 2,
};

/* One argument of a launch: a pointer inside a live allocation, and the
 * range the launch is taken to touch: [ptr, ptr + ext). */
struct ddp_grad_arg {
	uint64_t base, size; /* the allocation                            */
	uint64_t ptr;        /* the address passed (base when 0)          */
	uint64_t ext;        /* bytes from ptr (0: to the allocation's end) */
	uint32_t alloc_id;
	uint16_t param; /* parameter index                           */
	uint16_t word;  /* 8-byte word inside a by-value struct      */
	uint8_t access; /* enum ddp_grad_access                      */
	uint8_t in_struct;
	uint8_t dtype;   /* enum ddp_dtype of the pointee             */
	uint8_t bounded; /* enum ddp_grad_bound: how ext is known     */
	uint8_t tlist;   /* explicit launches: the tensor list it
				  * belongs to (DDP_GRAD_NO_LIST: none)       */
	uint8_t outside; /* its bytes may be written outside the launches
			  * and the copies (managed or mapped memory)   */
	uint8_t input;   /* input data: host-set bytes (copied from the
			  * host, no kernel wrote them since) that the launch
			  * only reads, or integers (ddp_fused.h): never a
			  * gradient, never a parameter                   */
	uint8_t host_set; /* before the launch its range held only bytes
			   * copied from the host (ddp_fused.h): written, it is
			   * state the launch reads and rewrites in place   */
};

#define DDP_GRAD_NO_LIST 0xff

/* How an argument's extent (ext) is known. */
enum ddp_grad_bound {
	DDP_GB_NONE = 0,     /* not: to the allocation's end                    */
	DDP_GB_COUNT = 1,    /* the launch's largest count argument that fits:
			   * a guess (a 2-D or scatter kernel writes past it) */
	DDP_GB_EXACT = 2,    /* the tensor's own extent (PyTorch's tensor lists)
			   * or the output a library call declares (cuBLAS's
			   * C/D matrix): nothing outside it is touched        */
	DDP_GB_MEASURED = 3, /* an optimizer launch's: a rule of its integer
			   * arguments learned from the bytes it changed in the
			   * calibration steps and checked there (ddp_extent.h) */
};

struct ddp_grad_launch {
	const char *kname;      /* short name, for labels and messages       */
	uint32_t kid;           /* kernel id (registration order)            */
	uint8_t kclass;         /* enum ddp_grad_kclass                      */
	uint8_t template_dtype; /* enum ddp_dtype (functor<T>)               */
	uint32_t nargs;
	const struct ddp_grad_arg *args;
	void *stream;          /* opaque: passed back in the plan, callbacks */
	void *launch_ctx;      /* opaque: passed to ops->relaunch           */
	uint32_t truncated;    /* buffers the decoder dropped (more than it
				  * can hold): args[] is incomplete           */
	uint8_t const_correct; /* typed, with at least one const pointer:
				  * access from the signature is trusted      */
	uint64_t seq;          /* the caller's launch ordinal (recorded as a
				  * G range's last writer; 0 when unused)     */
	/* Explicit launches (PyTorch's decoded kernels, ddp_torch_args.h):
	 * every argument is one tensor's exact range, access READ, WRITE or
	 * READ|WRITE from its list's role; gradients are a ROLE of a
	 * consumer's list, not an address (see "Explicit launches" above). */
	uint8_t explicit_ranges;
	uint8_t grad_list; /* the list the kernel defines as gradients
				  * (AMP unscale / LpNorm list 0, fused list 1);
				  * DDP_GRAD_NO_LIST: none (generic foreach ops:
				  * decided by who wrote them this step)      */
	uint8_t boundary;  /* ends an iteration (scaler.update's
				  * amp_update_scale): gradients named before it
				  * are averaged again before their next use  */
};

enum ddp_grad_role {
	DDP_GR_NONE = 0,
	DDP_GR_GRAD,    /* averaged before it is consumed            */
	DDP_GR_PARAM,   /* parameter or optimizer state (broadcast)  */
	DDP_GR_OTHER,   /* neither (remembered: not calibrated again) */
	DDP_GR_CAND,    /* step 1: a reader's input, not yet read by an optimizer */
	DDP_GR_DERIVED, /* a const-correct reader's output: never G  */
};

/* How the role was decided (the evidence `DDP_LOG=info` and inspect show). */
enum ddp_grad_evidence {
	DDP_GE_NONE = 0,
	DDP_GE_SIG_CONST,   /* read-only: const pointer in the signature  */
	DDP_GE_SIG_WRITE,   /* written: non-const pointer of a const-correct kernel */
	DDP_GE_CAL_SAME,    /* read-only: unchanged by the calibration run */
	DDP_GE_CAL_CHANGED, /* written: changed by the calibration run    */
	DDP_GE_READER,      /* a reader's input (candidate) or output     */
	DDP_GE_LIST,        /* a consumer's gradient list (explicit launch) */
	DDP_GE_LIST_WRITE,  /* written by an optimizer launch's list      */
	DDP_GE_FLOW_PARAM,  /* data flow: read by the launches, written by none
				  * before the update (ddp_flow.h)            */
	DDP_GE_FLOW_GRAD,   /* data flow: written by this step's launches,
				  * read by the update's first launch         */
	DDP_GE_FLOW_STATE,  /* data flow: formed by the update's launches
				  * before the optimizer kernel read it        */
};

/* A range the tracker knows. */
struct ddp_grad_buf {
	uint64_t base, size; /* the range: first byte, bytes              */
	uint64_t alloc_base, alloc_size;
	uint32_t alloc_id;
	uint8_t role;        /* enum ddp_grad_role                        */
	uint8_t dtype;       /* G: enum ddp_dtype (reducible)             */
	uint8_t dirty;       /* G/candidate: written since the last reduction */
	uint8_t bcast_done;  /* P: broadcast from rank 0 done             */
	uint8_t from_reader; /* G: a reader revealed it first             */
	uint8_t confirmed;   /* G: seen read-only by an optimizer launch  */
	uint8_t evidence;    /* enum ddp_grad_evidence                    */
	uint8_t bounded;     /* enum ddp_grad_bound of its extent         */
	uint32_t order;      /* G/P: order of first appearance            */
	uint64_t count;      /* G: elements                               */
	char label[80];      /* "adamw_update:1+6144" (kernel:param+offset) */
	char writer[40];     /* G: the last non-optimizer kernel that wrote it (step 1) */
	char reader[40];     /* G: the reader that revealed it; P: ""      */
	char paired[64];     /* G: the P range its element count pairs with */
	/* G/candidate: the last launch that may have written it (set by the
	 * tracker with the dirty flag) */
	uint64_t wseq;   /* its ddp_grad_launch.seq                   */
	uint32_t wkid;   /* its kernel id                             */
	uint64_t writes; /* such writes so far                        */
	/* (the overlap layer keeps its own state of a range, found by the
	 * record's address: ddp_overlap.c) */
	/* explicit launches (named gradients) */
	uint8_t named;      /* G named by a consumer's gradient list     */
	uint8_t xsrc;       /* learned from an explicit launch (a tensor) */
	uint8_t in_place;   /* P from a list: the first optimizer launch
			     * that wrote it read it too (a parameter or
			     * state; an out-of-place result is a temporary,
			     * even when a later launch updates it in place) */
	uint64_t named_ep;  /* the epoch it was last named in            */
	uint64_t red_ep;    /* 1 + the epoch it was last averaged in (0: never) */
	uint64_t opt_phase; /* the step whose update phase last wrote it (0: none) */
	uint64_t xstamp;    /* the explicit launch that last looked it up */
	uint32_t rkid;      /* the reader kernel that last named it       */
	uint64_t flow_red;  /* G: the step whose (data-flow) update phase
				  * averaged it: the update's own writes then
				  * leave it clean                             */
	uint64_t rk_ep;     /*   and in which epoch (+1; 0: never)        */
};

/* A range an optimizer launch reads (the data-parallel invariant check). */
struct ddp_grad_read {
	uint64_t ptr, bytes;
	uint16_t param, word;
	uint8_t role; /* enum ddp_grad_role of the record, NONE if unknown */
	const char *label;
};

/* What the tracker asks of its caller WHILE it decides (everything else it
 * decides is returned as the launch's plan, ddp_plan.h): measuring an
 * optimizer launch in the calibration steps, and whether an allocation is
 * still live. */
struct ddp_grad_ops {
	void *ctx;
	/* Synchronous device <-> host copies (calibration). */
	ddp_result (*read)(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream);
	ddp_result (*write)(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream);
	/* Run the current launch now and wait for it (calibration). */
	ddp_result (*relaunch)(void *ctx, void *launch_ctx);
	/* Is b's allocation still live (same base and allocation id)?  May be
	 * NULL (always).  A freed buffer is forgotten, never reduced. */
	int (*alive)(void *ctx, const struct ddp_grad_buf *b);
};

struct ddp_grad;

/* dtype_override: DDP_DT_UNKNOWN = none, else a reducible type
 * (DDP_GRAD_DTYPE). */
ddp_result ddp_grad_new(const struct ddp_grad_ops *ops, enum ddp_dtype dtype_override,
			struct ddp_grad **out /* OUT */);
/* strict (the default): a first step with no gradient, or two steps with
 * nothing averaged, is an error.  Off for a dry run (ddprun inspect). */
void ddp_grad_set_strict(struct ddp_grad *g, int strict);
/* Debug, negative control (DDP_DEBUG_AVG_STATE): the data flow is off, so
 * optimizer state formed by generic kernels before the optimizer kernel
 * (m, v) is taken for the gradient and averaged INSTEAD of it, as the rules
 * before the data flow did.  Training is then wrong; the tests show it. */
void ddp_grad_set_debug_avg_state(struct ddp_grad *g, int on);
/* Debug, negative control of the full compare (DDP_DEBUG_UNSEEN_BYTES=N):
 * the data flow never makes a gradient of a range of exactly `bytes`
 * bytes, as a rule that misses one would; that parameter is then never
 * averaged, and only the compare of every range the update wrote
 * (ddp_grad_update_written) can stop the job. */
void ddp_grad_set_debug_unseen(struct ddp_grad *g, uint64_t bytes);
void ddp_grad_free(struct ddp_grad *g);

/* Processes one launch, BEFORE it reaches the driver, and returns in *plan
 * what must happen before the launch runs (ddp_plan.h: broadcasts,
 * reductions, copies, the ranges the invariant check hashes, step
 * boundaries), in order; the caller carries it out, then lets the launch
 * go.  Errors are fatal for the job (the message is in ddp_grad_last_error;
 * *plan is then empty).  A launch whose argument list is incomplete
 * (L->truncated): an optimizer or reader launch is an error (its gradients
 * cannot all be seen); any other launch marks every gradient dirty
 * (averaging an already averaged gradient changes nothing). */
ddp_result ddp_grad_launch(struct ddp_grad *g, const struct ddp_grad_launch *L,
			   const struct ddp_plan **plan /* OUT */);

/* Ends an open update phase (at exit); *plan as ddp_grad_launch's. */
ddp_result ddp_grad_finish(struct ddp_grad *g, const struct ddp_plan **plan /* OUT */);

/* Must "other" launches be decoded?  (No while no gradient is known, no
 * update phase is open and the first step is over.) */
int ddp_grad_active(const struct ddp_grad *g);

/* Steady state: the first step is over and some gradient is known.  Then
 * a non-optimizer, non-reader launch none of whose arguments points into
 * the allocation of a gradient or candidate changes nothing here, in an
 * update phase or not (the caller may skip ddp_grad_launch for it:
 * ddp_sync.c's cheap path).  ddp_grad_gen changes whenever the set of
 * gradients and candidates may have changed. */
int ddp_grad_steady(const struct ddp_grad *g);
uint64_t ddp_grad_gen(const struct ddp_grad *g);

/* An allocation is gone (free): forget it. */
void ddp_grad_forget(struct ddp_grad *g, uint64_t base);

/* The program copied `bytes` of device memory from src to dst (each inside
 * one tracked allocation: base, size, id).  Kept during the first step
 * only: an update that reads a copy of a gradient the program made in that
 * step (PyTorch's SGD momentum: buf = torch.clone(grad), a device-to-device
 * copy, in step 1 only) has the gradient averaged at its source, the copy
 * made again from the average (a COPY action), and the copy taken as optimizer
 * state (equal on every rank: no broadcast). */
void ddp_grad_copied(struct ddp_grad *g, uint64_t dst, uint64_t dst_base, uint64_t dst_size, uint32_t dst_id,
		     uint64_t src, uint64_t src_base, uint64_t src_size, uint32_t src_id, uint64_t bytes);

/* Is b a parameter or optimizer-state range whose bytes must be identical
 * on every rank once the update phase of step `step` has ended (what the
 * parameter check at checked steps and the final compare hash)?  Role P;
 * a range learned from a tensor list only while it describes its bytes:
 * written by the update of this step, or by the launch that ends it (its
 * plan's step end runs after the tracker took in the whole launch, which
 * may begin the next step: ddp_grad_buf_current would then call this
 * step's ranges stale; the launch has not run yet, so their bytes are this
 * step's); not an optimizer list's out-of-place result (a temporary: the
 * caching allocator gives its bytes to the next step's tensors, or the
 * program frees it); not a range that is a current gradient too
 * (PyTorch's clipping scales the gradients in place: written by the
 * update, but each rank's own until the next reduction). */
int ddp_grad_is_state(const struct ddp_grad *g, const struct ddp_grad_buf *b, uint64_t step);
/* Does the allocation at base hold such a range (step: the tracker's
 * current one)?  A hash probe and the allocation's records, not a scan
 * (asked at every cuMemFree until the final compare ran). */
int ddp_grad_alloc_holds_state(const struct ddp_grad *g, uint64_t base, uint64_t step);

/* The ranges an update found from the data flow wrote (its launches after
 * the cut: a parameter, optimizer state, a momentum) that no parameter or
 * gradient record holds now: loop-carried state that feeds the next update
 * though no rule named it.  The parameter check and the final compare hash
 * them with the parameters.  The i-th (NULL past the end); *named: a
 * parameter or gradient record holds it now (compared as that).  label
 * names the launch and argument that wrote it. */
const struct ddp_grad_buf *ddp_grad_update_written(struct ddp_grad *g, size_t i, int *named);

/* Introspection (tests, summary, --check). */
size_t ddp_grad_nbufs(const struct ddp_grad *g);
struct ddp_grad_buf *ddp_grad_buf_at(struct ddp_grad *g, size_t i);
uint64_t ddp_grad_grad_bytes(const struct ddp_grad *g); /* bytes of all G ranges */
/* Does b still describe its bytes?  Ranges learned from explicit launches
 * hold for the epoch or update phase that last named or wrote them (the
 * caching allocator gives their bytes to other tensors later); others
 * always (a freed allocation's records are forgotten). */
int ddp_grad_buf_current(const struct ddp_grad *g, const struct ddp_grad_buf *b);
const char *ddp_grad_role_name(enum ddp_grad_role r);
const char *ddp_grad_evidence_name(enum ddp_grad_evidence e);
uint64_t ddp_grad_steps(const struct ddp_grad *g);      /* steps begun   */
uint64_t ddp_grad_reductions(const struct ddp_grad *g); /* allreduce calls */
const char *ddp_grad_last_error(const struct ddp_grad *g);

/* The text the ranks compare before a collective over bufs[0..n)
 * (ddp_check_signature): "n=2 label dtype count=N; ..." (grads) or
 * "n=2 label bytes=N; ..." (parameters).  Always fits in cap (>= 128)
 * characters: when the whole description does not, it keeps the buffers that
 * fit and ends with " ...+K more fnv=<hex>", the hash of the whole, so any
 * difference between ranks still shows.  *hash (may be NULL) receives that
 * 64-bit FNV-1a of the whole description.  Returns the text's length. */
size_t ddp_grad_signature(char *out, size_t cap, struct ddp_grad_buf *const *bufs, size_t n, int grads,
			  uint64_t *hash /* OUT, may be NULL */);

/* Kernel families by name: the rows of runtime/track/ddp_kfamily.def, the
 * one table the kernel registry reads too.  Does the kernel end an
 * iteration (L->boundary)? */
static inline int ddp_grad_is_boundary(const char *name)
{
	return ddp_kfamily_mark(name, DDP_KM_BOUNDARY);
}
/* Neutral patterns win over reader patterns, which win over optimizer
 * patterns (multi_tensor_apply<LpNorm>); opt_setting and reader_setting are
 * DDP_OPT_KERNELS and DDP_GRAD_READER_KERNELS ("a,b" replaces the built-ins,
 * "+a,b" adds to them, NULL or "" keeps them). */
static inline enum ddp_grad_kclass ddp_grad_classify(const char *name, const char *opt_setting,
						     const char *reader_setting)
{
	return (enum ddp_grad_kclass)ddp_kfamily_classify(name, opt_setting, reader_setting);
}

#endif /* DDP_GRAD_H */
