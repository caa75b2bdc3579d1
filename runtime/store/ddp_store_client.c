/* SPDX-License-Identifier: MIT
 *
 * ddp_store_client.c - a rank's connection to ddprun's rendezvous store
 * (ddp_store.h): connect with retries, HELLO with the job secret, blocking
 * request/reply calls with deadlines, and a heartbeat thread.
 *
 * Every request is one message followed by exactly one reply.  Waiting
 * requests carry their timeout to the server, which answers TIMEOUT itself;
 * the client waits that long plus STORE_IO_GRACE_S and, should the server not
 * answer even then, marks the connection broken (the reply stream position is
 * lost) so later calls fail fast with DDP_ERR_REMOTE instead of reading a
 * stale reply.  EOF or a reset is DDP_ERR_REMOTE: the store went away.
 *
 * Contract: a struct ddp_store is used by one thread at a time (the caller
 * serialises); only the heartbeat thread touches hb_conn, and hb_lock guards
 * hb_stop.  Sockets are blocking but every wait goes through poll with a
 * deadline; sends use MSG_NOSIGNAL (no SIGPIPE in the user's program).  The
 * secret is kept only to open the heartbeat connection, zeroed on close,
 * and never logged.
 */
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

#define STORE_IO_TIMEOUT_S 30.0 /* a non-waiting request's reply            */
#define STORE_IO_GRACE_S 30.0   /* beyond a waiting request's own timeout   */

struct ddp_store {
	int fd;
	int broken; /* stream unusable: fail every call      */
	int quiet;  /* errors at DEBUG (the heartbeat's own) */
	char host[256];
	int port;
	int rank;
	char secret[DDP_STORE_MAX_KEY + 1];
	char err[320];   /* last error message                    */
	int last_status; /* status of the last reply; -1 none,
	                                 -2 a malformed one                   */
	uint64_t requests; /* requests sent (round trips), HELLO included */
	/* heartbeat */
	struct ddp_store *hb_conn; /* owned by the heartbeat thread         */
	const volatile uint64_t *hb_progress;
	double hb_interval;
	pthread_t hb_thread;
	int hb_started;
	pthread_mutex_t hb_lock;
	pthread_cond_t hb_cond; /* signalled to stop                     */
	int hb_stop;            /* guarded by hb_lock                    */
};

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Records (and, unless quiet, WARNs) the error of the current call. */
static ddp_result store_fail(struct ddp_store *s, ddp_result rc, int quiet, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static ddp_result store_fail(struct ddp_store *s, ddp_result rc, int quiet, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->err, sizeof s->err, fmt, ap);
	va_end(ap);
	if (quiet || s->quiet)
		DDP_DEBUG(RDZV, "store: %s", s->err);
	else
		DDP_WARN("store: %s", s->err);
	return rc;
}

/* Printable copy of a key for messages. */
static const char *key_str(const char *key, char *buf, size_t cap)
{
	size_t i = 0;
	for (; key[i] && i + 1 < cap && i < 80; i++)
		buf[i] = (key[i] >= 0x20 && key[i] < 0x7f) ? key[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* Milliseconds left until deadline (< 0: no deadline -> -1 for poll). */
static int ms_left(double deadline)
{
	if (deadline < 0)
		return -1;
	double ms = (deadline - mono_now()) * 1000.0;
	if (ms <= 0)
		return 0;
	return ms > 1e9 ? 1000000000 : (int)ms + 1;
}

/* Waits for events on fd until deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short events, double deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int ms = ms_left(deadline);
		int r = poll(&p, 1, ms);
		if (r > 0)
			return 1;
		if (r == 0) {
			if (ms == 0)
				return 0;
			continue; /* rounding: poll woke a hair early */
		}
		if (errno != EINTR)
			return -1;
	}
}

static ddp_result send_all(struct ddp_store *s, const void *data, size_t len, double deadline, const char *what)
{
	const uint8_t *p = data;
	while (len > 0) {
		int w = wait_fd(s->fd, POLLOUT, deadline);
		if (w == 0) {
			s->broken = 1;
			return store_fail(s, DDP_ERR_TIMEOUT, 0, "%s: the store at %s:%d accepts no data",
					  what, s->host, s->port);
		}
		ssize_t n = w < 0 ? -1 : send(s->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			s->broken = 1;
			return store_fail(s, DDP_ERR_REMOTE, 0, "%s: the store at %s:%d went away (%s)", what,
					  s->host, s->port, strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	return DDP_OK;
}

static ddp_result recv_all(struct ddp_store *s, void *data, size_t len, double deadline, const char *what)
{
	uint8_t *p = data;
	while (len > 0) {
		int w = wait_fd(s->fd, POLLIN, deadline);
		if (w == 0) {
			s->broken = 1;
			return store_fail(s, DDP_ERR_TIMEOUT, 0, "%s: no reply from the store at %s:%d in time",
					  what, s->host, s->port);
		}
		ssize_t n = w < 0 ? -1 : recv(s->fd, p, len, MSG_DONTWAIT);
		if (n == 0) {
			s->broken = 1;
			return store_fail(s, DDP_ERR_REMOTE, 0,
					  "%s: the store at %s:%d went away (connection closed); "
					  "did ddprun stop?",
					  what, s->host, s->port);
		}
		if (n < 0) {
			if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
				continue;
			s->broken = 1;
			return store_fail(s, DDP_ERR_REMOTE, 0, "%s: the store at %s:%d went away (%s)", what,
					  s->host, s->port, strerror(errno));
		}
		p += n;
		len -= (size_t)n;
	}
	return DDP_OK;
}

/* One request, one reply.  wait_s: the timeout sent to the server for waiting
 * ops (-1: forever; ignored by others).  On DDP_OK with status OK, *rval (may
 * be NULL to discard) receives the malloc'd reply value.  A non-OK status is
 * turned into a result and a message naming `what`. */
static ddp_result store_request(struct ddp_store *s, uint8_t op, const char *key, const void *val, size_t vlen,
				double wait_s, int quiet_timeout, const char *what, void **rval, size_t *rlen)
{
	uint8_t head[DDP_STORE_HDR_SIZE + DDP_STORE_MAX_KEY];
	size_t klen = key ? strlen(key) : 0;
	struct ddp_store_hdr h = { .op = op, .flags = 0, .key_len = (uint32_t)klen, .val_len = (uint32_t)vlen };
	const char *why = NULL;
	double deadline;
	uint8_t *body = NULL;

	s->last_status = -1;
	s->requests++;
	if (s->broken)
		return store_fail(s, DDP_ERR_REMOTE, 0,
				  "%s: the connection to the store at %s:%d failed earlier", what, s->host,
				  s->port);
	if (wait_s < 0)
		deadline = -1;
	else
		deadline = mono_now() + wait_s + STORE_IO_GRACE_S;
	if (op != DDP_STORE_GET && op != DDP_STORE_WAIT && op != DDP_STORE_BARRIER)
		deadline = mono_now() + STORE_IO_TIMEOUT_S;
	ddp_store_hdr_encode(head, &h);
	if (klen)
		memcpy(head + DDP_STORE_HDR_SIZE, key, klen);
	DDP_CHECK(send_all(s, head, DDP_STORE_HDR_SIZE + klen,
			   deadline < 0 ? mono_now() + STORE_IO_TIMEOUT_S : deadline, what));
	if (vlen)
		DDP_CHECK(send_all(s, val, vlen, deadline < 0 ? mono_now() + STORE_IO_TIMEOUT_S : deadline,
				   what));
	DDP_CHECK(recv_all(s, head, DDP_STORE_HDR_SIZE, deadline, what));
	if (ddp_store_hdr_decode(head, DDP_STORE_DIR_REPLY, &h, &why) != DDP_OK ||
	    h.op != (op | DDP_STORE_REPLY)) {
		s->broken = 1;
		s->last_status = -2; /* something answered, but not a store */
		return store_fail(s, DDP_ERR_REMOTE, 0, "%s: malformed reply from the store at %s:%d: %s",
				  what, s->host, s->port, why ? why : "reply to another request");
	}
	s->last_status = h.flags;
	body = malloc(h.val_len + 1);
	if (!body)
		return store_fail(s, DDP_ERR_NOMEM, 0, "%s: out of memory for a %u-byte value", what,
				  h.val_len);
	if (h.val_len) {
		ddp_result rc = recv_all(s, body, h.val_len, deadline, what);
		if (rc != DDP_OK) {
			free(body);
			return rc;
		}
	}
	body[h.val_len] = '\0';
	if (h.flags != DDP_STORE_ST_OK) {
		ddp_result rc = h.flags == DDP_STORE_ST_TIMEOUT   ? DDP_ERR_TIMEOUT
				: h.flags == DDP_STORE_ST_INVALID ? DDP_ERR_INVALID
								  : DDP_ERR_REMOTE;
		for (uint32_t i = 0; i < h.val_len; i++)
			if (body[i] < 0x20 || body[i] >= 0x7f)
				body[i] = '?';
		if (h.flags == DDP_STORE_ST_REFUSED || h.flags == DDP_STORE_ST_PROTO)
			s->broken = 1;
		store_fail(s, rc, rc == DDP_ERR_TIMEOUT && quiet_timeout, "%s: %s%s%s", what,
			   ddp_store_status_name(h.flags), h.val_len ? ": " : "", (char *)body);
		free(body);
		return rc;
	}
	if (rval) {
		*rval = body;
		*rlen = h.val_len;
	} else {
		free(body);
	}
	return DDP_OK;
}

static ddp_result check_key(struct ddp_store *s, const char *key, const char *opname)
{
	char k[96];
	if (!key || !*key)
		return store_fail(s, DDP_ERR_INVALID, 0, "%s: empty key", opname);
	if (strlen(key) > DDP_STORE_MAX_KEY)
		return store_fail(s, DDP_ERR_INVALID, 0, "%s: key '%s...' is longer than %d bytes", opname,
				  key_str(key, k, 40), DDP_STORE_MAX_KEY);
	return DDP_OK;
}

/* One TCP connection attempt to every address of host:port until deadline. */
static ddp_result store_dial(struct ddp_store *s, double deadline)
{
	char portstr[16];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC }, *ai, *a;
	int last_err = 0;
	double backoff = 0.01;

	snprintf(portstr, sizeof portstr, "%d", s->port);
	for (;;) {
		int gai = getaddrinfo(s->host, portstr, &hints, &ai);
		if (gai == 0) {
			for (a = ai; a; a = a->ai_next) {
				int fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
				if (fd < 0) {
					last_err = errno;
					continue;
				}
				int r = DDP_SYS(connect)(fd, a->ai_addr, a->ai_addrlen);
				if (r != 0 && errno == EINPROGRESS) {
					int w = wait_fd(fd, POLLOUT, deadline);
					socklen_t el = sizeof last_err;
					if (w == 1 &&
					    getsockopt(fd, SOL_SOCKET, SO_ERROR, &last_err, &el) == 0 &&
					    last_err == 0)
						r = 0;
					else if (w == 0)
						last_err = ETIMEDOUT;
				} else if (r != 0) {
					last_err = errno;
				}
				if (r == 0) {
					int one = 1, fl = DDP_SYS(fcntl)(fd, F_GETFL);
					(void)DDP_SYS(fcntl)(fd, F_SETFL, fl & ~O_NONBLOCK);
					(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
					s->fd = fd;
					freeaddrinfo(ai);
					return DDP_OK;
				}
				DDP_SYS(close)(fd);
			}
			freeaddrinfo(ai);
		} else if (gai != EAI_AGAIN) {
			return store_fail(s, DDP_ERR_INVALID, 0,
					  "cannot resolve the store address '%s': %s; check MASTER_ADDR",
					  s->host, gai_strerror(gai));
		}
		double left = deadline - mono_now();
		if (left <= 0)
			break;
		usleep((useconds_t)((backoff < left ? backoff : left) * 1e6));
		backoff = backoff * 2 > 0.5 ? 0.5 : backoff * 2;
	}
	return store_fail(s, DDP_ERR_TIMEOUT, 0,
			  "could not reach the store at %s:%d in time (%s); is ddprun running "
			  "and MASTER_ADDR/MASTER_PORT right?",
			  s->host, s->port, last_err ? strerror(last_err) : "name lookup failed");
}

ddp_result ddp_store_connect(const char *host, int port, const char *secret, int rank, double timeout_s,
			     struct ddp_store **out)
{
	ddp_result rc = DDP_OK;
	uint8_t rank_le[4];
	struct ddp_store *s;

	*out = NULL;
	if (!host || !*host || strlen(host) >= sizeof s->host || port <= 0 || port > 65535) {
		DDP_ERROR("store: bad store address %s:%d; check MASTER_ADDR and MASTER_PORT",
			  host ? host : "(none)", port);
		return DDP_ERR_INVALID;
	}
	if (!secret || !*secret || strlen(secret) > DDP_STORE_MAX_KEY) {
		DDP_ERROR("store: %s is %s; ranks must be started by ddprun (or given the "
			  "job's secret)",
			  DDP_STORE_SECRET_ENV, !secret || !*secret ? "not set" : "longer than 512 bytes");
		return DDP_ERR_INVALID;
	}
	if (rank < -1 || rank >= DDP_STORE_MAX_RANK) {
		DDP_ERROR("store: rank %d out of range", rank);
		return DDP_ERR_INVALID;
	}
	s = calloc(1, sizeof *s);
	if (!s)
		return DDP_ERR_NOMEM;
	s->fd = -1;
	snprintf(s->host, sizeof s->host, "%s", host);
	s->port = port;
	s->rank = rank;
	strcpy(s->secret, secret);
	pthread_mutex_init(&s->hb_lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->hb_cond, &ca);
	pthread_condattr_destroy(&ca);

	double deadline = timeout_s < 0 ? 1e300 : mono_now() + timeout_s, backoff = 0.01;
	ddp_store_put_u32(rank_le, (uint32_t)rank);
	for (;;) {
		DDP_CHECK_GOTO(store_dial(s, deadline), rc, out_free);
		/* quiet: a connection the server closed before answering (it
		 * makes room under a flood of connections) is tried again */
		s->quiet = 1;
		rc = store_request(s, DDP_STORE_HELLO, secret, rank_le, 4, 0, 0, "HELLO", NULL, NULL);
		s->quiet = 0;
		if (rc == DDP_OK)
			break;
		double left = deadline - mono_now();
		if (rc != DDP_ERR_REMOTE || s->last_status != -1 || left <= 0) {
			DDP_WARN("store: %s", s->err); /* the error store_fail kept quiet */
			goto out_free;
		}
		DDP_DEBUG(RDZV,
			  "store: the store at %s:%d closed the connection before HELLO was "
			  "answered; trying again",
			  host, port);
		DDP_SYS(close)(s->fd);
		s->fd = -1;
		s->broken = 0;
		usleep((useconds_t)((backoff < left ? backoff : left) * 1e6));
		backoff = backoff * 2 > 0.5 ? 0.5 : backoff * 2;
	}
	DDP_DEBUG(RDZV, "store: connected to %s:%d as rank %d", host, port, rank);
	*out = s;
	return DDP_OK;

out_free:
	ddp_store_close(s);
	return rc;
}

ddp_result ddp_store_set(struct ddp_store *s, const char *key, const void *val, size_t len)
{
	char what[128], k[96];
	DDP_CHECK(check_key(s, key, "SET"));
	snprintf(what, sizeof what, "SET '%s'", key_str(key, k, sizeof k));
	if (len > DDP_STORE_MAX_VAL)
		return store_fail(s, DDP_ERR_INVALID, 0, "%s: a %zu-byte value exceeds the 16 MiB limit",
				  what, len);
	return store_request(s, DDP_STORE_SET, key, val, len, 0, 0, what, NULL, NULL);
}

ddp_result ddp_store_get(struct ddp_store *s, const char *key, void **val, size_t *len, double timeout_s)
{
	char what[128], k[96];
	uint8_t t[4];
	*val = NULL;
	*len = 0;
	DDP_CHECK(check_key(s, key, "GET"));
	snprintf(what, sizeof what, "GET '%s'", key_str(key, k, sizeof k));
	ddp_store_put_u32(t, ddp_store_timeout_ms(timeout_s));
	return store_request(s, DDP_STORE_GET, key, t, 4, timeout_s, timeout_s == 0, what, val, len);
}

ddp_result ddp_store_add(struct ddp_store *s, const char *key, int64_t delta, int64_t *result)
{
	char what[128], k[96];
	uint8_t d[8];
	void *r = NULL;
	size_t rl = 0;
	DDP_CHECK(check_key(s, key, "ADD"));
	snprintf(what, sizeof what, "ADD '%s'", key_str(key, k, sizeof k));
	ddp_store_put_u64(d, (uint64_t)delta);
	DDP_CHECK(store_request(s, DDP_STORE_ADD, key, d, 8, 0, 0, what, &r, &rl));
	if (result)
		*result = (int64_t)ddp_store_get_u64(r);
	free(r);
	return DDP_OK;
}

ddp_result ddp_store_wait(struct ddp_store *s, const char *const *keys, size_t n, double timeout_s)
{
	double deadline = mono_now() + timeout_s;
	for (size_t i = 0; i < n; i++) {
		char what[128], k[96];
		uint8_t t[4];
		double left = timeout_s < 0 ? -1 : deadline - mono_now();
		if (timeout_s >= 0 && left < 0)
			left = 0;
		DDP_CHECK(check_key(s, keys[i], "WAIT"));
		snprintf(what, sizeof what, "WAIT '%s'", key_str(keys[i], k, sizeof k));
		ddp_store_put_u32(t, ddp_store_timeout_ms(left));
		DDP_CHECK(store_request(s, DDP_STORE_WAIT, keys[i], t, 4, left, timeout_s == 0, what, NULL,
					NULL));
	}
	return DDP_OK;
}

ddp_result ddp_store_delete(struct ddp_store *s, const char *key)
{
	char what[128], k[96];
	DDP_CHECK(check_key(s, key, "DEL"));
	snprintf(what, sizeof what, "DEL '%s'", key_str(key, k, sizeof k));
	return store_request(s, DDP_STORE_DEL, key, NULL, 0, 0, 0, what, NULL, NULL);
}

ddp_result ddp_store_barrier(struct ddp_store *s, const char *name, int world_size, double timeout_s)
{
	char what[128], k[96];
	uint8_t v[8];
	DDP_CHECK(check_key(s, name, "BARRIER"));
	snprintf(what, sizeof what, "BARRIER '%s'", key_str(name, k, sizeof k));
	if (world_size < 1 || world_size > DDP_STORE_MAX_RANK)
		return store_fail(s, DDP_ERR_INVALID, 0, "%s: world size %d out of range", what, world_size);
	ddp_store_put_u32(v, (uint32_t)world_size);
	ddp_store_put_u32(v + 4, ddp_store_timeout_ms(timeout_s));
	return store_request(s, DDP_STORE_BARRIER, name, v, 8, timeout_s, 0, what, NULL, NULL);
}

/* ---- heartbeat --------------------------------------------------------------- */

static int hb_stopping(struct ddp_store *s)
{
	pthread_mutex_lock(&s->hb_lock);
	int stop = s->hb_stop;
	pthread_mutex_unlock(&s->hb_lock);
	return stop;
}

static void *hb_main(void *arg)
{
	struct ddp_store *s = arg;
	struct ddp_store *c = s->hb_conn;

	for (;;) {
		uint8_t v[8];
		ddp_store_put_u64(v, __atomic_load_n(s->hb_progress, __ATOMIC_RELAXED));
		if (store_request(c, DDP_STORE_HEARTBEAT, NULL, v, 8, 0, 0, "HEARTBEAT", NULL, NULL) != DDP_OK) {
			if (!hb_stopping(s))
				DDP_WARN("store: heartbeats stopped: %s", c->err);
			return NULL;
		}
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		double t = (double)ts.tv_nsec * 1e-9 + s->hb_interval;
		ts.tv_sec += (time_t)t;
		ts.tv_nsec = (long)((t - (double)(time_t)t) * 1e9);
		pthread_mutex_lock(&s->hb_lock);
		while (!s->hb_stop) {
			if (pthread_cond_timedwait(&s->hb_cond, &s->hb_lock, &ts) != 0)
				break; /* ETIMEDOUT: post again */
		}
		int stop = s->hb_stop;
		pthread_mutex_unlock(&s->hb_lock);
		if (stop)
			return NULL;
	}
}

ddp_result ddp_store_heartbeat_start(struct ddp_store *s, const volatile uint64_t *progress, double interval_s)
{
	ddp_result rc = DDP_OK;
	if (s->hb_started || !progress || !(interval_s > 0))
		return store_fail(s, DDP_ERR_INVALID, 0, "heartbeat: %s",
				  s->hb_started ? "already started" : "needs a counter and an interval > 0");
	if (s->rank < 0)
		return store_fail(s, DDP_ERR_INVALID, 0, "heartbeat: this connection has no rank");
	DDP_CHECK(ddp_store_connect(s->host, s->port, s->secret, s->rank, STORE_IO_TIMEOUT_S, &s->hb_conn));
	s->hb_conn->quiet = 1; /* hb_main reports a failure once, unless stopping */
	s->hb_progress = progress;
	s->hb_interval = interval_s;
	int err = pthread_create(&s->hb_thread, NULL, hb_main, s);
	if (err) {
		rc = store_fail(s, DDP_ERR_SYS, 0, "heartbeat: cannot start its thread: %s", strerror(err));
		ddp_store_close(s->hb_conn);
		s->hb_conn = NULL;
		return rc;
	}
	s->hb_started = 1;
	return DDP_OK;
}

uint64_t ddp_store_requests(const struct ddp_store *s)
{
	return s ? s->requests : 0;
}

const char *ddp_store_last_error(const struct ddp_store *s)
{
	return s ? s->err : "";
}

void ddp_store_close(struct ddp_store *s)
{
	if (!s)
		return;
	if (s->hb_started) {
		pthread_mutex_lock(&s->hb_lock);
		s->hb_stop = 1;
		pthread_cond_signal(&s->hb_cond);
		pthread_mutex_unlock(&s->hb_lock);
		shutdown(s->hb_conn->fd, SHUT_RDWR); /* wakes a thread waiting for a reply */
		pthread_join(s->hb_thread, NULL);
	}
	ddp_store_close(s->hb_conn);
	if (s->fd >= 0)
		DDP_SYS(close)(s->fd);
	pthread_cond_destroy(&s->hb_cond);
	pthread_mutex_destroy(&s->hb_lock);
	memset(s->secret, 0, sizeof s->secret);
	free(s);
}
