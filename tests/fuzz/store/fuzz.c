/* SPDX-License-Identifier: MIT
 *
 * fuzz.c - libFuzzer target for the rendezvous store's wire protocol.
 *
 * Input: byte 0 chooses a mode, the rest is a byte stream.
 *   1. The stream goes through ddp_store_msg_parse as requests and as
 *      replies, message after message; every accepted message must lie inside
 *      the buffer and every rejection must say why.
 *   2. The same stream is fed to the server's connection state machine
 *      (runtime/store/ddp_store_core.c, reached through
 *      ddp_store_server_int.h and linked from libddp_store.a; no sockets:
 *      fd = -1, replies discarded) over one or two connections,
 *      pre-authenticated or not, in chunks of 1, 7 or all bytes,
 *      with the clock advancing so parked requests time out.  Afterwards the
 *      store's invariants are checked (barrier arrivals == parked requests).
 * Mode bits: 0 pre-authenticate, 1..2 chunk size, 3 two connections,
 * 4 tiny memory bounds (a 512-byte table, 2 KiB in flight, one 300-byte
 * reply unread per connection) so that "store full", "store busy" and the
 * unread-replies refusal are reached, 6+7 both set: log at trace level
 * (exercises the log formatting too).  The memory accounting is checked
 * after every chunk: the table's bytes and the connections' buffers equal
 * what is held, and never pass the bounds.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_log.h"
#include "ddp_store.h"
#include "ddp_store_server_int.h"

#define FUZZ_SECRET "fuzz-secret"

static void fuzz_trap(int cond)
{
	if (!cond)
		__builtin_trap();
}

static void fuzz_parser(const uint8_t *data, size_t size, enum ddp_store_dir dir)
{
	size_t off = 0;
	while (off < size) {
		struct ddp_store_msg m;
		const char *why = NULL;
		size_t used = 0;
		if (ddp_store_msg_parse(data + off, size - off, dir, &m, &used, &why) != DDP_OK) {
			fuzz_trap(why != NULL);
			return;
		}
		if (used == 0)
			return; /* a prefix */
		fuzz_trap(used >= DDP_STORE_HDR_SIZE && used <= size - off);
		fuzz_trap(m.key == data + off + DDP_STORE_HDR_SIZE);
		fuzz_trap(m.val + m.hdr.val_len == data + off + used);
		fuzz_trap(m.hdr.key_len <= DDP_STORE_MAX_KEY && m.hdr.val_len <= DDP_STORE_MAX_VAL);
		off += used;
	}
}

/* full: also recount the key table (at the end of an input: it walks every
 * bucket) */
static void check_invariants(struct ddp_store_server *s, int full)
{
	for (struct barrier *b = s->barriers; b; b = b->next) {
		uint32_t parked = 0;
		for (size_t i = 0; i < s->nconns; i++)
			if (s->conns[i]->parked_op == DDP_STORE_BARRIER &&
			    strcmp(s->conns[i]->pkey, b->name) == 0)
				parked++;
		fuzz_trap(b->arrived > 0 && b->arrived == parked && parked < b->world);
	}
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		fuzz_trap(!c->parked_op || c->pkey != NULL);
		fuzz_trap(c->hdr_got < DDP_STORE_HDR_SIZE);
		fuzz_trap(!c->have_hdr || c->body_got <= c->body_len);
		fuzz_trap(c->state != CONN_HELLO || c->body_len <= DDP_STORE_MAX_KEY + 4);
	}
	fuzz_trap(__atomic_load_n(&s->nready, __ATOMIC_RELAXED) >= 0);
	/* the memory bounds and their accounting */
	size_t data = 0, buffered = 0;
	for (size_t i = 0; i < s->nconns; i++)
		buffered += s->conns[i]->body_cap + s->conns[i]->out_cap;
	fuzz_trap(buffered == s->buffered && buffered <= s->max_buffered);
	fuzz_trap(s->data_bytes <= s->max_data);
	if (!full)
		return;
	for (size_t i = 0; i < s->nbuckets; i++)
		for (struct kv *e = s->buckets[i]; e; e = e->next)
			data += strlen(e->key) + e->val_len;
	fuzz_trap(data == s->data_bytes);
}

static void fuzz_server(const uint8_t *data, size_t size, unsigned mode)
{
	static const size_t chunks[4] = { 1, 7, 64, (size_t)-1 };
	struct ddp_store_server *s = calloc(1, sizeof *s);
	double now = 1000.0;
	int nconn = (mode & 8) ? 2 : 1;
	struct conn *c[2] = { NULL, NULL };

	if (!s || store_core_init(s, FUZZ_SECRET) != DDP_OK) {
		free(s);
		return;
	}
	if (mode & 16) {
		s->max_data = 512;
		s->max_buffered = 2048;
		s->max_conn_out = 300;
	}
	for (int i = 0; i < nconn; i++) {
		c[i] = store_conn_new(s, -1, "fuzz:1", now);
		if (!c[i])
			goto out;
		if (mode & 1) { /* skip HELLO: go straight to the requests */
			c[i]->state = CONN_READY;
			c[i]->rank = i;
			c[i]->counted = 1;
			__atomic_add_fetch(&s->nready, 1, __ATOMIC_RELAXED);
		}
	}
	size_t chunk = chunks[(mode >> 1) & 3];
	for (size_t off = 0, turn = 0; off < size; turn++) {
		size_t n = size - off < chunk ? size - off : chunk;
		struct conn *k = c[turn % (size_t)nconn];
		/* A connection that died or is closing stops consuming. */
		if (k && !k->dead && k->state != CONN_CLOSING)
			store_conn_feed(s, k, data + off, n, now);
		off += n;
		now += 0.013; /* 13 ms per chunk: short timeouts expire */
		store_expire(s, now);
		for (size_t i = 0; i < s->nconns; i++)
			store_conn_flush(s, s->conns[i]);
		check_invariants(s, 0);
		/* The sweep frees dead connections: forget our pointers to them. */
		for (int i = 0; i < nconn; i++)
			if (c[i] && c[i]->dead)
				c[i] = NULL;
		store_sweep(s);
	}
	check_invariants(s, 1);
	store_expire(s, now + 1e6); /* everything times out */
	check_invariants(s, 1);
out:
	store_core_free(s);
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned mode = data[0];
	data++;
	size--;
	ddp_log_level_ = (mode & 0xc0) == 0xc0 ? DDP_LOG_TRACE : DDP_LOG_NONE;
	fuzz_parser(data, size, DDP_STORE_DIR_REQUEST);
	fuzz_parser(data, size, DDP_STORE_DIR_REPLY);
	fuzz_server(data, size, mode);
	ddp_log_level_ = DDP_LOG_WARN;
	return 0;
}
