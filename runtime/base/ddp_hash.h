/* SPDX-License-Identifier: MIT
 *
 * ddp_hash.h - 64-bit FNV-1a, the one byte hash of the code base (store
 * keys, trace name interning, signatures of descriptions).  Not for
 * adversarial input and not a checksum of large buffers (bytewise: slow).
 *
 * Contract: pure functions; any thread.  Chain calls by passing the previous
 * result as h; start from DDP_FNV1A_INIT.
 */
#ifndef DDP_HASH_H
#define DDP_HASH_H

#include <stddef.h>
#include <stdint.h>

#define DDP_FNV1A_INIT 0xcbf29ce484222325ULL
#define DDP_FNV1A_PRIME 0x100000001b3ULL

/* h extended by the n bytes at p. */
static inline uint64_t ddp_fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * DDP_FNV1A_PRIME;
	return h;
}

/* h extended by the NUL-terminated string s (without its NUL). */
static inline uint64_t ddp_fnv1a_str(uint64_t h, const char *s)
{
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * DDP_FNV1A_PRIME;
	return h;
}

#endif /* DDP_HASH_H */
