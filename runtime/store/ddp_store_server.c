/* SPDX-License-Identifier: MIT
 *
 * store_server.c - the rendezvous store hosted by ddprun (store_server.h).
 *
 * One thread runs a poll loop over: a wake pipe (stop), the listening socket
 * and every client connection (non-blocking).  Each connection is a small
 * state machine fed with whatever bytes arrived (conn_feed):
 *   HELLO   -> the first message must be HELLO with the secret (compared in
 *              constant time); anything else is refused and the connection
 *              closed.  Until then a connection can make the server buffer at
 *              most 16 + 512 + 4 bytes, and it must finish within 10 s.  At
 *              most STORE_MAX_PENDING connections may be unauthenticated
 *              (HELLO or CLOSING after a refusal) at once: accepting one more
 *              closes the oldest of them, and so does running out of file
 *              descriptors, so a flood of idle or slow connections costs
 *              bounded memory and descriptors and cannot lock the ranks
 *              out.  Refusals are logged one by one only up to
 *              STORE_LOG_REFUSALS; the rest are counted and summed up.
 *   READY   -> requests are served in order.  A waiting request (GET/WAIT
 *              on a missing key, an incomplete BARRIER) is parked on the
 *              connection with its deadline and answered when a SET/ADD makes
 *              the key appear, the barrier completes, or the deadline passes.
 *              The client is synchronous, so a second request while one is
 *              parked is a protocol error.
 *   CLOSING -> an error reply is flushed, the write side shut down, input
 *              drained until EOF or 1 s, then the socket closed.
 * A header is validated (ddp_store_hdr_decode) before its body is buffered,
 * so memory per connection is bounded by the limits of ddp_store.h, and any
 * protocol error closes that connection only (logged with the peer address),
 * never the server.  The core (conn_feed, dispatch, expire) does no socket
 * I/O itself, so tests/fuzz/store drives it without sockets (fd = -1).
 *
 * Data: keys in a chained hash table (struct kv), barriers in a list (each
 * name exists only while incomplete), progress counters in an array indexed
 * by rank.
 *
 * Contract: only the server thread touches connections, keys and barriers.
 * progress_lock guards the progress array (read by ddp_store_server_progress
 * from ddprun's monitor); nready is atomic.  The secret is never logged.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_store.h"
#include "ddp_store_server.h"

#define STORE_HELLO_TIMEOUT_S 10.0  /* an unauthenticated connection's life  */
#define STORE_CLOSE_LINGER_S  1.0   /* draining a connection being closed    */
#define STORE_READ_CHUNK      65536
#define STORE_READ_BUDGET     (1u << 20) /* bytes per connection per wakeup  */
#define STORE_MAX_PENDING     256  /* connections not (or no longer) past HELLO */
#define STORE_LOG_REFUSALS    16   /* refusals logged one by one, then counted  */

enum conn_state { CONN_HELLO, CONN_READY, CONN_CLOSING };

struct kv {
	struct kv *next;     /* bucket chain                                  */
	uint64_t hash;
	char *key;           /* NUL-terminated (keys hold no NUL)             */
	uint8_t *val;        /* malloc'd, NULL when val_len == 0              */
	size_t val_len;
};

struct barrier {
	struct barrier *next;
	char *name;
	uint32_t world;      /* world size every arrival must name            */
	uint32_t arrived;    /* connections parked in it (plus the completer) */
};

struct progress {
	uint64_t counter;    /* last posted value                             */
	double changed;      /* monotonic time the value last changed         */
	int seen;            /* the rank posted at least once                 */
};

struct conn {
	int fd;                      /* -1: no socket (fuzzing)               */
	enum conn_state state;
	int rank;                    /* from HELLO; -1 before or for tools    */
	int dead;                    /* to be closed by the sweep             */
	int counted;                 /* counted in nready (passed HELLO)      */
	int shut;                    /* CLOSING: write side shut down         */
	char peer[64];               /* "ip:port" for logs                    */
	double deadline_conn;        /* HELLO or CLOSING deadline             */
	uint64_t seq;                /* accept order (eviction: oldest first) */
	/* input: a header, then its body */
	uint8_t hdr_buf[DDP_STORE_HDR_SIZE];
	size_t hdr_got;
	int have_hdr;
	struct ddp_store_hdr hdr;
	uint8_t *body;               /* key + value, body_len bytes           */
	size_t body_len, body_got;
	/* a parked request (parked_op 0: none) */
	uint8_t parked_op;
	char *pkey;                  /* key or barrier name, owned            */
	double pdeadline;            /* monotonic; < 0: forever               */
	/* output not yet written */
	uint8_t *out;
	size_t out_len, out_off, out_cap;
};

struct ddp_store_server {
	int listen_fd;
	int port;
	int wake[2];                 /* pipe: a byte wakes the thread to stop */
	pthread_t thread;
	int thread_started;
	int stopping;                /* atomic                                */
	uint8_t secret[DDP_STORE_MAX_KEY];
	size_t secret_len;
	struct conn **conns;
	size_t nconns, conns_cap;
	struct kv **buckets;
	size_t nbuckets, nkeys;
	struct barrier *barriers;
	double accept_pause_until;   /* after EMFILE: stop accepting a moment */
	int nready;                  /* atomic: connections past HELLO        */
	unsigned long nrefused;      /* refusals and evictions, for the log   */
	uint64_t conn_seq;           /* connections accepted so far           */
	pthread_mutex_t progress_lock;
	struct progress *progress;   /* [nprogress], guarded by progress_lock */
	size_t nprogress;
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

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

/* ---- key-value table ------------------------------------------------------ */

static uint64_t key_hash(const char *key)
{
	uint64_t h = 1469598103934665603ull;
	for (; *key; key++)
		h = (h ^ (uint8_t)*key) * 1099511628211ull;
	return h;
}

static struct kv **kv_slot(struct ddp_store_server *s, const char *key, uint64_t h)
{
	struct kv **p = &s->buckets[h & (s->nbuckets - 1)];
	while (*p && ((*p)->hash != h || strcmp((*p)->key, key) != 0))
		p = &(*p)->next;
	return p;
}

static struct kv *kv_find(struct ddp_store_server *s, const char *key)
{
	return *kv_slot(s, key, key_hash(key));
}

static ddp_result kv_grow(struct ddp_store_server *s)
{
	size_t n = s->nbuckets * 2;
	struct kv **b = calloc(n, sizeof *b);
	if (!b)
		return DDP_ERR_NOMEM;
	for (size_t i = 0; i < s->nbuckets; i++) {
		for (struct kv *e = s->buckets[i], *next; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (n - 1)];
			b[e->hash & (n - 1)] = e;
		}
	}
	free(s->buckets);
	s->buckets = b;
	s->nbuckets = n;
	return DDP_OK;
}

/* Stores a copy of val under key; returns DDP_ERR_NOMEM and leaves the table
 * unchanged when memory runs out. */
static ddp_result kv_set(struct ddp_store_server *s, const char *key, const void *val, size_t len)
{
	uint64_t h = key_hash(key);
	struct kv **p = kv_slot(s, key, h);
	uint8_t *copy = NULL;

	if (len) {
		copy = malloc(len);
		if (!copy)
			return DDP_ERR_NOMEM;
		memcpy(copy, val, len);
	}
	if (*p) {
		free((*p)->val);
		(*p)->val = copy;
		(*p)->val_len = len;
		return DDP_OK;
	}
	struct kv *e = calloc(1, sizeof *e);
	char *k = strdup(key);
	if (!e || !k) {
		free(e);
		free(k);
		free(copy);
		return DDP_ERR_NOMEM;
	}
	e->hash = h;
	e->key = k;
	e->val = copy;
	e->val_len = len;
	*p = e;
	if (++s->nkeys > s->nbuckets)
		(void)kv_grow(s); /* a full table still works, only slower */
	return DDP_OK;
}

static void kv_del(struct ddp_store_server *s, const char *key)
{
	struct kv **p = kv_slot(s, key, key_hash(key));
	struct kv *e = *p;
	if (!e)
		return;
	*p = e->next;
	free(e->key);
	free(e->val);
	free(e);
	s->nkeys--;
}

static void kv_free_all(struct ddp_store_server *s)
{
	for (size_t i = 0; s->buckets && i < s->nbuckets; i++) {
		for (struct kv *e = s->buckets[i], *next; e; e = next) {
			next = e->next;
			free(e->key);
			free(e->val);
			free(e);
		}
	}
	free(s->buckets);
	s->buckets = NULL;
	s->nkeys = 0;
}

/* ---- replies ---------------------------------------------------------------- */

static int conn_append(struct conn *c, const void *data, size_t len)
{
	if (c->out_len + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 256;
		while (cap < c->out_len + len)
			cap *= 2;
		uint8_t *p = realloc(c->out, cap);
		if (!p) {
			DDP_WARN("store: out of memory replying to %s; closing it", c->peer);
			c->dead = 1;
			return -1;
		}
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
	struct ddp_store_hdr h = { .op = (uint8_t)(op | DDP_STORE_REPLY), .flags = (uint16_t)status,
				   .key_len = 0, .val_len = (uint32_t)len };
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

/* Logs a refused or evicted connection: the first STORE_LOG_REFUSALS one by
 * one, then only counted (a flood must not flood the log too). */
static void log_refusal(struct ddp_store_server *s, const char *peer, const char *why)
{
	if (++s->nrefused <= STORE_LOG_REFUSALS)
		DDP_WARN("store: refused a connection from %s: %s", peer, why);
	if (s->nrefused == STORE_LOG_REFUSALS)
		DDP_WARN("store: %d connections refused; further refusals are counted, not logged",
			 STORE_LOG_REFUSALS);
}

static void conn_refuse(struct ddp_store_server *s, struct conn *c, uint8_t op, const char *why,
			double now)
{
	log_refusal(s, c->peer, why);
	conn_fail(c, op, DDP_STORE_ST_REFUSED, why, now);
}

static void conn_proto_error(struct conn *c, uint8_t op, const char *why, double now)
{
	if (c->rank >= 0)
		DDP_WARN("store: closed the connection from %s (rank %d): protocol error: %s",
			 c->peer, c->rank, why);
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

static struct barrier *barrier_find(struct ddp_store_server *s, const char *name)
{
	struct barrier *b = s->barriers;
	while (b && strcmp(b->name, name) != 0)
		b = b->next;
	return b;
}

static void barrier_free(struct ddp_store_server *s, struct barrier *b)
{
	struct barrier **p = &s->barriers;
	while (*p != b)
		p = &(*p)->next;
	*p = b->next;
	free(b->name);
	free(b);
}

/* Takes back the arrival of a parked barrier request (timeout, disconnect). */
static void barrier_withdraw(struct ddp_store_server *s, const char *name)
{
	struct barrier *b = barrier_find(s, name);
	if (b && --b->arrived == 0)
		barrier_free(s, b);
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
			e = kv_find(s, key);
		if (!e)
			return;
		if (c->parked_op == DDP_STORE_GET)
			conn_reply(c, DDP_STORE_GET, DDP_STORE_ST_OK, e->val, e->val_len);
		else
			conn_reply(c, DDP_STORE_WAIT, DDP_STORE_ST_OK, NULL, 0);
		conn_unpark(c);
	}
}

/* Times out parked requests and stale connections; returns the next deadline
 * (< 0: none). */
static double store_expire(struct ddp_store_server *s, double now)
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

static void do_barrier(struct ddp_store_server *s, struct conn *c, const char *name,
		       uint32_t world, uint32_t timeout_ms, double now)
{
	struct barrier *b = barrier_find(s, name);
	char k[96];

	if (b && b->world != world) {
		key_for_log(k, sizeof k, name);
		conn_reply_msg(c, DDP_STORE_BARRIER, DDP_STORE_ST_INVALID,
			       "barrier '%s' entered with world size %u by rank %d but %u by others",
			       k, world, c->rank, b->world);
		return;
	}
	if (!b) {
		b = calloc(1, sizeof *b);
		if (!b || !(b->name = strdup(name))) {
			free(b);
			conn_reply_msg(c, DDP_STORE_BARRIER, DDP_STORE_ST_INVALID, "store out of memory");
			return;
		}
		b->world = world;
		b->next = s->barriers;
		s->barriers = b;
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
	barrier_free(s, b);
}

static void do_heartbeat(struct ddp_store_server *s, struct conn *c, uint64_t counter, double now)
{
	if (c->rank < 0) {
		conn_reply_msg(c, DDP_STORE_HEARTBEAT, DDP_STORE_ST_INVALID,
			       "HEARTBEAT from a connection without a rank");
		return;
	}
	pthread_mutex_lock(&s->progress_lock);
	if ((size_t)c->rank >= s->nprogress) {
		size_t n = (size_t)c->rank + 1;
		if (n < 2 * s->nprogress)
			n = 2 * s->nprogress;
		struct progress *p = realloc(s->progress, n * sizeof *p);
		if (!p) {
			pthread_mutex_unlock(&s->progress_lock);
			conn_reply_msg(c, DDP_STORE_HEARTBEAT, DDP_STORE_ST_INVALID, "store out of memory");
			return;
		}
		memset(p + s->nprogress, 0, (n - s->nprogress) * sizeof *p);
		s->progress = p;
		s->nprogress = n;
	}
	struct progress *p = &s->progress[c->rank];
	if (!p->seen || p->counter != counter) {
		p->counter = counter;
		p->changed = now;
		p->seen = 1;
	}
	pthread_mutex_unlock(&s->progress_lock);
	conn_reply(c, DDP_STORE_HEARTBEAT, DDP_STORE_ST_OK, NULL, 0);
}

/* Serves one complete, validated message. */
static void dispatch(struct ddp_store_server *s, struct conn *c, const struct ddp_store_msg *m,
		     double now)
{
	char key[DDP_STORE_MAX_KEY + 1], k[96];
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
		if (kv_set(s, key, m->val, m->hdr.val_len) != DDP_OK) {
			conn_reply_msg(c, op, DDP_STORE_ST_INVALID, "store out of memory");
			return;
		}
		conn_reply(c, op, DDP_STORE_ST_OK, NULL, 0);
		wake_key(s, key);
		return;
	case DDP_STORE_GET:
	case DDP_STORE_WAIT:
		e = kv_find(s, key);
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
		e = kv_find(s, key);
		if (e && e->val_len != 8) {
			key_for_log(k, sizeof k, key);
			conn_reply_msg(c, op, DDP_STORE_ST_INVALID,
				       "key '%s' holds a %zu-byte value, not a counter", k, e->val_len);
			return;
		}
		if (e)
			v = ddp_store_get_u64(e->val);
		ddp_store_put_u64(total, v + ddp_store_get_u64(m->val)); /* wraps, as int64 would not */
		if (kv_set(s, key, total, sizeof total) != DDP_OK) {
			conn_reply_msg(c, op, DDP_STORE_ST_INVALID, "store out of memory");
			return;
		}
		conn_reply(c, op, DDP_STORE_ST_OK, total, sizeof total);
		wake_key(s, key);
		return;
	}
	case DDP_STORE_DEL:
		kv_del(s, key);
		conn_reply(c, op, DDP_STORE_ST_OK, NULL, 0);
		return;
	case DDP_STORE_BARRIER:
		do_barrier(s, c, key, ddp_store_get_u32(m->val), ddp_store_get_u32(m->val + 4), now);
		return;
	case DDP_STORE_HEARTBEAT:
		do_heartbeat(s, c, ddp_store_get_u64(m->val), now);
		return;
	}
	conn_proto_error(c, op, "unknown op", now); /* NEVER: the header was checked */
}

/* Feeds bytes that arrived on c; serves every complete message.  Stops at the
 * first error (the connection is then CLOSING or dead). */
static void conn_feed(struct ddp_store_server *s, struct conn *c, const uint8_t *data, size_t n,
		      double now)
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
					conn_proto_error(c, c->hdr_buf[5] >= 1 && c->hdr_buf[5] <= DDP_STORE_OP_MAX
							    ? c->hdr_buf[5] : DDP_STORE_HELLO, why, now);
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
			c->body_len = (size_t)c->hdr.key_len + c->hdr.val_len;
			c->body_got = 0;
			if (c->body_len) {
				c->body = malloc(c->body_len);
				if (!c->body) {
					DDP_WARN("store: out of memory reading from %s; closing it", c->peer);
					c->dead = 1;
					return;
				}
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
		struct ddp_store_msg m = { .hdr = c->hdr, .key = c->body,
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
	}
}

/* ---- connections ------------------------------------------------------------ */

static struct conn *conn_new(struct ddp_store_server *s, int fd, const char *peer, double now)
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
	c->rank = -1;
	c->state = CONN_HELLO;
	c->deadline_conn = now + STORE_HELLO_TIMEOUT_S;
	c->seq = ++s->conn_seq;
	snprintf(c->peer, sizeof c->peer, "%s", peer);
	s->conns[s->nconns++] = c;
	return c;
}

/* Frees c (which must be s->conns[i]); undoes a parked barrier arrival. */
static void conn_free(struct ddp_store_server *s, size_t i)
{
	struct conn *c = s->conns[i];
	if (c->parked_op == DDP_STORE_BARRIER)
		barrier_withdraw(s, c->pkey);
	conn_unpark(c);
	if (c->counted)
		__atomic_sub_fetch(&s->nready, 1, __ATOMIC_RELAXED);
	if (c->fd >= 0)
		DDP_SYS(close)(c->fd);
	free(c->body);
	free(c->out);
	free(c);
	s->conns[i] = s->conns[--s->nconns];
}

/* Writes pending output; with no socket (fuzzing) discards it. */
static void conn_flush(struct conn *c)
{
	if (c->fd < 0) {
		c->out_len = c->out_off = 0;
	}
	while (c->out_off < c->out_len) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->dead = 1;
			return;
		}
		c->out_off += (size_t)w;
	}
	c->out_len = c->out_off = 0;
	if (c->state == CONN_CLOSING && !c->shut) {
		if (c->fd >= 0)
			shutdown(c->fd, SHUT_WR);
		c->shut = 1;
	}
}

static void conn_read(struct ddp_store_server *s, struct conn *c, double now)
{
	uint8_t buf[STORE_READ_CHUNK];
	size_t budget = STORE_READ_BUDGET;

	while (budget > 0 && !c->dead) {
		ssize_t r = recv(c->fd, buf, sizeof buf, 0);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				c->dead = 1;
			return;
		}
		if (r == 0) {
			if (c->have_hdr || c->hdr_got)
				DDP_WARN("store: connection from %s closed in the middle of a message",
					 c->peer);
			c->dead = 1;
			return;
		}
		if (c->state == CONN_CLOSING)
			continue; /* draining */
		conn_feed(s, c, buf, (size_t)r, now);
		budget -= (size_t)r < budget ? (size_t)r : budget;
	}
}

static void format_peer(const struct sockaddr_storage *a, socklen_t len, char *out, size_t cap)
{
	char host[INET6_ADDRSTRLEN], serv[16];
	if (getnameinfo((const struct sockaddr *)a, len, host, sizeof host, serv, sizeof serv,
			NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		snprintf(out, cap, "(unknown peer)");
		return;
	}
	if (a->ss_family == AF_INET6)
		snprintf(out, cap, "[%s]:%s", host, serv);
	else
		snprintf(out, cap, "%s:%s", host, serv);
}

/* Whether c counts against STORE_MAX_PENDING: it has not passed HELLO (and
 * never will: a refused one is only being closed). */
static int conn_pending(const struct conn *c)
{
	return !c->dead && !c->counted;
}

/* Closes the oldest pending connection, those already refused first, to make
 * room for a new one.  Its socket is closed at once (the descriptor is what
 * may be short); the sweep frees the rest.  Returns 0 when there is none. */
static int store_evict_pending(struct ddp_store_server *s)
{
	struct conn *victim = NULL;

	for (size_t i = 0; i < s->nconns; i++) {
		struct conn *c = s->conns[i];
		if (!conn_pending(c))
			continue;
		if (!victim || (c->state == CONN_CLOSING) > (victim->state == CONN_CLOSING) ||
		    ((c->state == CONN_CLOSING) == (victim->state == CONN_CLOSING) && c->seq < victim->seq))
			victim = c;
	}
	if (!victim)
		return 0;
	if (victim->state != CONN_CLOSING)
		log_refusal(s, victim->peer, "no HELLO yet while too many connections wait for one; "
			    "closed to make room");
	if (victim->fd >= 0)
		DDP_SYS(close)(victim->fd);
	victim->fd = -1;
	victim->dead = 1;
	return 1;
}

static void store_accept(struct ddp_store_server *s, double now)
{
	size_t pending = 0;

	for (size_t i = 0; i < s->nconns; i++)
		pending += (size_t)conn_pending(s->conns[i]);
	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage a;
		socklen_t len = sizeof a;
		char peer[64];
		int fd = accept4(s->listen_fd, (struct sockaddr *)&a, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* unauthenticated connections must not keep the ranks out */
				if (store_evict_pending(s)) {
					pending--;
					continue;
				}
				DDP_WARN_ONCE("store: cannot accept connections: %s; raise `ulimit -n`",
					      strerror(errno));
				s->accept_pause_until = now + 0.1;
			}
			return;
		}
		int one = 1;
		(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		format_peer(&a, len, peer, sizeof peer);
		if (!conn_new(s, fd, peer, now)) {
			DDP_WARN("store: out of memory accepting %s", peer);
			DDP_SYS(close)(fd);
			return;
		}
		if (++pending > STORE_MAX_PENDING && store_evict_pending(s))
			pending--;
	}
}

/* Closes and frees every connection marked dead. */
static void store_sweep(struct ddp_store_server *s)
{
	for (size_t i = 0; i < s->nconns;) {
		struct conn *c = s->conns[i];
		if (c->dead) {
			conn_free(s, i);
		} else {
			i++;
		}
	}
}

static void *store_thread(void *arg)
{
	struct ddp_store_server *s = arg;
	struct pollfd *pfd = NULL;
	size_t pfd_cap = 0;
	double next = -1;

	while (!__atomic_load_n(&s->stopping, __ATOMIC_ACQUIRE)) {
		size_t n = 2 + s->nconns;
		if (n > pfd_cap) {
			struct pollfd *p = realloc(pfd, 2 * n * sizeof *p);
			if (!p) {
				DDP_WARN("store: out of memory; retrying");
				usleep(10000);
				continue;
			}
			pfd = p;
			pfd_cap = 2 * n;
		}
		double now = mono_now();
		pfd[0] = (struct pollfd){ .fd = s->wake[0], .events = POLLIN };
		pfd[1] = (struct pollfd){ .fd = now < s->accept_pause_until ? -1 : s->listen_fd,
					  .events = POLLIN };
		for (size_t i = 0; i < s->nconns; i++) {
			struct conn *c = s->conns[i];
			pfd[2 + i] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
			if (c->out_off < c->out_len)
				pfd[2 + i].events |= POLLOUT;
		}
		if (now < s->accept_pause_until && (next < 0 || s->accept_pause_until < next))
			next = s->accept_pause_until;
		int timeout = -1;
		if (next >= 0) {
			double ms = (next - now) * 1000.0 + 1.0;
			timeout = ms < 0 ? 0 : ms > 60000 ? 60000 : (int)ms;
		}
		int r = poll(pfd, n, timeout);
		if (r < 0 && errno != EINTR) {
			DDP_WARN("store: poll failed: %s", strerror(errno));
			usleep(10000);
		}
		now = mono_now();
		if (r > 0) {
			if (pfd[0].revents)
				break;
			/* Reads first: a connection accepted last time has said HELLO
			 * by now, before new arrivals can make room by evicting it. */
			for (size_t i = 0; i < n - 2; i++) {
				struct conn *c = s->conns[i];
				if (pfd[2 + i].revents & (POLLIN | POLLHUP | POLLERR))
					conn_read(s, c, now);
			}
			if (pfd[1].revents & POLLIN)
				store_accept(s, now);
		}
		next = store_expire(s, now);
		for (size_t i = 0; i < s->nconns; i++)
			if (!s->conns[i]->dead)
				conn_flush(s->conns[i]);
		store_sweep(s);
	}
	free(pfd);
	return NULL;
}

/* ---- lifetime ------------------------------------------------------------------ */

/* Everything of a store except sockets and the thread (also used by the fuzz
 * target). */
static ddp_result store_core_init(struct ddp_store_server *s, const char *secret)
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
	s->nbuckets = 64;
	s->buckets = calloc(s->nbuckets, sizeof *s->buckets);
	if (!s->buckets)
		return DDP_ERR_NOMEM;
	pthread_mutex_init(&s->progress_lock, NULL);
	return DDP_OK;
}

static void store_core_free(struct ddp_store_server *s)
{
	while (s->nconns)
		conn_free(s, s->nconns - 1);
	free(s->conns);
	kv_free_all(s);
	while (s->barriers)
		barrier_free(s, s->barriers);
	free(s->progress);
	pthread_mutex_destroy(&s->progress_lock);
	memset(s->secret, 0, sizeof s->secret);
}

ddp_result ddp_store_server_start(const char *bind_addr, int port, const char *secret,
			      struct ddp_store_server **out)
{
	ddp_result rc = DDP_OK;
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV },
			*ai = NULL;
	char portstr[16];
	int one = 1, err;

	*out = NULL;
	if (!bind_addr || strcmp(bind_addr, "localhost") == 0)
		bind_addr = "127.0.0.1";
	if (!secret || port < 0 || port > 65535) {
		DDP_ERROR("store: %s", !secret ? "no job secret given" : "port out of range");
		return DDP_ERR_INVALID;
	}
	struct ddp_store_server *s = calloc(1, sizeof *s);
	if (!s)
		return DDP_ERR_NOMEM;
	DDP_CHECK_GOTO(store_core_init(s, secret), rc, out_free);
	snprintf(portstr, sizeof portstr, "%d", port);
	err = getaddrinfo(bind_addr, portstr, &hints, &ai);
	if (err) {
		DDP_ERROR("store: cannot listen on '%s': %s; give a numeric address of this "
			  "host (e.g. 127.0.0.1 or 0.0.0.0)", bind_addr, gai_strerror(err));
		rc = DDP_ERR_INVALID;
		goto out_core;
	}
	s->listen_fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->listen_fd < 0) {
		DDP_ERROR("store: socket() failed: %s", strerror(errno));
		rc = DDP_ERR_SYS;
		goto out_addr;
	}
	(void)setsockopt(s->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(s->listen_fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
	    listen(s->listen_fd, SOMAXCONN) != 0) {
		DDP_ERROR("store: cannot listen on %s:%d: %s; pick another --master-port "
			  "(0 chooses a free one)", bind_addr, port, strerror(errno));
		rc = DDP_ERR_SYS;
		goto out_addr;
	}
	struct sockaddr_storage a;
	socklen_t alen = sizeof a;
	if (getsockname(s->listen_fd, (struct sockaddr *)&a, &alen) != 0) {
		rc = DDP_ERR_SYS;
		goto out_addr;
	}
	s->port = ntohs(a.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&a)->sin6_port
						: ((struct sockaddr_in *)&a)->sin_port);
	if (pipe2(s->wake, O_CLOEXEC | O_NONBLOCK) != 0) {
		DDP_ERROR("store: pipe() failed: %s", strerror(errno));
		rc = DDP_ERR_SYS;
		goto out_addr;
	}
	err = pthread_create(&s->thread, NULL, store_thread, s);
	if (err) {
		DDP_ERROR("store: cannot start its thread: %s", strerror(err));
		rc = DDP_ERR_SYS;
		goto out_addr;
	}
	s->thread_started = 1;
	freeaddrinfo(ai);
	DDP_INFO(RDZV, "store: listening on %s:%d", bind_addr, s->port);
	*out = s;
	return DDP_OK;

out_addr:
	freeaddrinfo(ai);
out_core:
	if (s->listen_fd >= 0)
		DDP_SYS(close)(s->listen_fd);
	if (s->wake[0] >= 0) {
		DDP_SYS(close)(s->wake[0]);
		DDP_SYS(close)(s->wake[1]);
	}
	store_core_free(s);
out_free:
	free(s);
	return rc;
}

int ddp_store_server_port(const struct ddp_store_server *s)
{
	return s->port;
}

int ddp_store_server_clients(struct ddp_store_server *s)
{
	return __atomic_load_n(&s->nready, __ATOMIC_RELAXED);
}

ddp_result ddp_store_server_progress(struct ddp_store_server *s, int rank, uint64_t *counter,
				 double *age_seconds)
{
	if (rank < 0)
		return DDP_ERR_INVALID;
	*counter = 0;
	*age_seconds = -1;
	pthread_mutex_lock(&s->progress_lock);
	if ((size_t)rank < s->nprogress && s->progress[rank].seen) {
		*counter = s->progress[rank].counter;
		*age_seconds = mono_now() - s->progress[rank].changed;
	}
	pthread_mutex_unlock(&s->progress_lock);
	return DDP_OK;
}

void ddp_store_server_stop(struct ddp_store_server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	if (s->thread_started) {
		ssize_t w;
		do {
			w = write(s->wake[1], "x", 1);
		} while (w < 0 && errno == EINTR);
		pthread_join(s->thread, NULL);
	}
	DDP_SYS(close)(s->listen_fd);
	DDP_SYS(close)(s->wake[0]);
	DDP_SYS(close)(s->wake[1]);
	if (s->nrefused > STORE_LOG_REFUSALS)
		DDP_WARN("store: refused %lu connections in all", s->nrefused);
	store_core_free(s);
	free(s);
}
