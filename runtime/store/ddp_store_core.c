/* SPDX-License-Identifier: MIT
 *
 * ddp_store_core.c - the rendezvous store's protocol core
 * (ddp_store_server_int.h).
 *
 * Each connection is a small state machine fed with whatever bytes arrived
 * (store_conn_feed):
 *   HELLO   -> the first message must be HELLO with the secret (compared in
 *              constant time); anything else is refused and the connection
 *              closed.  Until then a connection can make the server buffer at
 *              most 16 + 512 + 4 bytes, and it must finish within 10 s.
 *              Refusals are logged one by one only up to STORE_LOG_REFUSALS;
 *              the rest are counted and summed up when the store stops.
 *   READY   -> requests are served in order.  A waiting request (GET/WAIT
 *              on a missing key, an incomplete BARRIER) is parked on the
 *              connection with its deadline and answered when a SET/ADD makes
 *              the key appear, the barrier completes, or the deadline passes
 *              (store_expire).  The client is synchronous, so a second
 *              request while one is parked is a protocol error.
 *   CLOSING -> an error reply is queued; the socket loop (ddp_store_loop.c)
 *              flushes it, shuts the write side down, drains input until EOF
 *              or 1 s, then closes the socket.
 * A header is validated (ddp_store_hdr_decode) before its body is buffered,
 * so memory per connection is bounded by the limits of ddp_store.h, and any
 * protocol error closes that connection only (logged with the peer address),
 * never the server.
 *
 * Contract: server thread only (or the fuzz target).  No socket I/O: replies
 * are appended to the connection's output buffer, which ddp_store_loop.c
 * writes (a connection with fd = -1 works; tests/fuzz/store drives this file
 * so).  The only descriptor call is closing a freed connection's socket.
 * The secret is never logged.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_store_server_int.h"

/* Copies a key for a log line or error reply: printable, at most 80 chars. */
static void key_for_log(char *dst, size_t cap, const char *key)
{
	size_t i = 0;
	for (; key[i] && i + 1 < cap && i < 80; i++)
		dst[i] = (key[i] >= 0x20 && key[i] < 0x7f) ? key[i] : '?';
	dst[i] = '\0';
	if (key[i] && i >= 3 && i + 1 < cap)
		memcpy(dst + i - 3, "...", 3);
}

/* ---- replies ---------------------------------------------------------------- */

/* "12.0 MiB", "1.9 KiB", "300 bytes" into buf (for the limits' messages). */
static const char *size_text(char *buf, size_t cap, size_t n)
{
	if (n >= (size_t)1 << 20)
		snprintf(buf, cap, "%.1f MiB", (double)n / (1 << 20));
	else if (n >= 1024)
		snprintf(buf, cap, "%.1f KiB", (double)n / 1024);
	else
		snprintf(buf, cap, "%zu bytes", n);
	return buf;
}

/* Logs one closing for the bound on buffered messages: the first
 * STORE_LOG_REFUSALS, then only counted. */
static void log_busy(struct ddp_store_server *s, const char *peer, const char *what, size_t held)
{
	char a[32], b[32];
	if (++s->nbusy <= STORE_LOG_REFUSALS)
		DDP_WARN("store: closing %s: %s would take the messages held for all connections to %s "
			 "(limit %s)",
			 peer, what, size_text(a, sizeof a, held), size_text(b, sizeof b, s->max_buffered));
}

static int conn_append(struct conn *c, const void *data, size_t len)
{
	struct ddp_store_server *s = c->srv;

	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 256;
		while (cap < c->out_len + len)
			cap *= 2;
		if (s->buffered - c->out_cap + cap > s->max_buffered) {
			log_busy(s, c->peer, "replying", s->buffered - c->out_cap + cap);
			c->dead = 1;
			return -1;
		}
		uint8_t *p = realloc(c->out, cap);
		if (!p) {
			DDP_WARN("store: out of memory replying to %s; closing it", c->peer);
			c->dead = 1;
			return -1;
		}
		s->buffered = s->buffered - c->out_cap + cap;
		c->out = p;
		c->out_cap = cap;
	}
	memcpy(c->out + c->out_len, data, len);
	c->out_len += len;
	return 0;
}

static void conn_reply(struct conn *c, uint8_t op, unsigned status, const void *val, size_t len)
{
	uint8_t hdr[DDP_STORE_HDR_SIZE];
	struct ddp_store_hdr h = { .op = (uint8_t)(op | DDP_STORE_REPLY),
				   .flags = (uint16_t)status,
				   .key_len = 0,
				   .val_len = (uint32_t)len };
	ddp_store_hdr_encode(hdr, &h);
	if (conn_append(c, hdr, sizeof hdr) == 0 && len)
		(void)conn_append(c, val, len);
}

static void conn_reply_msg(struct conn *c, uint8_t op, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void conn_reply_msg(struct conn *c, uint8_t op, unsigned status, const char *fmt, ...)
{
	char msg[DDP_STORE_MAX_ERRMSG];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if (n >= (int)sizeof msg)
		n = sizeof msg - 1;
	conn_reply(c, op, status, msg, (size_t)n);
}

/* Ends a connection after one last error reply (flushed, then closed). */
static void conn_fail(struct conn *c, uint8_t op, unsigned status, const char *why, double now)
{
	conn_reply_msg(c, op, status, "%s", why);
	c->state = CONN_CLOSING;
	c->deadline_conn = now + STORE_CLOSE_LINGER_S;
}

/* A flood of refusals must not flood the log too. */
void store_log_refusal(struct ddp_store_server *s, const char *peer, const char *why)
{
	if (++s->nrefused <= STORE_LOG_REFUSALS)
		DDP_WARN("store: refused a connection from %s: %s", peer, why);
	if (s->nrefused == STORE_LOG_REFUSALS)
		DDP_WARN("store: %d connections refused; further refusals are counted, not logged",
			 STORE_LOG_REFUSALS);
}

static void conn_refuse(struct ddp_store_server *s, struct conn *c, uint8_t op, const char *why, double now)
{
	store_log_refusal(s, c->peer, why);
	conn_fail(c, op, DDP_STORE_ST_REFUSED, why, now);
}

static void conn_proto_error(struct conn *c, uint8_t op, const char *why, double now)
{
	if (c->rank >= 0)
		DDP_WARN("store: closed the connection from %s (rank %d): protocol error: %s", c->peer,
			 c->rank, why);
	else
		DDP_WARN("store: closed the connection from %s: protocol error: %s", c->peer, why);
	conn_fail(c, op, DDP_STORE_ST_PROTO, why, now);
}

/* ---- parked requests and barriers ------------------------------------------ */

static void conn_unpark(struct conn *c)
{
	c->parked_op = 0;
	free(c->pkey);
	c->pkey = NULL;
}

/* Takes back the arrival of a parked barrier request (timeout, disconnect). */
static void barrier_withdraw(struct ddp_store_server *s, const char *name)
{
	struct barrier *b = store_barrier_find(s, name);
	if (b && --b->arrived == 0)
		store_barrier_free(s, b);
}

/* Answers every request parked on key now that it exists. */
static void wake_key(struct ddp_store_server *s, const char *key)
{
	struct kv *e = NULL;
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if ((c->parked_op != DDP_STORE_GET && c->parked_op != DDP_STORE_WAIT) ||
		    strcmp(c->pkey, key) != 0)
			continue;
		if (!e)
			e = store_kv_find(s, key);
		if (!e)
			return;
		if (c->parked_op == DDP_STORE_GET)
			conn_reply(c, DDP_STORE_GET, DDP_STORE_ST_OK, e->val, e->val_len);
		else
			conn_reply(c, DDP_STORE_WAIT, DDP_STORE_ST_OK, NULL, 0);
		conn_unpark(c);
	}
}

double store_expire(struct ddp_store_server *s, double now)
{
	double next = -1;
	char k[96];

	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (c->dead)
			continue;
		if (c->state == CONN_HELLO && now >= c->deadline_conn) {
			conn_refuse(s, c, DDP_STORE_HELLO, "no HELLO within 10 s", now);
		} else if (c->state == CONN_CLOSING && now >= c->deadline_conn) {
			c->dead = 1;
			continue;
		}
		if (c->parked_op && c->pdeadline >= 0 && now >= c->pdeadline) {
			key_for_log(k, sizeof k, c->pkey);
			if (c->parked_op == DDP_STORE_BARRIER) {
				barrier_withdraw(s, c->pkey);
				conn_reply_msg(c, c->parked_op, DDP_STORE_ST_TIMEOUT,
					       "barrier '%s' did not complete in time", k);
			} else {
				conn_reply_msg(c, c->parked_op, DDP_STORE_ST_TIMEOUT,
					       "key '%s' did not appear in time", k);
			}
			conn_unpark(c);
		}
		if (c->state != CONN_READY && (next < 0 || c->deadline_conn < next))
			next = c->deadline_conn;
		if (c->parked_op && c->pdeadline >= 0 && (next < 0 || c->pdeadline < next))
			next = c->pdeadline;
	}
	return next;
}

/* ---- requests -------------------------------------------------------------- */

static void park(struct conn *c, uint8_t op, const char *key, uint32_t timeout_ms, double now)
{
	c->pkey = strdup(key);
	if (!c->pkey) {
		DDP_WARN("store: out of memory parking a request of %s; closing it", c->peer);
		c->dead = 1;
		return;
	}
	c->parked_op = op;
	c->pdeadline = timeout_ms == DDP_STORE_FOREVER ? -1 : now + timeout_ms * 1e-3;
}

static void do_barrier(struct ddp_store_server *s, struct conn *c, const char *name, uint32_t world,
		       uint32_t timeout_ms, double now)
{
	struct barrier *b = store_barrier_find(s, name);
	char k[96];

	if (b && b->world != world) {
		key_for_log(k, sizeof k, name);
		conn_reply_msg(c, DDP_STORE_BARRIER, DDP_STORE_ST_INVALID,
			       "barrier '%s' entered with world size %u by rank %d but %u by others", k,
			       world, c->rank, b->world);
		return;
	}
	if (!b && !(b = store_barrier_new(s, name, world))) {
		conn_reply_msg(c, DDP_STORE_BARRIER, DDP_STORE_ST_INVALID, "store out of memory");
		return;
	}
	if (++b->arrived < world) {
		if (timeout_ms == 0) {
			barrier_withdraw(s, name);
			key_for_log(k, sizeof k, name);
			conn_reply_msg(c, DDP_STORE_BARRIER, DDP_STORE_ST_TIMEOUT,
				       "barrier '%s' did not complete in time", k);
			return;
		}
		park(c, DDP_STORE_BARRIER, name, timeout_ms, now);
		return;
	}
	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *o = s->conns[i];
		if (o->parked_op == DDP_STORE_BARRIER && strcmp(o->pkey, name) == 0) {
			conn_reply(o, DDP_STORE_BARRIER, DDP_STORE_ST_OK, NULL, 0);
			conn_unpark(o);
		}
	}
	conn_reply(c, DDP_STORE_BARRIER, DDP_STORE_ST_OK, NULL, 0);
	store_barrier_free(s, b);
}

static void do_heartbeat(struct ddp_store_server *s, struct conn *c, uint64_t counter, double now)
{
	if (c->rank < 0) {
		conn_reply_msg(c, DDP_STORE_HEARTBEAT, DDP_STORE_ST_INVALID,
			       "HEARTBEAT from a connection without a rank");
		return;
	}
	if (store_progress_post(s, c->rank, counter, now) != DDP_OK) {
		conn_reply_msg(c, DDP_STORE_HEARTBEAT, DDP_STORE_ST_INVALID, "store out of memory");
		return;
	}
	conn_reply(c, DDP_STORE_HEARTBEAT, DDP_STORE_ST_OK, NULL, 0);
}

/* Serves one complete, validated message. */
/* A SET or ADD the table refused: out of memory, or the store is full (its
 * keys and values would pass max_data); the connection stays. */
static void store_full(struct ddp_store_server *s, struct conn *c, uint8_t op, const char *key, ddp_result rc)
{
	char k[96];

	if (rc != DDP_ERR_INVALID) {
		conn_reply_msg(c, op, DDP_STORE_ST_INVALID, "store out of memory");
		return;
	}
	char a[32], b[32];
	key_for_log(k, sizeof k, key);
	size_text(a, sizeof a, s->data_bytes);
	size_text(b, sizeof b, s->max_data);
	if (++s->nfull <= STORE_LOG_REFUSALS)
		DDP_WARN("store: refused to store '%s' from %s: the store holds %s of keys and values "
			 "(limit %s)",
			 k, c->peer, a, b);
	conn_reply_msg(c, op, DDP_STORE_ST_INVALID,
		       "store full: it holds %s of keys and values (limit %s); '%s' was not stored; "
		       "delete keys that are no longer needed",
		       a, b, k);
}

static void dispatch(struct ddp_store_server *s, struct conn *c, const struct ddp_store_msg *m, double now)
{
	char key[DDP_STORE_MAX_KEY + 1], k[96];
	ddp_result rc;
	uint8_t op = m->hdr.op;
	struct kv *e;

	if (m->hdr.key_len)
		memcpy(key, m->key, m->hdr.key_len);
	key[m->hdr.key_len] = '\0';
	switch (op) {
	case DDP_STORE_HELLO:
		if (!ddp_store_secret_equal(s->secret, s->secret_len, m->key, m->hdr.key_len)) {
			conn_refuse(s, c, op, "bad secret", now);
			return;
		}
		c->state = CONN_READY;
		c->rank = (int32_t)ddp_store_get_u32(m->val);
		__atomic_add_fetch(&s->nready, 1, __ATOMIC_RELAXED);
		c->counted = 1;
		DDP_INFO(RDZV, "store: rank %d connected from %s", c->rank, c->peer);
		conn_reply(c, op, DDP_STORE_ST_OK, NULL, 0);
		return;
	case DDP_STORE_SET:
		rc = store_kv_set(s, key, m->val, m->hdr.val_len);
		if (rc != DDP_OK) {
			store_full(s, c, op, key, rc);
			return;
		}
		conn_reply(c, op, DDP_STORE_ST_OK, NULL, 0);
		wake_key(s, key);
		return;
	case DDP_STORE_GET:
	case DDP_STORE_WAIT:
		e = store_kv_find(s, key);
		if (e) {
			if (op == DDP_STORE_GET)
				conn_reply(c, op, DDP_STORE_ST_OK, e->val, e->val_len);
			else
				conn_reply(c, op, DDP_STORE_ST_OK, NULL, 0);
		} else if (ddp_store_get_u32(m->val) == 0) {
			key_for_log(k, sizeof k, key);
			conn_reply_msg(c, op, DDP_STORE_ST_TIMEOUT, "key '%s' did not appear in time", k);
		} else {
			park(c, op, key, ddp_store_get_u32(m->val), now);
		}
		return;
	case DDP_STORE_ADD: {
		uint8_t total[8];
		uint64_t v = 0;
		e = store_kv_find(s, key);
		if (e && e->val_len != 8) {
			key_for_log(k, sizeof k, key);
			conn_reply_msg(c, op, DDP_STORE_ST_INVALID,
				       "key '%s' holds a %zu-byte value, not a counter", k, e->val_len);
			return;
		}
		if (e)
			v = ddp_store_get_u64(e->val);
		ddp_store_put_u64(total, v + ddp_store_get_u64(m->val)); /* wraps, as int64 would not */
		rc = store_kv_set(s, key, total, sizeof total);
		if (rc != DDP_OK) {
			store_full(s, c, op, key, rc);
			return;
		}
		conn_reply(c, op, DDP_STORE_ST_OK, total, sizeof total);
		wake_key(s, key);
		return;
	}
	case DDP_STORE_DEL:
		store_kv_del(s, key);
		conn_reply(c, op, DDP_STORE_ST_OK, NULL, 0);
		return;
	case DDP_STORE_BARRIER:
		do_barrier(s, c, key, ddp_store_get_u32(m->val), ddp_store_get_u32(m->val + 4), now);
		return;
	case DDP_STORE_HEARTBEAT: do_heartbeat(s, c, ddp_store_get_u64(m->val), now); return;
	}
	conn_proto_error(c, op, "unknown op", now); /* NEVER: the header was checked */
}

void store_conn_feed(struct ddp_store_server *s, struct conn *c, const uint8_t *data, size_t n, double now)
{
	const char *why = NULL;

	while (n > 0 && c->state != CONN_CLOSING && !c->dead) {
		if (!c->have_hdr) {
			size_t take = DDP_STORE_HDR_SIZE - c->hdr_got;
			if (take > n)
				take = n;
			memcpy(c->hdr_buf + c->hdr_got, data, take);
			c->hdr_got += take;
			data += take;
			n -= take;
			if (c->hdr_got < DDP_STORE_HDR_SIZE)
				break;
			c->hdr_got = 0;
			if (ddp_store_hdr_decode(c->hdr_buf, DDP_STORE_DIR_REQUEST, &c->hdr, &why) != DDP_OK) {
				if (c->state == CONN_HELLO)
					conn_refuse(s, c, DDP_STORE_HELLO, why, now);
				else /* reply under the request's op when it is one */
					conn_proto_error(c,
							 c->hdr_buf[5] >= 1 && c->hdr_buf[5] <= DDP_STORE_OP_MAX
								 ? c->hdr_buf[5]
								 : DDP_STORE_HELLO,
							 why, now);
				return;
			}
			if (c->state == CONN_HELLO && c->hdr.op != DDP_STORE_HELLO) {
				conn_refuse(s, c, c->hdr.op, "first message was not HELLO", now);
				return;
			}
			if (c->state == CONN_READY && c->hdr.op == DDP_STORE_HELLO) {
				conn_proto_error(c, c->hdr.op, "second HELLO", now);
				return;
			}
			if (c->parked_op) {
				conn_proto_error(c, c->hdr.op, "request while another is pending", now);
				return;
			}
			if (c->out_len - c->out_off > s->max_conn_out) {
				/* one request in flight: an honest client has read
				 * every reply before it asks again */
				conn_proto_error(c, c->hdr.op,
						 "requests sent without reading the replies "
						 "(more than one reply unread)",
						 now);
				return;
			}
			c->body_len = (size_t)c->hdr.key_len + c->hdr.val_len;
			c->body_got = 0;
			if (c->body_len) {
				if (s->buffered + c->body_len > s->max_buffered) {
					log_busy(s, c->peer, "its message", s->buffered + c->body_len);
					conn_fail(c, c->hdr.op, DDP_STORE_ST_INVALID,
						  "store busy: too many large messages in flight; retry later",
						  now);
					return;
				}
				c->body = malloc(c->body_len);
				if (!c->body) {
					DDP_WARN("store: out of memory reading from %s; closing it", c->peer);
					c->dead = 1;
					return;
				}
				c->body_cap = c->body_len;
				s->buffered += c->body_cap;
			}
			c->have_hdr = 1;
		}
		size_t take = c->body_len - c->body_got;
		if (take > n)
			take = n;
		if (take)
			memcpy(c->body + c->body_got, data, take);
		c->body_got += take;
		data += take;
		n -= take;
		if (c->body_got < c->body_len)
			break;
		struct ddp_store_msg m = { .hdr = c->hdr,
					   .key = c->body,
					   .val = c->body ? c->body + c->hdr.key_len : NULL };
		c->have_hdr = 0;
		if (ddp_store_body_check(&m, DDP_STORE_DIR_REQUEST, &why) != DDP_OK) {
			if (c->state == CONN_HELLO)
				conn_refuse(s, c, m.hdr.op, why, now);
			else
				conn_proto_error(c, m.hdr.op, why, now);
		} else {
			dispatch(s, c, &m, now);
		}
		free(c->body);
		c->body = NULL;
		s->buffered -= c->body_cap;
		c->body_cap = 0;
	}
}

/* ---- connection records ------------------------------------------------------ */

struct conn *store_conn_new(struct ddp_store_server *s, int fd, const char *peer, double now)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	if (s->nconns == s->conns_cap) {
		size_t cap = s->conns_cap ? 2 * s->conns_cap : 16;
		struct conn **p = realloc(s->conns, cap * sizeof *p);
		if (!p) {
			free(c);
			return NULL;
		}
		s->conns = p;
		s->conns_cap = cap;
	}
	c->fd = fd;
	c->srv = s;
	c->rank = -1;
	c->state = CONN_HELLO;
	c->deadline_conn = now + STORE_HELLO_TIMEOUT_S;
	c->seq = ++s->conn_seq;
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	s->conns[s->nconns++] = c;
	return c;
}

void store_conn_free(struct ddp_store_server *s, size_t i)
{
	struct conn *c = s->conns[i];
	if (c->parked_op == DDP_STORE_BARRIER)
		barrier_withdraw(s, c->pkey);
	conn_unpark(c);
	if (c->counted)
		__atomic_sub_fetch(&s->nready, 1, __ATOMIC_RELAXED);
	if (c->fd >= 0)
		DDP_SYS(close)(c->fd);
	s->buffered -= c->body_cap + c->out_cap;
	free(c->body);
	free(c->out);
	free(c);
	s->conns[i] = s->conns[--s->nconns];
}

/* ---- lifetime ------------------------------------------------------------------ */

ddp_result store_core_init(struct ddp_store_server *s, const char *secret)
{
	size_t len = strlen(secret);
	if (len == 0 || len > DDP_STORE_MAX_KEY) {
		DDP_ERROR("store: the job secret must be 1..%d bytes", DDP_STORE_MAX_KEY);
		return DDP_ERR_INVALID;
	}
	memcpy(s->secret, secret, len);
	s->secret_len = len;
	s->listen_fd = -1;
	s->wake[0] = s->wake[1] = -1;
	s->max_data = STORE_MAX_DATA;
	s->max_buffered = STORE_MAX_BUFFERED;
	s->max_conn_out = STORE_MAX_CONN_OUT;
	return store_table_init(s);
}

void store_core_free(struct ddp_store_server *s)
{
	while (s->nconns)
		store_conn_free(s, s->nconns - 1);
	free(s->conns);
	store_table_free(s);
	memset(s->secret, 0, sizeof s->secret);
}
