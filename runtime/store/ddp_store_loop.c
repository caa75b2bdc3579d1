/* SPDX-License-Identifier: MIT
 *
 * ddp_store_loop.c - the rendezvous store's socket loop, thread and public
 * API (ddp_store_server.h).
 *
 * One thread runs a poll loop over: a wake pipe (stop), the listening socket
 * and every client connection (non-blocking).  Bytes read are handed to the
 * protocol core (store_conn_feed, ddp_store_core.c), whose replies this file
 * writes; a CLOSING connection is flushed, its write side shut down, its
 * input drained until EOF or its deadline, then it is closed.  At most
 * STORE_MAX_PENDING connections may be unauthenticated (HELLO or CLOSING
 * after a refusal) at once: accepting one more closes the oldest of them,
 * and so does running out of file descriptors, so a flood of idle or slow
 * connections costs bounded memory and descriptors and cannot lock the
 * ranks out.  Each connection reads at most STORE_READ_BUDGET bytes per
 * wakeup, so one fast sender cannot starve the others.
 *
 * Contract: ddp_store_server_start / ddp_store_server_stop are called by one
 * thread (ddprun's main thread, or libddp's rank 0); everything else here
 * except ddp_store_server_port/clients/progress runs on the server thread,
 * which never calls CUDA and only touches sockets, the wake pipe and the
 * store (ddp_store_server_int.h).  Sockets and the pipe are close-on-exec;
 * closing goes through the port (DDP_SYS(close)).  progress_lock guards the
 * progress array (ddp_store_server_progress, any thread); nready is atomic.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_port.h"
#include "ddp_store_server_int.h"

#define STORE_READ_CHUNK 65536
#define STORE_READ_BUDGET (1u << 20) /* bytes per connection per wakeup  */
#define STORE_MAX_PENDING 256        /* connections not (or no longer) past HELLO */

static double mono_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- connections ------------------------------------------------------------ */

void store_conn_flush(struct ddp_store_server *s, struct conn *c)
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
	if (c->out_cap > STORE_OUT_KEEP) {
		/* a large reply went out: give its memory back */
		s->buffered -= c->out_cap;
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
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
		store_conn_feed(s, c, buf, (size_t)r, now);
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
		store_log_refusal(s, victim->peer,
				  "no HELLO yet while too many connections wait for one; "
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
		if (!store_conn_new(s, fd, peer, now)) {
			DDP_WARN("store: out of memory accepting %s", peer);
			DDP_SYS(close)(fd);
			return;
		}
		if (++pending > STORE_MAX_PENDING && store_evict_pending(s))
			pending--;
	}
}

void store_sweep(struct ddp_store_server *s)
{
	for (size_t i = 0; i < s->nconns;) {
		struct conn *c = s->conns[i];
		if (c->dead) {
			store_conn_free(s, i);
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
				store_conn_flush(s, s->conns[i]);
		store_sweep(s);
	}
	free(pfd);
	return NULL;
}

/* ---- lifetime and API ---------------------------------------------------------- */

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
			  "host (e.g. 127.0.0.1 or 0.0.0.0)",
			  bind_addr, gai_strerror(err));
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
	if (DDP_SYS(bind)(s->listen_fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(s->listen_fd, SOMAXCONN) != 0) {
		DDP_ERROR("store: cannot listen on %s:%d: %s; pick another --master-port "
			  "(0 chooses a free one)",
			  bind_addr, port, strerror(errno));
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
	double changed;
	*counter = 0;
	*age_seconds = -1;
	if (store_progress_read(s, rank, counter, &changed))
		*age_seconds = mono_now() - changed;
	return DDP_OK;
}

void ddp_store_server_stop(struct ddp_store_server *s)
{
	if (!s)
		return;
	__atomic_store_n(&s->stopping, 1, __ATOMIC_RELEASE);
	if (s->thread_started) {
		(void)DDP_EINTR_RETRY(write(s->wake[1], "x", 1));
		pthread_join(s->thread, NULL);
	}
	DDP_SYS(close)(s->listen_fd);
	DDP_SYS(close)(s->wake[0]);
	DDP_SYS(close)(s->wake[1]);
	if (s->nrefused > STORE_LOG_REFUSALS)
		DDP_WARN("store: refused %lu connections in all", s->nrefused);
	if (s->nfull > STORE_LOG_REFUSALS)
		DDP_WARN("store: refused %lu SET/ADD requests in all (store full)", s->nfull);
	if (s->nbusy > STORE_LOG_REFUSALS)
		DDP_WARN("store: closed %lu connections in all for holding too much memory", s->nbusy);
	store_core_free(s);
	free(s);
}
