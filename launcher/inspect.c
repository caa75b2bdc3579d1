/* SPDX-License-Identifier: MIT
 *
 * inspect.c - `ddprun inspect [--steps N] [--out FILE] PROGRAM ARGS...`: runs
 * the program once, alone, with libddp.so preloaded and DDP_INSPECT=FILE;
 * libddp records every kernel launch against its allocation table and, at
 * exit (or after N optimizer steps, when it stops the program), writes what
 * it learned: kernels by launch count, allocations by size, which kernels
 * read and write which buffers, the optimizer kernels it recognised and its
 * guess of the parameter and gradient buffers.  inspect prints that report.
 *
 * libddp.so is found next to ddprun (<bindir>/../lib/libddp.so) unless
 * DDP_LIBDDP names it.  The device is picked as `ddprun -n 1` picks it
 * (devices.c; --device or DDPRUN_DEVICE, default auto): the first GPU, or
 * without one the CPU device (<bindir>/../cpudev/lib on LD_LIBRARY_PATH), said
 * in one line.
 *
 * Contract: a command of ddprun; one child process, waited for.
 */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "launch.h"

static int find_lib(char *out, size_t n)
{
	const char *env = getenv("DDP_LIBDDP");
	char exe[PATH_MAX];
	ssize_t len;

	if (env && *env) {
		snprintf(out, n, "%s", env);
		return access(out, R_OK) == 0 ? 0 : -1;
	}
	len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (len <= 0)
		return -1;
	exe[len] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if ((size_t)snprintf(out, n, "%.*s/../lib/libddp.so", (int)(n > 32 ? n - 32 : 0), exe) >= n)
		return -1;
	return access(out, R_OK) == 0 ? 0 : -1;
}

/* The device for the one run, as ddprun -n 1 would plan it. */
static int plan_device(const char *device, struct launch_devices *d)
{
	struct launch_opts o;
	char exe[PATH_MAX];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);

	memset(&o, 0, sizeof o);
	o.nproc_per_node = 1;
	o.device = LAUNCH_DEVICE_AUTO;
	if (!device)
		device = getenv("DDPRUN_DEVICE");
	if (device && *device) {
		if (!strcmp(device, "cpu"))
			o.device = LAUNCH_DEVICE_CPU;
		else if (!strcmp(device, "gpu"))
			o.device = LAUNCH_DEVICE_GPU;
		else if (strcmp(device, "auto") != 0) {
			launch_msg("inspect: --device '%s' is not auto, gpu or cpu", device);
			return 2;
		}
	}
	exe[len > 0 ? len : 0] = '\0';
	if (launch_devices_plan(&o, len > 0 ? dirname(exe) : ".", 0, d) != DDP_OK) {
		launch_devices_free(d);
		return 1;
	}
	return 0;
}

int launch_inspect_main(int argc, char **argv)
{
	const char *steps = NULL, *outp = NULL, *device = NULL;
	struct launch_devices dev;
	char lib[PATH_MAX], tmp[] = "/tmp/ddprun-inspect.XXXXXX";
	int i = 1, fd = -1, status = 0, rc = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("usage: ddprun inspect [--steps N] [--out FILE] [--device auto|gpu|cpu] PROGRAM [ARGS...]\n"
			       "  runs PROGRAM once with libddp and prints its kernels, buffers, which\n"
			       "  kernels read/write which buffers, and the optimizer, parameter and\n"
			       "  gradient buffers it guesses; --steps N stops after N optimizer steps\n");
			return 0;
		} else if (!strcmp(argv[i], "--steps") && i + 1 < argc) {
			steps = argv[++i];
			char *end;
			long v = strtol(steps, &end, 10);
			if (*end || v < 1 || v > 1000000) {
				launch_msg("inspect: --steps '%s' is not a number in [1, 1000000]", steps);
				return 2;
			}
		} else if (!strcmp(argv[i], "--out") && i + 1 < argc) {
			outp = argv[++i];
		} else if (!strcmp(argv[i], "--device") && i + 1 < argc) {
			device = argv[++i];
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else {
			launch_msg("inspect: unknown option '%s'; usage: ddprun inspect [--steps N] "
				   "[--out FILE] PROGRAM [ARGS...]",
				   argv[i]);
			return 2;
		}
	}
	if (i >= argc) {
		launch_msg("inspect: no program given; usage: ddprun inspect [--steps N] [--out FILE] "
			   "PROGRAM [ARGS...]");
		return 2;
	}
	if (find_lib(lib, sizeof lib)) {
		launch_msg("inspect: cannot find libddp.so next to ddprun (%s); set DDP_LIBDDP", lib);
		return 1;
	}
	int prc = plan_device(device, &dev);
	if (prc)
		return prc;
	if (!outp) {
		fd = mkstemp(tmp);
		if (fd < 0) {
			launch_msg("inspect: cannot create a temporary file: %s", strerror(errno));
			launch_devices_free(&dev);
			return 1;
		}
		close(fd);
		outp = tmp;
	}
	pid_t pid = fork();
	if (pid < 0) {
		launch_msg("inspect: fork failed: %s", strerror(errno));
		goto out;
	}
	if (pid == 0) {
		const char *old = getenv("LD_PRELOAD");
		char pre[2 * PATH_MAX];
		snprintf(pre, sizeof pre, "%s%s%s", lib, old && *old ? ":" : "", old ? old : "");
		setenv("LD_PRELOAD", pre, 1);
		if (dev.use_gpu) {
			setenv("CUDA_VISIBLE_DEVICES", dev.gpu_ids[0], 1);
		} else {
			const char *lp = getenv("LD_LIBRARY_PATH");
			char path[2 * PATH_MAX];
			snprintf(path, sizeof path, "%s%s%s", dev.simcuda_dir, lp && *lp ? ":" : "",
				 lp ? lp : "");
			setenv("LD_LIBRARY_PATH", path, 1);
		}
		setenv("DDP_INSPECT", outp, 1);
		if (steps)
			setenv("DDP_INSPECT_STEPS", steps, 1);
		execvp(argv[i], argv + i);
		launch_msg("inspect: cannot run %s: %s", argv[i], strerror(errno));
		_exit(127);
	}
	(void)DDP_EINTR_RETRY(waitpid(pid, &status, 0));
	if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
		goto out;
	}
	FILE *f = fopen(outp, "r");
	char buf[4096];
	size_t n, total = 0;
	while (f && (n = fread(buf, 1, sizeof buf, f)) > 0) {
		fwrite(buf, 1, n, stdout);
		total += n;
	}
	if (f)
		fclose(f);
	if (!total) {
		launch_msg("inspect: %s wrote no report (%s); did it reach the CUDA driver?", argv[i],
			   WIFSIGNALED(status) ? "it died on a signal" : "it exited before libddp started");
		goto out;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) != 0 && !steps)
		launch_msg("inspect: note: %s exited with status %d", argv[i], WEXITSTATUS(status));
	rc = 0;
out:
	if (outp == tmp)
		unlink(tmp);
	launch_devices_free(&dev);
	return rc;
}
