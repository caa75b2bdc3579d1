/* SPDX-License-Identifier: MIT
 *
 * spawn.c - each rank's environment, and starting the ranks.
 *
 * A rank's environment is ddprun's own, with the variables of
 * launch_build_env set or replaced (DESIGN.md sections 4 and 7): who it is
 * (RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, GROUP_RANK), where the
 * store is (MASTER_ADDR, MASTER_PORT) and the job secret (DDP_STORE_SECRET,
 * only ever in the environment, shown as <hidden> by --dry-run), its device
 * (CUDA_VISIBLE_DEVICES, or LD_LIBRARY_PATH and the cuBLAS stand-ins in
 * LD_PRELOAD for the CPU device), the library (LD_PRELOAD, appended), framework settings that keep tensors in
 * their own allocations, and the DDP_* settings from ddprun's options.
 *
 * Each rank runs in its own process group (pgid = its pid), with stdin from
 * /dev/null, stdout and stderr on pipes, SIGKILL as parent-death signal, and
 * default signal dispositions.  exec failure travels back on a CLOEXEC pipe:
 * EOF there means the exec worked.
 *
 * Contract: main thread.  The environment arrays are built before fork, so
 * the child only calls async-signal-safe functions.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include "ddp_array.h"
#include "ddp_status.h"
#include "launch.h"
#include "ddp_shard.h"

extern char **environ;

struct env_vec {
	char **v;
	int n;
	size_t cap;
	int first_set; /* index of the first variable ddprun set */
};

static ddp_result env_push(struct env_vec *e, char *kv)
{
	char **nv = ddp_array_grow(e->v, &e->cap, (size_t)e->n + 2, sizeof *nv, 64);
	if (!nv)
		return DDP_ERR_NOMEM;
	e->v = nv;
	e->v[e->n++] = kv;
	e->v[e->n] = NULL;
	return DDP_OK;
}

/* Sets name=value among the variables ddprun sets (after first_set),
 * dropping an inherited one of the same name. */
static ddp_result env_set(struct env_vec *e, const char *name, const char *value)
{
	size_t len = strlen(name);
	char *kv;

	for (int i = 0; i < e->first_set; i++) {
		if (strncmp(e->v[i], name, len) == 0 && e->v[i][len] == '=') {
			memmove(&e->v[i], &e->v[i + 1], sizeof *e->v * (size_t)(e->n - i));
			e->n--;
			e->first_set--;
			break;
		}
	}
	if (asprintf(&kv, "%s=%s", name, value) < 0)
		return DDP_ERR_NOMEM;
	return env_push(e, kv);
}

static ddp_result env_setf(struct env_vec *e, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static ddp_result env_setf(struct env_vec *e, const char *name, const char *fmt, ...)
{
	char buf[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	return env_set(e, name, buf);
}

static const char *const log_levels[] = { NULL, "info", "debug", "trace" };

static ddp_result build_one(struct launch_job *job, struct launch_rank *r)
{
	const struct launch_opts *o = job->o;
	struct env_vec e = { .first_set = -1 }; /* -1: nothing of ours yet */
	char *specs = NULL;
	const char *v;
	ddp_result rc = DDP_OK;

	for (char **p = environ; *p; p++)
		DDP_CHECK_GOTO(env_push(&e, *p), rc, fail);
	e.first_set = e.n;

	DDP_CHECK_GOTO(env_setf(&e, "RANK", "%d", r->rank), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "WORLD_SIZE", "%d", job->world_size), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "LOCAL_RANK", "%d", r->local_rank), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "LOCAL_WORLD_SIZE", "%d", job->nranks), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "GROUP_RANK", "%ld", o->node_rank), rc, fail);
	/* MASTER_ADDR/MASTER_PORT are the program's (torch.distributed binds
	 * MASTER_PORT on rank 0); ddprun's store is DDP_STORE_ADDR/PORT */
	DDP_CHECK_GOTO(env_set(&e, "MASTER_ADDR", job->master_addr), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "MASTER_PORT", "%d", job->prog_port), rc, fail);
	DDP_CHECK_GOTO(env_set(&e, "DDP_STORE_ADDR", job->master_addr), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "DDP_STORE_PORT", "%d", job->port), rc, fail);
	/* torchrun's other variables, with its meaning */
	DDP_CHECK_GOTO(env_setf(&e, "GROUP_WORLD_SIZE", "%ld", o->nnodes), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "ROLE_RANK", "%d", r->rank), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "ROLE_WORLD_SIZE", "%d", job->world_size), rc, fail);
	DDP_CHECK_GOTO(env_set(&e, "ROLE_NAME", o->role), rc, fail);
	/* torchrun's elastic variables (LocalElasticAgent._start_workers): the
	 * run's id, this attempt and the most there may be; the program's own
	 * store is its rank 0's (MASTER_PORT), not an agent's */
	DDP_CHECK_GOTO(env_set(&e, "TORCHELASTIC_RUN_ID",
			       job->run_id ? job->run_id : strchr(job->job_marker, '=') + 1),
		       rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "TORCHELASTIC_RESTART_COUNT", "%d", job->restart_count), rc, fail);
	DDP_CHECK_GOTO(env_setf(&e, "TORCHELASTIC_MAX_RESTARTS", "%ld", o->max_restarts), rc, fail);
	DDP_CHECK_GOTO(env_set(&e, "TORCHELASTIC_USE_AGENT_STORE", "False"), rc, fail);
	v = getenv("TORCH_NCCL_ASYNC_ERROR_HANDLING");
	DDP_CHECK_GOTO(env_set(&e, "TORCH_NCCL_ASYNC_ERROR_HANDLING", v ? v : "1"), rc, fail);
	/* torchrun writes a failing rank's error file (torch's @record) in
	 * its log folder; ddprun in this run's --log-dir folder */
	if (o->log_dir)
		DDP_CHECK_GOTO(env_setf(&e, "TORCHELASTIC_ERROR_FILE", "%s/rank%d.error.json", job->write_dir,
					r->rank),
			       rc, fail);
	/* torchrun: one thread per rank unless set (said once, main.c) */
	if (job->nranks > 1 && !getenv("OMP_NUM_THREADS"))
		DDP_CHECK_GOTO(env_set(&e, "OMP_NUM_THREADS", "1"), rc, fail);
	DDP_CHECK_GOTO(env_set(&e, "DDP_STORE_SECRET", job->secret), rc, fail);
	if (job->dev.use_gpu) {
		DDP_CHECK_GOTO(env_set(&e, "CUDA_VISIBLE_DEVICES", job->dev.gpu_ids[r->local_rank % job->dev.ngpus]), rc, fail);
	} else {
		v = getenv("LD_LIBRARY_PATH");
		if (v && *v)
			DDP_CHECK_GOTO(env_setf(&e, "LD_LIBRARY_PATH", "%s:%s", job->dev.simcuda_dir, v), rc, fail);
		else
			DDP_CHECK_GOTO(env_set(&e, "LD_LIBRARY_PATH", job->dev.simcuda_dir), rc, fail);
	}
	/* LD_PRELOAD: the user's, then libddp, then (CPU device) its cuBLAS and
	 * cuBLASLt stand-ins.  A program that carries its own cuBLAS (PyTorch's
	 * wheel: its RPATH beats LD_LIBRARY_PATH) would otherwise load the real
	 * one, whose kernels are machine code the CPU device cannot run; a
	 * preloaded library with the same soname serves every later request
	 * for it (docs/pytorch.md "cuBLAS on the CPU device"). */
	char pre[3 * 4200] = "", lt[4200], bl[4200];
	v = getenv("LD_PRELOAD");
	if (v && *v)
		snprintf(pre, sizeof(pre), "%s", v);
	if (job->preload && !strstr(pre, job->preload))
		snprintf(pre + strlen(pre), sizeof(pre) - strlen(pre), "%s%s", pre[0] ? ":" : "", job->preload);
	if (!job->dev.use_gpu) {
		snprintf(lt, sizeof(lt), "%s/libcublasLt.so.13", job->dev.simcuda_dir);
		snprintf(bl, sizeof(bl), "%s/libcublas.so.13", job->dev.simcuda_dir);
		if (access(lt, R_OK) == 0 && access(bl, R_OK) == 0 && !strstr(pre, bl))
			snprintf(pre + strlen(pre), sizeof(pre) - strlen(pre), "%s%s:%s", pre[0] ? ":" : "",
				 lt, bl);
	}
	if (pre[0] && !(v && !strcmp(v, pre)))
		DDP_CHECK_GOTO(env_set(&e, "LD_PRELOAD", pre), rc, fail);
	/* PyTorch's caching allocator stays on and PYTORCH_CUDA_ALLOC_CONF is the
	 * user's: its launches are decoded tensor by tensor (docs/pytorch.md) */
	if (!getenv("XLA_PYTHON_CLIENT_ALLOCATOR"))
		DDP_CHECK_GOTO(env_set(&e, "XLA_PYTHON_CLIENT_ALLOCATOR", "platform"), rc, fail);

	if (o->backend != LAUNCH_BACKEND_AUTO)
		DDP_CHECK_GOTO(env_set(&e, "DDP_BACKEND", o->backend == LAUNCH_BACKEND_NCCL ? "nccl" : "host"), rc, fail);
	/* NCCL asked for on the CPU device: its NCCL stand-in (next to its
	 * libcuda.so.1, in nccl/; docs/cpu-device.md), unless DDP_NCCL_LIB
	 * says otherwise.  Never chosen by auto (the host backend). */
	v = getenv("DDP_BACKEND");
	if (!job->dev.use_gpu && !getenv("DDP_NCCL_LIB") &&
	    (o->backend == LAUNCH_BACKEND_NCCL ||
	     (o->backend == LAUNCH_BACKEND_AUTO && v && !strcmp(v, "nccl"))))
		DDP_CHECK_GOTO(env_setf(&e, "DDP_NCCL_LIB", "%s/nccl/libnccl.so.2", job->dev.simcuda_dir), rc, fail);
	if (o->shard.n) {
		size_t len = 1;
		for (int i = 0; i < o->shard.n; i++)
			len += strlen(o->shard.v[i]) + 1;
		specs = calloc(1, len);
		if (!specs) {
			rc = DDP_ERR_NOMEM;
			goto fail;
		}
		for (int i = 0; i < o->shard.n; i++) {
			if (i)
				strcat(specs, "\n");
			strcat(specs, o->shard.v[i]);
		}
		DDP_CHECK_GOTO(env_set(&e, "DDP_SHARD", specs), rc, fail);
		free(specs);
		specs = NULL;
		/* each file's size and mtime, fixed now: every rank splits these
		 * bytes and refuses a file that changed (runtime/shard/ddp_shard.h) */
		if (!job->shard_files) {
			size_t cap = 120000, flen = 0; /* below the kernel's 128 KiB per variable */
			char err[512] = "";
			job->shard_files = calloc(1, cap);
			if (!job->shard_files) {
				rc = DDP_ERR_NOMEM;
				goto fail;
			}
			for (int i = 0; i < o->shard.n; i++)
				if (ddp_shard_snapshot(o->shard.v[i], job->shard_files, cap, &flen, err,
						       sizeof err) != DDP_OK) {
					launch_msg("%s", err);
					rc = DDP_ERR_INVALID;
					goto fail;
				}
		}
		DDP_CHECK_GOTO(env_set(&e, "DDP_SHARD_FILES", job->shard_files), rc, fail);
	}
	DDP_CHECK_GOTO(env_set(&e, "DDP_WRITE_DIR", job->write_dir), rc, fail);
	if (o->all_ranks_write)
		DDP_CHECK_GOTO(env_set(&e, "DDP_ALL_RANKS_WRITE", "1"), rc, fail);
	if (o->require_shard)
		DDP_CHECK_GOTO(env_set(&e, "DDP_REQUIRE_SHARD", "1"), rc, fail);
	if (job->write_said) /* ddprun said the shared folders once (notice.c) */
		DDP_CHECK_GOTO(env_set(&e, "DDP_WRITE_SAID", "1"), rc, fail);
	if (o->trace) {
		char *abs = realpath(o->trace, NULL);
		DDP_CHECK_GOTO(env_set(&e, "DDP_TRACE", abs ? abs : o->trace), rc, fail);
		free(abs);
	}
	if (o->check)
		DDP_CHECK_GOTO(env_setf(&e, "DDP_CHECK", "%ld", o->check), rc, fail);
	if (o->timeout)
		DDP_CHECK_GOTO(env_setf(&e, "DDP_TIMEOUT", "%ld", o->timeout), rc, fail);
	if (o->verbose > 0)
		DDP_CHECK_GOTO(env_set(&e, "DDP_LOG", log_levels[o->verbose > 3 ? 3 : o->verbose]), rc, fail);
	/* every process of the job carries the marker (guard.c) */
	DDP_CHECK_GOTO(env_set(&e, "DDPRUN_JOB_ID", strchr(job->job_marker, '=') + 1), rc, fail);
	if (job->status_fd >= 0)
		DDP_CHECK_GOTO(env_setf(&e, DDP_STATUS_FD_ENV, "%d", job->status_fd), rc, fail);
	/* ddprun prefixes every output line with [rank k] itself */
	DDP_CHECK_GOTO(env_set(&e, "DDP_LOG_RANK_PREFIX", "0"), rc, fail);

	r->envp = e.v;
	r->env_first_set = e.first_set; /* for --dry-run */
	return DDP_OK;

fail:
	/* e.v[0..first_set) point into environ; the rest are ours */
	for (int i = e.first_set; e.first_set >= 0 && i < e.n; i++)
		free(e.v[i]);
	free(e.v);
	free(specs);
	return rc;
}

ddp_result launch_build_env(struct launch_job *job)
{
	for (int i = 0; i < job->nranks; i++)
		DDP_CHECK(build_one(job, &job->ranks[i]));
	return DDP_OK;
}

void launch_print_plan(const struct launch_job *job)
{
	const struct launch_opts *o = job->o;
	printf("ddprun plan: %d rank%s on this node (node %ld of %ld), world size %d\n", job->nranks,
	       job->nranks == 1 ? "" : "s", o->node_rank, o->nnodes, job->world_size);
	printf("program:");
	for (char **a = o->prog_argv; *a; a++)
		printf(" %s", *a);
	printf("\nstore: %s %s:", o->node_rank == 0 ? "started by this ddprun on" : "on node 0 at",
	       o->nnodes > 1 ? (o->node_rank == 0 ? "0.0.0.0" : job->master_addr) : "127.0.0.1");
	if (job->port)
		printf("%d\n", job->port);
	else
		printf("<a free port>\n");
	for (int i = 0; i < job->nranks; i++) {
		const struct launch_rank *r = &job->ranks[i];
		printf("rank %d: local rank %d, device %s%s\n", r->rank, r->local_rank,
		       job->dev.use_gpu ? "GPU " : "cpu (cpudev)",
		       job->dev.use_gpu ? job->dev.gpu_ids[r->local_rank % job->dev.ngpus] : "");
		for (char **p = r->envp + r->env_first_set; *p; p++) {
			if (strncmp(*p, "DDP_STORE_SECRET=", 17) == 0)
				printf("  DDP_STORE_SECRET=<hidden>\n");
			else if (strncmp(*p, "MASTER_PORT=0", 13) == 0 && (*p)[13] == '\0')
				printf("  MASTER_PORT=<picked at start>\n");
			else if (strncmp(*p, "DDP_STORE_PORT=0", 16) == 0 && (*p)[16] == '\0')
				printf("  DDP_STORE_PORT=<picked at start>\n");
			else
				printf("  %s\n", *p);
		}
	}
	fflush(stdout);
}

static void child_exec(const struct launch_job *job, const struct launch_rank *r, int out_w, int err_w,
		       int fail_w, pid_t parent)
{
	sigset_t none;
	int e, devnull;

	setpgid(0, 0);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(127);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* ddprun ignores SIGPIPE, and a shell may have started it with SIGINT
	 * ignored (a background job): the ranks get the defaults, so that what
	 * ddprun forwards reaches them.  An ignored SIGHUP (nohup) is kept. */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGQUIT, SIG_DFL);
	devnull = open("/dev/null", O_RDONLY);
	if (devnull >= 0 && devnull != 0) {
		dup2(devnull, 0);
		close(devnull);
	}
	if (dup2(out_w, 1) < 0 || dup2(err_w, 2) < 0)
		goto fail;
	if (job->status_fd >= 0) /* the status board goes through exec */
		fcntl(job->status_fd, F_SETFD, 0);
	execvpe(job->o->prog_argv[0], job->o->prog_argv, r->envp);
fail:
	e = errno;
	if (write(fail_w, &e, sizeof e) < 0)
		_exit(127);
	_exit(127);
}

static ddp_result spawn_one(struct launch_job *job, struct launch_rank *r, int *exec_errno)
{
	int out[2], err[2], fail[2];
	pid_t parent = getpid(), pid;
	ssize_t n;
	int e = 0;

	*exec_errno = 0;
	if (pipe2(out, O_CLOEXEC) != 0)
		goto sys;
	if (pipe2(err, O_CLOEXEC) != 0)
		goto sys_close_out;
	if (pipe2(fail, O_CLOEXEC) != 0)
		goto sys_close_err;
	pid = fork();
	if (pid < 0)
		goto sys_close_fail;
	if (pid == 0)
		child_exec(job, r, out[1], err[1], fail[1], parent);
	setpgid(pid, pid); /* also in the child: whichever runs first */
	close(out[1]);
	close(err[1]);
	close(fail[1]);
	r->pid = pid;
	r->running = 1;
	r->out_fd = out[0];
	r->err_fd = err[0];
	n = DDP_EINTR_RETRY(read(fail[0], &e, sizeof e));
	close(fail[0]);
	fcntl(out[0], F_SETFL, O_NONBLOCK);
	fcntl(err[0], F_SETFL, O_NONBLOCK);
	if (n == (ssize_t)sizeof e) {
		*exec_errno = e;
		return DDP_ERR_INVALID;
	}
	return DDP_OK;

sys_close_fail:
	close(fail[0]);
	close(fail[1]);
sys_close_err:
	close(err[0]);
	close(err[1]);
sys_close_out:
	close(out[0]);
	close(out[1]);
sys:
	launch_msg("cannot start rank %d: %s", r->rank, strerror(errno));
	return DDP_ERR_SYS;
}

ddp_result launch_spawn_all(struct launch_job *job, int *exit_code)
{
	for (int i = 0; i < job->nranks; i++) {
		int e;
		ddp_result rc = spawn_one(job, &job->ranks[i], &e);
		if (rc == DDP_OK)
			continue;
		if (rc == DDP_ERR_INVALID)
			launch_msg("cannot run '%s': %s", job->o->prog_argv[0], strerror(e));
		*exit_code = (rc == DDP_ERR_INVALID && (e == ENOENT || e == ENOTDIR)) ? 127
			     : rc == DDP_ERR_INVALID                                  ? 126
										      : 1;
		launch_kill_all(job);
		return rc;
	}
	return DDP_OK;
}

void launch_env_free(struct launch_job *job)
{
	for (int i = 0; job->ranks && i < job->nranks; i++) {
		struct launch_rank *r = &job->ranks[i];
		if (!r->envp)
			continue;
		/* envp[0..env_first_set) point into environ; the rest are ours */
		for (char **p = r->envp + r->env_first_set; *p; p++)
			free(*p);
		free(r->envp);
		r->envp = NULL;
	}
}

void launch_job_free(struct launch_job *job)
{
	if (job->ranks) {
		launch_env_free(job);
		free(job->ranks);
		job->ranks = NULL;
	}
	launch_devices_free(&job->dev);
	free(job->self_dir);
	free(job->preload);
	free(job->write_dir);
	free(job->shard_files);
	job->self_dir = job->preload = job->write_dir = NULL;
}
