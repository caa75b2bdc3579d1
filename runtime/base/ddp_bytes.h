/* SPDX-License-Identifier: MIT
 *
 * ddp_bytes.h - unaligned loads of host-order integers from a byte buffer
 * (fatbin and cubin headers, kernel argument buffers).
 *
 * Contract: p points at least at sizeof the result readable bytes; no
 * alignment is assumed (memcpy, which compilers turn into one load).
 */
#ifndef DDP_BYTES_H
#define DDP_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t ddp_rd16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline uint32_t ddp_rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

static inline uint64_t ddp_rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, sizeof v);
	return v;
}

#endif /* DDP_BYTES_H */
