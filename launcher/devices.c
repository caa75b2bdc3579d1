/* SPDX-License-Identifier: MIT
 *
 * devices.c - which device each local rank uses.
 *
 * GPUs are counted in a forked child that dlopens libcuda.so.1 and calls
 * cuInit/cuDeviceGetCount, so ddprun itself never initialises CUDA (a CUDA
 * context in the parent would be inherited by nothing useful and costs
 * memory on GPU 0).  DDPRUN_FAKE_GPUS=N replaces the count (tests of the
 * launcher on machines without a GPU).  The GPU ids handed out are, in order:
 * --gpus, else the entries of an inherited CUDA_VISIBLE_DEVICES, else 0..N-1;
 * local rank k gets entry k mod N (with a warning when ranks share GPUs).
 * Without GPUs the ranks run on the CPU device: build/cpudev/lib/libcuda.so.1,
 * found next to the ddprun binary (<bin>/../cpudev/lib).
 *
 * Contract: main thread, before the store starts any thread (fork here).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "launch.h"

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);

int launch_devices_detect(void)
{
	const char *fake = getenv("DDPRUN_FAKE_GPUS");
	int p[2], n = 0;
	pid_t pid;

	if (fake && *fake)
		return atoi(fake);
	if (pipe2(p, O_CLOEXEC) != 0)
		return 0;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return 0;
	}
	if (pid == 0) {
		int count = 0;
		void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
		if (h) {
			cu_init_fn init = (cu_init_fn)dlsym(h, "cuInit");
			cu_count_fn cnt = (cu_count_fn)dlsym(h, "cuDeviceGetCount");
			if (init && cnt && init(0) == 0 && cnt(&count) != 0)
				count = 0;
		}
		if (write(p[1], &count, sizeof count) < 0)
			_exit(1);
		_exit(0);
	}
	close(p[1]);
	struct pollfd pfd = { .fd = p[0], .events = POLLIN };
	if (poll(&pfd, 1, 20000) == 1 && read(p[0], &n, sizeof n) != sizeof n)
		n = 0;
	close(p[0]);
	kill(pid, SIGKILL); /* harmless if it already exited; bounded wait below */
	(void)DDP_EINTR_RETRY(waitpid(pid, NULL, 0));
	return n < 0 ? 0 : n;
}

/* "0,2-3" (order kept) -> ids.  Returns DDP_ERR_INVALID on bad syntax. */
static ddp_result parse_gpu_list(const char *s, char ***ids, int *n)
{
	const char *p = s;
	*ids = NULL;
	*n = 0;
	while (*p) {
		char *end;
		if (*p < '0' || *p > '9')
			return DDP_ERR_INVALID;
		long a = strtol(p, &end, 10), b = a;
		p = end;
		if (*p == '-') {
			p++;
			if (*p < '0' || *p > '9')
				return DDP_ERR_INVALID;
			b = strtol(p, &end, 10);
			p = end;
		}
		if (b < a || b > 4095)
			return DDP_ERR_INVALID;
		if (*p == ',' && p[1])
			p++;
		else if (*p)
			return DDP_ERR_INVALID;
		for (long g = a; g <= b; g++) {
			char **nv = realloc(*ids, sizeof *nv * (size_t)(*n + 1));
			if (!nv)
				return DDP_ERR_NOMEM;
			*ids = nv;
			if (asprintf(&nv[*n], "%ld", g) < 0)
				return DDP_ERR_NOMEM;
			(*n)++;
		}
	}
	return *n ? DDP_OK : DDP_ERR_INVALID;
}

/* Splits an inherited CUDA_VISIBLE_DEVICES ("0,1" or "GPU-uuid,...") into
 * ids, each malloc'd (free with free_ids). */
static ddp_result split_visible(const char *s, char ***ids, int *n)
{
	ddp_result rc = DDP_OK;
	char *copy = strdup(s);
	*ids = NULL;
	*n = 0;
	if (!copy)
		return DDP_ERR_NOMEM;
	for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char **nv = realloc(*ids, sizeof *nv * (size_t)(*n + 1));
		if (!nv || !(t = strdup(t))) {
			if (nv)
				*ids = nv;
			rc = DDP_ERR_NOMEM;
			break;
		}
		*ids = nv;
		nv[(*n)++] = t;
	}
	free(copy);
	return rc;
}

static void free_ids(char **ids, int n)
{
	for (int i = 0; i < n; i++)
		free(ids[i]);
	free(ids);
}

void launch_devices_free(struct launch_devices *d)
{
	free_ids(d->gpu_ids, d->ngpus);
	free(d->simcuda_dir);
	d->gpu_ids = NULL;
	d->ngpus = 0;
	d->simcuda_dir = NULL;
}

ddp_result launch_devices_plan(const struct launch_opts *o, const char *self_dir, int no_preload,
			       struct launch_devices *d)
{
	int detected;

	memset(d, 0, sizeof *d);
	if (o->device == LAUNCH_DEVICE_CPU && o->gpus) {
		launch_msg("--gpus %s and --device cpu do not go together", o->gpus);
		return DDP_ERR_INVALID;
	}
	detected = o->device == LAUNCH_DEVICE_CPU ? 0 : launch_devices_detect();
	if (o->gpus) {
		if (strcmp(o->gpus, "all") != 0 && parse_gpu_list(o->gpus, &d->gpu_ids, &d->ngpus) != DDP_OK) {
			launch_msg("--gpus '%s' is not a GPU list like all, 0,1 or 0-3", o->gpus);
			return DDP_ERR_INVALID;
		}
		if (detected == 0) {
			launch_msg("--gpus %s: no GPU was found (no driver, or none visible); "
				   "use --device cpu for the CPU device",
				   o->gpus);
			return DDP_ERR_INVALID;
		}
		if (strcmp(o->gpus, "all") == 0) {
			char buf[32];
			snprintf(buf, sizeof buf, "0-%d", detected - 1);
			DDP_CHECK(parse_gpu_list(buf, &d->gpu_ids, &d->ngpus));
		}
		for (int i = 0; i < d->ngpus; i++) {
			if (atoi(d->gpu_ids[i]) >= detected) {
				launch_msg("--gpus %s names GPU %s but only %d GPU%s visible", o->gpus,
					   d->gpu_ids[i], detected, detected == 1 ? " is" : "s are");
				return DDP_ERR_INVALID;
			}
		}
		/* with an inherited CUDA_VISIBLE_DEVICES, --gpus indexes into it */
		const char *vis = getenv("CUDA_VISIBLE_DEVICES");
		if (vis && *vis) {
			char **vids;
			int nv;
			DDP_CHECK(split_visible(vis, &vids, &nv));
			for (int i = 0; i < d->ngpus; i++) {
				int k = atoi(d->gpu_ids[i]);
				char *id = k < nv ? strdup(vids[k]) : NULL;
				if (id) {
					free(d->gpu_ids[i]);
					d->gpu_ids[i] = id;
				}
			}
			free_ids(vids, nv);
		}
	} else if (detected > 0) {
		const char *vis = getenv("CUDA_VISIBLE_DEVICES");
		if (vis && *vis) {
			DDP_CHECK(split_visible(vis, &d->gpu_ids, &d->ngpus));
			while (d->ngpus > detected)
				free(d->gpu_ids[--d->ngpus]);
		} else {
			char buf[32];
			snprintf(buf, sizeof buf, "0-%d", detected - 1);
			DDP_CHECK(parse_gpu_list(buf, &d->gpu_ids, &d->ngpus));
		}
	}

	if (o->device == LAUNCH_DEVICE_GPU && d->ngpus == 0) {
		launch_msg("--device gpu: no GPU was found (no driver, or none visible); "
			   "use --device cpu or auto");
		return DDP_ERR_INVALID;
	}
	d->use_gpu = d->ngpus > 0;
	if (d->use_gpu) {
		if (o->nproc_per_node > d->ngpus)
			launch_msg("warning: %ld ranks share %d GPU%s (round-robin); NCCL may refuse "
				   "two ranks on one GPU (see docs/launcher.md)",
				   o->nproc_per_node, d->ngpus, d->ngpus == 1 ? "" : "s");
		return DDP_OK;
	}

	/* the CPU device */
	char *dir = NULL;
	if (asprintf(&dir, "%s/../cpudev/lib", self_dir) < 0)
		return DDP_ERR_NOMEM;
	char *real = realpath(dir, NULL);
	if (real) {
		free(dir);
		dir = real;
	}
	d->simcuda_dir = dir;
	if (!no_preload) {
		char *lib = NULL;
		if (asprintf(&lib, "%s/libcuda.so.1", dir) < 0)
			return DDP_ERR_NOMEM;
		int ok = access(lib, R_OK) == 0;
		if (!ok)
			launch_msg("no GPU found and the CPU device %s is not built; run make "
				   "(or use a machine with a GPU)",
				   lib);
		free(lib);
		if (!ok)
			return DDP_ERR_INVALID;
	}
	if (o->device == LAUNCH_DEVICE_AUTO)
		launch_msg("no GPU found; ranks run on the CPU device (cpudev)");
	return DDP_OK;
}
