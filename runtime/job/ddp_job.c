/* SPDX-License-Identifier: MIT
 *
 * ddp_job.c - the job state of a synchronising rank (see ddp_job.h).
 *
 * At init: rank info (ddp_rank.c: ddprun, torchrun, Slurm, MPI), the store
 * connection (60 s to come up) and the heartbeat thread, which posts
 * ddp_job_progress_ every second (or a quarter of DDP_TIMEOUT when that is
 * shorter).  The communicator is made at the first collective with the
 * real driver's entry points (copies for the host backend's staging go
 * straight to the driver, never through the hooks).
 *
 * Whose store.  ddprun (rank source "ddprun": RANK/WORLD_SIZE without
 * TORCHELASTIC_RUN_ID) hosts the store at DDP_STORE_ADDR:DDP_STORE_PORT
 * (by hand without those: MASTER_ADDR:MASTER_PORT; ddp_rank.c).  Any
 * other launcher (torchrun, srun, mpirun, PMI) hosts none we can use, so
 * rank 0 starts the store server (runtime/store/) in this process ("self-hosted"):
 *   secret   DDP_STORE_SECRET, exported by the user, the same on every rank
 *            (16..512 characters); missing: every rank stops at once.
 *   address  one node (local world == world): 127.0.0.1, bound to loopback;
 *            several nodes: MASTER_ADDR (required), bound to all interfaces.
 *   port     DDP_STORE_PORT; else torchrun: MASTER_PORT + 1 (MASTER_PORT is
 *            torchrun's own TCPStore); Slurm: MASTER_PORT, else
 *            20000 + (SLURM_JOB_ID * 16 + SLURM_STEP_ID) % 12000;
 *            Open MPI / PMI: MASTER_PORT, else an error naming DDP_STORE_PORT.
 * Every rank (rank 0 too, over loopback) then connects as under ddprun and
 * adds 1 to the counter "ddp/joined".  At exit rank 0 keeps the store until
 * the counter reaches the world size and every connection has closed (a
 * rank that died closed its sockets too), at most DDP_COLL_TIMEOUT seconds.
 *
 * The server thread only polls sockets and logs: it never calls the driver,
 * its sockets and pipe are close-on-exec (ddp_store_loop.c), and it runs with
 * every signal blocked.
 *
 * Contract: init once from ddp_init (inside-ddp flag set); the rest from the
 * synchronising thread under ddp_sync's lock; fini from the exit handler,
 * only in the process that ran init (a forked child's exit must not close
 * the parent's connections or stop its server).
 */
#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "ddp_coll.h"
#include "ddp_job.h"
#include "ddp_log.h"
#include "ddp_params.h"
#include "ddp_port.h"
#include "ddp_rank.h"
#include "ddp_store.h"
#include "ddp_store_server.h"

#define JOB_CONNECT_TIMEOUT_S 60.0 /* for the store to come up            */
#define JOB_SECRET_MIN 16          /* characters of a self-hosted secret  */
#define JOB_JOINED_KEY "ddp/joined"

volatile uint64_t ddp_job_progress_;

static struct ddp_job_info info;
/* The store's secret, for the watchdog's own connection (job_coll_silent). */
static char job_secret[DDP_STORE_MAX_KEY + 1];
static struct ddp_store *store;
static struct ddp_comm *comm;
static ddp_result comm_rc = DDP_OK;

const struct ddp_job_info *ddp_job_info(void)
{
	return &info;
}

struct ddp_store *ddp_job_store(void)
{
	return store;
}

/* The launcher's name as users type it, for messages. */
static const char *launcher_cmd(const char *source)
{
	if (strcmp(source, "torchrun") == 0)
		return "torchrun";
	if (strcmp(source, "slurm") == 0)
		return "srun";
	if (strcmp(source, "ompi") == 0)
		return "mpirun";
	if (strcmp(source, "pmi") == 0)
		return "mpiexec";
	if (strcmp(source, "horovod") == 0)
		return "horovodrun";
	return "your launcher";
}

int ddp_job_launched(void)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	if (strcmp(ri->source, "ddprun") == 0)
		return ri->master_addr && ri->master_port > 0;
	return strcmp(ri->source, "none") != 0;
}

/* The job under ddprun: its store, address and secret from the environment. */
static ddp_result job_ddprun_place(const struct ddp_rank_info *ri)
{
	info.master_addr = ri->master_addr;
	info.master_port = ri->master_port;
	if (!info.master_addr || info.master_port <= 0) {
		DDP_ERROR("libddp: rank %d of %d has no MASTER_ADDR/MASTER_PORT, so it cannot reach the other "
			  "ranks; run it under ddprun",
			  info.rank, info.world);
		return DDP_ERR_INVALID;
	}
	return DDP_OK;
}

/* Self-hosted: DDP_STORE_SECRET, which the user exports for every rank. */
static ddp_result job_own_secret(const char *launcher, const char **out /* OUT */)
{
	const char *secret = getenv(DDP_STORE_SECRET_ENV);
	size_t len = secret ? strlen(secret) : 0;

	if (len >= JOB_SECRET_MIN && len <= DDP_STORE_MAX_KEY) {
		*out = secret;
		return DDP_OK;
	}
	DDP_ERROR("libddp: rank %d: %s is %s; without ddprun, rank 0 hosts the store and every rank must "
		  "prove the same secret of %d..%d characters: export %s=$(head -c 16 /dev/urandom | od -An -tx1 "
		  "| tr -d ' \\n') before %s",
		  info.rank, DDP_STORE_SECRET_ENV,
		  len == 0               ? "not set"
		  : len < JOB_SECRET_MIN ? "too short"
					 : "too long",
		  JOB_SECRET_MIN, DDP_STORE_MAX_KEY, DDP_STORE_SECRET_ENV, launcher);
	return DDP_ERR_INVALID;
}

/* Reads an unsigned decimal variable; 0 with *found = 0 when unset. */
static ddp_result job_env_u64(const char *var, unsigned long long *out, int *found)
{
	const char *v = getenv(var);
	char *end;

	*out = 0;
	*found = 0;
	if (!v || !*v)
		return DDP_OK;
	errno = 0;
	*out = strtoull(v, &end, 10);
	if (errno || end == v || *end || *v == '-') {
		DDP_ERROR("libddp: %s='%s' is not a number; set DDP_STORE_PORT to choose the store's port",
			  var, v);
		return DDP_ERR_INVALID;
	}
	*found = 1;
	return DDP_OK;
}

/* Self-hosted: the store's port, and where it came from (for messages). */
static ddp_result job_own_port(const struct ddp_rank_info *ri, const char *launcher, int *port /* OUT */,
			       char *from, size_t cap)
{
	long p = ddp_param_store_port();
	unsigned long long job, step;
	int found;

	if (p > 0) {
		*port = (int)p;
		snprintf(from, cap, "DDP_STORE_PORT");
		return DDP_OK;
	}
	if (strcmp(ri->source, "torchrun") == 0) {
		if (ri->master_port > 0 && ri->master_port < 65535) {
			*port = ri->master_port + 1;
			snprintf(from, cap, "MASTER_PORT+1; MASTER_PORT is torchrun's own store");
			return DDP_OK;
		}
		DDP_ERROR("libddp: rank %d: torchrun gave MASTER_PORT=%d, so MASTER_PORT+1 cannot hold the "
			  "store; export DDP_STORE_PORT=<a free port> for every rank",
			  info.rank, ri->master_port);
		return DDP_ERR_INVALID;
	}
	if (ri->master_port > 0) {
		*port = ri->master_port;
		snprintf(from, cap, "MASTER_PORT");
		return DDP_OK;
	}
	if (strcmp(ri->source, "slurm") == 0) {
		DDP_CHECK(job_env_u64("SLURM_JOB_ID", &job, &found));
		if (found) {
			DDP_CHECK(job_env_u64("SLURM_STEP_ID", &step, &found));
			if (!found)
				DDP_CHECK(job_env_u64("SLURM_STEPID", &step, &found));
			*port = 20000 + (int)((job * 16 + step) % 12000);
			snprintf(from, cap, "20000 + (SLURM_JOB_ID*16 + SLURM_STEP_ID) %% 12000");
			return DDP_OK;
		}
	}
	DDP_ERROR("libddp: rank %d: %s names no port for the store that rank 0 hosts; export "
		  "DDP_STORE_PORT=<a free port> (or MASTER_PORT) with the same value for every rank",
		  info.rank, launcher);
	return DDP_ERR_INVALID;
}

/* Rank 0: can bind_addr:port be bound?  One line naming DDP_STORE_PORT if
 * not (the server's own message would name ddprun's --master-port). */
static ddp_result job_probe_port(const char *bind_addr, int port, const char *from)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE | AI_NUMERICHOST | AI_NUMERICSERV },
			*ai = NULL;
	char portstr[16];
	int fd, one = 1, err = 0;

	snprintf(portstr, sizeof portstr, "%d", port);
	if (getaddrinfo(bind_addr, portstr, &hints, &ai) != 0)
		return DDP_OK; /* ddp_store_server_start reports a bad address */
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (DDP_SYS(bind)(fd, ai->ai_addr, ai->ai_addrlen) != 0)
			err = errno;
		DDP_SYS(close)(fd);
	}
	freeaddrinfo(ai);
	if (!err)
		return DDP_OK;
	DDP_ERROR("libddp: rank 0 cannot host the store on %s:%d (port from %s): %s; export "
		  "DDP_STORE_PORT=<a free port> with the same value for every rank",
		  bind_addr, port, from, strerror(err));
	return DDP_ERR_SYS;
}

static struct ddp_store_server *server; /* rank 0, self-hosted: the store it runs */
static pid_t init_pid;                  /* the process that ran ddp_job_init     */
static char store_host[256];

/* No ddprun: rank 0 hosts the store; sets info.master_addr/port to it. */
static ddp_result job_self_host(const struct ddp_rank_info *ri, const char **secret /* OUT */)
{
	const char *launcher = launcher_cmd(ri->source), *bind_addr;
	char from[96];
	int port;

	DDP_CHECK(job_own_secret(launcher, secret));
	if (info.local_world >= info.world) { /* one node */
		snprintf(store_host, sizeof store_host, "127.0.0.1");
		bind_addr = "127.0.0.1";
	} else if (ri->master_addr) {
		snprintf(store_host, sizeof store_host, "%s", ri->master_addr);
		bind_addr = strchr(ri->master_addr, ':') ? "::" : "0.0.0.0";
	} else {
		DDP_ERROR("libddp: rank %d: the %d ranks span several nodes (%d on this one) and MASTER_ADDR is "
			  "not set; export MASTER_ADDR=<rank 0's host> for every rank%s",
			  info.rank, info.world, info.local_world,
			  strcmp(ri->source, "slurm") == 0
				  ? " (e.g. MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1))"
				  : "");
		return DDP_ERR_INVALID;
	}
	DDP_CHECK(job_own_port(ri, launcher, &port, from, sizeof from));
	info.master_addr = store_host;
	info.master_port = port;
	if (info.rank != 0)
		return DDP_OK;
	DDP_CHECK(job_probe_port(bind_addr, port, from));
	/* the server thread inherits a mask with every signal blocked, so the
	 * program's signals keep reaching the program's own threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	ddp_result rc = ddp_store_server_start(bind_addr, port, *secret, &server);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != DDP_OK) {
		DDP_ERROR("libddp: rank 0 cannot host the store on %s:%d (port from %s); export "
			  "DDP_STORE_PORT=<a free port> with the same value for every rank",
			  bind_addr, port, from);
		server = NULL;
		return DDP_ERR_SYS;
	}
	/* rank 0 reaches its own store over loopback, whatever it is bound to */
	snprintf(store_host, sizeof store_host, "%s", strcmp(bind_addr, "::") == 0 ? "::1" : "127.0.0.1");
	DDP_INFO(RDZV, "job: not started by ddprun (%s): rank 0 hosts the store on %s:%d (port from %s)",
		 ri->source, bind_addr, port, from);
	return DDP_OK;
}

ddp_result ddp_job_init(void)
{
	const struct ddp_rank_info *ri = ddp_rank_get();
	const char *secret = getenv(DDP_STORE_SECRET_ENV);
	int self_hosted = strcmp(ri->source, "ddprun") != 0;
	ddp_result rc;

	init_pid = getpid();
	info.rank = ri->rank;
	info.world = ri->world_size;
	info.local_rank = ri->local_rank;
	info.local_world = ri->local_world_size > 0 ? ri->local_world_size : ri->world_size;
	ddp_status_attach(info.local_rank); /* ddprun's status board, if any */
	if (self_hosted)
		rc = job_self_host(ri, &secret);
	else
		rc = job_ddprun_place(ri);
	if (rc != DDP_OK)
		return rc;
	snprintf(job_secret, sizeof job_secret, "%s", secret ? secret : "");
	rc = ddp_store_connect(info.master_addr, info.master_port, secret ? secret : "", info.rank,
			       JOB_CONNECT_TIMEOUT_S, &store);
	if (rc != DDP_OK) {
		if (self_hosted)
			DDP_ERROR("libddp: rank %d cannot connect to the store that rank 0 hosts at %s:%d (%s); "
				  "every rank needs the same %s, and rank 0 must be running",
				  info.rank, info.master_addr, info.master_port, ddp_strerror(rc),
				  DDP_STORE_SECRET_ENV);
		else
			DDP_ERROR("libddp: cannot connect to the store at %s:%d (%s); is ddprun running and "
				  "DDP_STORE_SECRET set?",
				  info.master_addr, info.master_port, ddp_strerror(rc));
		store = NULL;
		goto out_stop_server;
	}
	if (self_hosted && (rc = ddp_store_add(store, JOB_JOINED_KEY, 1, NULL)) != DDP_OK) {
		DDP_ERROR("libddp: rank %d cannot register with the store at %s:%d (%s)", info.rank,
			  info.master_addr, info.master_port, ddp_strerror(rc));
		goto out_close_store;
	}
	double interval = 1.0;
	long to = ddp_param_timeout();
	if (to > 0 && to / 4.0 < interval)
		interval = to / 4.0 < 0.05 ? 0.05 : to / 4.0;
	rc = ddp_store_heartbeat_start(store, &ddp_job_progress_, interval);
	if (rc != DDP_OK)
		DDP_WARN("heartbeat not started (%s): ddprun --timeout cannot watch this rank",
			 ddp_strerror(rc));
	DDP_INFO(RDZV, "job: rank %d of %d (local %d of %d), store %s:%d%s", info.rank, info.world,
		 info.local_rank, info.local_world, info.master_addr, info.master_port,
		 server        ? " (hosted here)"
		 : self_hosted ? " (hosted by rank 0)"
			       : "");
	return DDP_OK;

out_close_store:
	ddp_store_close(store);
	store = NULL;
out_stop_server:
	ddp_store_server_stop(server);
	server = NULL;
	return rc;
}

static char join_msg[512];

/* Which ranks never reached their first collective (probes, no waiting). */
static void missing_ranks(void)
{
	size_t o = 0;
	int n = 0;
	for (int r = 0; r < info.world && o < sizeof join_msg - 32; r++) {
		char key[64];
		void *v = NULL;
		size_t len = 0;
		snprintf(key, sizeof key, "ddp/join/%d", r);
		if (ddp_store_get(store, key, &v, &len, 0) == DDP_OK) {
			free(v);
			continue;
		}
		o += (size_t)snprintf(join_msg + o, sizeof join_msg - o, "%s%d", n++ ? ", " : "rank ", r);
	}
	if (n)
		snprintf(join_msg + o, sizeof join_msg - o,
			 " never reached the first collective (a different "
			 "program, or its update was not found: docs/gradient-sync.md, \"How ddprun stops\")");
}

const char *ddp_job_comm_error(void)
{
	return join_msg;
}

/* The board's number of each asynchronous op, taken when it is enqueued
 * (program order, the same on every rank, in one sequence with the
 * synchronous collectives), by its ticket; more than the ops that can be
 * in flight at once. */
#define JOB_BOARD_RING 256
static uint64_t job_board_seq[JOB_BOARD_RING];

static double job_now(void);

/* After asynchronous op `ticket` timed out here: post that this rank
 * answers, and wait up to 2 s for the others' posts (each rank whose own
 * watch gives up on the op posts too); the ranks that did not post are
 * listed.  On the comm's watchdog thread, which must not share the job's
 * store connection with the calling thread: a connection of its own. */
static void job_coll_silent(uint64_t ticket, char *list, size_t len)
{
	struct ddp_store *s = NULL;
	char key[96];
	int64_t v = 0;
	size_t n = 0;

	list[0] = '\0';
	if (info.world > 4096 ||
	    ddp_store_connect(info.master_addr, info.master_port, job_secret, info.rank, 2.0, &s) != DDP_OK)
		return;
	/* counters, read with ADD 0: an absent one reads 0 without an error */
	snprintf(key, sizeof key, "ddp/async-answer/%" PRIu64 "/%d", ticket, info.rank);
	if (ddp_store_add(s, key, 1, NULL) != DDP_OK)
		goto out;
	unsigned char answered[4096] = { 0 };
	int missing = info.world - 1;
	for (double deadline = job_now() + 2.0; missing > 0 && job_now() < deadline;) {
		for (int q = 0; q < info.world; q++) {
			if (q == info.rank || answered[q])
				continue;
			snprintf(key, sizeof key, "ddp/async-answer/%" PRIu64 "/%d", ticket, q);
			if (ddp_store_add(s, key, 0, &v) != DDP_OK)
				goto out;
			if (v > 0) {
				answered[q] = 1;
				missing--;
			}
		}
		if (missing > 0)
			usleep(50000);
	}
	for (int q = 0; q < info.world; q++)
		if (q != info.rank && !answered[q] && n + 16 < len)
			n += (size_t)snprintf(list + n, len - n, "%s%d", n ? "," : "", q);
out:
	ddp_store_close(s);
}

static void job_coll_enqueued(uint64_t ticket)
{
	__atomic_store_n(&job_board_seq[ticket % JOB_BOARD_RING], ddp_status_coll_next(), __ATOMIC_RELEASE);
}

/* The communicator's asynchronous collectives waiting for the other ranks
 * (a progress or watchdog thread): ddprun's status board shows it. */
static void job_coll_busy(int entering, uint64_t ticket)
{
	if (entering > 0)
		ddp_status_coll_enter(__atomic_load_n(&job_board_seq[ticket % JOB_BOARD_RING], __ATOMIC_ACQUIRE),
				      "allreduce");
	else if (entering < 0)
		ddp_status_coll_failed();
	else
		ddp_status_coll_leave();
}

struct ddp_comm *ddp_job_comm_existing(void)
{
	return comm;
}

ddp_result ddp_job_comm(struct ddp_comm **out)
{
	struct ddp_coll_config cfg;

	if (comm) {
		*out = comm;
		return DDP_OK;
	}
	if (comm_rc != DDP_OK)
		return comm_rc;
	if (!store)
		return comm_rc = DDP_ERR_INVALID;
	ddp_coll_config_default(&cfg);
	cfg.driver = &ddp_driver_;
	cfg.busy = job_coll_busy;
	cfg.enqueued = job_coll_enqueued;
	cfg.silent = job_coll_silent;
	/* the CPU device (cpudev) is not a real GPU: NCCL cannot use it */
	cfg.real_gpu = !ddp_driver_.cpu_device;
	/* asked on the CPU device too: its NCCL stand-in, like NCCL, works in the
	 * primary context, so --backend nccl is refused the same way */
	cfg.own_context = ddp_port_own_context();
	/* a marker per rank, so that a failed creation can name who never came */
	char key[64];
	snprintf(key, sizeof key, "ddp/join/%d", info.rank);
	if (ddp_store_set(store, key, "1", 1) != DDP_OK)
		return comm_rc = DDP_ERR_REMOTE;
	comm_rc = ddp_comm_init(store, info.rank, info.world, info.local_rank, info.local_world, &cfg, &comm);
	if (comm_rc != DDP_OK) {
		comm = NULL;
		missing_ranks();
		return comm_rc;
	}
	DDP_INFO(COLL, "communicator ready: %d ranks, %s backend", info.world, ddp_comm_backend_name(comm));
	*out = comm;
	return DDP_OK;
}

static double job_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Rank 0, self-hosted, at exit: keeps the store until every rank has joined
 * and closed its connections, or until DDP_COLL_TIMEOUT.  Closes the own
 * connection on the way (so that the count of open connections can reach 0). */
static void job_host_linger(void)
{
	double start = job_now(), deadline = start + (double)ddp_param_coll_timeout();
	const struct timespec nap = { 0, 10 * 1000 * 1000 };
	int64_t joined = 0;

	DDP_INFO(RDZV,
		 "job: rank 0 keeps the store until the other ranks have left (at most %ld s, "
		 "DDP_COLL_TIMEOUT)",
		 ddp_param_coll_timeout());
	while (store && job_now() < deadline) {
		if (ddp_store_add(store, JOB_JOINED_KEY, 0, &joined) != DDP_OK || joined >= info.world)
			break;
		nanosleep(&nap, NULL);
	}
	ddp_store_close(store);
	store = NULL;
	while (ddp_store_server_clients(server) > 0 && job_now() < deadline)
		nanosleep(&nap, NULL);
	int open = ddp_store_server_clients(server);
	if (joined < info.world || open > 0)
		DDP_WARN("libddp: rank 0 stops hosting the store after waiting %.0f s (DDP_COLL_TIMEOUT): "
			 "%lld of %d ranks joined, %d connections still open; those ranks lose the store",
			 job_now() - start, (long long)joined, info.world, open);
	else
		DDP_INFO(RDZV, "job: every rank has left the store (%.2f s after rank 0's exit)",
			 job_now() - start);
}

void ddp_job_fini(void)
{
	if (getpid() != init_pid)
		return; /* a forked child's exit: the connections are the parent's */
	/* the communicator's staging is left to process exit: the program may
	 * already have destroyed its context */
	if (server)
		job_host_linger();
	if (store) {
		ddp_store_close(store);
		store = NULL;
	}
	ddp_store_server_stop(server);
	server = NULL;
}
