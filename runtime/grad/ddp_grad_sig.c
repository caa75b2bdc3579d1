/* SPDX-License-Identifier: MIT
 *
 * ddp_grad_sig.c - collective signatures: the text (and hash) that names a
 * collective's composition for the ranks' comparison.
 * Split from ddp_grad.c (moves only); ddp_grad_int.h lists the tracker's
 * files, ddp_grad.h the rules.
 *
 * Contract: pure function of its arguments.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "ddp_array.h"
#include "ddp_flow.h"
#include "ddp_grad.h"
#include "ddp_log.h"
#include "ddp_grad_int.h"

/* ---- signatures */

#define SIG_FNV_INIT 0xcbf29ce484222325ULL

static uint64_t sig_fnv(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

size_t ddp_grad_signature(char *out, size_t cap, struct ddp_grad_buf *const *bufs, size_t n, int grads,
			  uint64_t *hash)
{
	/* room kept for the tail " ...+K more fnv=<16 hex>" */
	const size_t tail = 64;
	char item[160];
	size_t o = 0, skipped = 0;
	uint64_t h = SIG_FNV_INIT;

	if (!out || cap < 2 * tail) {
		if (out && cap)
			out[0] = '\0';
		return 0;
	}
	int k = snprintf(item, sizeof item, "n=%zu", n);
	h = sig_fnv(h, item, (size_t)k);
	memcpy(out, item, (size_t)k + 1);
	o = (size_t)k;
	for (size_t i = 0; i < n; i++) {
		if (grads)
			k = snprintf(item, sizeof item, " %s %s count=%llu;", bufs[i]->label,
				     ddp_dtype_name((enum ddp_dtype)bufs[i]->dtype),
				     (unsigned long long)bufs[i]->count);
		else
			k = snprintf(item, sizeof item, " %s bytes=%llu;", bufs[i]->label,
				     (unsigned long long)bufs[i]->size);
		size_t len = (size_t)k < sizeof item ? (size_t)k : sizeof item - 1;
		h = sig_fnv(h, item, len);
		if (!skipped && o + len + tail < cap) {
			memcpy(out + o, item, len + 1);
			o += len;
		} else {
			skipped++;
		}
	}
	if (skipped)
		o += (size_t)snprintf(out + o, cap - o, " ...+%zu more fnv=%016llx", skipped,
				      (unsigned long long)h);
	if (hash)
		*hash = h;
	return o;
}
