/* SPDX-License-Identifier: MIT
 *
 * ddp_store_server.h - the rendezvous store that ddprun hosts for its ranks.
 *
 * ddp_store_server_start binds a TCP socket and serves the protocol of
 * runtime/store/ddp_store.h from one thread (poll over all connections; waiting
 * requests are parked, never block the thread).  Every connection must open
 * with HELLO carrying the per-job secret; a wrong secret or any other first
 * message is answered with an error and the connection closed, and logged as
 *     store: refused a connection from 127.0.0.1:5555: bad secret
 * without the secret.  Malformed messages close only the offending
 * connection.  docs/store.md has the protocol, the keys and the limits.
 *
 * Binding: the caller chooses bind_addr; single-node jobs pass "127.0.0.1"
 * (loopback only), multi-node jobs pass "0.0.0.0" (or "::") on node 0.
 * bind_addr is a numeric IPv4/IPv6 address (no name lookup); NULL and
 * "localhost" mean "127.0.0.1": the server never binds all interfaces by
 * default.
 *
 * Contract: ddp_store_server_start / ddp_store_server_stop are called by one thread
 * (ddprun's main thread); ddp_store_server_port and ddp_store_server_progress may be
 * called from any thread while the store runs (progress reads take a mutex).
 */
#ifndef DDP_STORE_SERVER_H
#define DDP_STORE_SERVER_H

#include <stdint.h>
#include "ddp_err.h"

struct ddp_store_server;

/* Binds bind_addr:port (port 0: any free port; see ddp_store_server_port), and
 * starts the server thread.  secret: 1..512 bytes, copied.  DDP_ERR_SYS
 * (WARNed, naming the address) when the address cannot be bound,
 * DDP_ERR_INVALID for a bad secret or address. */
ddp_result ddp_store_server_start(const char *bind_addr, int port, const char *secret,
				  struct ddp_store_server **out /* OUT */);

/* The port the store listens on. */
int ddp_store_server_port(const struct ddp_store_server *s);

/* The last progress counter rank posted (HEARTBEAT) and the seconds since that
 * counter last changed.  A rank that never reported: *counter = 0,
 * *age_seconds < 0 (and DDP_OK).  DDP_ERR_INVALID for a negative rank. */
ddp_result ddp_store_server_progress(struct ddp_store_server *s, int rank, uint64_t *counter /* OUT */,
				     double *age_seconds /* OUT */);

/* Number of connections that passed HELLO and are still open (for tests and
 * status lines). */
int ddp_store_server_clients(struct ddp_store_server *s);

/* Stops the thread, closes every connection (clients see the store go away:
 * DDP_ERR_REMOTE), frees everything.  NULL is a no-op. */
void ddp_store_server_stop(struct ddp_store_server *s);

#endif /* DDP_STORE_SERVER_H */
