/* SPDX-License-Identifier: MIT
 *
 * ddp_overlap_int.h - the overlap layer's insides (its units, plan and
 * figures, the one state struct ov), shared by its files (ddp_overlap.h has
 * the interface, ddp_overlap.c's header the story):
 *   ddp_overlap.c         state, init, ranges and their units, one async op
 *                         over parts of ranges, the launch path (early
 *                         reductions and waits);
 *   ddp_overlap_reduce.c  the consumer: what was not reduced early, the
 *                         next step's plan;
 *   ddp_overlap_stats.c   figures: per-step times, the JSON and the summary.
 * Functions shared across these files carry the overlap_ prefix; the
 * state is the one struct ov.  Nothing here is exported from libddp.so
 * (hidden visibility).
 *
 * Contract: as ddp_overlap.c's: called under ddp_sync.c's sync_st.lock only.
 */
#ifndef DDP_OVERLAP_INT_H
#define DDP_OVERLAP_INT_H

#include <stdint.h>
#include "ddp_coll.h"
#include "ddp_overlap.h"
#include "ddp_slices.h"

#define OV_FIRST_STEP 3 /* the steps the figures speak for     */
#define OV_RING 1024    /* tickets remembered (step, bytes)    */
#define OV_PDONE_RING 64
#define OV_STEP_POS_MAX 256 /* early-op positions kept per step    */
/* DDP_BUCKET_MB=auto: torch.nn.parallel.DistributedDataParallel's sizes
 * (dist._DEFAULT_FIRST_BUCKET_BYTES, bucket_cap_mb), each at most
 * 1/OV_AUTO_MIN_BUCKETS of the bytes planned (docs/overlap.md) */
#define OV_AUTO_FIRST_BUCKET (1ull << 20)
#define OV_AUTO_BUCKET (25ull << 20)
#define OV_AUTO_MIN_BUCKETS 8

/* A unit of early reduction: bytes [lo, hi) of a range. */
struct ov_unit {
	uint64_t lo, hi;
	uint64_t pos;      /* predicted last writer: position in the step */
	uint32_t kid;      /*   and kernel                            */
	uint64_t ticket;   /* the early op that reduced it (0: none)   */
	uint8_t rewritten; /* written after that op was enqueued       */
	uint8_t miss;      /* mispredictions in a row                  */
	uint8_t fallback;  /* reduced at the consumer from now on      */
};

/* This layer's state of one tracker range. */
struct ov_rng {
	struct ddp_grad_buf *b;
	uint64_t base, size, alloc_base; /* the range it was made for        */
	uint32_t alloc_id;
	struct ddp_slices w; /* this step's writes, until its consumer   */
	uint64_t xseq;       /* the last launch that wrote all of it with a
			      * known extent (0: none yet)               */
	struct ov_unit *u;   /* this step's units (learned at the last consumer) */
	size_t nu, ucap;
	const char *wname;   /* this step's last writer seen (its kernel's short
			      * name; NULL: none while it was this range) */
	uint8_t wbound;      /*   and how its extent was known             */
};

/* Gradients reduced at the consumer in steps OV_FIRST_STEP+, grouped by
 * their last writer and why (ddp_overlap_stats.c: the report's "waited
 * for the optimizer" list). */
enum ov_wait_why {
	OV_W_UNSEEN,  /* no write seen while the bytes were this range: the
		       * gradient is at another address than in the last step */
	OV_W_NONE,    /* its last writer's extent: to the allocation's end */
	OV_W_COUNT,   /*   a count argument (a guess)                      */
	OV_W_EXACT,   /*   exact, but not its predicted last writer (new
		       * position, mispredicted, fallback, no plan yet)   */
};
#define OV_WAIT_GROUPS 64
struct ov_wait {
	char writer[48];
	uint8_t why;
	uint64_t ranges, bytes; /* summed over the steps               */
	char example[80];       /* one gradient's label                */
};

struct ov_ref { /* a unit of the plan                    */
	struct ov_rng *r;
	uint32_t u;
};

struct ov_part { /* bytes [lo, hi) of b, in one collective */
	struct ddp_grad_buf *b;
	uint64_t lo, hi;
	int again; /* bytes of a unit written after its early reduction */
};

struct ov_fly {                      /* a unit reduced early, until the consumer */
	uint64_t alloc_base, lo, hi; /* absolute addresses                   */
	uint32_t alloc_id;
	uint64_t ticket;
};

struct ov_trig {
	uint64_t pos;      /* position in the step of the trigger launch */
	uint32_t kid;      /* its kernel                              */
	uint32_t first, n; /* members: ov.mem[first .. first+n)       */
};

struct ov_step {
	uint64_t colls, first_t, last_t, recs;
	uint64_t comm_ns, hidden_ns, wait_ns, last_end;
	uint64_t peer_ns, peer_hidden_ns; /* before every rank had arrived */
	uint64_t rered, bytes;
	uint64_t early_colls, early_bytes;
	uint32_t *epos; /* early ops' trigger positions  */
	uint32_t nepos, epcap;
	uint8_t final, sync, stamped, peer_known;
};

/* The layer's state (defined in ddp_overlap.c). */
struct ov_state {
	struct ddp_overlap_env env;
	int on, split;
	int no_tags; /* DDP_DEBUG_NO_COLL_TAGS                   */
	uint64_t cap;      /* the consumer's buckets; the plan's when not auto */
	int auto_buckets;  /* DDP_BUCKET_MB=auto (ddp_overlap_reduce.c's plan) */
	uint64_t base;
	int have_base;
	int armed; /* the plan applies from the next base on  */
	/* ranges, found by record address (open addressing, never shrinks) */
	struct ov_rng **tab;
	size_t tabcap, ntab;
	/* the plan of the current step */
	struct ov_ref *mem;
	size_t nmem, memcap;
	struct ov_trig *trig;
	size_t ntrig, trigcap, next;
	/* units reduced early this step (until the consumer) */
	struct ov_fly *fly;
	size_t nfly, flycap;
	/* figures */
	struct ov_step *st;
	size_t nst;
	uint64_t pdone[OV_PDONE_RING]; /* ns (atomic; 0 = not yet), by step */
	uint64_t tick_step[OV_RING], tick_bytes[OV_RING];
	struct ddp_coll_time *recs; /* op times not yet given to a step */
	size_t nrecs, reccap;
	uint64_t early_ops, early_units, consumer_ops, rereductions, fallbacks, waits;
	uint64_t sliced_ranges; /* ranges whose last plan has several units */
	struct ov_wait wait[OV_WAIT_GROUPS];
	size_t nwait;
	uint64_t wait_steps, wait_other; /* consumer steps counted; ranges past the groups */
	/* scratch */
	struct ddp_coll_range *rg, *tmp;
	struct ddp_coll_seg *seg;
	struct ov_part *parts;
	struct ov_unit **us;
	size_t uscap;
	struct ov_slice_scratch {
		struct ddp_slice *v;
		size_t cap;
	} sl, sl2;
	size_t scratch, partcap;
	char sig[8192];
};
extern struct ov_state ov;

/* ddp_overlap.c */
struct ddp_comm *overlap_comm(void);
void overlap_die_oom(void);
void *overlap_grow(void *p, size_t *cap, size_t need, size_t elem);
/* One async op over p[0..n) (enum ddp_coll_phase ph: tagged with step and
 * phase for the ranks to compare, ddp_coll_set_tag). */
uint64_t overlap_reduce_parts(struct ddp_comm *c, const struct ov_part *p, size_t n, void *stream,
			     uint64_t step, int ph, uint64_t *bytes_out);
struct ov_rng *overlap_rng_get(struct ddp_grad_buf *b);
void overlap_scratch(size_t n);
struct ddp_slice *overlap_slice_scratch(struct ov_slice_scratch *s, size_t n);
struct ov_step *overlap_step_rec(uint64_t step);

/* ddp_overlap_stats.c */
void overlap_collect(struct ddp_comm *c);
/* r's bytes (`bytes` of them) were reduced at the consumer of step `step` */
void overlap_waited(const struct ov_rng *r, uint64_t step, uint64_t bytes);
void CUDA_CB overlap_stamp_pdone(void *arg);

#endif
