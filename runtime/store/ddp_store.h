/* SPDX-License-Identifier: MIT
 *
 * ddp_store.h - the rendezvous store: wire protocol and the rank-side client.
 *
 * ddprun hosts a small key-value store (runtime/store/ddp_store_server.h); every rank
 * connects to it (MASTER_ADDR:MASTER_PORT) to exchange the NCCL unique id,
 * collective signatures, consistency hashes, and to post heartbeats (its
 * progress counter).  docs/store.md describes the protocol and security model.
 *
 * Wire format (all integers little-endian), request and reply alike:
 *     u32 magic "DDPS"  u8 version  u8 op  u16 flags  u32 key_len  u32 val_len
 *     key bytes (key_len)  value bytes (val_len)
 * A reply carries op = DDP_STORE_REPLY | request op, flags = status, no key,
 * and the value (GET: the value, ADD: the new total, errors: a message).
 * Hard limits: key <= DDP_STORE_MAX_KEY bytes, value <= DDP_STORE_MAX_VAL.
 * The first request on a connection must be HELLO (key = the job's secret,
 * value = i32 rank); anything else closes the connection.
 *
 * Contract (client): one struct ddp_store is one TCP connection and is used by
 * one thread at a time (callers serialise); the heartbeat thread started by
 * ddp_store_heartbeat_start owns its own second connection.  Every call that
 * waits has a deadline; a server that went away gives DDP_ERR_REMOTE, never
 * a hang.  Errors are WARNed once where they happen (one line naming the key)
 * and kept for ddp_store_last_error.  The secret is never logged.
 *
 * Contract (protocol helpers): pure functions, no allocation, no state, safe
 * from any thread; they are shared by the server and the client.
 */
#ifndef DDP_STORE_H
#define DDP_STORE_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"

/* ---- protocol ---------------------------------------------------------- */

#define DDP_STORE_MAGIC 0x53504444u /* "DDPS" as little-endian bytes     */
#define DDP_STORE_VERSION 1
#define DDP_STORE_HDR_SIZE 16
#define DDP_STORE_MAX_KEY 512                 /* bytes, also the secret's max */
#define DDP_STORE_MAX_VAL (16u * 1024 * 1024) /* bytes                     */
#define DDP_STORE_MAX_RANK (1 << 20)          /* ranks and world sizes      */
#define DDP_STORE_MAX_ERRMSG 256              /* error-reply text, bytes    */
#define DDP_STORE_FOREVER 0xffffffffu         /* timeout_ms: wait forever   */

/* The environment variable through which ddprun hands ranks the secret. */
#define DDP_STORE_SECRET_ENV "DDP_STORE_SECRET"

enum ddp_store_op {
	DDP_STORE_HELLO = 1,     /* key secret, val i32 rank (-1: not a rank)  */
	DDP_STORE_SET = 2,       /* key, val: the value (0..MAX_VAL bytes)      */
	DDP_STORE_GET = 3,       /* key, val u32 timeout_ms; reply val = value  */
	DDP_STORE_ADD = 4,       /* key, val i64 delta; reply val = i64 total   */
	DDP_STORE_WAIT = 5,      /* key, val u32 timeout_ms; reply empty        */
	DDP_STORE_BARRIER = 6,   /* key name, val u32 world_size, u32 timeout_ms */
	DDP_STORE_HEARTBEAT = 7, /* no key, val u64 progress counter            */
	DDP_STORE_DEL = 8,       /* key, no val; reply empty (absent key: OK)   */
	DDP_STORE_OP_MAX = 8,
	DDP_STORE_REPLY = 0x80, /* or-ed into the op of a reply             */
};

enum ddp_store_status { /* the flags field of a reply                  */
	DDP_STORE_ST_OK = 0,
	DDP_STORE_ST_TIMEOUT = 1, /* the waited-for key/barrier did not come   */
	DDP_STORE_ST_INVALID = 2, /* request refused (e.g. not a counter)      */
	DDP_STORE_ST_REFUSED = 3, /* bad secret / no HELLO: connection closes  */
	DDP_STORE_ST_PROTO = 4,   /* malformed message: connection closes      */
	DDP_STORE_ST_MAX = 4,
};

/* Which side sent the bytes being parsed. */
enum ddp_store_dir {
	DDP_STORE_DIR_REQUEST = 0,
	DDP_STORE_DIR_REPLY = 1
};

struct ddp_store_hdr {
	uint8_t op;       /* enum ddp_store_op (| DDP_STORE_REPLY in replies) */
	uint16_t flags;   /* requests: 0; replies: enum ddp_store_status      */
	uint32_t key_len; /* bytes of key following the header                */
	uint32_t val_len; /* bytes of value following the key                 */
};

struct ddp_store_msg {
	struct ddp_store_hdr hdr;
	const uint8_t *key; /* points into the parsed buffer (not terminated)   */
	const uint8_t *val; /* points into the parsed buffer                    */
};

/* Little-endian field helpers (unaligned-safe). */
uint32_t ddp_store_get_u32(const uint8_t *p);
uint64_t ddp_store_get_u64(const uint8_t *p);
void ddp_store_put_u32(uint8_t *p, uint32_t v);
void ddp_store_put_u64(uint8_t *p, uint64_t v);

/* Writes the 16-byte header for h into buf. */
void ddp_store_hdr_encode(uint8_t buf[DDP_STORE_HDR_SIZE], const struct ddp_store_hdr *h);

/* Decodes and validates a header: magic, version, op known for dir, flags
 * (0 in requests, a known status in replies), lengths within the limits and
 * exactly those the op requires.  DDP_ERR_INVALID with *why (a static string,
 * never NULL on error) when anything is off.  Nothing is logged. */
ddp_result ddp_store_hdr_decode(const uint8_t buf[DDP_STORE_HDR_SIZE], enum ddp_store_dir dir,
				struct ddp_store_hdr *out /* OUT */, const char **why /* OUT */);

/* Validates the body of a message whose header passed ddp_store_hdr_decode:
 * keys hold no NUL byte; HELLO's rank is -1..MAX_RANK-1, BARRIER's world size
 * 1..MAX_RANK.  DDP_ERR_INVALID with *why otherwise. */
ddp_result ddp_store_body_check(const struct ddp_store_msg *m, enum ddp_store_dir dir,
				const char **why /* OUT */);

/* Parses one whole message from buf[0..len).  Returns DDP_OK with
 * *consumed = its size (>0) and *out pointing into buf; DDP_OK with
 * *consumed = 0 when buf holds only a prefix of a valid message (read more);
 * DDP_ERR_INVALID with *why for bytes that can never become a valid message.
 * Never reads past buf+len, never allocates. */
ddp_result ddp_store_msg_parse(const uint8_t *buf, size_t len, enum ddp_store_dir dir,
			       struct ddp_store_msg *out /* OUT */, size_t *consumed /* OUT */,
			       const char **why /* OUT */);

/* Name of an op ("GET", ...) or status ("timeout", ...) for logs. */
const char *ddp_store_op_name(unsigned op);
const char *ddp_store_status_name(unsigned status);

/* Constant-time comparison of two byte strings (time depends only on alen).
 * Returns 1 when equal. */
int ddp_store_secret_equal(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen);

/* Converts a timeout in seconds (<0: forever) to the wire's milliseconds. */
uint32_t ddp_store_timeout_ms(double timeout_s);

/* ---- client ------------------------------------------------------------ */

struct ddp_store; /* one connection to the store */

/* Connects to host:port (name or numeric address), retrying until the server
 * accepts or timeout_s passes (DDP_ERR_TIMEOUT), then proves the secret with
 * HELLO as `rank` (-1: not a rank, e.g. a tool).  A refused secret gives
 * DDP_ERR_REMOTE.  secret: 1..DDP_STORE_MAX_KEY bytes, usually
 * getenv(DDP_STORE_SECRET_ENV).  *out is owned by the caller (ddp_store_close). */
ddp_result ddp_store_connect(const char *host, int port, const char *secret, int rank, double timeout_s,
			     struct ddp_store **out /* OUT */);

/* Stores val[0..len) under key (replacing any value); wakes waiters. */
ddp_result ddp_store_set(struct ddp_store *s, const char *key, const void *val, size_t len);

/* Waits up to timeout_s (<0: forever) for key to exist and returns a malloc'd
 * copy of its value (*val, *len; free() it; *val is non-NULL even for an
 * empty value).  DDP_ERR_TIMEOUT when the key did not appear in time. */
ddp_result ddp_store_get(struct ddp_store *s, const char *key, void **val /* OUT */, size_t *len /* OUT */,
			 double timeout_s);

/* Adds delta to the counter at key (absent: 0) and returns the new total.
 * Counters are stored as 8-byte little-endian int64 values (GET shows them
 * so); ADD on a key holding something else is DDP_ERR_INVALID. */
ddp_result ddp_store_add(struct ddp_store *s, const char *key, int64_t delta,
			 int64_t *result /* OUT, may be NULL */);

/* Waits until every key in keys[0..n) exists, all within timeout_s total. */
ddp_result ddp_store_wait(struct ddp_store *s, const char *const *keys, size_t n, double timeout_s);

/* Deletes key (no error when absent). */
ddp_result ddp_store_delete(struct ddp_store *s, const char *key);

/* Blocks until world_size connections have entered the barrier `name` (each
 * with the same world_size).  The name may be reused once a barrier completes.
 * DDP_ERR_TIMEOUT when it does not complete in time (this arrival is then
 * withdrawn), DDP_ERR_INVALID on a world-size mismatch. */
ddp_result ddp_store_barrier(struct ddp_store *s, const char *name, int world_size, double timeout_s);

/* Starts a thread that opens a second connection (same host, port, secret and
 * rank) and posts *progress every interval_s seconds (and once at once), so
 * ddprun can tell a hung rank from a slow one.  Once per store; stopped by
 * ddp_store_close.  When the server goes away the thread WARNs once and ends.
 * The counter is read with a relaxed atomic load; the owner should update it
 * with __atomic_store_n / __atomic_add_fetch (any 64-bit aligned store works
 * in practice). */
ddp_result ddp_store_heartbeat_start(struct ddp_store *s, const volatile uint64_t *progress, double interval_s);

/* Requests s has sent (each one round trip; the heartbeat's own
 * connection not counted): how the tests measure what a check costs. */
uint64_t ddp_store_requests(const struct ddp_store *s);

/* The message of the last failed call on s ("" when none). */
const char *ddp_store_last_error(const struct ddp_store *s);

/* Stops the heartbeat thread (if any), closes the connections, frees s.
 * NULL is a no-op. */
void ddp_store_close(struct ddp_store *s);

#endif /* DDP_STORE_H */
