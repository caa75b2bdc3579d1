/* SPDX-License-Identifier: MIT
 *
 * sim_ctx.c - initialisation, the one CPU device, contexts (primary and
 * created) and the per-thread context stack; also the entry checks, the
 * sticky error and the fault table every other sim_*.c file uses.
 *
 * The device is device 0, compute capability 9.0, SIM_DEVICE_MEM bytes.  A
 * context owns a legacy (NULL) stream and the list of its streams; memory is
 * one unified table (sim_mem.c), visible from every context, as with UVA.
 * Destroyed contexts are marked dead and never freed: a stale handle then
 * fails with CUDA_ERROR_INVALID_CONTEXT instead of reading freed memory.
 *
 * Contract: any thread may call.  The context stack is thread-local.
 * sim_primary_mu guards the primary context's state; a context's stream list
 * has its own lock (ctx->mu).  DDP_SIM_FAIL is parsed once (pthread_once).
 */
#include "sim_internal.h"
#include "sim_pci.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

atomic_int sim_initialized;
atomic_int sim_sticky;
int sim_verbose;

static atomic_ullong sim_next_id = 1;

void sim_msg(const char *fmt, ...)
{
	char line[1024];
	int n = snprintf(line, sizeof(line), "simcuda: ");
	va_list ap;
	va_start(ap, fmt);
	n += vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	ssize_t w = write(2, line, (size_t)n);
	(void)w;
}

/* ---- fault table: DDP_SIM_FAIL=name:N[+][:code][,...] */

#define SIM_MAX_FAULTS 256 /* a rule for every entry point fits */
struct sim_fault_rule {
	char name[64];
	long nth;                 /* fail the nth call (1-based)             */
	int persistent;           /* '+': and every call after it            */
	int code;                 /* CUresult to return, 0 = the caller's     */
	atomic_long calls;
};
static struct sim_fault_rule sim_faults[SIM_MAX_FAULTS];
static int sim_nfaults;
static pthread_once_t sim_fault_once = PTHREAD_ONCE_INIT;

static void sim_fault_parse(void)
{
	const char *env = sim_setting_fail();
	if (!env || !*env)
		return;
	static char buf[16384];
	snprintf(buf, sizeof(buf), "%s", env);
	char *save = NULL;
	for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *colon = strchr(tok, ':');
		char *end = NULL;
		if (!colon || colon == tok || (size_t)(colon - tok) >= sizeof(sim_faults[0].name) ||
		    sim_nfaults == SIM_MAX_FAULTS) {
			sim_msg("DDP_SIM_FAIL entry '%s' ignored: expected NAME:N[+][:CODE], at most %d entries",
				tok, SIM_MAX_FAULTS);
			continue;
		}
		struct sim_fault_rule *r = &sim_faults[sim_nfaults];
		long nth = strtol(colon + 1, &end, 10);
		if (end == colon + 1 || nth < 1) {
			sim_msg("DDP_SIM_FAIL entry '%s' ignored: N must be a positive call number", tok);
			continue;
		}
		if (*end == '+')
			r->persistent = 1, end++;
		if (*end == ':') {
			char *e2 = NULL;
			r->code = (int)strtol(end + 1, &e2, 10);
			end = e2;
		}
		if (*end) {
			sim_msg("DDP_SIM_FAIL entry '%s' ignored: trailing '%s'", tok, end);
			continue;
		}
		memcpy(r->name, tok, (size_t)(colon - tok));
		r->nth = nth;
		sim_nfaults++;
	}
}

int sim_fault_code(const char *name, int dflt)
{
	pthread_once(&sim_fault_once, sim_fault_parse);
	for (int i = 0; i < sim_nfaults; i++) {
		struct sim_fault_rule *r = &sim_faults[i];
		if (strcmp(r->name, name) != 0)
			continue;
		long n = atomic_fetch_add(&r->calls, 1) + 1;
		if (n == r->nth || (r->persistent && n > r->nth)) {
			SIM_VERBOSE("DDP_SIM_FAIL: failing call %ld of %s", n, name);
			return r->code ? r->code : dflt;
		}
	}
	return 0;
}

/* Default codes (sim_faults.def); looked up only when a call fails. */
static const struct { const char *name; CUresult code; } sim_fault_defaults[] = {
#define SIM_FAULT_DEFAULT(sym, code) { #sym, code },
#define SIM_FAULT_OWN(sym)
#include "sim_faults.def"
#undef SIM_FAULT_DEFAULT
#undef SIM_FAULT_OWN
};

int sim_fault_check(const char *name)
{
	int f = sim_fault_code(name, -1);
	if (f != -1)
		return f;
	for (size_t i = 0; i < sizeof(sim_fault_defaults) / sizeof(sim_fault_defaults[0]); i++)
		if (!strcmp(sim_fault_defaults[i].name, name))
			return sim_fault_defaults[i].code;
	return CUDA_ERROR_UNKNOWN;
}

/* ---- entry checks */

/* Set in a child forked after cuInit: the driver's state (stream worker
 * threads, locks they may hold) did not come along, so, as with the real
 * driver, CUDA cannot be used there: every call fails, none may hang. */
static atomic_int sim_forked;

static void sim_atfork_child(void)
{
	atomic_store_explicit(&sim_forked, 1, memory_order_relaxed);
}

static void sim_register_atfork(void)
{
	pthread_atfork(NULL, NULL, sim_atfork_child);
}

CUresult sim_check_init(void)
{
	if (!atomic_load_explicit(&sim_initialized, memory_order_acquire) ||
	    atomic_load_explicit(&sim_forked, memory_order_relaxed))
		return CUDA_ERROR_NOT_INITIALIZED;
	int sticky = atomic_load_explicit(&sim_sticky, memory_order_relaxed);
	return sticky ? (CUresult)sticky : CUDA_SUCCESS;
}

/* ---- the per-thread context stack */

#define SIM_CTX_STACK 32
static __thread struct CUctx_st *sim_ctx_stack[SIM_CTX_STACK];
static __thread int sim_ctx_depth;

struct CUctx_st *sim_ctx_current(void)
{
	return sim_ctx_depth ? sim_ctx_stack[sim_ctx_depth - 1] : NULL;
}

int sim_ctx_valid(const struct CUctx_st *c)
{
	return c && c->magic == SIM_MAGIC_CTX;
}

CUresult sim_check_ctx(struct CUctx_st **ctx)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUctx_st *c = sim_ctx_current();
	if (!sim_ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (ctx)
		*ctx = c;
	return CUDA_SUCCESS;
}

static CUresult sim_ctx_init(struct CUctx_st *c, unsigned flags, int primary)
{
	memset(c, 0, sizeof(*c));
	c->magic = SIM_MAGIC_CTX;
	c->device = 0;
	c->flags = flags;
	c->primary = primary;
	c->id = atomic_fetch_add(&sim_next_id, 1);
	pthread_mutex_init(&c->mu, NULL);
	CUresult rc = sim_stream_create(c, CU_STREAM_DEFAULT, 0, 1, &c->legacy);
	if (rc != CUDA_SUCCESS)
		c->magic = SIM_MAGIC_DEAD;
	return rc;
}

/* ---- initialisation and version */

/* Marks this libcuda.so.1 as the CPU device: libddp asks the driver for
 * this symbol (interpose/hook_port.c) instead of guessing from its path.
 * No real driver exports it. */
SIM_EXPORT const int simcuda_cpu_device = 1;

SIM_EXPORT CUresult cuInit(unsigned int flags)
{
	if (flags != 0)
		return CUDA_ERROR_INVALID_VALUE;
	if (atomic_load_explicit(&sim_forked, memory_order_relaxed))
		return CUDA_ERROR_NOT_INITIALIZED; /* a forked child: see sim_check_init */
	static pthread_once_t atfork_once = PTHREAD_ONCE_INIT;
	pthread_once(&atfork_once, sim_register_atfork);
	sim_verbose = sim_setting_on(sim_setting_verbose());
	atomic_store_explicit(&sim_initialized, 1, memory_order_release);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDriverGetVersion(int *version)
{
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = SIM_DRIVER_VERSION;
	return CUDA_SUCCESS;
}

/* ---- the device */

static CUresult sim_check_dev(CUdevice dev)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	return dev >= 0 && dev < SIM_DEVICE_COUNT ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

SIM_EXPORT CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	if (ordinal < 0 || ordinal >= SIM_DEVICE_COUNT)
		return CUDA_ERROR_INVALID_DEVICE;
	*device = ordinal;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetCount(int *count)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!count)
		return CUDA_ERROR_INVALID_VALUE;
	*count = SIM_DEVICE_COUNT;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!name || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(name, (size_t)len, "simcuda CPU device (sm_%d)", SIM_SM);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!bytes)
		return CUDA_ERROR_INVALID_VALUE;
	*bytes = SIM_DEVICE_MEM;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceComputeCapability(int *major, int *minor, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!major || !minor)
		return CUDA_ERROR_INVALID_VALUE;
	*major = SIM_SM / 10;
	*minor = SIM_SM % 10;
	return CUDA_SUCCESS;
}

/* Attribute values of an H100-like device (132 SMs of 2048 threads, 64K
 * registers and 228 KiB shared memory each, 32 blocks per SM); 0 for
 * features the CPU device does not offer (textures, surfaces, IPC,
 * cooperative and cluster launches, ...). */
static int sim_attribute(CUdevice_attribute a, int *ok)
{
	*ok = 1;
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: return 48 * 1024;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: return 64 * 1024;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: return 32;
	case CU_DEVICE_ATTRIBUTE_MAX_PITCH: return 2147483647;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: return 65536;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: return 1755000;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT: return 512;
	case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: return 1;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return SIM_SM_COUNT;
	case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: return 0;
	case CU_DEVICE_ATTRIBUTE_INTEGRATED: return 0;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: return 1;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: return CU_COMPUTEMODE_DEFAULT;
	case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT: return 512;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: return 1;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: return 0;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID: return sim_pci_bus();
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID: return 0;
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID: return 0;
	case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: return 0;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: return 2619000;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH: return 5120;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: return 50 * 1024 * 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: return SIM_SM_THREADS;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: return 2;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: return 1;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT: return 32;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return SIM_SM / 10;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return SIM_SM % 10;
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR: return (int)SIM_SM_SHARED;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR: return SIM_SM_REGS;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: return 1;          /* ordinary device memory here */
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: return 1;
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS: return 0;
	case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM: return 0;
	case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD: return 0;
	case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO: return 2;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH: return 0;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN: return 227 * 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR: return SIM_SM_BLOCKS;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK: return (int)SIM_BLOCK_SHARED_RESERVED;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1;
	case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT: return 4;
	case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG: return 0;
	case CU_DEVICE_ATTRIBUTE_NUMA_ID: return -1;
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID: return 0; /* one host node */
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED: return 1; /* sim_vmm.c */
	default:
		*ok = a > 0 && a < CU_DEVICE_ATTRIBUTE_MAX;
		return 0;
	}
}

SIM_EXPORT CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pi)
		return CUDA_ERROR_INVALID_VALUE;
	int ok;
	int v = sim_attribute(attrib, &ok);
	if (!ok)
		return CUDA_ERROR_INVALID_VALUE;
	*pi = v;
	return CUDA_SUCCESS;
}

/* "simcuda-cpu-dev" and the PCI bus (sim_pci.h): each rank's CPU device is
 * its own device, as NCCL's "same GPU" check needs */
static const CUuuid sim_uuid = {{ 's', 'i', 'm', 'c', 'u', 'd', 'a', '-', 'c', 'p', 'u', '-', 'd', 'e', 'v', '0' }};

SIM_EXPORT CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!uuid)
		return CUDA_ERROR_INVALID_VALUE;
	*uuid = sim_uuid;
	uuid->bytes[15] = (char)sim_pci_bus();
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
	return cuDeviceGetUuid(uuid, dev);
}

SIM_EXPORT CUresult cuDeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pciBusId || len <= 0)
		return CUDA_ERROR_INVALID_VALUE;
	snprintf(pciBusId, (size_t)len, "0000:%02x:00.0", sim_pci_bus());
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc == CUDA_SUCCESS)
		rc = sim_check_dev(peerDev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!canAccessPeer)
		return CUDA_ERROR_INVALID_VALUE;
	*canAccessPeer = 0;
	return CUDA_SUCCESS;
}

/* ---- profiler control (cudaProfiler.h): nothing to start or stop here */

SIM_EXPORT CUresult cuProfilerStart(void)
{
	return sim_check_ctx(NULL);
}

SIM_EXPORT CUresult cuProfilerStop(void)
{
	return sim_check_ctx(NULL);
}

/* ---- the primary context */

static pthread_mutex_t sim_primary_mu = PTHREAD_MUTEX_INITIALIZER;
static struct CUctx_st sim_primary;   /* valid once sim_primary_made    */
static int sim_primary_made;
static int sim_primary_refs;          /* sim_primary_mu                 */
static unsigned sim_primary_flags;    /* sim_primary_mu                 */

SIM_EXPORT CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_primary_mu);
	if (!sim_primary_made) {
		rc = sim_ctx_init(&sim_primary, sim_primary_flags, 1);
		sim_primary_made = rc == CUDA_SUCCESS;
	}
	if (rc == CUDA_SUCCESS) {
		sim_primary_refs++;
		sim_primary.flags = sim_primary_flags;
		*pctx = &sim_primary;
	}
	pthread_mutex_unlock(&sim_primary_mu);
	return rc;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&sim_primary_mu);
	if (sim_primary_refs == 0)
		rc = CUDA_ERROR_INVALID_CONTEXT;
	else
		sim_primary_refs--;
	int last = rc == CUDA_SUCCESS && sim_primary_refs == 0;
	pthread_mutex_unlock(&sim_primary_mu);
	if (last)
		sim_ctx_sync_streams(&sim_primary);
	return rc;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!flags || !active)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_primary_mu);
	*flags = sim_primary_flags;
	*active = sim_primary_refs > 0;
	pthread_mutex_unlock(&sim_primary_mu);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (flags & ~(unsigned)(CU_CTX_SCHED_MASK | CU_CTX_MAP_HOST | CU_CTX_LMEM_RESIZE_TO_MAX |
				CU_CTX_COREDUMP_ENABLE | CU_CTX_USER_COREDUMP_ENABLE | CU_CTX_SYNC_MEMOPS))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_primary_mu);
	sim_primary_flags = flags;
	if (sim_primary_made)
		sim_primary.flags = flags;
	pthread_mutex_unlock(&sim_primary_mu);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&sim_primary_mu);
	int made = sim_primary_made;
	sim_primary_refs = 0;
	sim_primary_flags = 0;
	pthread_mutex_unlock(&sim_primary_mu);
	if (made) {
		sim_ctx_sync_streams(&sim_primary);
		sim_cls_context_gone(&sim_primary);
	}
	return CUDA_SUCCESS;
}

/* ---- created contexts */

static CUresult sim_ctx_create(CUcontext *pctx, unsigned flags, CUdevice dev)
{
	CUresult rc = sim_check_dev(dev);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	if (sim_ctx_depth == SIM_CTX_STACK)
		return CUDA_ERROR_OUT_OF_MEMORY;
	struct CUctx_st *c = malloc(sizeof(*c));
	if (!c)
		return CUDA_ERROR_OUT_OF_MEMORY;
	rc = sim_ctx_init(c, flags, 0);
	if (rc != CUDA_SUCCESS) {
		free(c);
		return rc;
	}
	sim_ctx_stack[sim_ctx_depth++] = c;
	*pctx = c;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
	return sim_ctx_create(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
				   unsigned int flags, CUdevice dev)
{
	if (numParams < 0 || (numParams > 0 && !paramsArray))
		return CUDA_ERROR_INVALID_VALUE;
	if (numParams > 0)
		return CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY;
	return sim_ctx_create(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams, unsigned int flags,
				   CUdevice dev)
{
	if (ctxCreateParams && (ctxCreateParams->numExecAffinityParams > 0 || ctxCreateParams->cigParams))
		return CUDA_ERROR_NOT_SUPPORTED;
	return sim_ctx_create(pctx, flags, dev);
}

SIM_EXPORT CUresult cuCtxDestroy_v2(CUcontext ctx)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!sim_ctx_valid(ctx) || ctx->primary)
		return CUDA_ERROR_INVALID_CONTEXT;
	sim_ctx_sync_streams(ctx);
	sim_cls_context_gone(ctx);
	/* Destroy every stream but keep the struct: stale handles fail cleanly. */
	sim_ctx_destroy_streams(ctx);
	ctx->legacy = NULL;
	ctx->magic = SIM_MAGIC_DEAD;
	/* Remove it from this thread's stack wherever it is. */
	int j = 0;
	for (int i = 0; i < sim_ctx_depth; i++)
		if (sim_ctx_stack[i] != ctx)
			sim_ctx_stack[j++] = sim_ctx_stack[i];
	sim_ctx_depth = j;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pctx)
		return CUDA_ERROR_INVALID_VALUE;
	*pctx = sim_ctx_current();
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetCurrent(CUcontext ctx)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (ctx && !sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!ctx) {
		if (sim_ctx_depth)
			sim_ctx_depth--;
		return CUDA_SUCCESS;
	}
	if (sim_ctx_depth == 0)
		sim_ctx_depth = 1;
	sim_ctx_stack[sim_ctx_depth - 1] = ctx;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (sim_ctx_depth == SIM_CTX_STACK)
		return CUDA_ERROR_INVALID_VALUE;
	sim_ctx_stack[sim_ctx_depth++] = ctx;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (sim_ctx_depth == 0)
		return CUDA_ERROR_INVALID_CONTEXT;
	struct CUctx_st *c = sim_ctx_stack[--sim_ctx_depth];
	if (pctx)
		*pctx = c;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSynchronize(void)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	return sim_ctx_sync_streams(c);
}

SIM_EXPORT CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
	if (!ctx)
		return cuCtxSynchronize();
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	return sim_ctx_sync_streams(ctx);
}

SIM_EXPORT CUresult cuCtxGetDevice(CUdevice *device)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = c->device;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
	if (!ctx)
		return cuCtxGetDevice(device);
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!device)
		return CUDA_ERROR_INVALID_VALUE;
	*device = ctx->device;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetFlags(unsigned int *flags)
{
	struct CUctx_st *c;
	CUresult rc = sim_check_ctx(&c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!flags)
		return CUDA_ERROR_INVALID_VALUE;
	*flags = c->flags;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!ctx)
		ctx = sim_ctx_current();
	if (!sim_ctx_valid(ctx))
		return CUDA_ERROR_INVALID_CONTEXT;
	if (!version)
		return CUDA_ERROR_INVALID_VALUE;
	*version = 3020;
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (leastPriority)
		*leastPriority = 0;
	if (greatestPriority)
		*greatestPriority = -5;
	return CUDA_SUCCESS;
}

/* Limits are recorded and reported back; the CPU device enforces none. */
static size_t sim_limits[CU_LIMIT_MAX] = {
	[CU_LIMIT_STACK_SIZE] = 1024,
	[CU_LIMIT_PRINTF_FIFO_SIZE] = 1 << 20,
	[CU_LIMIT_MALLOC_HEAP_SIZE] = 8 << 20,
	[CU_LIMIT_DEV_RUNTIME_SYNC_DEPTH] = 2,
	[CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT] = 2048,
	[CU_LIMIT_MAX_L2_FETCH_GRANULARITY] = 64,
	[CU_LIMIT_PERSISTING_L2_CACHE_SIZE] = 0,
};

SIM_EXPORT CUresult cuCtxGetLimit(size_t *pvalue, CUlimit limit)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!pvalue || (unsigned)limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	*pvalue = __atomic_load_n(&sim_limits[limit], __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}

SIM_EXPORT CUresult cuCtxSetLimit(CUlimit limit, size_t value)
{
	CUresult rc = sim_check_ctx(NULL);
	if (rc != CUDA_SUCCESS)
		return rc;
	if ((unsigned)limit >= CU_LIMIT_MAX)
		return CUDA_ERROR_INVALID_VALUE;
	__atomic_store_n(&sim_limits[limit], value, __ATOMIC_RELAXED);
	return CUDA_SUCCESS;
}
