/* SPDX-License-Identifier: MIT
 *
 * test_launch.c - modules and launches on the CPU device: real nvcc fatbins
 * (embedded by the Makefile's X.fatbin.o rule), kernels run from
 * build/cpudev/test_launch.kern.so (found next to this executable),
 * arguments marshalled by the cubin's layout through kernelParams and through
 * the extra buffer, copied at launch time; refusals (parameter size
 * mismatch, no host implementation, bad grid); a trapping kernel makes
 * CUDA_ERROR_LAUNCH_FAILED sticky (last test: it kills the context).
 *
 * main() points SIMCUDA_KERNELS at test_mismatch.kern.so (host code that does
 * not match kernels/test_mismatch_dev.cu) before the first driver call.
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#define CU_OK(x) CHECK_EQ_INT((x), CUDA_SUCCESS)

extern const unsigned char cpudev_kernels_test_kernels_fatbin[];
extern const unsigned char cpudev_kernels_test_mismatch_dev_fatbin[];

struct Mixed {
	int a;
	double b;
	char c[3];
	float f[4];
};

static CUcontext ctx;
static CUmodule mod;

static void setup(void)
{
	if (!ctx) {
		REQUIRE(cuInit(0) == CUDA_SUCCESS);
		REQUIRE(cuDevicePrimaryCtxRetain(&ctx, 0) == CUDA_SUCCESS);
	}
	REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
	if (!mod)
		REQUIRE(cuModuleLoadData(&mod, cpudev_kernels_test_kernels_fatbin) == CUDA_SUCCESS);
}

static CUfunction get(const char *name)
{
	CUfunction f = NULL;
	CUresult rc = cuModuleGetFunction(&f, mod, name);
	if (rc != CUDA_SUCCESS)
		printf("# cuModuleGetFunction(%s) = %d\n", name, (int)rc);
	return f;
}

#define SCALARS "_Z7scalarscsixfdhPxPd"

TEST(param_info_follows_the_cubin_layout)
{
	setup();
	CUfunction f = get(SCALARS);
	REQUIRE(f != NULL);
	/* char, short, int, long long, float, double, uchar, ptr, ptr */
	static const size_t off[] = { 0, 2, 4, 8, 16, 24, 32, 40, 48 };
	static const size_t size[] = { 1, 2, 4, 8, 4, 8, 1, 8, 8 };
	for (size_t i = 0; i < 9; i++) {
		size_t o = 99, s = 99;
		CU_OK(cuFuncGetParamInfo(f, i, &o, &s));
		CHECK_EQ_INT(o, off[i]);
		CHECK_EQ_INT(s, size[i]);
	}
	size_t o, s;
	CHECK_EQ_INT(cuFuncGetParamInfo(f, 9, &o, &s), CUDA_ERROR_INVALID_VALUE);
	const char *name = NULL;
	CU_OK(cuFuncGetName(&name, f));
	CHECK_EQ_STR(name, SCALARS);
	int v = 0;
	CU_OK(cuFuncGetAttribute(&v, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, f));
	CHECK_EQ_INT(v, 1024);
}

static void check_scalars(CUdeviceptr oi, CUdeviceptr od)
{
	long long vi[5];
	double vd[2];
	CU_OK(cuMemcpyDtoH(vi, oi, sizeof(vi)));
	CU_OK(cuMemcpyDtoH(vd, od, sizeof(vd)));
	CHECK_EQ_INT(vi[0], -5);
	CHECK_EQ_INT(vi[1], -30000);
	CHECK_EQ_INT(vi[2], 123456789);
	CHECK_EQ_INT(vi[3], -1234567890123ll);
	CHECK_EQ_INT(vi[4], 250);
	CHECK_NEAR(vd[0], 1.5, 0);
	CHECK_NEAR(vd[1], -2.25e100, 0);
}

TEST(scalars_of_each_size_through_kernel_params)
{
	setup();
	CUfunction f = get(SCALARS);
	REQUIRE(f != NULL);
	CUdeviceptr oi, od;
	CU_OK(cuMemAlloc(&oi, 5 * sizeof(long long)));
	CU_OK(cuMemAlloc(&od, 2 * sizeof(double)));
	char c = -5;
	short s = -30000;
	int i = 123456789;
	long long l = -1234567890123ll;
	float fl = 1.5f;
	double d = -2.25e100;
	unsigned char uc = 250;
	void *params[] = { &c, &s, &i, &l, &fl, &d, &uc, &oi, &od };
	CU_OK(cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
	CU_OK(cuCtxSynchronize());
	check_scalars(oi, od);
	CU_OK(cuMemFree(oi));
	CU_OK(cuMemFree(od));
}

TEST(scalars_through_the_extra_buffer)
{
	setup();
	CUfunction f = get(SCALARS);
	REQUIRE(f != NULL);
	CUdeviceptr oi, od;
	CU_OK(cuMemAlloc(&oi, 5 * sizeof(long long)));
	CU_OK(cuMemAlloc(&od, 2 * sizeof(double)));
	/* Build the buffer from cuFuncGetParamInfo, as a framework would. */
	unsigned char buf[64];
	memset(buf, 0xee, sizeof(buf));
	char c = -5;
	short s = -30000;
	int i = 123456789;
	long long l = -1234567890123ll;
	float fl = 1.5f;
	double d = -2.25e100;
	unsigned char uc = 250;
	const void *vals[] = { &c, &s, &i, &l, &fl, &d, &uc, &oi, &od };
	for (size_t k = 0; k < 9; k++) {
		size_t o, sz;
		CU_OK(cuFuncGetParamInfo(f, k, &o, &sz));
		memcpy(buf + o, vals[k], sz);
	}
	size_t size = 56;
	void *extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &size,
			  CU_LAUNCH_PARAM_END };
	CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, extra));
	CU_OK(cuCtxSynchronize());
	check_scalars(oi, od);
	/* a longer buffer than the parameters is fine (a shorter one too, as
	 * NCCL passes: the rest reads as zero, not testable here without a
	 * NULL pointer parameter) */
	size_t big = sizeof(buf);
	void *long_extra[] = { CU_LAUNCH_PARAM_BUFFER_POINTER, buf, CU_LAUNCH_PARAM_BUFFER_SIZE, &big,
			       CU_LAUNCH_PARAM_END };
	CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, long_extra));
	CU_OK(cuCtxSynchronize());
	check_scalars(oi, od);
	void *params[] = { &c, &s, &i, &l, &fl, &d, &uc, &oi, &od };
	CHECK_EQ_INT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, extra), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
	CU_OK(cuMemFree(oi));
	CU_OK(cuMemFree(od));
}

TEST(pointers_many_blocks_and_streams)
{
	setup();
	CUfunction f = get("_Z5saxpyifPKfPf");
	REQUIRE(f != NULL);
	enum { N = 10000 };
	static float x[N], y[N];
	for (int k = 0; k < N; k++) {
		x[k] = (float)k;
		y[k] = 1.0f;
	}
	CUdeviceptr dx, dy;
	CU_OK(cuMemAlloc(&dx, sizeof(x)));
	CU_OK(cuMemAlloc(&dy, sizeof(y)));
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CU_OK(cuMemcpyHtoDAsync(dx, x, sizeof(x), s));
	CU_OK(cuMemcpyHtoDAsync(dy, y, sizeof(y), s));
	int n = N;
	float a = 2.0f;
	void *params[] = { &n, &a, &dx, &dy };
	CU_OK(cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, s, params, NULL));
	CU_OK(cuLaunchKernel(f, (N + 127) / 128, 1, 1, 128, 1, 1, 0, s, params, NULL)); /* twice: y = 4x + 1 */
	CU_OK(cuMemcpyDtoHAsync(y, dy, sizeof(y), s));
	CU_OK(cuStreamSynchronize(s));
	int bad = 0;
	for (int k = 0; k < N; k++)
		bad += y[k] != 4.0f * (float)k + 1.0f;
	CHECK_EQ_INT(bad, 0);
	CU_OK(cuStreamDestroy(s));
	CU_OK(cuMemFree(dx));
	CU_OK(cuMemFree(dy));
}

TEST(struct_by_value)
{
	setup();
	CUfunction f = get("_Z8by_value5MixediPS_");
	REQUIRE(f != NULL);
	size_t o0, s0, o1, s1;
	CU_OK(cuFuncGetParamInfo(f, 0, &o0, &s0));
	CU_OK(cuFuncGetParamInfo(f, 1, &o1, &s1));
	CHECK_EQ_INT(s0, sizeof(struct Mixed));
	CHECK_EQ_INT(o1, sizeof(struct Mixed));
	struct Mixed m = { 7, 0.5, { 'a', 'b', 'c' }, { 1, 2, 3, 4 } }, out;
	int scale = 3;
	CUdeviceptr d;
	CU_OK(cuMemAlloc(&d, sizeof(out)));
	void *params[] = { &m, &scale, &d };
	CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	CU_OK(cuMemcpyDtoH(&out, d, sizeof(out)));
	CHECK_EQ_INT(out.a, 21);
	CHECK_NEAR(out.b, 1.5, 0);
	CHECK(out.c[0] == 'b' && out.c[1] == 'c' && out.c[2] == 'd');
	CHECK_NEAR(out.f[3], 12.0, 0);
	CU_OK(cuMemFree(d));
}

TEST(three_dimensional_grid_and_block)
{
	setup();
	CUfunction f = get("_Z6grid3dPj");
	REQUIRE(f != NULL);
	enum { GX = 3, GY = 2, GZ = 2, BX = 4, BY = 2, BZ = 3, N = GX * GY * GZ * BX * BY * BZ };
	CUdeviceptr d;
	CU_OK(cuMemAlloc(&d, N * sizeof(unsigned)));
	CU_OK(cuMemsetD32(d, 0, N));
	void *params[] = { &d };
	CU_OK(cuLaunchKernel(f, GX, GY, GZ, BX, BY, BZ, 0, NULL, params, NULL));
	unsigned v[N];
	CU_OK(cuMemcpyDtoH(v, d, sizeof(v)));
	int bad = 0;
	for (unsigned k = 0; k < N; k++)
		bad += v[k] != k + 1;
	CHECK_EQ_INT(bad, 0);
	CU_OK(cuMemFree(d));
}

TEST(bad_launch_configurations)
{
	setup();
	CUfunction f = get("plain_fill");
	REQUIRE(f != NULL);
	CUdeviceptr d;
	CU_OK(cuMemAlloc(&d, 4));
	int v = 1, n = 1;
	void *params[] = { &d, &v, &n };
	CHECK_EQ_INT(cuLaunchKernel(f, 0, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuLaunchKernel(f, 1, 1, 1, 1025, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuLaunchKernel(f, 1, 1, 1, 32, 32, 2, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuLaunchKernel(f, 1, 70000, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 1 << 20, NULL, params, NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(cuLaunchKernel((CUfunction)(void *)&v, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
		     CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cuCtxSynchronize());
	CU_OK(cuMemFree(d));
}

struct gate {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int open;
};

static void gate_wait(void *p)
{
	struct gate *g = p;
	pthread_mutex_lock(&g->mu);
	while (!g->open)
		pthread_cond_wait(&g->cv, &g->mu);
	pthread_mutex_unlock(&g->mu);
}

TEST(arguments_are_copied_at_launch)
{
	setup();
	CUfunction f = get("plain_fill");
	REQUIRE(f != NULL);
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CUdeviceptr d;
	CU_OK(cuMemAlloc(&d, 64 * sizeof(int)));
	struct gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0 };
	CU_OK(cuLaunchHostFunc(s, gate_wait, &g));
	int v = 11, n = 64;
	void *params[] = { &d, &v, &n };
	CU_OK(cuLaunchKernel(f, 2, 1, 1, 32, 1, 1, 0, s, params, NULL));
	CHECK_EQ_INT(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
	v = 22; /* the caller reuses its variables at once */
	n = 1;
	pthread_mutex_lock(&g.mu);
	g.open = 1;
	pthread_cond_broadcast(&g.cv);
	pthread_mutex_unlock(&g.mu);
	CU_OK(cuStreamSynchronize(s));
	int out[64];
	CU_OK(cuMemcpyDtoH(out, d, sizeof(out)));
	CHECK_EQ_INT(out[0], 11);
	CHECK_EQ_INT(out[63], 11);
	CU_OK(cuStreamDestroy(s));
	CU_OK(cuMemFree(d));
}

TEST(library_kernel_and_launch_ex)
{
	setup();
	CUlibrary lib;
	CU_OK(cuLibraryLoadData(&lib, cpudev_kernels_test_kernels_fatbin, NULL, NULL, 0, NULL, NULL, 0));
	CUkernel k;
	CU_OK(cuLibraryGetKernel(&k, lib, "plain_fill"));
	CUdeviceptr d;
	CU_OK(cuMemAlloc(&d, 100 * sizeof(int)));
	int v = 5, n = 100;
	void *params[] = { &d, &v, &n };
	/* A CUkernel cast to CUfunction launches, as with the driver. */
	CU_OK(cuLaunchKernel((CUfunction)(void *)k, 4, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
	CUfunction f;
	CU_OK(cuKernelGetFunction(&f, k));
	v = 6;
	CUlaunchConfig cfg = { 0 };
	cfg.gridDimX = 1, cfg.gridDimY = 1, cfg.gridDimZ = 1;
	cfg.blockDimX = 50, cfg.blockDimY = 1, cfg.blockDimZ = 1;
	CU_OK(cuLaunchKernelEx(&cfg, f, params, NULL)); /* first 50 become 6 */
	int out[100];
	CU_OK(cuMemcpyDtoH(out, d, sizeof(out)));
	CHECK_EQ_INT(out[0], 6);
	CHECK_EQ_INT(out[49], 6);
	CHECK_EQ_INT(out[50], 5);
	CHECK_EQ_INT(out[99], 5);
	size_t off = 9, size = 9;
	CU_OK(cuKernelGetParamInfo(k, 1, &off, &size));
	CHECK_EQ_INT(off, 8);
	CHECK_EQ_INT(size, 4);
	CU_OK(cuLibraryUnload(lib));
	CHECK_EQ_INT(cuLaunchKernel((CUfunction)(void *)k, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL),
		     CUDA_ERROR_INVALID_HANDLE);
	CU_OK(cuMemFree(d));
}

TEST(parameter_and_variable_size_mismatch_is_refused)
{
	setup();
	CUmodule m;
	CU_OK(cuModuleLoadData(&m, cpudev_kernels_test_mismatch_dev_fatbin));
	CUfunction f = NULL;
	CHECK_EQ_INT(cuModuleGetFunction(&f, m, "mismatch"), CUDA_ERROR_INVALID_IMAGE);
	/* "devonly" (no host code): a_refused_kernel_fails_the_process */
	CHECK_EQ_INT(cuModuleGetFunction(&f, m, "nosuchkernel"), CUDA_ERROR_NOT_FOUND);
	/* Device variables: a size that differs from the host storage's, one
	 * without host storage, one the module does not have. */
	CUdeviceptr gp = 0;
	size_t gsz = 0;
	CHECK_EQ_INT(cuModuleGetGlobal(&gp, &gsz, m, "mm_sized"), CUDA_ERROR_INVALID_IMAGE);
	CHECK_EQ_INT(cuModuleGetGlobal(&gp, &gsz, m, "mm_devonly"), CUDA_ERROR_NOT_FOUND);
	CHECK_EQ_INT(cuModuleGetGlobal(&gp, &gsz, m, "nosuchvariable"), CUDA_ERROR_NOT_FOUND);
	CU_OK(cuModuleUnload(m));
	CHECK_EQ_INT(cuModuleGetFunction(&f, m, "mismatch"), CUDA_ERROR_INVALID_HANDLE);
	static const char junk[64] = "this is not a module image at all";
	CHECK_EQ_INT(cuModuleLoadData(&m, junk), CUDA_ERROR_INVALID_IMAGE);
}

/* A process whose kernel was refused for want of host code exits 1 naming
 * ddp-cpu-kernels, whatever status it chose (sim_trace.c): this executable
 * again, as a child that looks up "devonly" and returns 0 (this process
 * never looks it up). */
TEST(a_refused_kernel_fails_the_process)
{
	pid_t pid = fork();
	if (pid == 0) {
		setenv("CPUDEV_TEST_REFUSED_CHILD", "1", 1);
		unsetenv("SIMCUDA_TIMELINE"); /* the parent's timeline test is not the child's */
		execl("/proc/self/exe", "test_launch", (char *)NULL);
		_exit(127);
	}
	int st = 0;
	CHECK(pid > 0 && waitpid(pid, &st, 0) == pid);
	CHECK_EQ_INT(WIFEXITED(st) ? WEXITSTATUS(st) : -1, 1);
}

/* Last: a trapping kernel leaves the context unusable. */
TEST(kernel_failure_is_sticky)
{
	setup();
	CUfunction f = get("trap_if");
	REQUIRE(f != NULL);
	int x = 0;
	void *params[] = { &x };
	CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL));
	CU_OK(cuCtxSynchronize());
	x = 1;
	CU_OK(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL)); /* fails later, asynchronously */
	CHECK_EQ_INT(cuCtxSynchronize(), CUDA_ERROR_LAUNCH_FAILED);
	CUdeviceptr d;
	CHECK_EQ_INT(cuMemAlloc(&d, 16), CUDA_ERROR_LAUNCH_FAILED);
	CHECK_EQ_INT(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, params, NULL), CUDA_ERROR_LAUNCH_FAILED);
}

/* The child of a_refused_kernel_fails_the_process: refused, then "all went
 * well" (0); the CPU device's destructor must make it 1. */
static int refused_child(void)
{
	CUcontext c;
	CUmodule m;
	CUfunction f;
	if (cuInit(0) || cuDevicePrimaryCtxRetain(&c, 0) || cuCtxSetCurrent(c) ||
	    cuModuleLoadData(&m, cpudev_kernels_test_mismatch_dev_fatbin))
		return 3;
	return cuModuleGetFunction(&f, m, "devonly") == CUDA_ERROR_NOT_FOUND ? 0 : 4;
}

int main(int argc, char **argv)
{
	/* The host code for test_mismatch_dev.cu's kernels: next to this exe. */
	char exe[PATH_MAX], lib[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		char *slash = strrchr(exe, '/');
		if (slash)
			*slash = 0;
		snprintf(lib, sizeof(lib), "%s/test_mismatch.kern.so", exe);
		setenv("SIMCUDA_KERNELS", lib, 1);
	}
	if (getenv("CPUDEV_TEST_REFUSED_CHILD"))
		return refused_child();
	return check_main(argc, argv);
}
