/* SPDX-License-Identifier: MIT
 *
 * ddp_store_server_int.h - the store server's insides, shared by its three
 * files (and by tests/fuzz/store, which drives the core without sockets).
 *
 * The server (ddp_store_server.h) is three concerns:
 *   ddp_store_table.c  the data: keys (chained hash table), barriers (a list,
 *                      each name alive only while incomplete), progress
 *                      counters (an array indexed by rank);
 *   ddp_store_core.c   the protocol core: connection records, the HELLO /
 *                      READY / CLOSING state machine fed with bytes
 *                      (store_conn_feed), replies, parked requests, barrier
 *                      arrivals, timeouts (store_expire).  No socket I/O: a
 *                      connection with fd = -1 works;
 *   ddp_store_loop.c   the socket loop: accept, read, flush, eviction, sweep,
 *                      the server thread, start/stop and the public API.
 * Nothing here is exported from libddp.so (hidden visibility).
 *
 * Contract: only the server thread (or the fuzz target, single-threaded)
 * touches connections, keys and barriers.  progress_lock guards the progress
 * array (read by ddp_store_server_progress from ddprun's monitor); nready is
 * atomic (read by ddp_store_server_clients from any thread).  The secret is
 * never logged.
 */
#ifndef DDP_STORE_SERVER_INT_H
#define DDP_STORE_SERVER_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"
#include "ddp_store.h"
#include "ddp_store_server.h"

#define STORE_HELLO_TIMEOUT_S 10.0 /* an unauthenticated connection's life  */
#define STORE_CLOSE_LINGER_S 1.0   /* draining a connection being closed    */
#define STORE_LOG_REFUSALS 16      /* refusals logged one by one, then counted  */

/* Memory bounds (docs/store.md, Limits).  A client holding the secret can
 * still not make the server hold more than:
 *   - per connection: one message being read (its header names at most
 *     DDP_STORE_MAX_KEY + DDP_STORE_MAX_VAL bytes) and one reply not yet
 *     written; a request that arrives while more than max_conn_out
 *     (STORE_MAX_CONN_OUT) bytes of replies are unwritten (a client that sends without reading)
 *     closes that connection with a protocol error;
 *   - in total: max_data bytes of keys and values in the table (a SET or ADD
 *     past it is refused with status invalid, "store full", the connection
 *     stays), and max_buffered bytes of messages being read plus replies
 *     being written over all connections (past it, the connection that
 *     needs more is closed, "store busy").
 * The defaults are below; tests and the fuzz target lower them. */
#define STORE_MAX_CONN_OUT (DDP_STORE_HDR_SIZE + DDP_STORE_MAX_KEY + (size_t)DDP_STORE_MAX_VAL)
#define STORE_MAX_DATA ((size_t)256 << 20)
#define STORE_MAX_BUFFERED ((size_t)512 << 20)
#define STORE_OUT_KEEP ((size_t)64 << 10) /* a flushed reply buffer above this is freed */

enum conn_state {
	CONN_HELLO,
	CONN_READY,
	CONN_CLOSING
};

struct kv {
	struct kv *next; /* bucket chain                                  */
	uint64_t hash;
	char *key;    /* NUL-terminated (keys hold no NUL)             */
	uint8_t *val; /* malloc'd, NULL when val_len == 0              */
	size_t val_len;
};

struct barrier {
	struct barrier *next;
	char *name;
	uint32_t world;   /* world size every arrival must name            */
	uint32_t arrived; /* connections parked in it (plus the completer) */
};

struct progress {
	uint64_t counter; /* last posted value                             */
	double changed;   /* monotonic time the value last changed         */
	int seen;         /* the rank posted at least once                 */
};

struct conn {
	struct ddp_store_server *srv; /* the server it belongs to             */
	int fd;                       /* -1: no socket (fuzzing)               */
	enum conn_state state;
	int rank;             /* from HELLO; -1 before or for tools    */
	int dead;             /* to be closed by the sweep             */
	int counted;          /* counted in nready (passed HELLO)      */
	int shut;             /* CLOSING: write side shut down         */
	char peer[64];        /* "ip:port" for logs                    */
	double deadline_conn; /* HELLO or CLOSING deadline             */
	uint64_t seq;         /* accept order (eviction: oldest first) */
	/* input: a header, then its body */
	uint8_t hdr_buf[DDP_STORE_HDR_SIZE];
	size_t hdr_got;
	int have_hdr;
	struct ddp_store_hdr hdr;
	uint8_t *body; /* key + value, body_len bytes           */
	size_t body_len, body_got;
	/* a parked request (parked_op 0: none) */
	uint8_t parked_op;
	char *pkey;       /* key or barrier name, owned            */
	double pdeadline; /* monotonic; < 0: forever               */
	/* output not yet written */
	uint8_t *out;
	size_t out_len, out_off, out_cap;
	size_t body_cap; /* bytes allocated for body (accounted)  */
};

struct ddp_store_server {
	int listen_fd;
	int port;
	int wake[2]; /* pipe: a byte wakes the thread to stop */
	pthread_t thread;
	int thread_started;
	int stopping; /* atomic                                */
	uint8_t secret[DDP_STORE_MAX_KEY];
	size_t secret_len;
	struct conn **conns;
	size_t nconns, conns_cap;
	struct kv **buckets;
	size_t nbuckets, nkeys;
	struct barrier *barriers;
	double accept_pause_until; /* after EMFILE: stop accepting a moment */
	int nready;                /* atomic: connections past HELLO        */
	unsigned long nrefused;    /* refusals and evictions, for the log   */
	uint64_t conn_seq;         /* connections accepted so far           */
	pthread_mutex_t progress_lock;
	struct progress *progress; /* [nprogress], guarded by progress_lock */
	size_t nprogress;
	/* memory bounds (server thread) */
	size_t data_bytes;          /* keys + values held in the table       */
	size_t max_data;            /* STORE_MAX_DATA unless lowered         */
	size_t buffered;            /* bodies + reply buffers of all conns   */
	size_t max_buffered;        /* STORE_MAX_BUFFERED unless lowered     */
	size_t max_conn_out;        /* STORE_MAX_CONN_OUT unless lowered     */
	unsigned long nfull, nbusy; /* refusals for the limits, for the log  */
};

/* ---- ddp_store_table.c: the data (server thread, except progress) -------- */

/* Allocates the key table's first buckets and initialises progress_lock.
 * DDP_ERR_NOMEM leaves nothing to free (and progress_lock uninitialised). */
ddp_result store_table_init(struct ddp_store_server *s);

/* Frees every key, barrier and progress counter; destroys progress_lock.
 * Connections must be gone already (none may be parked in a barrier). */
void store_table_free(struct ddp_store_server *s);

/* The entry of key (NUL-terminated), or NULL. */
struct kv *store_kv_find(struct ddp_store_server *s, const char *key);

/* Stores a copy of val under key; returns DDP_ERR_NOMEM when memory runs
 * out and DDP_ERR_INVALID when the table would hold more than s->max_data
 * bytes of keys and values (the table is then unchanged). */
ddp_result store_kv_set(struct ddp_store_server *s, const char *key, const void *val, size_t len);

/* Removes key; a missing key is a no-op. */
void store_kv_del(struct ddp_store_server *s, const char *key);

/* The incomplete barrier called name, or NULL. */
struct barrier *store_barrier_find(struct ddp_store_server *s, const char *name);

/* A new barrier called name (copied) for world ranks, with no arrival yet;
 * NULL when memory runs out.  The name must not exist yet. */
struct barrier *store_barrier_new(struct ddp_store_server *s, const char *name, uint32_t world);

/* Unlinks and frees b, which must be in s->barriers. */
void store_barrier_free(struct ddp_store_server *s, struct barrier *b);

/* Records rank's progress counter at monotonic time now (the time moves only
 * when the counter changed).  Takes progress_lock.  DDP_ERR_NOMEM when the
 * array cannot grow to hold rank (>= 0); nothing changes then. */
ddp_result store_progress_post(struct ddp_store_server *s, int rank, uint64_t counter, double now);

/* Whether rank (>= 0) ever posted; if so *counter and *changed (monotonic
 * time of the last change) are set.  Takes progress_lock; any thread. */
int store_progress_read(struct ddp_store_server *s, int rank, uint64_t *counter /* OUT */,
			double *changed /* OUT */);

/* ---- ddp_store_core.c: the protocol core (server thread, no socket I/O) -- */

/* Everything of a store except sockets and the thread (also used by the fuzz
 * target): copies the secret (1..DDP_STORE_MAX_KEY bytes, else
 * DDP_ERR_INVALID, logged), sets listen_fd and wake[] to -1, initialises the
 * table.  On error nothing is left to free but s itself. */
ddp_result store_core_init(struct ddp_store_server *s, const char *secret);

/* Frees every connection (closing its socket), the table, and wipes the
 * secret.  s itself stays the caller's. */
void store_core_free(struct ddp_store_server *s);

/* A new connection record for fd (-1: none) from peer ("ip:port", copied),
 * in state HELLO with its HELLO deadline counted from now, appended to
 * s->conns.  NULL when memory runs out (fd is then still the caller's). */
struct conn *store_conn_new(struct ddp_store_server *s, int fd, const char *peer, double now);

/* Frees s->conns[i] (closing its socket if it has one, withdrawing a parked
 * barrier arrival); the last connection takes slot i. */
void store_conn_free(struct ddp_store_server *s, size_t i);

/* Feeds n bytes that arrived on c; serves every complete message, appending
 * replies to c->out.  Stops at the first error (the connection is then
 * CLOSING or dead).  c must be neither. */
void store_conn_feed(struct ddp_store_server *s, struct conn *c, const uint8_t *data, size_t n, double now);

/* Times out parked requests and stale connections at monotonic time now;
 * returns the next deadline (< 0: none). */
double store_expire(struct ddp_store_server *s, double now);

/* Logs a refused or evicted connection from peer: the first
 * STORE_LOG_REFUSALS one by one, then only counted in s->nrefused. */
void store_log_refusal(struct ddp_store_server *s, const char *peer, const char *why);

/* ---- ddp_store_loop.c: the socket loop (server thread) -------------------- */

/* Writes c's pending output (non-blocking; what does not fit stays); a
 * CLOSING connection's write side is shut down once all is out; a buffer
 * larger than STORE_OUT_KEEP is freed once empty.  With no socket (fd = -1,
 * fuzzing) the output is discarded. */
void store_conn_flush(struct ddp_store_server *s, struct conn *c);

/* Closes and frees every connection marked dead. */
void store_sweep(struct ddp_store_server *s);

#endif /* DDP_STORE_SERVER_INT_H */
