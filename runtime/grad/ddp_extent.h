/* SPDX-License-Identifier: MIT
 *
 * ddp_extent.h - how far a kernel launch's pointer arguments reach, from
 * the launch's integer arguments and its grid: the rule ddp_sync.c applies
 * to a launch the generic decoder read (runtime/track/ddp_launch.h), before
 * the tracker (ddp_grad.h) sees it.
 *
 * The rules (docs/gradient-sync.md, "Ranges, not allocations"):
 * - Count: the largest positive integer argument that, as an element count,
 *   fits every typed pointer that holds some integer argument above one (a
 *   pointer that holds none, a scalar or a flag, is indexed otherwise; no
 *   size decides: a 32-byte bias votes) is the launch's count n; each typed pointer it fits reaches n elements.  A
 *   guess (DDP_GB_COUNT): right for elementwise kernels, too small for a
 *   2-D or scatter kernel.  The tracker never makes a gradient from it
 *   alone: an optimizer's written range is measured by calibration, and a
 *   read-only range becomes a gradient only by pairing with one (ddp_grad.c).
 * - Grid-strided: a launch with I = grid.y * grid.z > 1 instances (one of
 *   grid.y, grid.z is 1) runs its body once per instance l, each at
 *   ptr + l * s + [0, n) (llm.c's adamw_kernel3 and global_norm_squared
 *   with their stride arguments, one instance per layer).  Its pointers
 *   reach the union over the instances, I * n elements, when a second
 *   integer argument has the count's value (the stride: the instances tile
 *   the range) and that union fits every voting pointer.  Read-only and written pointers of the launch
 *   take the same (n, s), so a gradient and the master weights it pairs
 *   with cover the same instances.  Otherwise (no such argument, a stride
 *   apart from the count: a padded or sharded layout, whose union is not
 *   one range; a union that does not fit; both grid.y and grid.z above 1)
 *   the extent is not known and one instance's count would be a fraction
 *   of it: every pointer reaches to its allocation's end (DDP_GB_NONE), and
 *   the tracker decides from that (calibration, pairing; a gradient that
 *   cannot be bounded is not made, and the job stops, ddp_grad.c).
 * - Measured (optimizer launches only; ddp_extent_measured): while the
 *   tracker is in its calibration steps (steps 1 and 2, and step 3's first
 *   optimizer launch), an optimizer launch any of whose pointers has a
 *   count-guessed extent (DDP_GB_COUNT) is run once on copies of its
 *   allocations (the port's copies, then every allocation put back, as
 *   ddp_grad.c's calibration does), and for each written (non-const) pointer
 *   that is alone in its allocation among the launch's arguments, the bytes
 *   it changed are compared with its extent (everything in flight drained
 *   first). Changes within the count (none included): the count stands for
 *   it (DDP_GB_MEASURED).  Changes beyond it: the changed extent, in
 *   elements, is turned into a rule of the launch's integer arguments (one
 *   argument, a product of two, or (a - 1) * b + c: rows x ld of a 2-D
 *   block), and that rule bounds it (DDP_GB_MEASURED); each later
 *   calibration launch checks the rule (and the count that stood), and after
 *   the calibration steps the rule alone bounds the pointer.  A (kernel,
 *   argument) never measured is measured at its first launch, whatever the
 *   step.  A read-only pointer (or one the launch did not change) whose
 *   guessed extent equals a measured written pointer's count in elements
 *   takes its extent (one with a rule first) in its own element size (the
 *   gradient pairs with the weights it updates).  What cannot be bounded
 *   stops the job with one line (the caller's fatal path): a pointer that
 *   wrote before its address, a change beyond the count that no rule of the
 *   arguments describes, a rule that fails its check (its later launches
 *   would have nothing else to bound them).
 *
 * Contract: ddp_extent_bound is pure.  The rule table is one per process;
 * the caller serialises calls (ddp_sync.c's lock).  ddp_extent_measured
 * allocates host copies while it measures (the calibration steps only).
 */
#ifndef DDP_EXTENT_H
#define DDP_EXTENT_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"

/* One pointer argument as the rule sees it.  IN: room, esize, typed.
 * OUT: ext, bounded. */
struct ddp_extent_ptr {
	uint64_t room;   /* bytes from the pointer to its allocation's end   */
	uint64_t alloc;  /* its allocation's bytes                           */
	uint32_t esize;  /* element bytes (0: untyped, never bounded)        */
	uint64_t ext;    /* OUT: bytes it reaches (0: to the allocation's end) */
	uint8_t bounded; /* OUT: enum ddp_grad_bound (ddp_grad.h)            */
};

/* What ddp_extent_bound found (for logs and tests). */
enum ddp_extent_rule {
	DDP_EXTENT_NONE = 0,     /* no count fits: every pointer unbounded      */
	DDP_EXTENT_COUNT,        /* one instance: n elements                    */
	DDP_EXTENT_GRID,         /* I instances at stride s: (I - 1) * s + n     */
	DDP_EXTENT_GRID_UNKNOWN, /* instances whose stride is not known:
				  * every pointer unbounded                     */
};

struct ddp_extent_result {
	enum ddp_extent_rule rule;
	uint64_t count, stride, instances;
};

/* The launch's integer arguments ints[0..nints) (positive values only;
 * others are ignored), its grid (grid[3]), and its pointers p[0..np):
 * sets each p[i].ext and p[i].bounded; returns what was found. */
struct ddp_extent_result ddp_extent_bound(const uint64_t *ints, uint32_t nints, const unsigned grid[3],
					  struct ddp_extent_ptr *p, uint32_t np);

const char *ddp_extent_rule_name(enum ddp_extent_rule r);

/* ---- measured extents (optimizer launches) */

struct ddp_grad_arg;

/* Device access for a measurement: the tracker's calibration callbacks
 * (ddp_grad.h struct ddp_grad_ops: read, write, relaunch). */
struct ddp_extent_probe {
	void *ctx;
	ddp_result (*read)(void *ctx, uint64_t dev, void *host, size_t bytes, void *stream);
	ddp_result (*write)(void *ctx, uint64_t dev, const void *host, size_t bytes, void *stream);
	ddp_result (*relaunch)(void *ctx, void *launch_ctx);
	/* May be NULL: waits for everything in flight (a stream-ordered
	 * reduction still writing a gradient would look like the launch's
	 * write); called before the copies are taken. */
	ddp_result (*drain)(void *ctx);
	void *stream, *launch_ctx;
};

/* An optimizer launch of kernel kid (kname for messages): ints[0..nints)
 * its integer arguments in signature order (0 for a value <= 0), a[0..n)
 * its decoded pointers with their count-rule extents (ddp_extent_bound).
 * measure: the calibration steps (run the launch on copies, learn and
 * check rules); else the rules learned apply.  Updates a[i].ext and
 * a[i].bounded.  An extent that cannot be known: DDP_ERR_UNSUPPORTED with
 * one line in msg.  (The caller skips it under DDP_DEBUG_NO_MEASURE, the
 * negative control.) */
ddp_result ddp_extent_measured(uint32_t kid, const char *kname, const uint64_t *ints, uint32_t nints,
			       struct ddp_grad_arg *a, uint32_t n, int measure,
			       const struct ddp_extent_probe *p, char *msg, size_t cap);
/* Forget every rule (tests). */
void ddp_extent_reset(void);

#endif /* DDP_EXTENT_H */
