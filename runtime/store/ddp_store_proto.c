/* SPDX-License-Identifier: MIT
 *
 * ddp_store_proto.c - encoding and a strict, bounded parser for the store's
 * wire messages (ddp_store.h), shared by the server and the client.
 *
 * Validation is layered so that a receiver never buffers more than the
 * header before knowing a message is acceptable: ddp_store_hdr_decode checks
 * the 16 header bytes (magic, version, op, flags, lengths against the hard
 * limits and against what the op requires); ddp_store_body_check checks the
 * key and value bytes; ddp_store_msg_parse does both on a byte buffer.
 *
 * Contract: pure functions; no allocation, no logging, no global state; any
 * thread.  Never reads outside the buffer it is given.
 */
#include <string.h>
#include "ddp_store.h"

uint32_t ddp_store_get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t ddp_store_get_u64(const uint8_t *p)
{
	return (uint64_t)ddp_store_get_u32(p) | (uint64_t)ddp_store_get_u32(p + 4) << 32;
}

void ddp_store_put_u32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void ddp_store_put_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void ddp_store_hdr_encode(uint8_t buf[DDP_STORE_HDR_SIZE], const struct ddp_store_hdr *h)
{
	ddp_store_put_u32(buf, DDP_STORE_MAGIC);
	buf[4] = DDP_STORE_VERSION;
	buf[5] = h->op;
	buf[6] = (uint8_t)h->flags;
	buf[7] = (uint8_t)(h->flags >> 8);
	ddp_store_put_u32(buf + 8, h->key_len);
	ddp_store_put_u32(buf + 12, h->val_len);
}

/* What each request op carries: key required?, exact value length (-1: any
 * length up to the limit). */
static const struct {
	const char *name;
	int key;     /* 1: 1..MAX_KEY bytes; 0: must be empty */
	int val_len; /* exact value length, or -1 for 0..MAX_VAL */
} op_table[DDP_STORE_OP_MAX + 1] = {
	[DDP_STORE_HELLO] = { "HELLO", 1, 4 },
	[DDP_STORE_SET] = { "SET", 1, -1 },
	[DDP_STORE_GET] = { "GET", 1, 4 },
	[DDP_STORE_ADD] = { "ADD", 1, 8 },
	[DDP_STORE_WAIT] = { "WAIT", 1, 4 },
	[DDP_STORE_BARRIER] = { "BARRIER", 1, 8 },
	[DDP_STORE_HEARTBEAT] = { "HEARTBEAT", 0, 8 },
	[DDP_STORE_DEL] = { "DEL", 1, 0 },
};

static const char *const status_names[DDP_STORE_ST_MAX + 1] = {
	[DDP_STORE_ST_OK] = "ok",
	[DDP_STORE_ST_TIMEOUT] = "timeout",
	[DDP_STORE_ST_INVALID] = "invalid request",
	[DDP_STORE_ST_REFUSED] = "refused",
	[DDP_STORE_ST_PROTO] = "protocol error",
};

const char *ddp_store_op_name(unsigned op)
{
	op &= ~(unsigned)DDP_STORE_REPLY;
	if (op >= 1 && op <= DDP_STORE_OP_MAX)
		return op_table[op].name;
	return "unknown op";
}

const char *ddp_store_status_name(unsigned status)
{
	return status <= DDP_STORE_ST_MAX ? status_names[status] : "unknown status";
}

ddp_result ddp_store_hdr_decode(const uint8_t buf[DDP_STORE_HDR_SIZE], enum ddp_store_dir dir,
				struct ddp_store_hdr *out, const char **why)
{
	struct ddp_store_hdr h;
	unsigned op;

	if (ddp_store_get_u32(buf) != DDP_STORE_MAGIC) {
		*why = "bad magic (not a ddprun store client?)";
		return DDP_ERR_INVALID;
	}
	if (buf[4] != DDP_STORE_VERSION) {
		*why = "unsupported protocol version";
		return DDP_ERR_INVALID;
	}
	h.op = buf[5];
	h.flags = (uint16_t)(buf[6] | buf[7] << 8);
	h.key_len = ddp_store_get_u32(buf + 8);
	h.val_len = ddp_store_get_u32(buf + 12);
	if (h.key_len > DDP_STORE_MAX_KEY) {
		*why = "key longer than 512 bytes";
		return DDP_ERR_INVALID;
	}
	if (h.val_len > DDP_STORE_MAX_VAL) {
		*why = "value longer than 16 MiB";
		return DDP_ERR_INVALID;
	}
	if (dir == DDP_STORE_DIR_REPLY) {
		op = h.op & ~(unsigned)DDP_STORE_REPLY;
		if (!(h.op & DDP_STORE_REPLY) || op < 1 || op > DDP_STORE_OP_MAX) {
			*why = "unknown reply op";
			return DDP_ERR_INVALID;
		}
		if (h.flags > DDP_STORE_ST_MAX) {
			*why = "unknown reply status";
			return DDP_ERR_INVALID;
		}
		if (h.key_len != 0) {
			*why = "reply with a key";
			return DDP_ERR_INVALID;
		}
		if (h.flags != DDP_STORE_ST_OK && h.val_len > DDP_STORE_MAX_ERRMSG) {
			*why = "error message longer than 256 bytes";
			return DDP_ERR_INVALID;
		}
		if (h.flags == DDP_STORE_ST_OK && op == DDP_STORE_ADD && h.val_len != 8) {
			*why = "ADD reply without an 8-byte total";
			return DDP_ERR_INVALID;
		}
		if (h.flags == DDP_STORE_ST_OK && op != DDP_STORE_ADD && op != DDP_STORE_GET && h.val_len != 0) {
			*why = "unexpected value in reply";
			return DDP_ERR_INVALID;
		}
		*out = h;
		return DDP_OK;
	}
	op = h.op;
	if (op < 1 || op > DDP_STORE_OP_MAX) {
		*why = "unknown op";
		return DDP_ERR_INVALID;
	}
	if (h.flags != 0) {
		*why = "nonzero flags in a request";
		return DDP_ERR_INVALID;
	}
	if (op_table[op].key ? h.key_len == 0 : h.key_len != 0) {
		*why = op_table[op].key ? "empty key" : "unexpected key";
		return DDP_ERR_INVALID;
	}
	if (op_table[op].val_len >= 0 && h.val_len != (uint32_t)op_table[op].val_len) {
		*why = "wrong value length for the op";
		return DDP_ERR_INVALID;
	}
	*out = h;
	return DDP_OK;
}

ddp_result ddp_store_body_check(const struct ddp_store_msg *m, enum ddp_store_dir dir, const char **why)
{
	if (m->hdr.key_len && memchr(m->key, 0, m->hdr.key_len)) {
		*why = "NUL byte in key";
		return DDP_ERR_INVALID;
	}
	if (dir == DDP_STORE_DIR_REPLY)
		return DDP_OK;
	if (m->hdr.op == DDP_STORE_HELLO) {
		int32_t rank = (int32_t)ddp_store_get_u32(m->val);
		if (rank < -1 || rank >= DDP_STORE_MAX_RANK) {
			*why = "rank out of range";
			return DDP_ERR_INVALID;
		}
	}
	if (m->hdr.op == DDP_STORE_BARRIER) {
		uint32_t world = ddp_store_get_u32(m->val);
		if (world < 1 || world > DDP_STORE_MAX_RANK) {
			*why = "barrier world size out of range";
			return DDP_ERR_INVALID;
		}
	}
	return DDP_OK;
}

ddp_result ddp_store_msg_parse(const uint8_t *buf, size_t len, enum ddp_store_dir dir,
			       struct ddp_store_msg *out, size_t *consumed, const char **why)
{
	struct ddp_store_msg m;
	size_t total;

	*consumed = 0;
	if (len < DDP_STORE_HDR_SIZE) {
		/* A prefix can already be wrong: check the magic bytes we have. */
		uint8_t magic[4];
		ddp_store_put_u32(magic, DDP_STORE_MAGIC);
		if (memcmp(buf, magic, len < 4 ? len : 4) != 0) {
			*why = "bad magic (not a ddprun store client?)";
			return DDP_ERR_INVALID;
		}
		return DDP_OK;
	}
	if (ddp_store_hdr_decode(buf, dir, &m.hdr, why) != DDP_OK)
		return DDP_ERR_INVALID;
	total = DDP_STORE_HDR_SIZE + (size_t)m.hdr.key_len + (size_t)m.hdr.val_len;
	if (len < total)
		return DDP_OK;
	m.key = buf + DDP_STORE_HDR_SIZE;
	m.val = m.key + m.hdr.key_len;
	if (ddp_store_body_check(&m, dir, why) != DDP_OK)
		return DDP_ERR_INVALID;
	*out = m;
	*consumed = total;
	return DDP_OK;
}

int ddp_store_secret_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	volatile uint8_t d = (uint8_t)(alen != blen);
	for (size_t i = 0; i < alen; i++)
		d |= (uint8_t)(a[i] ^ (blen ? b[i % blen] : 0));
	return d == 0;
}

uint32_t ddp_store_timeout_ms(double timeout_s)
{
	if (timeout_s < 0 || timeout_s != timeout_s)
		return DDP_STORE_FOREVER;
	if (timeout_s * 1000.0 >= (double)(DDP_STORE_FOREVER - 1))
		return DDP_STORE_FOREVER - 1;
	return (uint32_t)(timeout_s * 1000.0 + 0.5);
}
