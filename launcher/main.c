/* SPDX-License-Identifier: MIT
 *
 * main.c - ddprun: subcommand dispatch and the steps of a launch.
 *
 *   ddprun [options] [--] PROGRAM [ARGS...]   run a job (options.def)
 *   ddprun report DIR                          launcher/report.c
 *   ddprun inspect ...                         launcher/inspect.c
 *
 * A launch: options -> checks (everything that can be checked is checked
 * before any rank starts) -> devices -> secret -> signals blocked and routed
 * to a signalfd, subreaper on -> store (node 0) -> environments -> ranks ->
 * supervise.c until no process of the job is left -> exit code.
 *
 * Standard input, output and error closed at start get /dev/null before
 * anything else is opened (reserve_std_fds).
 *
 * Contract: main thread; the store server runs its own thread, started after
 * the signals are blocked so that it never receives one.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ddp_log.h"
#include "ddp_params.h"
#include "launch.h"
#include "ddp_status.h"
#include "ddp_store.h"

static char *self_dir(void)
{
	char buf[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
	if (n <= 0)
		return strdup(".");
	buf[n] = '\0';
	return strdup(dirname(buf));
}

/* mkdir -p */
static ddp_result make_dir(const char *opt, const char *path)
{
	char buf[PATH_MAX];
	if (strlen(path) >= sizeof buf) {
		launch_msg("%s '%s' is too long", opt, path);
		return DDP_ERR_INVALID;
	}
	strcpy(buf, path);
	for (char *p = buf + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;
			*p = '\0';
			if (mkdir(buf, 0755) != 0 && errno != EEXIST) {
				launch_msg("%s '%s': cannot create %s: %s", opt, path, buf, strerror(errno));
				return DDP_ERR_INVALID;
			}
			*p = c;
			if (!c)
				break;
		}
	}
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) {
		launch_msg("%s '%s' is not a directory", opt, path);
		return DDP_ERR_INVALID;
	}
	return DDP_OK;
}

static ddp_result random_secret(char out[65])
{
	unsigned char b[32];
	size_t got = 0;
	while (got < sizeof b) {
		ssize_t n = getrandom(b + got, sizeof b - got, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			launch_msg("cannot make the job secret: getrandom: %s", strerror(errno));
			return DDP_ERR_SYS;
		}
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof b; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
	return DDP_OK;
}

/* Multi-node: every node needs the same secret, from DDPRUN_SECRET or
 * --secret-file (mode 0600). */
static ddp_result shared_secret(const struct launch_opts *o, char out[65])
{
	char buf[128] = "";
	const char *src;

	if (o->secret_file) {
		struct stat st;
		src = o->secret_file;
		int fd = open(o->secret_file, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) != 0) {
			launch_msg("--secret-file '%s': %s", o->secret_file, strerror(errno));
			if (fd >= 0)
				close(fd);
			return DDP_ERR_INVALID;
		}
		if (st.st_mode & 077) {
			launch_msg("--secret-file '%s' is readable by others (mode %04o); "
				   "chmod 600 it",
				   o->secret_file, (unsigned)(st.st_mode & 07777));
			close(fd);
			return DDP_ERR_INVALID;
		}
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\r\n")] = '\0';
	} else {
		src = "DDPRUN_SECRET";
		const char *v = getenv("DDPRUN_SECRET");
		if (!v || !*v) {
			launch_msg("--nnodes %ld needs the job secret shared by every node: set "
				   "DDPRUN_SECRET (e.g. to the output of `openssl rand -hex 32`) or "
				   "use --secret-file PATH",
				   o->nnodes);
			return DDP_ERR_INVALID;
		}
		if (strlen(v) >= sizeof buf) {
			launch_msg("DDPRUN_SECRET is too long (at most 64 characters)");
			return DDP_ERR_INVALID;
		}
		strcpy(buf, v);
	}
	if (strlen(buf) < 16 || strlen(buf) > 64) {
		launch_msg("the secret from %s must be 16 to 64 characters long", src);
		return DDP_ERR_INVALID;
	}
	strcpy(out, buf);
	return DDP_OK;
}

/* A port nobody listens on now (for the program's MASTER_PORT), not avoid. */
static int free_port(int avoid)
{
	for (int tries = 0; tries < 8; tries++) {
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t len = sizeof a;
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
		if (fd < 0)
			return -1;
		if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
		    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
			port = ntohs(a.sin_port);
		close(fd);
		if (port > 0 && port != avoid)
			return port;
	}
	return -1;
}

/* --log-dir DIR: this run's folder DIR/<id>-<date>-<time>-<pid> (id:
 * --rdzv-id, else "run"), and the link DIR/latest to it, so that no run
 * overwrites another's logs and side files. */
static ddp_result run_dir(const struct launch_opts *o, const char *dir, int attempt, int create, char **out)
{
	char stamp[32], *path = NULL, *tmp = NULL, *link = NULL;
	time_t t = time(NULL);
	struct tm tm;
	const char *id = o->rdzv_id ? o->rdzv_id : "run";

	if (strchr(id, '/') || strcmp(id, ".") == 0 || strcmp(id, "..") == 0 || strcmp(id, "latest") == 0) {
		launch_msg("--rdzv-id '%s' cannot name a folder; use letters, digits, - and _", id);
		return DDP_ERR_INVALID;
	}
	localtime_r(&t, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
	char *base = NULL;
	/* a restart (--max-restarts) gets a folder of its own: -attempt<N> */
	char suffix[32] = "";
	if (attempt)
		snprintf(suffix, sizeof suffix, "-attempt%d", attempt);
	if (asprintf(&base, "%s-%s-%d%s", id, stamp, (int)getpid(), suffix) < 0)
		return DDP_ERR_NOMEM;
	if (asprintf(&path, "%s/%s", dir, base) < 0 || asprintf(&tmp, "%s/.latest.%d", dir, (int)getpid()) < 0 ||
	    asprintf(&link, "%s/latest", dir) < 0)
		goto nomem;
	if (!create) { /* --dry-run: the name the run would use */
		free(base);
		free(tmp);
		free(link);
		*out = path;
		return DDP_OK;
	}
	if (mkdir(path, 0755) != 0) {
		launch_msg("--log-dir: cannot create %s: %s", path, strerror(errno));
		goto fail;
	}
	unlink(tmp);
	if (symlink(base, tmp) != 0 || rename(tmp, link) != 0) {
		launch_msg("warning: --log-dir: cannot point %s to this run's folder (%s)", link,
			   strerror(errno));
		unlink(tmp);
	}
	free(base);
	free(tmp);
	free(link);
	*out = path;
	return DDP_OK;
nomem:
	launch_msg("out of memory");
fail:
	free(base);
	free(path);
	free(tmp);
	free(link);
	return DDP_ERR_INVALID;
}

/* -n auto|gpu|cpu (torchrun's words): GPUs if any, else CPUs; GPUs; CPUs. */
static ddp_result count_ranks(struct launch_opts *o)
{
	long n = o->nproc_per_node;
	if (n > 0)
		return DDP_OK;
	int gpus = (n == LAUNCH_NPROC_CPU || o->device == LAUNCH_DEVICE_CPU) ? 0 : launch_devices_detect();
	if (n == LAUNCH_NPROC_GPU && gpus <= 0) {
		launch_msg("--nproc-per-node gpu: no GPU was found; give a number, or auto/cpu");
		return DDP_ERR_INVALID;
	}
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	n = gpus > 0 && n != LAUNCH_NPROC_CPU ? gpus : (cpus > 0 ? cpus : 1);
	o->nproc_per_node = n > 1024 ? 1024 : n;
	return DDP_OK;
}

/* The file starts with "#!" (a script exec can run by itself). */
static int has_shebang(const char *path)
{
	char c[2] = { 0, 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, c, 2);
	close(fd);
	return n == 2 && c[0] == '#' && c[1] == '!';
}

/* An executable named `name` in a folder of PATH. */
static int in_path(const char *name)
{
	const char *path = getenv("PATH");
	char buf[PATH_MAX];
	if (!path)
		return 0;
	for (const char *p = path;; p += strcspn(p, ":") + 1) {
		int len = (int)strcspn(p, ":");
		snprintf(buf, sizeof buf, "%.*s/%s", len ? len : 1, len ? p : ".", name);
		if (access(buf, X_OK) == 0)
			return 1;
		if (!p[len])
			return 0;
	}
}

/* torchrun runs `python3 -m MOD` for --module, and `python3 SCRIPT` for a
 * SCRIPT.py (any name with --run-path) unless --no-python.  ddprun does the
 * same, but runs an executable .py whose first line is #! directly (its
 * interpreter); one without #! runs under python3 (exec would hand it to
 * /bin/sh).  --no-python NAME: a bare name that is not in PATH but is an
 * executable of the current folder runs as ./NAME. */
static ddp_result python_argv(struct launch_opts *o, char ***out)
{
	char **a = o->prog_argv;
	size_t n = 0, extra;
	const char *prog = a[0];
	size_t len = strlen(prog);
	int py = len > 3 && strcmp(prog + len - 3, ".py") == 0;
	int local = o->no_python && !strchr(prog, '/') && !in_path(prog) && access(prog, X_OK) == 0;

	*out = NULL;
	if (o->module)
		extra = 2;
	else if (!o->no_python && (py || o->run_path) && (access(prog, X_OK) != 0 || !has_shebang(prog)))
		extra = 1;
	else if (!local)
		return DDP_OK;
	else
		extra = 0;
	while (a[n])
		n++;
	char **v = calloc(n + extra + 2, sizeof *v);
	if (!v)
		return DDP_ERR_NOMEM;
	memcpy(v + extra, a, n * sizeof *v);
	if (local) {
		static char dot[PATH_MAX + 2];
		snprintf(dot, sizeof dot, "./%s", prog);
		v[0] = dot;
	} else {
		v[0] = "python3";
		if (o->module)
			v[1] = "-m";
	}
	o->prog_argv = *out = v;
	return DDP_OK;
}

/* A number of seconds from the environment variable var, its default from
 * the settings table (runtime/base/params.def). */
static ddp_result read_seconds(const char *var, double max, double *out)
{
	const char *v = getenv(var);
	char *end;
	*out = strtod(ddp_param_default(var), NULL);
	if (!v || !*v)
		return DDP_OK;
	double g = strtod(v, &end);
	if (*end || end == v || !(g >= 0 && g <= max)) {
		launch_msg("%s='%s' is not a number of seconds (0..%.0f)", var, v, max);
		return DDP_ERR_INVALID;
	}
	*out = g;
	return DDP_OK;
}

/* The folders of this attempt (job->restart_count): with --log-dir a run
 * folder of its own under base (o->log_dir becomes it; *run_path owns it),
 * DDP_WRITE_DIR there; else DDP_WRITE_DIR is cwd/.ddprun.  --dry-run shows
 * the folder a run would use (created at start). */
static ddp_result attempt_dirs(struct launch_job *job, const char *base, const char *cwd, char **run_path)
{
	struct launch_opts *o = job->o;
	free(job->write_dir);
	job->write_dir = NULL;
	if (!base)
		return asprintf(&job->write_dir, "%s/.ddprun", cwd) < 0 ? DDP_ERR_NOMEM : DDP_OK;
	free(*run_path);
	*run_path = NULL;
	/* each run its own subfolder, DIR/latest names the newest */
	DDP_CHECK(run_dir(o, base, job->restart_count, !o->dry_run, run_path));
	o->log_dir = *run_path;
	char *abs = realpath(o->log_dir, NULL);
	int n = asprintf(&job->write_dir, "%s%s%s", abs || o->log_dir[0] == '/' ? "" : cwd,
			 abs || o->log_dir[0] == '/' ? "" : "/", abs ? abs : o->log_dir);
	free(abs);
	return n < 0 ? DDP_ERR_NOMEM : DDP_OK;
}

/* Multi-node: --master-addr must name a host now, before any rank starts. */
static ddp_result resolve_master(const struct launch_opts *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *res = NULL;
	if (o->nnodes < 2)
		return DDP_OK;
	int e = getaddrinfo(o->master_addr, NULL, &hints, &res);
	if (e != 0) {
		launch_msg("--master-addr '%s' does not resolve (%s); give node 0's host name or address",
			   o->master_addr, gai_strerror(e));
		return DDP_ERR_INVALID;
	}
	freeaddrinfo(res);
	return DDP_OK;
}

/* A stopping signal (SIGTERM, SIGINT, SIGHUP) waiting on sigfd, else 0;
 * others (SIGUSR1: no rank to pass it to yet) are dropped. */
static int stop_signal(int sigfd)
{
	struct signalfd_siginfo si;
	while (read(sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT || si.ssi_signo == SIGHUP)
			return (int)si.ssi_signo;
	return 0;
}

/* meet_nodes' steps: connect (DDP_ERR_SYS when node 0's store never
 * answered, DDP_ERR_REMOTE when it refused the secret), count this node in
 * and wait for --nnodes (*met: the nodes counted); tries of at most 1 s, so
 * that a stopping signal ends the wait (*sig, DDP_ERR_INVALID). */
static ddp_result meet_at_store(const struct launch_job *job, int sigfd, const char *host, double limit,
				int64_t *met, int *sig)
{
	struct ddp_store *s = NULL;
	double t0 = launch_now(), left;
	ddp_result rc;
	while ((rc = ddp_store_connect(host, job->port, job->secret, -1,
				       (left = limit - (launch_now() - t0)) < 1 ? (left > 0.05 ? left : 0.05) : 1,
				       &s)) != DDP_OK) {
		if (rc == DDP_ERR_REMOTE)
			return rc;
		if ((*sig = stop_signal(sigfd)))
			return DDP_ERR_INVALID;
		if (launch_now() - t0 >= limit)
			return DDP_ERR_SYS;
	}
	/* a counter read every 50 ms, not a barrier: nothing to time out and
	 * be logged inside the store */
	rc = ddp_store_add(s, "ddprun/nodes-met", 1, met);
	while (rc == DDP_OK && *met < job->o->nnodes && launch_now() - t0 < limit && !(*sig = stop_signal(sigfd))) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		rc = ddp_store_add(s, "ddprun/nodes-met", 0, met);
	}
	ddp_store_close(s);
	if (*sig)
		return DDP_ERR_INVALID;
	return rc == DDP_OK && *met >= job->o->nnodes ? DDP_OK : DDP_ERR_TIMEOUT;
}

/* Multi-node, like torchrun's rendezvous before its workers start: every
 * node's ddprun meets the others at node 0's store (connect, prove the
 * secret, count itself in, wait for --nnodes) within --rdzv-timeout; a node whose peer
 * never comes fails then, with one line, and starts no rank. */
static ddp_result meet_nodes(struct launch_job *job, int sigfd)
{
	const struct launch_opts *o = job->o;
	const char *host = o->node_rank ? job->master_addr : (o->local_addr ? o->local_addr : "127.0.0.1");
	double limit = (double)o->rdzv_timeout;
	int64_t met = 0;
	int sig = 0;

	if (o->nnodes < 2)
		return DDP_OK;
	/* the store client's own warnings would say it twice: one line below
	 * (not on node 0, whose store thread logs what it refuses) */
	int level = ddp_log_level_;
	if (level < DDP_LOG_INFO && o->node_rank)
		ddp_log_level_ = DDP_LOG_ERROR;
	ddp_result rc = meet_at_store(job, sigfd, host, limit, &met, &sig);
	ddp_log_level_ = level;
	if (rc == DDP_OK)
		return DDP_OK;
	if (sig) {
		job->interrupted = sig;
		launch_msg("node %ld: got %s while waiting for the other nodes; no rank started (exit %d)",
			   o->node_rank, sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP", 128 + sig);
	} else if (rc == DDP_ERR_REMOTE)
		launch_msg("node %ld: node 0's store at %s:%d refused this node's secret; every node "
			   "needs the same DDPRUN_SECRET (or --secret-file)",
			   o->node_rank, host, job->port);
	else if (rc == DDP_ERR_SYS)
		launch_msg("node %ld: node 0's store at %s:%d did not answer within %ld s "
			   "(--rdzv-timeout); is ddprun running there, with --master-port %ld?",
			   o->node_rank, host, job->port, o->rdzv_timeout, o->master_port);
	else
		launch_msg("node %ld: %lld of %ld nodes met at node 0's store (%s:%d) within %ld s "
			   "(--rdzv-timeout); start ddprun on every node with the same --nnodes, "
			   "--master-addr and --master-port",
			   o->node_rank, (long long)met, o->nnodes, host, job->port, o->rdzv_timeout);
	return DDP_ERR_TIMEOUT;
}

/* run_attempt's code when nothing started (no restart helps) */
#define DDPRUN_NOT_STARTED (-1)

/* torchrun: OMP_NUM_THREADS=1 for every rank when a node runs more than
 * one and the user set none; said once. */
static void omp_notice(const struct launch_opts *o)
{
	if (o->nproc_per_node > 1 && !getenv("OMP_NUM_THREADS"))
		launch_msg("OMP_NUM_THREADS=1 for every rank (%ld ranks share this node); set "
			   "OMP_NUM_THREADS to tune it",
			   o->nproc_per_node);
}

/* One attempt of the job: the store (node 0; a fresh one per attempt on the
 * same port), the nodes' meeting, the ranks, supervision.  Returns ddprun's
 * exit code, or DDPRUN_NOT_STARTED when no rank could start. */
static int run_attempt(struct launch_job *job, int sigfd)
{
	const struct launch_opts *o = job->o;
	int code = 0;

	for (int i = 0; i < job->nranks; i++) { /* a restart: the ranks anew */
		struct launch_rank *r = &job->ranks[i];
		r->pid = 0;
		r->running = r->status = 0;
		r->out_fd = r->err_fd = -1;
	}
	launch_env_free(job);
	job->interrupted = 0;
	job->start = 0; /* set once the ranks run */
	if (job->status) /* the board of the last attempt's ranks */
		memset(job->status, 0, (size_t)job->nranks * DDP_STATUS_SLOT_BYTES);
	if (o->node_rank == 0) {
		const char *bind = o->local_addr ? o->local_addr : o->nnodes > 1 ? "0.0.0.0" : "127.0.0.1";
		if (ddp_store_server_start(bind, job->port, job->secret, &job->store) != DDP_OK) {
			launch_msg("cannot start the rendezvous store on %s:%d (port in use? try "
				   "another --master-port)",
				   bind, job->port);
			return DDPRUN_NOT_STARTED;
		}
		job->port = ddp_store_server_port(job->store);
		DDP_INFO(LAUNCH, "store listening on %s:%d", bind, job->port);
	}
	if (!job->prog_port && (job->prog_port = free_port(job->port)) <= 0) {
		launch_msg("cannot find a free port for MASTER_PORT; give one with --master-port");
		code = DDPRUN_NOT_STARTED;
		goto stop_store;
	}
	if (meet_nodes(job, sigfd) != DDP_OK) {
		code = job->interrupted ? 128 + job->interrupted : DDPRUN_NOT_STARTED;
		goto stop_store;
	}
	if (job->restart_count == 0)
		launch_write_notice(job); /* once, here, not per rank */
	if (launch_build_env(job) != DDP_OK || launch_output_init(job) != DDP_OK) {
		code = DDPRUN_NOT_STARTED;
		goto stop_store;
	}
	if (launch_spawn_all(job, &code) != DDP_OK) {
		launch_output_finish();
		goto stop_store;
	}
	DDP_INFO(LAUNCH, "started %d rank%s", job->nranks, job->nranks == 1 ? "" : "s");
	if (job->restart_count == 0)
		omp_notice(o);
	job->start = launch_now();
	code = launch_supervise(job, sigfd);
stop_store:
	ddp_store_server_stop(job->store);
	job->store = NULL;
	return code;
}

static int run(int argc, char **argv)
{
	static struct launch_opts o;
	struct launch_job job = { .o = &o };
	int action, code = 0, no_preload;
	char **py_argv = NULL, *run_path = NULL;
	const char *log_base = NULL;
	char cwd[PATH_MAX];

	if (launch_options_parse(argc, argv, &o, &action) != DDP_OK) {
		code = 2;
		goto out;
	}
	if (action == LOPT_ID_help) {
		launch_options_help(1);
		code = 0;
		goto out;
	}
	if (action == LOPT_ID_version) {
		printf("ddprun %s\n", DDPRUN_VERSION);
		code = 0;
		goto out;
	}
	if (launch_options_resolve(&o) != DDP_OK || count_ranks(&o) != DDP_OK ||
	    launch_options_validate(&o) != DDP_OK ||
	    read_seconds("DDPRUN_GRACE", 600, &job.grace) != DDP_OK ||
	    read_seconds("DDPRUN_PROGRESS", 86400, &job.progress_every) != DDP_OK) {
		code = 2;
		goto out;
	}
	/* without --timeout, a rank the others wait for inside a collective is
	 * named after half the collective timeout (DDP_COLL_TIMEOUT, default
	 * 300 s, which the ranks read too): before the waiters' own timeout
	 * would blame them */
	{
		double coll;
		if (read_seconds("DDP_COLL_TIMEOUT", 604800, &coll) != DDP_OK) {
			code = 2;
			goto out;
		}
		job.stall_default = coll / 2;
	}
	if (python_argv(&o, &py_argv) != DDP_OK) {
		code = 1;
		goto out;
	}
	if (o.verbose > 0)
		ddp_log_level_ = DDP_LOG_WARN + o.verbose;
	ddp_log_init("ddprun");

	job.self_dir = self_dir();
	no_preload = getenv("DDPRUN_NO_PRELOAD") && strcmp(getenv("DDPRUN_NO_PRELOAD"), "1") == 0;
	if (!no_preload) {
		char path[PATH_MAX + 32];
		snprintf(path, sizeof path, "%s/../lib/libddp.so", job.self_dir);
		job.preload = realpath(path, NULL);
		if (!job.preload) {
			launch_msg("the library %s is missing; build it with `make` "
				   "(DDPRUN_NO_PRELOAD=1 runs the ranks without it)",
				   path);
			code = 1;
			goto out;
		}
	}
	job.nranks = (int)o.nproc_per_node;
	job.world_size = (int)(o.nproc_per_node * o.nnodes);
	job.master_addr = o.nnodes > 1 ? o.master_addr : "127.0.0.1";
	/* MASTER_ADDR/MASTER_PORT belong to the program (torch.distributed,
	 * Accelerate bind them on rank 0); ddprun's store has a port of its own:
	 * --master-port P gives the program P and the store P+1 */
	if (o.master_port) {
		if (o.master_port >= 65535) {
			launch_msg("--master-port %ld leaves no port for ddprun's store (it uses "
				   "--master-port + 1); give a port below 65535",
				   o.master_port);
			code = 2;
			goto out;
		}
		job.prog_port = (int)o.master_port;
		job.port = (int)o.master_port + 1;
	}
	job.status_fd = job.guard_fd = -1;
	job.run_id = o.rdzv_id;
	{
		unsigned int r = 0;
		if (getrandom(&r, sizeof r, 0) != (ssize_t)sizeof r)
			r = (unsigned int)launch_now();
		snprintf(job.job_marker, sizeof job.job_marker, "DDPRUN_JOB_ID=%d.%08x", (int)getpid(), r);
	}
	job.ranks = calloc((size_t)job.nranks, sizeof *job.ranks);
	if (!job.ranks) {
		code = 1;
		goto out;
	}
	for (int i = 0; i < job.nranks; i++) {
		job.ranks[i].rank = (int)o.node_rank * job.nranks + i;
		job.ranks[i].local_rank = i;
		job.ranks[i].out_fd = job.ranks[i].err_fd = -1;
	}
	if (o.nnodes > 1) {
		if (shared_secret(&o, job.secret) != DDP_OK || resolve_master(&o) != DDP_OK) {
			code = 2;
			goto out;
		}
	} else if (random_secret(job.secret) != DDP_OK) {
		code = 1;
		goto out;
	}
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, ".");
	if (o.log_dir && !o.dry_run && make_dir("--log-dir", o.log_dir) != DDP_OK) {
		code = 2;
		goto out;
	}
	log_base = o.log_dir;
	if (attempt_dirs(&job, log_base, cwd, &run_path) != DDP_OK) {
		code = 2;
		goto out;
	}
	if (o.trace && !o.dry_run && make_dir("--trace", o.trace) != DDP_OK) {
		code = 2;
		goto out;
	}
	if (launch_devices_plan(&o, job.self_dir, no_preload, &job.dev) != DDP_OK) {
		code = 2;
		goto out;
	}

	if (o.dry_run) {
		if (launch_build_env(&job) != DDP_OK) {
			code = 1;
			goto out;
		}
		launch_print_plan(&job);
		code = 0;
		goto out;
	}

	/* signals: blocked everywhere in ddprun (the store thread inherits the
	 * mask), read from a signalfd; the ranks unblock them.  Which ones:
	 * --signals-to-handle (default TERM, INT, HUP, QUIT, USR1, USR2) */
	sigset_t mask;
	if (launch_parse_signals(o.signals_to_handle, &job.forward) != DDP_OK) {
		code = 2;
		goto out;
	}
	mask = job.forward;
	sigaddset(&mask, SIGCHLD);
	struct sigaction hup;
	/* under nohup (SIGHUP ignored) a hangup must not stop the job */
	if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler == SIG_IGN)
		sigdelset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	int sigfd = signalfd(-1, &mask, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sigfd < 0) {
		launch_msg("signalfd: %s", strerror(errno));
		code = 1;
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0)
		launch_msg("warning: cannot become a child subreaper (%s); orphans of the ranks "
			   "may survive",
			   strerror(errno));
	/* before any thread: the guardian outlives a SIGKILLed ddprun and takes
	 * the job's processes with it; the status board shows the ranks' progress */
	launch_guard_start(&job);
	launch_status_create(&job);

	for (;;) {
		code = run_attempt(&job, sigfd);
		/* --max-restarts: a failed attempt (not one ddprun was told to
		 * stop) starts again, every rank, in a folder of its own */
		if (code == 0 || code == DDPRUN_NOT_STARTED || !job.start || job.interrupted ||
		    job.restart_count >= o.max_restarts)
			break;
		job.restart_count++;
		if (attempt_dirs(&job, log_base, cwd, &run_path) != DDP_OK) {
			code = 1;
			break;
		}
		launch_msg("restarting every rank: attempt %d of %ld more (--max-restarts; "
			   "TORCHELASTIC_RESTART_COUNT=%d)%s%s",
			   job.restart_count, o.max_restarts, job.restart_count, o.log_dir ? "; logs in " : "",
			   o.log_dir ? o.log_dir : "");
	}
	if (code == DDPRUN_NOT_STARTED)
		code = 1;
	launch_term_finish(sigfd);
	close(sigfd);
out:
	launch_term_finish(-1); /* messages of a launch that stopped early */
	launch_guard_stop(&job);
	launch_status_free(&job);
	launch_job_free(&job);
	launch_options_free(&o);
	free(py_argv);
	free(run_path);
	return code;
}

/* Started with standard input, output or error closed (cron, daemons,
 * `prog <&- >&-`): the next open would land on fd 0, 1 or 2, and a pipe of
 * ddprun's there (the guardian's, the status board) would be clobbered by the
 * ranks' /dev/null stdin or taken for the terminal.  Each closed one gets
 * /dev/null first, so everything ddprun opens later lands above 2. */
static void reserve_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF)
			continue;
		int n = open("/dev/null", fd == 0 ? O_RDONLY : O_WRONLY);
		if (n >= 0 && n != fd) { /* a lower one was closed too: filled above */
			dup2(n, fd);
			close(n);
		}
	}
}

int main(int argc, char **argv)
{
	reserve_std_fds();
	if (argc >= 2 && strcmp(argv[1], "report") == 0)
		return launch_report_main(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "inspect") == 0)
		return launch_inspect_main(argc - 1, argv + 1);
	return run(argc, argv);
}
