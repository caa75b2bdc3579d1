/* SPDX-License-Identifier: MIT
 *
 * nccl_run.c - what the NCCL stand-in's "kernels" do: the host function a
 * launch enqueued on the stream runs the launch's collectives here, on the
 * stream's worker, in the communicator's issue order (tickets), moving the
 * data through the shared segment (simnccl.h: chunk into the own slot,
 * barrier, reduce every slot in rank order into the own output, barrier).
 *
 * Reduction: sum, avg, max, min of f32, f64, f16, bf16 (ncclAvg as NCCL does
 * it for floating types: each input multiplied by 1/nranks, then summed);
 * accumulated in float (double for f64) in rank order and rounded once, so
 * every rank gets the same bits.  Broadcast: any type (bytes).
 *
 * A barrier waits for every peer's epoch.  While waiting it watches: this
 * comm aborted (the launch stops, nothing more is done), a peer that
 * aborted, and a peer process that is gone (kill(pid, 0)): ncclRemoteError,
 * reported through ncclCommGetAsyncError -- or, with SIMNCCL_DEAD_PEER=hang,
 * the wait goes on as NCCL's kernels spin on NVLink until someone aborts.
 * After the first barrier of a collective, every rank compares every rank's
 * descriptor (kind, type, op, count, root, index): a mismatch is
 * ncclInvalidUsage naming both (real NCCL would hang or corrupt).
 *
 * Contract: called only from the host function of a launch (any stream's
 * worker); the ticket wait makes one launch of a comm run at a time.  No
 * CUDA call is made here (device memory of the CPU device is host memory).
 */
#include "simnccl.h"

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

size_t sn_dtype_size(ncclDataType_t dt)
{
	switch (dt) {
	case ncclInt8: case ncclUint8: return 1;
	case ncclFloat16: case ncclBfloat16: return 2;
	case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
	case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
	default: return 0;
	}
}

static const char *kind_name(int k)
{
	return k == SN_ALLREDUCE ? "allreduce" : k == SN_BROADCAST ? "broadcast" : "?";
}

/* ---- f16 / bf16 (the stand-in's own conversions, not libddp's) */

static float f16_to_f(uint16_t h)
{
	_Float16 v;
	memcpy(&v, &h, 2);
	return (float)v;
}

static uint16_t f_to_f16(float f)
{
	_Float16 v = (_Float16)f;
	uint16_t h;
	memcpy(&h, &v, 2);
	return h;
}

static float bf16_to_f(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static uint16_t f_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40); /* NaN stays NaN */
	u += 0x7fffu + ((u >> 16) & 1);         /* round to nearest even */
	return (uint16_t)(u >> 16);
}

static double load(const void *p, size_t i, ncclDataType_t t)
{
	switch (t) {
	case ncclFloat32: return ((const float *)p)[i];
	case ncclFloat64: return ((const double *)p)[i];
	case ncclFloat16: return f16_to_f(((const uint16_t *)p)[i]);
	default: return bf16_to_f(((const uint16_t *)p)[i]);
	}
}

static void store(void *p, size_t i, ncclDataType_t t, double v)
{
	switch (t) {
	case ncclFloat32: ((float *)p)[i] = (float)v; break;
	case ncclFloat64: ((double *)p)[i] = v; break;
	case ncclFloat16: ((uint16_t *)p)[i] = f_to_f16((float)v); break;
	default: ((uint16_t *)p)[i] = f_to_bf16((float)v); break;
	}
}

/* out[i] = reduce over the ranks' slots (rank order) of element i */
static void reduce_chunk(struct sn_comm *c, void *out, size_t m, const struct sn_op *op)
{
	const int n = c->nranks, drop = sn_settings()->drop_rank;
	const unsigned char *base = SN_SLOTS(c);
	const int dbl = op->dtype == ncclFloat64;
	const double inv = 1.0 / n;
	for (size_t i = 0; i < m; i++) {
		double acc = 0;
		int first = 1;
		for (int q = 0; q < n; q++) {
			if (q == drop)
				continue; /* fault drop:R (a negative control) */
			double x = load(base + (size_t)q * SN_SLOT, i, op->dtype);
			if (op->redop == ncclAvg)
				x = dbl ? x * inv : (double)((float)x * (float)inv);
			if (first)
				acc = x;
			else if (op->redop == ncclMax)
				acc = x > acc ? x : acc;
			else if (op->redop == ncclMin)
				acc = x < acc ? x : acc;
			else
				acc = dbl ? acc + x : (double)((float)acc + (float)x);
			first = 0;
		}
		store(out, i, op->dtype, acc);
	}
}

static int pid_gone(int pid)
{
	return pid > 0 && kill(pid, 0) != 0 && errno == ESRCH;
}

/* 0: passed; 1: this comm was aborted (stop quietly); -1: error recorded. */
static int barrier(struct sn_comm *c, const struct sn_op *op)
{
	struct sn_seg *s = c->seg;
	const uint64_t e = ++c->epoch;
	atomic_store(&s->r[c->rank].epoch, e);
	for (int q = 0; q < c->nranks; q++) {
		struct timespec last;
		clock_gettime(CLOCK_MONOTONIC, &last);
		for (unsigned i = 0; atomic_load(&s->r[q].epoch) < e; i++) {
			if (atomic_load(&c->aborted))
				return 1;
			if (atomic_load(&s->r[q].aborted)) {
				atomic_store(&c->state, ncclRemoteError);
				sn_set_error(c, 0, "rank %d aborted its communicator during %s #%llu", q, kind_name(op->kind),
					     (unsigned long long)op->opno);
				return -1;
			}
			if ((i & 255) == 255 && !sn_settings()->hang_on_dead_peer && pid_gone(atomic_load(&s->r[q].pid))) {
				atomic_store(&c->state, ncclRemoteError);
				sn_set_error(c, 0, "rank %d (pid %d) exited during %s #%llu: remote process exited", q,
					     atomic_load(&s->r[q].pid), kind_name(op->kind), (unsigned long long)op->opno);
				return -1;
			}
			if (i < 64) {
				sched_yield();
			} else {
				struct timespec ts = { 0, i < 4096 ? 20000 : 200000 };
				nanosleep(&ts, NULL);
			}
		}
	}
	return 0;
}

static int check_descs(struct sn_comm *c, const struct sn_op *op)
{
	const struct sn_desc *me = &c->seg->r[c->rank].desc;
	for (int q = 0; q < c->nranks; q++) {
		const struct sn_desc *d = &c->seg->r[q].desc;
		if (d->opno == me->opno && d->kind == me->kind && d->count == me->count && d->dtype == me->dtype &&
		    d->redop == me->redop && d->root == me->root)
			continue;
		atomic_store(&c->state, ncclInvalidUsage);
		sn_set_error(c, 1,
			     "collective mismatch: rank %d is in %s #%llu (count %llu, type %d, op %d, root %d), rank %d in "
			     "%s #%llu (count %llu, type %d, op %d, root %d)",
			     c->rank, kind_name(me->kind), (unsigned long long)me->opno, (unsigned long long)me->count,
			     me->dtype, me->redop, me->root, q, kind_name(d->kind), (unsigned long long)d->opno,
			     (unsigned long long)d->count, d->dtype, d->redop, d->root);
		(void)op;
		return -1;
	}
	return 0;
}

static void maybe_fault(struct sn_comm *c, const struct sn_op *op)
{
	const struct sn_settings *st = sn_settings();
	if (st->kill_sig && st->kill_rank == c->rank && st->kill_op == op->opno) {
		fprintf(stderr, "simnccl: fault injected: rank %d raises signal %d inside %s #%llu\n", c->rank,
			st->kill_sig, kind_name(op->kind), (unsigned long long)op->opno);
		raise(st->kill_sig);
	}
}

/* 0 done, 1 aborted, -1 error */
static int run_op(struct sn_comm *c, const struct sn_op *op)
{
	const size_t es = sn_dtype_size(op->dtype);
	unsigned char *slots = SN_SLOTS(c);
	unsigned char *mine = slots + (size_t)c->rank * SN_SLOT;
	const size_t per = SN_SLOT / es;
	struct sn_desc *d = &c->seg->r[c->rank].desc;
	int rc;

	if (op->count == 0)
		return 0; /* NCCL returns at once on an empty collective */
	d->opno = op->opno;
	d->count = op->count;
	d->kind = op->kind;
	d->dtype = op->dtype;
	d->redop = op->kind == SN_ALLREDUCE ? (int32_t)op->redop : -1;
	d->root = op->kind == SN_BROADCAST ? op->root : -1;
	for (size_t off = 0; off < op->count; off += per) {
		size_t m = op->count - off < per ? op->count - off : per;
		const unsigned char *src = (const unsigned char *)op->send + off * es;
		unsigned char *dst = (unsigned char *)op->recv + off * es;
		if (op->kind == SN_ALLREDUCE || c->rank == op->root)
			memcpy(mine, src, m * es);
		if ((rc = barrier(c, op)) != 0)
			return rc;
		if (off == 0) {
			if (check_descs(c, op) != 0)
				return -1;
			maybe_fault(c, op);
		}
		if (op->kind == SN_ALLREDUCE)
			reduce_chunk(c, dst, m, op);
		else if (c->rank != op->root)
			memcpy(dst, slots + (size_t)op->root * SN_SLOT, m * es);
		else if (dst != src)
			memmove(dst, src, m * es);
		if ((rc = barrier(c, op)) != 0)
			return rc;
	}
	if (op->kind == SN_ALLREDUCE)
		atomic_fetch_add(&c->n_allreduce, 1);
	else
		atomic_fetch_add(&c->n_broadcast, 1);
	atomic_fetch_add(&c->bytes, op->count * es);
	return 0;
}

void sn_run_launch(struct sn_launch *l)
{
	struct sn_comm *c = l->c;
	pthread_mutex_lock(&c->mu);
	while (c->ran + 1 < l->ticket && !atomic_load(&c->aborted))
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
	atomic_fetch_add(&c->n_launch, 1);
	for (int i = 0; i < l->n; i++) {
		int st = atomic_load(&c->state);
		if (atomic_load(&c->aborted) || (st != ncclSuccess && st != ncclInProgress))
			break; /* a broken comm does nothing more; the stream goes on */
		if (run_op(c, &l->op[i]) != 0)
			break;
	}
	pthread_mutex_lock(&c->mu);
	if (c->ran < l->ticket)
		c->ran = l->ticket;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
}
