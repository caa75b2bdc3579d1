/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_int.h - the tracker's insides (struct ddp_grad, its range
 * index), shared by the files of the tracker (ddp_grad.h has the rules):
 *   ddp_grad.c           the range table: records, the per-allocation
 *                        index and its hash; creation, accessors, the
 *                        launch dispatcher;
 *   ddp_grad_reduce.c    actions: averaging dirty gradients, epochs, the
 *                        end of an update phase;
 *   ddp_grad_opt.c       the optimizer and reader rules: learning G and P,
 *                        calibration, non-optimizer writes;
 *   ddp_grad_dflow.c     the update found from the data flow (ddp_flow.h);
 *   ddp_grad_explicit.c  explicit launches (PyTorch's tensor lists);
 *   ddp_grad_sig.c       collective signatures;
 *   ddp_grad_plan.c      the plan a launch returns (ddp_plan.h).
 * Names shared across these files carry the grad_ prefix; nothing here is
 * exported from libddp.so (hidden visibility).
 *
 * Contract: as ddp_grad.c's: the caller serialises every call.
 */
#ifndef DDP_GRAD_INT_H
#define DDP_GRAD_INT_H

#include <stdint.h>
#include "ddp_grad.h"

#define GRAD_MAX_ARGS 512

/* The records of one allocation, sorted by their first byte (ranges may
 * overlap: a step-1 candidate covers the gradient ranges carved from it).
 * A caching-allocator segment holds thousands (every tensor of a PyTorch
 * model): lookups are binary searches, never scans of the allocation. */
struct alloc_ix {
	uint64_t base;
	uint32_t alloc_id;
	uint32_t n, cap;
	uint32_t *rec;    /* indices into bufs, by record base    */
	uint64_t maxsize; /* no record is larger (lookup bound)   */
};

/* Step 1: which non-optimizer kernel last wrote which range (the evidence
 * `DDP_LOG=info` names for a gradient). */
struct wlog_ent {
	uint32_t alloc_id;
	uint64_t lo, hi;
	char kname[40];
};
#define WLOG_MAX 4096

/* a device-to-device copy of the first step (ddp_grad_copied) */
struct copy_ent {
	uint64_t dst, dst_base, dst_size, src, src_base, src_size, bytes;
	uint32_t dst_id, src_id;
};
#define CLOG_MAX 4096

struct ddp_grad {
	struct ddp_grad_ops ops;
	enum ddp_dtype override; /* DDP_GRAD_DTYPE, or UNKNOWN           */
	int strict;
	struct ddp_grad_buf **bufs; /* records, in creation order           */
	size_t nbufs, cap;
	struct alloc_ix *allocs;
	size_t nallocs, acap;
	int64_t *hash; /* alloc index+1 per slot, 0 = empty    */
	size_t hmask;
	uint32_t ngrad_order, nparam_order;
	uint32_t ngrad;       /* G records now                        */
	uint32_t grads_found; /* G records ever learned               */
	int in_update;        /* inside a step's update phase         */
	uint64_t steps;       /* steps begun                          */
	uint64_t steps_done;  /* steps ended                          */
	uint64_t reductions;
	uint64_t gen; /* G/candidate set changes              */
	struct wlog_ent *wlog;
	size_t nwlog;
	struct copy_ent *clog; /* the first step's device copies       */
	size_t nclog;
	struct copy_ent *xcp; /* copies to make again (scratch)        */
	size_t xcap_cp;
	/* explicit launches */
	uint64_t epoch;      /* see ddp_grad.h "Explicit launches"   */
	uint32_t opener_kid; /* the launch that opened the update    */
	uint64_t opener_ptr; /*   phase: kernel, first tensor        */
	uint8_t opener_set;
	uint64_t last_named_ep; /* the last epoch that named a gradient */
	uint64_t xstamp_seq;
	uint32_t last_reader_kid;             /* the last reader launch's last named  */
	struct ddp_grad_buf *last_reader_rec; /* gradient (x_reader_again)       */
	struct ddp_grad_buf **xrec;           /* per argument: its record (scratch)   */
	struct ddp_grad_buf **xlist;          /* gradients to average (scratch)       */
	struct ddp_grad_read *xrd;            /* ranges an optimizer reads (scratch)  */
	/* lists of generic foreach optimizer ops found to hold parameters in
	 * step 1 (x_param_lists): kernel id << 8 | list */
	uint64_t xpar[32];
	uint32_t nxpar;
	/* the update found from the data flow (ddp_flow.h) */
	struct ddp_flow *flow;
	int flow_update;     /* the open update phase is a flow one  */
	uint64_t flow_seq;   /* launches noted in the flow history   */
	int debug_avg_state; /* DDP_DEBUG_AVG_STATE                  */
	uint64_t debug_unseen; /* DDP_DEBUG_UNSEEN_BYTES: 0 or a size  */
	/* ranges the flow update's launches wrote that no P or G record
	 * holds (ddp_grad_update_written): loop-carried state no rule named,
	 * compared across ranks at the checked steps and at exit */
	struct ddp_grad_buf *updw;
	size_t nupdw, cupdw;
	/* kernels a name called optimizers whose launches the data flow
	 * contradicted (grad_flow_name_conflict): the flow decides for them */
	uint32_t *unnamed;
	size_t nunnamed, cunnamed;
	size_t xcap_rec, xcap_list, xcap_rd;
	struct ddp_plan plan; /* the current launch's actions (ddp_plan.h) */
	char err[512];
};

#define M(r) (1u << (r))

/* ddp_grad.c */
void grad_arg_range(const struct ddp_grad_arg *a, uint64_t *lo, uint64_t *hi);
void grad_buf_reset(struct ddp_grad *g, struct ddp_grad_buf *b);
struct alloc_ix *grad_ix_find(struct ddp_grad *g, uint64_t base, uint32_t alloc_id);
struct alloc_ix *grad_ix_get(struct ddp_grad *g, uint64_t base, uint32_t alloc_id);
void grad_ix_place(const struct ddp_grad *g, struct alloc_ix *x, uint32_t i);
struct ddp_grad_buf *grad_rec_exact(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
				      uint64_t hi, unsigned mask);
struct ddp_grad_buf *grad_rec_new(struct ddp_grad *g, const struct ddp_grad_arg *a, uint64_t lo, uint64_t hi);
struct ddp_grad_buf *grad_rec_overlap(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
					uint64_t hi, unsigned mask, uint32_t *pos);
struct ddp_grad_buf *grad_rec_within(const struct ddp_grad *g, const struct alloc_ix *x, uint64_t lo,
				       uint64_t hi, unsigned mask);
ddp_result grad_fail(struct ddp_grad *g, ddp_result rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* ddp_grad_reduce.c */
int grad_cmp_order(const void *a, const void *b);
ddp_result grad_end_update(struct ddp_grad *g);
int grad_gone(struct ddp_grad *g, struct ddp_grad_buf *b);
void grad_next_epoch(struct ddp_grad *g);
ddp_result grad_reduce_bufs(struct ddp_grad *g, struct ddp_grad_buf **list, size_t n);
ddp_result grad_reduce_dirty(struct ddp_grad *g);

/* ddp_grad_opt.c */
void grad_absorb(struct ddp_grad *g, struct ddp_grad_buf *b, int role);
ddp_result grad_begin_update(struct ddp_grad *g, const struct ddp_grad_launch *L);
int grad_integer_arg(const struct ddp_grad_arg *a);
const char *grad_wlog_writer(const struct ddp_grad *g, uint32_t alloc_id, uint64_t lo, uint64_t hi);
ddp_result grad_make_grad(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
			    struct ddp_grad_buf *b, int role, int evidence, const char *paired);
void grad_make_param(struct ddp_grad *g, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a,
		       struct ddp_grad_buf *b, int evidence);
ddp_result grad_on_optimizer(struct ddp_grad *g, const struct ddp_grad_launch *L);
ddp_result grad_on_other(struct ddp_grad *g, const struct ddp_grad_launch *L);
ddp_result grad_on_reader(struct ddp_grad *g, const struct ddp_grad_launch *L);
void grad_set_label(struct ddp_grad_buf *b, const struct ddp_grad_launch *L, const struct ddp_grad_arg *a);
enum ddp_dtype grad_dtype(const struct ddp_grad *g, const struct ddp_grad_launch *L,
				 const struct ddp_grad_arg *a);

/* ddp_grad_dflow.c */
int grad_flow_applies(const struct ddp_grad *g, const struct ddp_grad_launch *L);
ddp_result grad_flow_note(struct ddp_grad *g, const struct ddp_grad_launch *L, int upd);
ddp_result grad_flow_other(struct ddp_grad *g, const struct ddp_grad_launch *L, int *upd);
/* A launch a NAME calls an optimizer (ddp_kfamily.def, DDP_OPT_KERNELS)
 * that the data flow sees as an update's cut whose parameter (loop-carried:
 * read before any launch of the step wrote it) the launch only reads: the
 * name rules would make that parameter a gradient (1); or that writes no
 * loop-carried byte, only bytes this step produced: no update at all (2).
 * 0: no disagreement seen. */
int grad_flow_name_conflict(struct ddp_grad *g, const struct ddp_grad_launch *L);

/* ddp_grad_plan.c: appending actions (each returns the tracker's error) */
void grad_plan_start(struct ddp_grad *g, const struct ddp_grad_launch *L);
ddp_result grad_plan_step(struct ddp_grad *g, enum ddp_plan_kind kind, uint64_t step);
ddp_result grad_plan_bufs(struct ddp_grad *g, enum ddp_plan_kind kind, struct ddp_grad_buf *const *b, size_t n);
ddp_result grad_plan_copy(struct ddp_grad *g, uint64_t dst, uint64_t src, uint64_t bytes);
ddp_result grad_plan_written(struct ddp_grad *g, struct ddp_grad_buf *b, uint64_t lo, uint64_t hi, uint8_t bound);
ddp_result grad_plan_reads(struct ddp_grad *g, const struct ddp_grad_read *r, size_t n);
int grad_plan_moves_bytes(const struct ddp_grad *g);
void grad_plan_free(struct ddp_grad *g);

/* ddp_grad_explicit.c */
ddp_result grad_on_explicit(struct ddp_grad *g, const struct ddp_grad_launch *L);

#endif
