/* SPDX-License-Identifier: MIT
 *
 * nccl_api.c - the NCCL API of the CPU device's stand-in (simnccl.h says
 * what it is and is not): versions and unique ids, communicators (blocking
 * and non-blocking), collectives and groups enqueued on the caller's stream,
 * asynchronous errors, abort, destroy, error strings.
 *
 * Behaviour kept from NCCL because programs (libddp) depend on it:
 *  - a collective returns before it runs: it is one host function on the
 *    given stream (cuLaunchHostFunc), so it runs after the work enqueued
 *    before it and before the work enqueued after it, on the stream's
 *    worker, asynchronously to the calling thread;
 *  - a communicator's collectives run in issue order, whatever streams they
 *    are on (NCCL serialises them on its own stream);
 *  - non-blocking communicators (config.blocking = 0): init returns
 *    ncclInProgress and completes on the communicator's own thread; so does
 *    every collective or ncclGroupEnd (the enqueue happens on that thread
 *    after a short delay): the caller must poll ncclCommGetAsyncError until
 *    ncclSuccess before its next call or stream work that depends on the
 *    collective (a call while in progress is ncclInvalidUsage);
 *  - ncclGroupStart/End: the group's collectives of one communicator are
 *    one launch (one host function);
 *  - errors of a running collective (a peer that died or aborted, a
 *    collective mismatch) are reported by ncclCommGetAsyncError and
 *    ncclGetLastError; the stream is never left blocked once the
 *    communicator is aborted; ncclCommAbort works from any thread;
 *  - NCCL uses the device's primary context: a stream of another context
 *    fails as on a GPU ("Cuda failure 400 'invalid resource handle'");
 *  - buffers must be device memory (or memory the driver knows, e.g. pinned):
 *    a pointer the driver does not know is ncclInvalidArgument.
 * Stricter than NCCL (misuse NCCL would turn into a crash, hang or wrong
 * data is reported, one line on stderr): a call on a destroyed or aborted
 * communicator, a buffer whose last byte lies outside device memory, ranks
 * that issue different collectives.
 *
 * Settings: SIMNCCL_FAULT=drop:R (rank R's contribution is left out of
 * every reduction: a negative control), kill:R:N / stop:R:N (rank R raises
 * SIGKILL / SIGSTOP inside its N-th collective, after its data went out);
 * SIMNCCL_DEAD_PEER=hang (a dead peer is never detected: only an abort
 * frees the stream, as with NCCL over NVLink; default: ncclRemoteError);
 * SIMNCCL_STATS=DIR (each communicator writes its counts to
 * DIR/simnccl.<rank>.<pid> when destroyed or aborted); NCCL_DEBUG=WARN|INFO
 * (errors on stderr).
 *
 * Contract: any thread may call; a communicator is used by one thread at a
 * time except ncclCommAbort and ncclCommGetAsyncError (any thread).  Groups
 * are per thread.  Lock order: c->mu, then sn_err_mu.
 */
#include "simnccl.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SN_ENQUEUE_DELAY_NS 200000 /* non-blocking: the enqueue comes this much later */

/* ---- settings */

static struct sn_settings settings;
static pthread_once_t settings_once = PTHREAD_ONCE_INIT;

static void settings_read(void)
{
	const char *f = getenv("SIMNCCL_FAULT"), *dp = getenv("SIMNCCL_DEAD_PEER"), *dbg = getenv("NCCL_DEBUG");
	int r = -1;
	unsigned long long n = 0;
	settings.drop_rank = -1;
	settings.kill_rank = -1;
	if (f && sscanf(f, "drop:%d", &r) == 1)
		settings.drop_rank = r;
	else if (f && sscanf(f, "kill:%d:%llu", &r, &n) == 2)
		settings.kill_rank = r, settings.kill_op = n, settings.kill_sig = SIGKILL;
	else if (f && sscanf(f, "stop:%d:%llu", &r, &n) == 2)
		settings.kill_rank = r, settings.kill_op = n, settings.kill_sig = SIGSTOP;
	else if (f && *f)
		fprintf(stderr, "simnccl: SIMNCCL_FAULT=%s is not drop:R, kill:R:N or stop:R:N; ignored\n", f);
	settings.hang_on_dead_peer = dp && !strcmp(dp, "hang");
	settings.debug = dbg && (!strcasecmp(dbg, "WARN") || !strcasecmp(dbg, "INFO") || !strcasecmp(dbg, "TRACE"));
	settings.stats_dir = getenv("SIMNCCL_STATS");
}

const struct sn_settings *sn_settings(void)
{
	pthread_once(&settings_once, settings_read);
	return &settings;
}

/* ---- errors */

static pthread_mutex_t sn_err_mu = PTHREAD_MUTEX_INITIALIZER;
static char sn_last_err[256];
static _Atomic unsigned long sn_misuse;   /* calls on dead communicators */

void sn_set_error(struct sn_comm *c, int loud, const char *fmt, ...)
{
	char line[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	pthread_mutex_lock(&sn_err_mu);
	snprintf(sn_last_err, sizeof sn_last_err, "%s", line);
	if (c)
		snprintf(c->err, sizeof c->err, "%s", line);
	pthread_mutex_unlock(&sn_err_mu);
	if (loud || sn_settings()->debug)
		fprintf(stderr, "simnccl: %s%s\n", loud ? "" : "NCCL WARN ", line);
}

SN_EXPORT const char *ncclGetErrorString(ncclResult_t r)
{
	switch (r) {
	case ncclSuccess: return "no error";
	case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError: return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError: return "remote process exited or there was a network error";
	case ncclInProgress: return "NCCL operation in progress";
	default: return "unknown result code";
	}
}

SN_EXPORT const char *ncclGetLastError(ncclComm_t comm)
{
	struct sn_comm *c = (struct sn_comm *)comm;
	static __thread char copy[256];
	pthread_mutex_lock(&sn_err_mu);
	snprintf(copy, sizeof copy, "%s", c && c->err[0] ? c->err : sn_last_err);
	pthread_mutex_unlock(&sn_err_mu);
	return copy;
}

/* ---- the driver, as NCCL's cudart reaches it */

static struct sn_driver drv;
static int drv_ok;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;

typedef CUresult (*get_proc_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void drv_load(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	get_proc_fn gpa = h ? (get_proc_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
	static const struct {
		const char *name;
		size_t off;
	} tab[] = {
#define E(n) { #n, offsetof(struct sn_driver, n) }
		E(cuCtxGetCurrent), E(cuCtxSetCurrent), E(cuCtxGetDevice), E(cuDeviceGet), E(cuDevicePrimaryCtxRetain),
		E(cuStreamGetCtx), E(cuLaunchHostFunc), E(cuPointerGetAttribute), E(cuMemAlloc), E(cuMemFree),
		E(cuGetErrorName),
#undef E
	};
	if (!gpa) {
		sn_set_error(NULL, 1, "cannot load libcuda.so.1 or its cuGetProcAddress_v2: %s", dlerror());
		return;
	}
	for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++) {
		void *p = NULL;
		CUdriverProcAddressQueryResult st;
		if (gpa(tab[i].name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p) {
			sn_set_error(NULL, 1, "the driver lacks %s", tab[i].name);
			return;
		}
		memcpy((char *)&drv + tab[i].off, &p, sizeof p);
	}
	drv_ok = 1;
}

const struct sn_driver *sn_drv(void)
{
	pthread_once(&drv_once, drv_load);
	return drv_ok ? &drv : NULL;
}

static ncclResult_t cuda_fail(struct sn_comm *c, CUresult e, const char *what)
{
	const char *name = "?";
	if (drv_ok)
		(void)drv.cuGetErrorName(e, &name);
	sn_set_error(c, 0, "Cuda failure %d '%s' in %s", (int)e, name, what);
	return ncclUnhandledCudaError;
}

/* ---- versions and ids */

SN_EXPORT ncclResult_t ncclGetVersion(int *version)
{
	if (!version)
		return ncclInvalidArgument;
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

struct sn_id {
	uint64_t magic;
	uint64_t token;
	uint32_t uid;
};

SN_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	struct sn_id s = { SN_ID_MAGIC, 0, (uint32_t)getuid() };
	if (!id)
		return ncclInvalidArgument;
	if (getrandom(&s.token, sizeof s.token, 0) != (ssize_t)sizeof s.token) {
		sn_set_error(NULL, 0, "getrandom: %s", strerror(errno));
		return ncclSystemError;
	}
	memset(id, 0, sizeof *id);
	memcpy(id->internal, &s, sizeof s);
	return ncclSuccess;
}

/* ---- communicators */

static void write_stats(struct sn_comm *c, int aborted);

/* Communicators never destroyed (most programs let exit do it): their
 * counts at exit.  Registered at init; never shrinks (a comm is never freed). */
static pthread_mutex_t all_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sn_comm *all_comms[256];
static int all_n;

static void all_add(struct sn_comm *c)
{
	pthread_mutex_lock(&all_mu);
	if (all_n < (int)(sizeof all_comms / sizeof all_comms[0]))
		all_comms[all_n++] = c;
	pthread_mutex_unlock(&all_mu);
}


void sn_unref(struct sn_comm *c)
{
	if (atomic_fetch_sub(&c->refs, 1) == 1 && c->seg) {
		munmap(c->seg, SN_SEG_BYTES);
		c->seg = NULL;
	}
}

/* Maps the segment, takes the rank's place, waits for every rank. */
static ncclResult_t comm_join(struct sn_comm *c)
{
	int fd = shm_open(c->name, O_CREAT | O_RDWR, 0600);
	struct stat st;
	if (fd < 0) {
		sn_set_error(c, 0, "shm_open %s: %s", c->name, strerror(errno));
		return ncclSystemError;
	}
	if (fstat(fd, &st) != 0 || (st.st_size < (off_t)SN_SEG_BYTES && ftruncate(fd, (off_t)SN_SEG_BYTES) != 0)) {
		sn_set_error(c, 0, "sizing %s: %s", c->name, strerror(errno));
		close(fd);
		return ncclSystemError;
	}
	void *p = mmap(NULL, SN_SEG_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (p == MAP_FAILED) {
		sn_set_error(c, 0, "mmap %s: %s", c->name, strerror(errno));
		return ncclSystemError;
	}
	c->seg = p;
	struct sn_seg *s = c->seg;
	int want = 0, pid0 = 0;
	if (!atomic_compare_exchange_strong(&s->nranks, &want, c->nranks) && want != c->nranks) {
		sn_set_error(c, 1, "rank %d was given nranks %d, an earlier rank %d", c->rank, c->nranks, want);
		return ncclInvalidUsage;
	}
	if (!atomic_compare_exchange_strong(&s->r[c->rank].pid, &pid0, (int)getpid())) {
		sn_set_error(c, 1, "rank %d joined twice (pids %d and %d)", c->rank, pid0, (int)getpid());
		return ncclInvalidUsage;
	}
	if (atomic_fetch_add(&s->joined, 1) + 1 == c->nranks) {
		shm_unlink(c->name); /* everyone has it mapped: nothing is left behind */
		c->name[0] = 0;
	}
	for (unsigned i = 0; atomic_load(&s->joined) < c->nranks; i++) {
		if (atomic_load(&c->aborted))
			return ncclInvalidUsage;
		struct timespec ts = { 0, i < 100 ? 100000 : 2000000 };
		nanosleep(&ts, NULL);
	}
	return ncclSuccess;
}

/* The rest of init, in the context NCCL uses: a device buffer of its own. */
static ncclResult_t comm_setup(struct sn_comm *c)
{
	ncclResult_t r = comm_join(c);
	if (r != ncclSuccess)
		return r;
	CUresult e = drv.cuMemAlloc(&c->work, 4096);
	return e == CUDA_SUCCESS ? ncclSuccess : cuda_fail(c, e, "cuMemAlloc (the communicator's work buffer)");
}

static void set_state_from_progress(struct sn_comm *c, ncclResult_t r)
{
	int expect = ncclInProgress;
	atomic_compare_exchange_strong(&c->state, &expect, (int)r);
}

static void CUDA_CB host_fn(void *p)
{
	struct sn_launch *l = p;
	struct sn_comm *c = l->c;
	sn_run_launch(l);
	free(l);
	sn_unref(c);
}

/* Puts l on its stream (ticket = issue order).  Frees l on failure. */
static ncclResult_t enqueue(struct sn_comm *c, struct sn_launch *l)
{
	pthread_mutex_lock(&c->mu);
	l->ticket = c->issued + 1;
	atomic_fetch_add(&c->refs, 1);
	CUresult e = drv.cuLaunchHostFunc(l->stream, host_fn, l);
	if (e == CUDA_SUCCESS)
		c->issued = l->ticket;
	pthread_mutex_unlock(&c->mu);
	if (e != CUDA_SUCCESS) {
		atomic_fetch_sub(&c->refs, 1);
		free(l);
		return cuda_fail(c, e, "cuLaunchHostFunc");
	}
	if (l->n > 1)
		atomic_fetch_add(&c->n_groups, 1);
	return ncclSuccess;
}

/* A non-blocking communicator's thread: init, then enqueues handed over. */
static void *comm_thread(void *arg)
{
	struct sn_comm *c = arg;
	(void)drv.cuCtxSetCurrent(c->ctx); /* NCCL's threads: cudaSetDevice */
	ncclResult_t r0 = comm_setup(c);
	pthread_mutex_lock(&c->mu);
	set_state_from_progress(c, r0);
	pthread_cond_broadcast(&c->cv);
	for (;;) {
		while (!c->pending && !c->quit)
			pthread_cond_wait(&c->cv, &c->mu);
		if (c->quit)
			break;
		struct sn_launch *l = c->pending;
		pthread_mutex_unlock(&c->mu);
		struct timespec ts = { 0, SN_ENQUEUE_DELAY_NS };
		nanosleep(&ts, NULL);
		ncclResult_t r = atomic_load(&c->aborted) ? ncclInvalidUsage : enqueue(c, l);
		if (atomic_load(&c->aborted) && r == ncclInvalidUsage)
			free(l);
		pthread_mutex_lock(&c->mu);
		c->pending = NULL; /* only now: destroy waits for it */
		set_state_from_progress(c, r);
		pthread_cond_broadcast(&c->cv);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* Is comm a live communicator?  A dead one is misuse, said loudly. */
static struct sn_comm *live(ncclComm_t comm, const char *fn)
{
	struct sn_comm *c = (struct sn_comm *)comm;
	if (!c) {
		sn_set_error(NULL, 0, "%s: NULL communicator", fn);
		return NULL;
	}
	if (atomic_load(&c->magic) != SN_LIVE) {
		atomic_fetch_add(&sn_misuse, 1);
		sn_set_error(NULL, 1, "%s called on a communicator already destroyed or aborted (a use after free with "
			     "real NCCL)", fn);
		return NULL;
	}
	return c;
}

static ncclResult_t comm_init(ncclComm_t *out, int nranks, ncclUniqueId id, int rank, const ncclConfig_t *config)
{
	struct sn_id sid;
	memcpy(&sid, id.internal, sizeof sid);
	if (!out)
		return ncclInvalidArgument;
	*out = NULL;
	if (!sn_drv())
		return ncclUnhandledCudaError;
	if (sid.magic != SN_ID_MAGIC) {
		sn_set_error(NULL, 1, "ncclCommInitRank: the unique id was not made by this library's ncclGetUniqueId");
		return ncclInvalidArgument;
	}
	if (nranks < 1 || nranks > SN_MAX_RANKS || rank < 0 || rank >= nranks) {
		sn_set_error(NULL, 0, "ncclCommInitRank: rank %d of %d (the stand-in supports up to %d ranks)", rank, nranks,
			     SN_MAX_RANKS);
		return ncclInvalidArgument;
	}
	int blocking = 1;
	if (config) {
		if (config->magic != 0xcafebeef || config->size < offsetof(ncclConfig_t, blocking) + sizeof(int)) {
			sn_set_error(NULL, 1, "ncclCommInitRankConfig: config not made with NCCL_CONFIG_INITIALIZER");
			return ncclInvalidArgument;
		}
		if (config->blocking != NCCL_CONFIG_UNDEF_INT)
			blocking = config->blocking != 0;
	}
	struct sn_comm *c = calloc(1, sizeof *c);
	if (!c)
		return ncclSystemError;
	c->rank = rank;
	c->nranks = nranks;
	c->blocking = blocking;
	c->id = id;
	atomic_store(&c->refs, 1);
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	snprintf(c->name, sizeof c->name, "/simnccl.%u.%016llx", sid.uid, (unsigned long long)sid.token);
	/* cudaGetDevice, then NCCL works in that device's primary context */
	CUcontext cur = NULL;
	c->dev = 0;
	if (drv.cuCtxGetCurrent(&cur) == CUDA_SUCCESS && cur)
		(void)drv.cuCtxGetDevice(&c->dev);
	CUresult e = drv.cuDevicePrimaryCtxRetain(&c->ctx, c->dev);
	if (e != CUDA_SUCCESS) {
		ncclResult_t r = cuda_fail(c, e, "cuDevicePrimaryCtxRetain");
		free(c);
		return r;
	}
	atomic_store(&c->magic, SN_LIVE);
	all_add(c);
	if (blocking) {
		ncclResult_t r = comm_setup(c);
		if (r != ncclSuccess) {
			if (c->seg)
				munmap(c->seg, SN_SEG_BYTES);
			atomic_store(&c->magic, SN_DEAD);
			return r;
		}
		atomic_store(&c->state, ncclSuccess);
		*out = (ncclComm_t)c;
		return ncclSuccess;
	}
	atomic_store(&c->state, ncclInProgress);
	if (pthread_create(&c->thr, NULL, comm_thread, c) != 0) {
		atomic_store(&c->magic, SN_DEAD);
		sn_set_error(NULL, 0, "cannot start the communicator's thread");
		return ncclSystemError;
	}
	c->thr_started = 1;
	*out = (ncclComm_t)c;
	return ncclInProgress;
}

SN_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
					      ncclConfig_t *config)
{
	return comm_init(comm, nranks, id, rank, config);
}

SN_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	return comm_init(comm, nranks, id, rank, NULL);
}

SN_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *err)
{
	struct sn_comm *c = live(comm, "ncclCommGetAsyncError");
	if (!c || !err)
		return ncclInvalidArgument;
	*err = (ncclResult_t)atomic_load(&c->state);
	return ncclSuccess;
}

SN_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	struct sn_comm *c = live(comm, "ncclCommCount");
	if (!c || !count)
		return ncclInvalidArgument;
	*count = c->nranks;
	return ncclSuccess;
}

SN_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	struct sn_comm *c = live(comm, "ncclCommUserRank");
	if (!c || !rank)
		return ncclInvalidArgument;
	*rank = c->rank;
	return ncclSuccess;
}

SN_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *dev)
{
	struct sn_comm *c = live(comm, "ncclCommCuDevice");
	if (!c || !dev)
		return ncclInvalidArgument;
	*dev = (int)c->dev;
	return ncclSuccess;
}

static void write_stats(struct sn_comm *c, int aborted)
{
	const char *dir = sn_settings()->stats_dir;
	char path[PATH_MAX];
	if (!dir || !*dir)
		return;
	snprintf(path, sizeof path, "%s/simnccl.%d.%d", dir, c->rank, (int)getpid());
	FILE *f = fopen(path, "w");
	if (!f)
		return;
	fprintf(f, "rank %d nranks %d blocking %d launches %llu groups %llu allreduce %llu broadcast %llu bytes %llu "
		"aborted %d misuse %lu\n",
		c->rank, c->nranks, c->blocking, (unsigned long long)atomic_load(&c->n_launch),
		(unsigned long long)atomic_load(&c->n_groups), (unsigned long long)atomic_load(&c->n_allreduce),
		(unsigned long long)atomic_load(&c->n_broadcast), (unsigned long long)atomic_load(&c->bytes), aborted,
		atomic_load(&sn_misuse));
	fclose(f);
}

__attribute__((destructor)) static void stats_at_exit(void)
{
	pthread_mutex_lock(&all_mu);
	for (int i = 0; i < all_n; i++)
		if (atomic_load(&all_comms[i]->magic) == SN_LIVE)
			write_stats(all_comms[i], 0);
	pthread_mutex_unlock(&all_mu);
}

static void stop_thread(struct sn_comm *c)
{
	if (!c->thr_started)
		return;
	pthread_mutex_lock(&c->mu);
	c->quit = 1;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	if (!pthread_equal(pthread_self(), c->thr))
		pthread_join(c->thr, NULL);
	else
		pthread_detach(c->thr);
	c->thr_started = 0;
}

/* Waits for every launch handed out (pending enqueue included). */
static void drain(struct sn_comm *c)
{
	pthread_mutex_lock(&c->mu);
	while ((c->pending || c->ran < c->issued || atomic_load(&c->state) == ncclInProgress) &&
	       !atomic_load(&c->aborted))
		pthread_cond_wait(&c->cv, &c->mu);
	pthread_mutex_unlock(&c->mu);
}

SN_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	struct sn_comm *c = live(comm, "ncclCommFinalize");
	if (!c)
		return ncclInvalidArgument;
	drain(c);
	return ncclSuccess;
}

SN_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	struct sn_comm *c = live(comm, "ncclCommDestroy");
	if (!c)
		return ncclInvalidArgument;
	drain(c);
	unsigned expect = SN_LIVE;
	if (!atomic_compare_exchange_strong(&c->magic, &expect, SN_DEAD))
		return live(comm, "ncclCommDestroy (concurrently)") ? ncclSuccess : ncclInvalidArgument;
	stop_thread(c);
	if (c->work)
		(void)drv.cuMemFree(c->work);
	write_stats(c, 0);
	sn_unref(c);
	return ncclSuccess;
}

SN_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	struct sn_comm *c = live(comm, "ncclCommAbort");
	if (!c)
		return ncclInvalidArgument;
	unsigned expect = SN_LIVE;
	if (!atomic_compare_exchange_strong(&c->magic, &expect, SN_DEAD))
		return live(comm, "ncclCommAbort (concurrently)") ? ncclSuccess : ncclInvalidArgument;
	atomic_store(&c->aborted, 1);
	if (c->seg)
		atomic_store(&c->seg->r[c->rank].aborted, 1); /* peers stop waiting for us */
	pthread_mutex_lock(&c->mu);
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	stop_thread(c);
	if (c->name[0])
		shm_unlink(c->name);
	write_stats(c, 1);
	sn_unref(c);
	return ncclSuccess;
}

/* ---- collectives and groups */

struct grp_ent {
	struct sn_comm *c;
	CUstream stream;
	int n, cap;
	struct sn_op *ops;
};
static __thread int grp_depth;
static __thread struct grp_ent *grp;
static __thread int grp_n;

static void grp_free(void)
{
	for (int i = 0; i < grp_n; i++)
		free(grp[i].ops);
	free(grp);
	grp = NULL;
	grp_n = 0;
}

/* Hands a launch to the stream: now (blocking) or through the comm's thread. */
static ncclResult_t launch(struct sn_comm *c, CUstream s, const struct sn_op *ops, int n)
{
	struct sn_launch *l = calloc(1, sizeof *l + (size_t)n * sizeof *ops);
	if (!l)
		return ncclSystemError;
	l->c = c;
	l->stream = s;
	l->n = n;
	memcpy(l->op, ops, (size_t)n * sizeof *ops);
	if (c->blocking)
		return enqueue(c, l);
	pthread_mutex_lock(&c->mu);
	atomic_store(&c->state, ncclInProgress);
	c->pending = l;
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	return ncclInProgress;
}

static ncclResult_t check_ptr(struct sn_comm *c, const char *fn, const char *which, const void *p, size_t bytes)
{
	unsigned type = 0;
	if (!bytes)
		return ncclSuccess;
	if (!p) {
		sn_set_error(c, 0, "%s: %s is NULL", fn, which);
		return ncclInvalidArgument;
	}
	if (drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, (CUdeviceptr)(uintptr_t)p) != CUDA_SUCCESS) {
		sn_set_error(c, 0, "%s: %s %p is not device memory", fn, which, p);
		return ncclInvalidArgument;
	}
	if (drv.cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
				      (CUdeviceptr)(uintptr_t)p + bytes - 1) != CUDA_SUCCESS) {
		sn_set_error(c, 1, "%s: %s %p + %zu bytes runs past device memory (a count too large?)", fn, which, p,
			     bytes);
		return ncclInvalidArgument;
	}
	return ncclSuccess;
}

static ncclResult_t collective(ncclComm_t comm, const char *fn, struct sn_op *op, CUstream s)
{
	struct sn_comm *c = live(comm, fn);
	if (!c)
		return ncclInvalidArgument;
	int st = atomic_load(&c->state);
	if (st == ncclInProgress) {
		sn_set_error(c, 1, "%s on rank %d while the communicator's previous call is still in progress (poll "
			     "ncclCommGetAsyncError until ncclSuccess first)", fn, c->rank);
		return ncclInvalidUsage;
	}
	if (st != ncclSuccess)
		return (ncclResult_t)st;
	size_t es = sn_dtype_size(op->dtype);
	if (!es || (op->kind == SN_ALLREDUCE && op->dtype != ncclFloat32 && op->dtype != ncclFloat16 &&
		    op->dtype != ncclBfloat16 && op->dtype != ncclFloat64)) {
		sn_set_error(c, 1, "%s: data type %d is not implemented by the CPU device's NCCL stand-in", fn, (int)op->dtype);
		return ncclInvalidArgument;
	}
	if (op->kind == SN_ALLREDUCE && op->redop != ncclSum && op->redop != ncclAvg && op->redop != ncclMax &&
	    op->redop != ncclMin) {
		sn_set_error(c, 1, "%s: reduction %d is not implemented by the CPU device's NCCL stand-in", fn,
			     (int)op->redop);
		return ncclInvalidArgument;
	}
	if (op->kind == SN_BROADCAST && (op->root < 0 || op->root >= c->nranks)) {
		sn_set_error(c, 0, "%s: root %d is not a rank of %d", fn, op->root, c->nranks);
		return ncclInvalidArgument;
	}
	if (op->count > SIZE_MAX / es)
		return ncclInvalidArgument;
	ncclResult_t r;
	if ((op->kind == SN_ALLREDUCE || c->rank == op->root) &&
	    (r = check_ptr(c, fn, "sendbuff", op->send, op->count * es)) != ncclSuccess)
		return r;
	if ((r = check_ptr(c, fn, "recvbuff", op->recv, op->count * es)) != ncclSuccess)
		return r;
	CUcontext sctx = NULL;
	CUresult e = drv.cuStreamGetCtx(s, &sctx);
	if (e != CUDA_SUCCESS)
		return cuda_fail(c, e, fn);
	if (sctx != c->ctx) {
		sn_set_error(c, 0, "Cuda failure 400 'invalid resource handle' in %s: the stream belongs to another "
			     "context than the device's primary one, which NCCL uses", fn);
		return ncclUnhandledCudaError;
	}
	op->opno = ++c->opno;
	if (!grp_depth)
		return launch(c, s, op, 1);
	struct grp_ent *g = NULL;
	for (int i = 0; i < grp_n; i++)
		if (grp[i].c == c)
			g = &grp[i];
	if (!g) {
		struct grp_ent *ng = realloc(grp, (size_t)(grp_n + 1) * sizeof *grp);
		if (!ng)
			return ncclSystemError;
		grp = ng;
		g = &grp[grp_n++];
		memset(g, 0, sizeof *g);
		g->c = c;
		g->stream = s;
	}
	if (g->stream != s) {
		sn_set_error(c, 1, "%s: the stand-in runs a group's collectives of one communicator on one stream; got "
			     "two streams", fn);
		return ncclInvalidUsage;
	}
	if (g->n == g->cap) {
		int cap = g->cap ? 2 * g->cap : 8;
		struct sn_op *o = realloc(g->ops, (size_t)cap * sizeof *o);
		if (!o)
			return ncclSystemError;
		g->ops = o;
		g->cap = cap;
	}
	g->ops[g->n++] = *op;
	return ncclSuccess;
}

SN_EXPORT ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
				     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
	struct sn_op o = { SN_ALLREDUCE, sendbuff, recvbuff, count, datatype, op, 0, 0 };
	return collective(comm, "ncclAllReduce", &o, (CUstream)stream);
}

SN_EXPORT ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
				     int root, ncclComm_t comm, cudaStream_t stream)
{
	struct sn_op o = { SN_BROADCAST, sendbuff, recvbuff, count, datatype, ncclSum, root, 0 };
	return collective(comm, "ncclBroadcast", &o, (CUstream)stream);
}

SN_EXPORT ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
				 cudaStream_t stream)
{
	return ncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

SN_EXPORT ncclResult_t ncclGroupStart(void)
{
	grp_depth++;
	return ncclSuccess;
}

SN_EXPORT ncclResult_t ncclGroupEnd(void)
{
	ncclResult_t ret = ncclSuccess;
	if (grp_depth == 0) {
		sn_set_error(NULL, 1, "ncclGroupEnd without ncclGroupStart");
		return ncclInvalidUsage;
	}
	if (--grp_depth > 0)
		return ncclSuccess;
	for (int i = 0; i < grp_n; i++) {
		ncclResult_t r = launch(grp[i].c, grp[i].stream, grp[i].ops, grp[i].n);
		if (r != ncclSuccess && (ret == ncclSuccess || ret == ncclInProgress))
			ret = r;
	}
	grp_free();
	return ret;
}
