/* SPDX-License-Identifier: MIT
 *
 * sim_export.c - cuGetExportTable: the private tables the CUDA runtime
 * (cudart 13, static and shared, and the copies embedded in libraries) asks
 * the driver for, as measured on the installed toolkit
 * (/work/shared/CUDART.md, docs/cpu-device.md "cudart"):
 *
 *   f8cff951-2146-8b4e-b9e2-fb469e7c0dd9  refused (nothing in it is needed)
 *   6bd5fb6c-5bf4-e74a-8987-d93912fd9df9  runtime interface, 13 slots:
 *                                          2 = retain the primary context,
 *                                          12 = cudart 13.2's driver-load
 *                                          call (no arguments; 0 needed)
 *   a094798c-2e74-2e74-93f2-0800200c0a66  tools callback hooks, 7 slots:
 *                                          2, 6 = zeroed flag buffers
 *   42d85a81-23f6-cb47-8298-f6e78a3aecdc  tools TLS, 4 slots (must exist)
 *   c693336e-1121-df11-a8c3-68f355d89593  context-local storage: 0 put,
 *                                          1 delete, 2 get (no size slot)
 *   263e8860-7cd2-6143-92f6-bbd5006dfa7e  context checks: 2, 3 (no size slot)
 *   d4082055-bde6-704b-8d34-ba123c66e1f2  integrity check, 3 slots: 1
 *   21318c60-9714-3248-8ca6-41ff7324c8f2  asked by cuDNN 9 (the wheel's)
 *                                          in cudnnCreate, which fails with
 *                                          NOT_INITIALIZED without it; no
 *                                          slot of it was seen called: 16
 *                                          slots, each saying so if called
 *
 * Slot 0 of a sized table is its size in bytes.  Every slot we have not
 * seen called is a function that says once which table and slot were called
 * and returns CUDA_ERROR_NOT_SUPPORTED: a newer runtime's new need is one
 * line to find, never a jump through NULL.  An unknown UUID is
 * CUDA_ERROR_NOT_FOUND with *ppExportTable = NULL, logged once per UUID
 * (SIMCUDA_VERBOSE=1); the fault table can refuse a known one
 * (DDP_SIM_FAIL=cuGetExportTable:N), which is how the tests show that
 * cudart cannot start without it.
 *
 * Context-local storage (cudart keeps its per-context state there): entries
 * keyed by (context, key); a context's entries are dropped and their
 * destructors called when the context is destroyed or the primary context
 * reset (sim_cls_context_gone), as the driver does.
 *
 * Contract: the tables are constant; the storage and the "logged once"
 * records have their own lock.  Works before cuInit (cudart asks for the
 * tables first).
 */
#include "sim_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIM_SLOT_NOT_SEEN(tab, n) \
	static CUresult sim_xslot_##tab##_##n(void) \
	{ \
		static int said; \
		if (!__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED)) \
			sim_msg("cudart called slot %d of the private table %s, which the CPU device does not " \
				"implement; returning CUDA_ERROR_NOT_SUPPORTED", n, #tab); \
		return CUDA_ERROR_NOT_SUPPORTED; \
	}

/* ---- runtime interface (6bd5fb6c): slot 2 retains the primary context */

static CUresult sim_rt_primary_ctx(CUcontext *out, CUdevice dev)
{
	SIM_VERBOSE("export table runtime-interface slot 2 (device %d)", dev);
	return cuDevicePrimaryCtxRetain(out, dev);
}

SIM_SLOT_NOT_SEEN(runtime_interface, 1)
SIM_SLOT_NOT_SEEN(runtime_interface, 3)
SIM_SLOT_NOT_SEEN(runtime_interface, 4)
SIM_SLOT_NOT_SEEN(runtime_interface, 5)
SIM_SLOT_NOT_SEEN(runtime_interface, 6)
SIM_SLOT_NOT_SEEN(runtime_interface, 7)
SIM_SLOT_NOT_SEEN(runtime_interface, 8)
SIM_SLOT_NOT_SEEN(runtime_interface, 9)
SIM_SLOT_NOT_SEEN(runtime_interface, 10)
SIM_SLOT_NOT_SEEN(runtime_interface, 11)

/* Slot 12: cudart 13.2 (PyTorch 2.15's wheel) calls it from its driver-load
 * routine with NO arguments (measured with gdb on the wheel's cudart; the
 * register values seen earlier were leftovers) and fails its initialisation
 * (error 801) on any non-zero return.  cudart 13.0 never calls it.  Nothing
 * is asked of the driver that the CPU device could do; it answers success. */
static CUresult sim_rt_driver_load(void)
{
	SIM_VERBOSE("export table runtime-interface slot 12 (driver load)");
	return CUDA_SUCCESS;
}

static const void *const sim_tab_runtime[13] = {
	(const void *)(uintptr_t)(13 * sizeof(void *)),
	(const void *)sim_xslot_runtime_interface_1,
	(const void *)sim_rt_primary_ctx,
	(const void *)sim_xslot_runtime_interface_3,
	(const void *)sim_xslot_runtime_interface_4,
	(const void *)sim_xslot_runtime_interface_5,
	(const void *)sim_xslot_runtime_interface_6,
	(const void *)sim_xslot_runtime_interface_7,
	(const void *)sim_xslot_runtime_interface_8,
	(const void *)sim_xslot_runtime_interface_9,
	(const void *)sim_xslot_runtime_interface_10,
	(const void *)sim_xslot_runtime_interface_11,
	(const void *)sim_rt_driver_load,
};

/* ---- tools callback hooks (a094798c): the flag buffers cudart reads.
 * Slot 2: 1024 uint32 flags, cudart reads the one at callback_id * 4; all
 * zero = no tool subscribed (a shorter buffer sends cudart down the
 * tools-callback path).  Slot 6: a 14-byte buffer, zero. */

static uint32_t sim_hook_flags[1024];
static unsigned char sim_hook_flags2[16];

static void sim_hooks_buffer(void **buf, size_t *size)
{
	SIM_VERBOSE("export table callback-hooks slot 2");
	if (buf)
		*buf = sim_hook_flags;
	if (size)
		*size = sizeof(sim_hook_flags);
}

static void sim_hooks_buffer2(void **buf, size_t *size)
{
	SIM_VERBOSE("export table callback-hooks slot 6");
	if (buf)
		*buf = sim_hook_flags2;
	if (size)
		*size = 14;
}

SIM_SLOT_NOT_SEEN(callback_hooks, 1)
SIM_SLOT_NOT_SEEN(callback_hooks, 3)
SIM_SLOT_NOT_SEEN(callback_hooks, 4)
SIM_SLOT_NOT_SEEN(callback_hooks, 5)

static const void *const sim_tab_hooks[7] = {
	(const void *)(uintptr_t)(7 * sizeof(void *)),
	(const void *)sim_xslot_callback_hooks_1,
	(const void *)sim_hooks_buffer,
	(const void *)sim_xslot_callback_hooks_3,
	(const void *)sim_xslot_callback_hooks_4,
	(const void *)sim_xslot_callback_hooks_5,
	(const void *)sim_hooks_buffer2,
};

/* ---- tools TLS (42d85a81): must exist; nothing is called while the hook
 * flags above are zero. */

SIM_SLOT_NOT_SEEN(tools_tls, 1)
SIM_SLOT_NOT_SEEN(tools_tls, 2)
SIM_SLOT_NOT_SEEN(tools_tls, 3)

static const void *const sim_tab_tools_tls[4] = {
	(const void *)(uintptr_t)(4 * sizeof(void *)),
	(const void *)sim_xslot_tools_tls_1,
	(const void *)sim_xslot_tools_tls_2,
	(const void *)sim_xslot_tools_tls_3,
};

/* ---- context-local storage (c693336e), no size slot */

typedef void (*sim_cls_dtor)(CUcontext ctx, void *key, void *value);

struct sim_cls {
	struct sim_cls *next;
	struct CUctx_st *ctx;
	void *key, *value;
	sim_cls_dtor dtor;
};

static pthread_mutex_t sim_cls_mu = PTHREAD_MUTEX_INITIALIZER;
static struct sim_cls *sim_cls_head;     /* sim_cls_mu */

/* ctx 0 means the calling thread's current context. */
static CUresult sim_cls_ctx(CUcontext in, struct CUctx_st **out)
{
	CUresult rc = sim_check_init();
	if (rc != CUDA_SUCCESS)
		return rc;
	struct CUctx_st *c = in ? in : sim_ctx_current();
	if (!sim_ctx_valid(c))
		return CUDA_ERROR_INVALID_CONTEXT;
	*out = c;
	return CUDA_SUCCESS;
}

static struct sim_cls **sim_cls_find(struct CUctx_st *c, void *key)
{
	struct sim_cls **pp = &sim_cls_head;
	while (*pp && ((*pp)->ctx != c || (*pp)->key != key))
		pp = &(*pp)->next;
	return pp;
}

static CUresult sim_cls_put(CUcontext ctx, void *key, void *value, sim_cls_dtor dtor)
{
	struct CUctx_st *c;
	CUresult rc = sim_cls_ctx(ctx, &c);
	if (rc != CUDA_SUCCESS)
		return rc;
	SIM_VERBOSE("export table context-storage put (ctx %p, key %p)", (void *)c, key);
	pthread_mutex_lock(&sim_cls_mu);
	struct sim_cls **pp = sim_cls_find(c, key);
	if (*pp) {
		(*pp)->value = value;
		(*pp)->dtor = dtor;
	} else {
		struct sim_cls *e = calloc(1, sizeof(*e));
		if (!e) {
			rc = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			*e = (struct sim_cls){ sim_cls_head, c, key, value, dtor };
			sim_cls_head = e;
		}
	}
	pthread_mutex_unlock(&sim_cls_mu);
	return rc;
}

static CUresult sim_cls_delete(CUcontext ctx, void *key)
{
	struct CUctx_st *c;
	CUresult rc = sim_cls_ctx(ctx, &c);
	if (rc != CUDA_SUCCESS)
		return rc;
	pthread_mutex_lock(&sim_cls_mu);
	struct sim_cls **pp = sim_cls_find(c, key), *e = *pp;
	if (e)
		*pp = e->next;
	pthread_mutex_unlock(&sim_cls_mu);
	free(e);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static CUresult sim_cls_get(void **value, CUcontext ctx, void *key)
{
	struct CUctx_st *c;
	CUresult rc = sim_cls_ctx(ctx, &c);
	if (rc != CUDA_SUCCESS)
		return rc;
	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&sim_cls_mu);
	struct sim_cls *e = *sim_cls_find(c, key);
	if (e)
		*value = e->value;
	pthread_mutex_unlock(&sim_cls_mu);
	return e ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

void sim_cls_context_gone(struct CUctx_st *c)
{
	for (;;) {
		pthread_mutex_lock(&sim_cls_mu);
		struct sim_cls **pp = &sim_cls_head;
		while (*pp && (*pp)->ctx != c)
			pp = &(*pp)->next;
		struct sim_cls *e = *pp;
		if (e)
			*pp = e->next;
		pthread_mutex_unlock(&sim_cls_mu);
		if (!e)
			return;
		if (e->dtor)
			e->dtor(c, e->key, e->value); /* no lock held: it may call back */
		free(e);
	}
}

SIM_SLOT_NOT_SEEN(context_storage, 3)

static const void *const sim_tab_cls[4] = {
	(const void *)sim_cls_put,
	(const void *)sim_cls_delete,
	(const void *)sim_cls_get,
	(const void *)sim_xslot_context_storage_3,
};

/* ---- context checks (263e8860), no size slot */

static CUresult sim_ctx_check(CUcontext ctx, unsigned *flags, const void **detail)
{
	(void)ctx;
	if (flags)
		*flags = 0;
	if (detail)
		*detail = NULL;
	return CUDA_SUCCESS;
}

static int sim_ctx_check3(void)
{
	return 0;
}

SIM_SLOT_NOT_SEEN(context_checks, 0)
SIM_SLOT_NOT_SEEN(context_checks, 1)

static const void *const sim_tab_checks[4] = {
	(const void *)sim_xslot_context_checks_0,
	(const void *)sim_xslot_context_checks_1,
	(const void *)sim_ctx_check,
	(const void *)sim_ctx_check3,
};

/* ---- integrity check (d4082055): slot 1 (version, unix_seconds, result[2]).
 * Versions ending in 0 and 1: fixed constants; others: the keyed hash of
 * sim_integrity.c over this driver's version, the process, the thread, the
 * addresses of the runtime-interface table, this table and this function,
 * the time, and each device's UUID and PCI ids. */

static const void *const sim_tab_integrity[3];
static const void *const sim_tab_runtime[13];

static CUresult sim_integrity(unsigned version, uint64_t unix_seconds, uint64_t result[2])
{
	SIM_VERBOSE("export table integrity-check slot 1 (runtime %u)", version);
	if (!result)
		return CUDA_ERROR_INVALID_VALUE;
	if (version % 10 == 0 || version % 10 == 1) {
		result[0] = version % 10 ? 0x1841181C03CB675Cull : 0x3341181C03CB675Cull;
		result[1] = 0x8ED383AA1F4CD1E8ull;
		return CUDA_SUCCESS;
	}
	struct {
		uint32_t driver_version, runtime_version, pid, thread;
		const void *runtime_table, *integrity_table, *fn;
		uint64_t unix_seconds;
	} in = { SIM_DRIVER_VERSION, version, (uint32_t)getpid(), (uint32_t)(uintptr_t)pthread_self(),
		 sim_tab_runtime, sim_tab_integrity, (const void *)sim_integrity, unix_seconds };
	_Static_assert(sizeof(in) == 48, "integrity input layout");
	struct {
		CUuuid uuid;
		int32_t pci_domain, pci_bus, pci_device;
	} dev[SIM_DEVICE_COUNT];
	_Static_assert(sizeof(dev[0]) == 28, "integrity device layout");
	for (int d = 0; d < SIM_DEVICE_COUNT; d++) {
		int v[3] = { 0, 0, 0 };
		if (cuDeviceGetUuid(&dev[d].uuid, d) != CUDA_SUCCESS ||
		    cuDeviceGetAttribute(&v[0], CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d) != CUDA_SUCCESS ||
		    cuDeviceGetAttribute(&v[1], CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d) != CUDA_SUCCESS ||
		    cuDeviceGetAttribute(&v[2], CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d) != CUDA_SUCCESS)
			memset(&dev[d].uuid, 0, sizeof(dev[d].uuid));
		dev[d].pci_domain = v[0];
		dev[d].pci_bus = v[1];
		dev[d].pci_device = v[2];
	}
	sim_integrity_hash(&in, sizeof(in), dev, sizeof(dev), result);
	return CUDA_SUCCESS;
}

SIM_SLOT_NOT_SEEN(integrity_check, 2)

static const void *const sim_tab_integrity[3] = {
	(const void *)(uintptr_t)(3 * sizeof(void *)),
	(const void *)sim_integrity,
	(const void *)sim_xslot_integrity_check_2,
};

SIM_SLOT_NOT_SEEN(cudnn_table, 0)
SIM_SLOT_NOT_SEEN(cudnn_table, 1)
SIM_SLOT_NOT_SEEN(cudnn_table, 2)
SIM_SLOT_NOT_SEEN(cudnn_table, 3)
SIM_SLOT_NOT_SEEN(cudnn_table, 4)
SIM_SLOT_NOT_SEEN(cudnn_table, 5)
SIM_SLOT_NOT_SEEN(cudnn_table, 6)
SIM_SLOT_NOT_SEEN(cudnn_table, 7)
SIM_SLOT_NOT_SEEN(cudnn_table, 8)
SIM_SLOT_NOT_SEEN(cudnn_table, 9)
SIM_SLOT_NOT_SEEN(cudnn_table, 10)
SIM_SLOT_NOT_SEEN(cudnn_table, 11)
SIM_SLOT_NOT_SEEN(cudnn_table, 12)
SIM_SLOT_NOT_SEEN(cudnn_table, 13)
SIM_SLOT_NOT_SEEN(cudnn_table, 14)
SIM_SLOT_NOT_SEEN(cudnn_table, 15)
/* cuDNN's table (21318c60): its existence is what cudnnCreate needs */
static const void *const sim_tab_cudnn[16] = {
	(const void *)sim_xslot_cudnn_table_0,
	(const void *)sim_xslot_cudnn_table_1,
	(const void *)sim_xslot_cudnn_table_2,
	(const void *)sim_xslot_cudnn_table_3,
	(const void *)sim_xslot_cudnn_table_4,
	(const void *)sim_xslot_cudnn_table_5,
	(const void *)sim_xslot_cudnn_table_6,
	(const void *)sim_xslot_cudnn_table_7,
	(const void *)sim_xslot_cudnn_table_8,
	(const void *)sim_xslot_cudnn_table_9,
	(const void *)sim_xslot_cudnn_table_10,
	(const void *)sim_xslot_cudnn_table_11,
	(const void *)sim_xslot_cudnn_table_12,
	(const void *)sim_xslot_cudnn_table_13,
	(const void *)sim_xslot_cudnn_table_14,
	(const void *)sim_xslot_cudnn_table_15,
};

/* ---- the UUIDs */

struct sim_export {
	const char *uuid;                /* as printed, for the log          */
	unsigned char id[16];
	const void *const *table;        /* NULL: refused with NOT_FOUND     */
};

static const struct sim_export sim_exports[] = {
	{ "f8cff951-2146-8b4e-b9e2-fb469e7c0dd9",
	  { 0xf8, 0xcf, 0xf9, 0x51, 0x21, 0x46, 0x8b, 0x4e, 0xb9, 0xe2, 0xfb, 0x46, 0x9e, 0x7c, 0x0d, 0xd9 }, NULL },
	{ "6bd5fb6c-5bf4-e74a-8987-d93912fd9df9",
	  { 0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9 },
	  sim_tab_runtime },
	{ "a094798c-2e74-2e74-93f2-0800200c0a66",
	  { 0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66 },
	  sim_tab_hooks },
	{ "42d85a81-23f6-cb47-8298-f6e78a3aecdc",
	  { 0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc },
	  sim_tab_tools_tls },
	{ "c693336e-1121-df11-a8c3-68f355d89593",
	  { 0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93 },
	  sim_tab_cls },
	{ "263e8860-7cd2-6143-92f6-bbd5006dfa7e",
	  { 0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e },
	  sim_tab_checks },
	{ "d4082055-bde6-704b-8d34-ba123c66e1f2",
	  { 0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2 },
	  sim_tab_integrity },
	{ "21318c60-9714-3248-8ca6-41ff7324c8f2",
	  { 0x21, 0x31, 0x8c, 0x60, 0x97, 0x14, 0x32, 0x48, 0x8c, 0xa6, 0x41, 0xff, 0x73, 0x24, 0xc8, 0xf2 },
	  sim_tab_cudnn },
};

/* UUIDs already logged (known ones by index, unknown ones by value). */
#define SIM_MAX_UNKNOWN 32
static pthread_mutex_t sim_seen_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned char sim_seen_unknown[SIM_MAX_UNKNOWN][16];
static int sim_nseen_unknown;
static int sim_seen_known[sizeof(sim_exports) / sizeof(sim_exports[0])];

/* cuGetExportTable comes before cuInit: SIMCUDA_VERBOSE is read here too. */
static int sim_export_verbose(void)
{
	return sim_setting_on(sim_setting_verbose());
}

static void sim_log_unknown(const CUuuid *id)
{
	const unsigned char *b = (const unsigned char *)id->bytes;
	int fresh = 1;
	pthread_mutex_lock(&sim_seen_mu);
	for (int i = 0; i < sim_nseen_unknown && fresh; i++)
		fresh = memcmp(sim_seen_unknown[i], b, 16) != 0;
	if (fresh && sim_nseen_unknown < SIM_MAX_UNKNOWN)
		memcpy(sim_seen_unknown[sim_nseen_unknown++], b, 16);
	pthread_mutex_unlock(&sim_seen_mu);
	if (fresh && sim_export_verbose())
		sim_msg("cuGetExportTable(%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x): "
			"unknown table, answering CUDA_ERROR_NOT_FOUND",
			b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13], b[14],
			b[15]);
}

SIM_EXPORT CUresult cuGetExportTable(const void **ppExportTable, const CUuuid *pExportTableId)
{
	if (!ppExportTable || !pExportTableId)
		return CUDA_ERROR_INVALID_VALUE;
	*ppExportTable = NULL;
	for (size_t i = 0; i < sizeof(sim_exports) / sizeof(sim_exports[0]); i++) {
		const struct sim_export *x = &sim_exports[i];
		if (memcmp(x->id, pExportTableId->bytes, 16) != 0)
			continue;
		int fault = x->table ? sim_fault_code("cuGetExportTable", CUDA_ERROR_NOT_FOUND) : 0;
		if (!__atomic_exchange_n(&sim_seen_known[i], 1, __ATOMIC_RELAXED) && sim_export_verbose())
			sim_msg("cuGetExportTable(%s): %s", x->uuid,
				fault ? "refused by DDP_SIM_FAIL" : x->table ? "answered" : "not needed, CUDA_ERROR_NOT_FOUND");
		if (fault)
			return (CUresult)fault;
		if (!x->table)
			return CUDA_ERROR_NOT_FOUND;
		*ppExportTable = (const void *)x->table;
		return CUDA_SUCCESS;
	}
	sim_log_unknown(pExportTableId);
	return CUDA_ERROR_NOT_FOUND;
}
