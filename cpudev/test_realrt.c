/* SPDX-License-Identifier: MIT
 *
 * test_realrt.c - what a newer CUDA runtime and PyTorch's wheel (torch 2.15,
 * cudart 13.2) ask of the driver, each answered as the real driver answers
 * (issue 20; docs/cpu-device.md, docs/pytorch.md):
 *
 *   - slot 12 of the runtime interface (6bd5fb6c-...): called with no
 *     arguments from cudart 13.2's driver load, must return 0;
 *   - cuStreamGetCaptureInfo v1/v2/v3 (the caching allocator's capture
 *     check): status NONE, optional outputs zeroed;
 *   - cuLogsRegisterCallback / cuLogsUnregisterCallback;
 *   - cuThreadExchangeStreamCaptureMode (NCCL's host allocations), per thread;
 *   - a fatbin with no entry the device can run: CUDA_ERROR_NO_BINARY_FOR_GPU
 *     (not CUDA_ERROR_INVALID_IMAGE), from cuLibraryLoadData and
 *     cuModuleLoadData;
 *   - CUDA_MODULE_LOADING: cuModuleGetLoadingMode answers it (LAZY when
 *     unset), and LAZY is real: an image in the program is read when a
 *     kernel of it is first asked for (a corrupt payload loads, and fails at
 *     cuLibraryGetKernel), EAGER reads it at load.  The mode is read once per
 *     process, so each mode runs in a re-executed child;
 *   - NVML beside the driver (libnvidia-ml.so.1): what PyTorch's driver API
 *     requires of it, and the fabric query expandable segments make.
 *
 * Linked against build/cpudev/lib/libcuda.so.1 with the test kernels'
 * fatbin (sm_80, sm_90, sm_100, compute_100) embedded.
 */
#define CHECK_MAIN
#include "check.h"

#include <cuda.h>
#include <dlfcn.h>
#include <pthread.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CU_OK(x) CHECK_EQ_INT((x), CUDA_SUCCESS)

extern const unsigned char cpudev_kernels_test_kernels_fatbin[];
extern char **environ;

static CUcontext ctx;

static void setup(void)
{
	CUdevice dev;
	if (ctx)
		return;
	REQUIRE(cuInit(0) == CUDA_SUCCESS);
	REQUIRE(cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
	REQUIRE(cuDevicePrimaryCtxRetain(&ctx, dev) == CUDA_SUCCESS);
	REQUIRE(cuCtxSetCurrent(ctx) == CUDA_SUCCESS);
}

static void uuid_parse(const char *s, CUuuid *u)
{
	int n = 0;
	for (const char *p = s; *p && n < 16; p++) {
		if (*p == '-')
			continue;
		unsigned v;
		sscanf(p, "%2x", &v);
		u->bytes[n++] = (char)v;
		p++;
	}
}

/* ---- slot 12 of the runtime interface */

TEST(runtime_interface_slot12_no_arguments_success)
{
	CUuuid u;
	const void *const *tab = NULL;
	uuid_parse("6bd5fb6c-5bf4-e74a-8987-d93912fd9df9", &u);
	CU_OK(cuGetExportTable((const void **)&tab, &u));
	REQUIRE(tab != NULL);
	CHECK_EQ_INT((int)(uintptr_t)tab[0], 13 * (int)sizeof(void *));
	CUresult (*slot12)(void) = (CUresult(*)(void))tab[12];
	CHECK_EQ_INT(slot12(), CUDA_SUCCESS); /* cudart 13.2 fails init (801) otherwise */
	CHECK_EQ_INT(slot12(), CUDA_SUCCESS); /* every process, every cudart copy */
}

/* ---- cuStreamGetCaptureInfo */

typedef CUresult (*capinfo1_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *);
typedef CUresult (*capinfo2_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **,
				size_t *);
typedef CUresult (*capinfo3_fn)(CUstream, CUstreamCaptureStatus *, cuuint64_t *, CUgraph *, const CUgraphNode **,
				const CUgraphEdgeData **, size_t *);

static void *proc(const char *name, int version, cuuint64_t flags)
{
	void *p = NULL;
	CUdriverProcAddressQueryResult st;
	if (cuGetProcAddress_v2(name, &p, version, flags, &st) != CUDA_SUCCESS)
		return NULL;
	return st == CU_GET_PROC_ADDRESS_SUCCESS ? p : NULL;
}

static void check_capinfo(CUstream s)
{
	capinfo1_fn v1 = (capinfo1_fn)proc("cuStreamGetCaptureInfo", 10010, CU_GET_PROC_ADDRESS_DEFAULT);
	capinfo2_fn v2 = (capinfo2_fn)proc("cuStreamGetCaptureInfo", 11030, CU_GET_PROC_ADDRESS_DEFAULT);
	capinfo3_fn v3 = (capinfo3_fn)proc("cuStreamGetCaptureInfo", 13020, CU_GET_PROC_ADDRESS_DEFAULT);
	capinfo3_fn v3pt = (capinfo3_fn)proc("cuStreamGetCaptureInfo", 13020, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM);
	REQUIRE(v1 && v2 && v3 && v3pt);
	CHECK(v3 != v3pt);
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	cuuint64_t id = 77;
	CU_OK(v1(s, &st, &id));
	CHECK_EQ_INT(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CU_OK(v1(s, &st, NULL));
	CUgraph g = (CUgraph)(uintptr_t)1;
	const CUgraphNode *deps = (const CUgraphNode *)(uintptr_t)1;
	const CUgraphEdgeData *edges = (const CUgraphEdgeData *)(uintptr_t)1;
	size_t n = 5;
	st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CU_OK(v2(s, &st, &id, &g, &deps, &n));
	CHECK_EQ_INT(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CHECK(g == NULL && deps == NULL && n == 0);
	g = (CUgraph)(uintptr_t)1, deps = (const CUgraphNode *)(uintptr_t)1, n = 5;
	st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CU_OK(v3(s, &st, &id, &g, &deps, &edges, &n));
	CHECK_EQ_INT(st, CU_STREAM_CAPTURE_STATUS_NONE);
	CHECK(g == NULL && deps == NULL && edges == NULL && n == 0);
	CU_OK(v3pt(s, &st, NULL, NULL, NULL, NULL, NULL));
	CHECK_EQ_INT(v3(s, NULL, NULL, NULL, NULL, NULL, NULL), CUDA_ERROR_INVALID_VALUE);
}

TEST(stream_capture_info_all_versions)
{
	setup();
	CUstream s;
	CU_OK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	check_capinfo(s);
	check_capinfo(NULL);
	check_capinfo(CU_STREAM_LEGACY);
	CU_OK(cuStreamDestroy(s));
	/* what cuda.h's cuStreamGetCaptureInfo names (the _v3 export) */
	CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_ACTIVE;
	CU_OK(cuStreamGetCaptureInfo(NULL, &st, NULL, NULL, NULL, NULL, NULL));
	CHECK_EQ_INT(st, CU_STREAM_CAPTURE_STATUS_NONE);
}

/* NCCL's ncclCudaHostCalloc wraps cudaHostAlloc in a pair of
 * cuThreadExchangeStreamCaptureMode calls (relax, then restore): the
 * thread's mode, GLOBAL by default, is exchanged, per thread. */
static void *other_thread_mode(void *arg)
{
	CUstreamCaptureMode *m = arg;
	*m = CU_STREAM_CAPTURE_MODE_THREAD_LOCAL;
	if (cuThreadExchangeStreamCaptureMode(m) != CUDA_SUCCESS)
		*m = (CUstreamCaptureMode)-1;
	return NULL;
}

TEST(thread_exchange_stream_capture_mode)
{
	setup();
	CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
	CU_OK(cuThreadExchangeStreamCaptureMode(&m));
	CHECK_EQ_INT(m, CU_STREAM_CAPTURE_MODE_GLOBAL);
	pthread_t t;
	CUstreamCaptureMode other;
	REQUIRE(pthread_create(&t, NULL, other_thread_mode, &other) == 0);
	pthread_join(t, NULL);
	CHECK_EQ_INT(other, CU_STREAM_CAPTURE_MODE_GLOBAL); /* its own mode, not this thread's RELAXED */
	CU_OK(cuThreadExchangeStreamCaptureMode(&m));        /* restore */
	CHECK_EQ_INT(m, CU_STREAM_CAPTURE_MODE_RELAXED);
	CHECK_EQ_INT(cuThreadExchangeStreamCaptureMode(NULL), CUDA_ERROR_INVALID_VALUE);
	m = (CUstreamCaptureMode)7;
	CHECK_EQ_INT(cuThreadExchangeStreamCaptureMode(&m), CUDA_ERROR_INVALID_VALUE);
}

/* cuDNN 9's cudnnCreate asks for table 21318c60 and fails with
 * CUDNN_STATUS_NOT_INITIALIZED when it is NOT_FOUND; it calls none of its
 * slots (each says so, and returns NOT_SUPPORTED, if ever called). */
TEST(cudnn_table_exists)
{
	CUuuid u;
	const void *const *tab = NULL;
	uuid_parse("21318c60-9714-3248-8ca6-41ff7324c8f2", &u);
	CU_OK(cuGetExportTable((const void **)&tab, &u));
	REQUIRE(tab != NULL);
	CUresult (*slot)(void) = (CUresult(*)(void))tab[3];
	CHECK_EQ_INT(slot(), CUDA_ERROR_NOT_SUPPORTED);
	uuid_parse("21318c60-9714-3248-8ca6-41ff7324c8f3", &u); /* control: one bit off */
	CHECK_EQ_INT(cuGetExportTable((const void **)&tab, &u), CUDA_ERROR_NOT_FOUND);
}

/* ---- cuLogsRegisterCallback */

static void CUDA_CB log_cb(void *data, CUlogLevel level, char *message, size_t length)
{
	(void)level, (void)message, (void)length;
	++*(int *)data;
}

TEST(logs_callbacks)
{
	setup();
	typedef CUresult (*reg_fn)(CUlogsCallback, void *, CUlogsCallbackHandle *);
	typedef CUresult (*unreg_fn)(CUlogsCallbackHandle);
	reg_fn reg = (reg_fn)proc("cuLogsRegisterCallback", 12090, CU_GET_PROC_ADDRESS_DEFAULT);
	unreg_fn unreg = (unreg_fn)proc("cuLogsUnregisterCallback", 12090, CU_GET_PROC_ADDRESS_DEFAULT);
	REQUIRE(reg && unreg);
	int calls = 0;
	CUlogsCallbackHandle a = NULL, b = NULL;
	CU_OK(reg(log_cb, &calls, &a));
	CU_OK(reg(log_cb, &calls, &b));
	CHECK(a != NULL && b != NULL && a != b);
	CHECK_EQ_INT(reg(NULL, &calls, &a), CUDA_ERROR_INVALID_VALUE);
	CU_OK(unreg(a));
	CHECK_EQ_INT(unreg(a), CUDA_ERROR_INVALID_VALUE); /* already removed */
	CU_OK(unreg(b));
	CHECK_EQ_INT(unreg(NULL), CUDA_ERROR_INVALID_VALUE);
	CHECK_EQ_INT(calls, 0);
}

/* ---- images: the fatbin's first container, copied and edited */

static size_t fatbin_size(const unsigned char *fb)
{
	uint16_t hdr;
	uint64_t body;
	memcpy(&hdr, fb + 6, 2);
	memcpy(&body, fb + 8, 8);
	return hdr + body;
}

/* Calls fn(entry, ctx) on each entry of the container at fb. */
static void fatbin_each_entry(unsigned char *fb, void (*fn)(unsigned char *, void *), void *arg)
{
	uint16_t hdr;
	memcpy(&hdr, fb + 6, 2);
	size_t end = fatbin_size(fb);
	for (size_t off = hdr; off + 64 <= end;) {
		uint32_t eh;
		uint64_t payload;
		memcpy(&eh, fb + off + 4, 4);
		memcpy(&payload, fb + off + 8, 8);
		fn(fb + off, arg);
		off += eh + payload;
	}
}

static void arch_90_to_100(unsigned char *e, void *arg)
{
	uint32_t arch;
	memcpy(&arch, e + 28, 4);
	if (arch == 90) {
		arch = 100;
		memcpy(e + 28, &arch, 4);
		++*(int *)arg;
	}
}

/* Fills the payload of the sm_90 ELF entry with junk (the headers stay). */
static void smash_sm90(unsigned char *e, void *arg)
{
	uint16_t kind;
	uint32_t arch, eh;
	uint64_t payload;
	memcpy(&kind, e, 2);
	memcpy(&eh, e + 4, 4);
	memcpy(&payload, e + 8, 8);
	memcpy(&arch, e + 28, 4);
	if (kind == 2 && arch == 90) {
		memset(e + eh, 0xa5, payload);
		++*(int *)arg;
	}
}

TEST(no_binary_for_gpu)
{
	setup();
	size_t n = fatbin_size(cpudev_kernels_test_kernels_fatbin);
	unsigned char *img = malloc(n);
	REQUIRE(img != NULL);
	memcpy(img, cpudev_kernels_test_kernels_fatbin, n);
	CUlibrary lib;
	CUmodule mod;
	CU_OK(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0)); /* the copy itself is fine */
	CU_OK(cuLibraryUnload(lib));
	int edited = 0;
	fatbin_each_entry(img, arch_90_to_100, &edited);
	CHECK_EQ_INT(edited, 1);
	/* sm_80, sm_100, compute_100 and now a second sm_100: nothing for sm_90 */
	CHECK_EQ_INT(cuLibraryLoadData(&lib, img, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_NO_BINARY_FOR_GPU);
	CHECK_EQ_INT(cuModuleLoadData(&mod, img), CUDA_ERROR_NO_BINARY_FOR_GPU);
	free(img);
}

/* ---- NVML, as PyTorch's c10/cuda/driver_api.cpp asks for it */

TEST(nvml_as_pytorch_asks)
{
	char path[4200], self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	REQUIRE(n > 0);
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(path, sizeof(path), "%s/lib/libnvidia-ml.so.1", self);
	void *h = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
	REQUIRE(h != NULL);
	static const char *const required[] = {
		"nvmlInit_v2", "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetNvLinkRemoteDeviceType",
		"nvmlDeviceGetNvLinkRemotePciInfo_v2", "nvmlDeviceGetComputeRunningProcesses",
		"nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetGpuFabricInfoV", "nvmlShutdown",
	};
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		CHECK(dlsym(h, required[i]) != NULL);
	int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
	int (*by_pci)(const char *, void **) = (int (*)(const char *, void **))dlsym(h, "nvmlDeviceGetHandleByPciBusId_v2");
	int (*fabric)(void *, void *) = (int (*)(void *, void *))dlsym(h, "nvmlDeviceGetGpuFabricInfoV");
	int (*drv)(int *) = (int (*)(int *))dlsym(h, "nvmlSystemGetCudaDriverVersion_v2");
	int (*procs)(void *, unsigned *, void *) = (int (*)(void *, unsigned *, void *))dlsym(h,
		"nvmlDeviceGetComputeRunningProcesses");
	REQUIRE(init && by_pci && fabric && drv && procs);
	void *dev = NULL;
	CHECK_EQ_INT(by_pci("00000000:01:00.0", &dev), 1); /* NVML_ERROR_UNINITIALIZED before init */
	CHECK_EQ_INT(init(), 0);
	CHECK_EQ_INT(by_pci("00000000:01:00.0", &dev), 0);
	REQUIRE(dev != NULL);
	struct { unsigned version; unsigned char uuid[16]; int status; unsigned clique; unsigned char state;
		 unsigned health; } fi;
	memset(&fi, 0xff, sizeof(fi));
	fi.version = 0x2000000u | (unsigned)sizeof(fi);
	CHECK_EQ_INT(fabric(dev, &fi), 0);
	CHECK_EQ_INT(fi.state, 0); /* NOT_SUPPORTED: PyTorch falls back to POSIX fds */
	int v = 0;
	CHECK_EQ_INT(drv(&v), 0);
	int dv = 0;
	CU_OK(cuDriverGetVersion(&dv));
	CHECK_EQ_INT(v, dv);
	unsigned count = 7;
	CHECK_EQ_INT(procs(dev, &count, NULL), 0);
	CHECK_EQ_INT(count, 0);
	dlclose(h);
}

/* ---- loading mode, in a child per mode */

static unsigned char lazy_image[1 << 20]; /* in the program's .bss: lives as long as the program */

static int mode_child(const char *mode)
{
	if (setjmp(check_jmp_))
		return 1; /* a REQUIRE failed */
	setup();
	CUmoduleLoadingMode m = (CUmoduleLoadingMode)-1;
	CU_OK(cuModuleGetLoadingMode(&m));
	int lazy = !mode || strcmp(mode, "EAGER") != 0;
	CHECK_EQ_INT(m, lazy ? CU_MODULE_LAZY_LOADING : CU_MODULE_EAGER_LOADING);

	/* a good image: its kernel table is read when a kernel is asked for */
	CUlibrary good, bad;
	CUkernel k;
	CU_OK(cuLibraryLoadData(&good, cpudev_kernels_test_kernels_fatbin, NULL, NULL, 0, NULL, NULL, 0));
	CHECK_EQ_INT(cuLibraryGetKernel(&k, good, "no_such_kernel"), CUDA_ERROR_NOT_FOUND);

	size_t n = fatbin_size(cpudev_kernels_test_kernels_fatbin);
	REQUIRE(n <= sizeof(lazy_image));
	memcpy(lazy_image, cpudev_kernels_test_kernels_fatbin, n);
	int smashed = 0;
	fatbin_each_entry(lazy_image, smash_sm90, &smashed);
	CHECK_EQ_INT(smashed, 1);
	CUresult rc = cuLibraryLoadData(&bad, lazy_image, NULL, NULL, 0, NULL, NULL, 0);
	if (lazy) {
		CHECK_EQ_INT(rc, CUDA_SUCCESS); /* not read yet */
		CHECK_EQ_INT(cuLibraryGetKernel(&k, bad, "no_such_kernel"), CUDA_ERROR_INVALID_IMAGE);
		CHECK_EQ_INT(cuLibraryGetKernel(&k, bad, "no_such_kernel"), CUDA_ERROR_INVALID_IMAGE);
		CU_OK(cuLibraryUnload(bad));
		/* a buffer the program owns is read at load, lazy or not */
		unsigned char *heap = malloc(n);
		REQUIRE(heap != NULL);
		memcpy(heap, lazy_image, n);
		CHECK_EQ_INT(cuLibraryLoadData(&bad, heap, NULL, NULL, 0, NULL, NULL, 0), CUDA_ERROR_INVALID_IMAGE);
		free(heap);
	} else {
		CHECK_EQ_INT(rc, CUDA_ERROR_INVALID_IMAGE);
	}
	CU_OK(cuLibraryUnload(good));
	return check_failed_ ? 1 : 0;
}

static void run_mode(const char *mode)
{
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	REQUIRE(n > 0);
	self[n] = 0;
	if (mode)
		setenv("CUDA_MODULE_LOADING", mode, 1);
	else
		unsetenv("CUDA_MODULE_LOADING");
	char *argv[] = {self, (char *)"--mode-child", (char *)(mode ? mode : "unset"), NULL};
	pid_t pid;
	REQUIRE(posix_spawn(&pid, self, NULL, NULL, argv, environ) == 0);
	int status = 0;
	REQUIRE(waitpid(pid, &status, 0) == pid);
	unsetenv("CUDA_MODULE_LOADING");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

TEST(loading_mode_lazy_when_unset) { run_mode(NULL); }
TEST(loading_mode_lazy) { run_mode("LAZY"); }
TEST(loading_mode_eager) { run_mode("EAGER"); }

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--mode-child"))
		return mode_child(strcmp(argv[2], "unset") ? argv[2] : NULL);
	return check_main(argc, argv);
}
