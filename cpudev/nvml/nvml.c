/* SPDX-License-Identifier: MIT
 *
 * nvml.c - the CPU device's NVML stand-in: libnvidia-ml.so.1, next to its
 * libcuda.so.1 (as the driver ships them together), with the calls
 * frameworks make on the way to a training step.
 *
 * PyTorch (c10/cuda/driver_api.cpp) dlopens libnvidia-ml.so.1 beside the
 * driver and requires nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2,
 * nvmlDeviceGetNvLinkRemoteDeviceType, nvmlDeviceGetNvLinkRemotePciInfo_v2,
 * nvmlDeviceGetComputeRunningProcesses and nvmlSystemGetCudaDriverVersion_v2
 * when the library exists; without the library its NVML pointers stay NULL
 * and expandable segments (PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True)
 * call one anyway: the process dies in the first cuMemMap path
 * (get_fabric_access -> get_nvml_device).  A machine with a driver always
 * has NVML, so the CPU device has one too.
 *
 * One device (index 0, the PCI id cuDeviceGetPCIBusId gives, any bus id
 * string accepted as it): no NVLink (NVML_ERROR_NOT_SUPPORTED), no fabric
 * (state NOT_SUPPORTED: PyTorch then exchanges POSIX file descriptors, the
 * PCIe H100's answer), no processes, CUDA driver version 13000 (as
 * cuDriverGetVersion).  Calls before nvmlInit are NVML_ERROR_UNINITIALIZED.
 * No nvml.h is needed: the few types are declared here with the header's
 * values.  Anything else is absent (dlsym NULL), which callers check.
 *
 * Contract: any thread; the init count is an atomic.
 */
#include <stddef.h>
#include <string.h>

#define NVML_EXPORT __attribute__((visibility("default")))

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
};
typedef struct nvml_device *nvmlDevice_t;

/* nvmlGpuFabricInfo_v2_t (nvml.h, CUDA 12.4+) */
struct nvml_fabric_info_v2 {
	unsigned int version;
	unsigned char clusterUuid[16];
	nvmlReturn_t status;
	unsigned int cliqueId;
	unsigned char state;            /* nvmlGpuFabricState_t: 0 NOT_SUPPORTED */
	unsigned int healthMask;
};

struct nvml_device {
	unsigned index;
};

static struct nvml_device dev0 = { 0 };
static int init_count;

static int ready(void)
{
	return __atomic_load_n(&init_count, __ATOMIC_ACQUIRE) > 0;
}

NVML_EXPORT nvmlReturn_t nvmlInit_v2(void)
{
	__atomic_add_fetch(&init_count, 1, __ATOMIC_ACQ_REL);
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlInit(void)
{
	return nvmlInit_v2();
}

NVML_EXPORT nvmlReturn_t nvmlInitWithFlags(unsigned int flags)
{
	(void)flags;
	return nvmlInit_v2();
}

NVML_EXPORT nvmlReturn_t nvmlShutdown(void)
{
	int n = __atomic_load_n(&init_count, __ATOMIC_ACQUIRE);
	while (n > 0 && !__atomic_compare_exchange_n(&init_count, &n, n - 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		;
	return n > 0 ? NVML_SUCCESS : NVML_ERROR_UNINITIALIZED;
}

NVML_EXPORT const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	default: return "Unknown Error";
	}
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = 1;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index != 0)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &dev0;
	return NVML_SUCCESS;
}

/* One device: every well-formed bus id names it (the caller built the id
 * from the device's own properties). */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *pciBusId, nvmlDevice_t *device)
{
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (!pciBusId || !device || !pciBusId[0])
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &dev0;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemoteDeviceType(nvmlDevice_t device, unsigned int link, int *type)
{
	(void)link;
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (device != &dev0 || !type)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_ERROR_NOT_SUPPORTED; /* no NVLink */
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo_v2(nvmlDevice_t device, unsigned int link, void *pci)
{
	(void)link;
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (device != &dev0 || !pci)
		return NVML_ERROR_INVALID_ARGUMENT;
	return NVML_ERROR_NOT_SUPPORTED;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeRunningProcesses(nvmlDevice_t device, unsigned int *count, void *infos)
{
	(void)infos;
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (device != &dev0 || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = 0;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *version)
{
	if (!version)
		return NVML_ERROR_INVALID_ARGUMENT;
	*version = 13000; /* cuDriverGetVersion's */
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlSystemGetCudaDriverVersion(int *version)
{
	return nvmlSystemGetCudaDriverVersion_v2(version);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuFabricInfoV(nvmlDevice_t device, void *info)
{
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (device != &dev0 || !info)
		return NVML_ERROR_INVALID_ARGUMENT;
	struct nvml_fabric_info_v2 *f = info;
	memset(f->clusterUuid, 0, sizeof(f->clusterUuid));
	f->status = NVML_SUCCESS;
	f->cliqueId = 0;
	f->state = 0; /* NVML_GPU_FABRIC_STATE_NOT_SUPPORTED */
	f->healthMask = 0;
	return NVML_SUCCESS;
}
