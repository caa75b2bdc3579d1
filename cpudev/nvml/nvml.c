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
 *
 * NCCL (misc/nvmlwrap.cc, 2.30) dlsyms the unversioned names (nvmlInit,
 * nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex, ...ByPciBusId) and calls
 * nvmlDeviceGetCount, nvmlDeviceGetHandleByIndex and
 * nvmlDeviceGetCudaComputeCapability for every device without checking
 * the pointers (a NULL one is a SIGSEGV in ncclCommInitRank), then asks
 * the index, P2P status (NOT_SUPPORTED between distinct devices: no peer
 * access, as cuDeviceCanAccessPeer), NVLink state/capability
 * (NVML_ERROR_NOT_SUPPORTED), field values (each NOT_SUPPORTED) and the
 * confidential-computing state (off).
 * No nvml.h is needed: the few types are declared here with the header's
 * values.  Anything else is absent (dlsym NULL), which callers check.
 *
 * Contract: any thread; the init count is an atomic.
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "../sim_pci.h"

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

/* ---- what NCCL asks (the unversioned names are the driver's too) */

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCount(unsigned int *count)
{
	return nvmlDeviceGetCount_v2(count);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByIndex(unsigned int index, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByIndex_v2(index, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetHandleByPciBusId(const char *pciBusId, nvmlDevice_t *device)
{
	return nvmlDeviceGetHandleByPciBusId_v2(pciBusId, device);
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkRemotePciInfo(nvmlDevice_t device, unsigned int link, void *pci)
{
	return nvmlDeviceGetNvLinkRemotePciInfo_v2(device, link, pci);
}

static nvmlReturn_t check_device(nvmlDevice_t device, const void *out)
{
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	return device == &dev0 && out ? NVML_SUCCESS : NVML_ERROR_INVALID_ARGUMENT;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetIndex(nvmlDevice_t device, unsigned int *index)
{
	nvmlReturn_t r = check_device(device, index);
	if (r == NVML_SUCCESS)
		*index = device->index;
	return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCudaComputeCapability(nvmlDevice_t device, int *major, int *minor)
{
	nvmlReturn_t r = check_device(device, major);
	if (r == NVML_SUCCESS && !minor)
		r = NVML_ERROR_INVALID_ARGUMENT;
	if (r == NVML_SUCCESS) {
		*major = 9; /* cuDeviceGetAttribute's compute capability */
		*minor = 0;
	}
	return r;
}

/* nvmlGpuP2PStatus_t: 0 OK ... 5 NOT_SUPPORTED */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetP2PStatus(nvmlDevice_t d1, nvmlDevice_t d2, int caps, int *status)
{
	(void)caps;
	nvmlReturn_t r = check_device(d1, status);
	if (r == NVML_SUCCESS && d2 != &dev0)
		r = NVML_ERROR_INVALID_ARGUMENT;
	if (r == NVML_SUCCESS)
		*status = 5;
	return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link, int *active)
{
	(void)link;
	nvmlReturn_t r = check_device(device, active);
	return r == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetNvLinkCapability(nvmlDevice_t device, unsigned int link, int cap,
						       unsigned int *result)
{
	(void)link, (void)cap;
	nvmlReturn_t r = check_device(device, result);
	return r == NVML_SUCCESS ? NVML_ERROR_NOT_SUPPORTED : r;
}

/* nvmlFieldValue_t: fieldId, scopeId, timestamp, latencyUsec, valueType,
 * nvmlReturn (offset 28), value (8 bytes): 40 bytes */
NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int count, void *values)
{
	nvmlReturn_t r = check_device(device, values);
	if (r != NVML_SUCCESS)
		return r;
	for (int i = 0; i < count; i++) {
		nvmlReturn_t ns = NVML_ERROR_NOT_SUPPORTED;
		memcpy((char *)values + (size_t)i * 40 + 28, &ns, sizeof(ns));
	}
	return NVML_SUCCESS;
}

/* nvmlConfComputeSystemState_t: environment, ccFeature, devToolsMode: all
 * 0 (none, disabled, disabled) */
NVML_EXPORT nvmlReturn_t nvmlSystemGetConfComputeState(void *state)
{
	if (!ready())
		return NVML_ERROR_UNINITIALIZED;
	if (!state)
		return NVML_ERROR_INVALID_ARGUMENT;
	memset(state, 0, 3 * sizeof(unsigned int));
	return NVML_SUCCESS;
}

/* ---- PCI identity, read by NCCL's topology detection (the GPU node's
 * class, vendor and link): a PCIe H100 (3D controller 0x0302, device
 * 0x2330 of vendor 0x10de), gen 5 x16, at the bus id cuDeviceGetPCIBusId
 * gives. */
enum { PCI_ID = 0x233010de, PCI_SUBSYS = 0x16c110de };

/* nvmlPciInfo_t (v3) */
struct nvml_pci_info {
	char busIdLegacy[16];
	unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
	char busId[32];
};

/* nvmlPciInfoExt_v1_t */
struct nvml_pci_info_ext {
	unsigned int version, domain, bus, device, pciDeviceId, pciSubSystemId, baseClass, subClass;
	char busId[32];
};

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, struct nvml_pci_info *pci)
{
	nvmlReturn_t r = check_device(device, pci);
	if (r != NVML_SUCCESS)
		return r;
	memset(pci, 0, sizeof(*pci));
	snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "0000:%02X:00.0", sim_pci_bus());
	snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", sim_pci_bus());
	pci->bus = (unsigned int)sim_pci_bus();
	pci->pciDeviceId = PCI_ID;
	pci->pciSubSystemId = PCI_SUBSYS;
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPciInfoExt(nvmlDevice_t device, struct nvml_pci_info_ext *pci)
{
	nvmlReturn_t r = check_device(device, pci);
	if (r != NVML_SUCCESS)
		return r;
	unsigned int version = pci->version;
	memset(pci, 0, sizeof(*pci));
	pci->version = version;
	pci->pciDeviceId = PCI_ID;
	pci->pciSubSystemId = PCI_SUBSYS;
	pci->baseClass = 0x03;
	pci->subClass = 0x02;
	pci->bus = (unsigned int)sim_pci_bus();
	snprintf(pci->busId, sizeof(pci->busId), "00000000:%02X:00.0", sim_pci_bus());
	return NVML_SUCCESS;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieLinkMaxSpeed(nvmlDevice_t device, unsigned int *speed)
{
	nvmlReturn_t r = check_device(device, speed);
	if (r == NVML_SUCCESS)
		*speed = 5; /* NVML_PCIE_LINK_MAX_SPEED_32000MBPS */
	return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device, unsigned int *gen)
{
	nvmlReturn_t r = check_device(device, gen);
	if (r == NVML_SUCCESS)
		*gen = 5;
	return r;
}

NVML_EXPORT nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device, unsigned int *width)
{
	nvmlReturn_t r = check_device(device, width);
	if (r == NVML_SUCCESS)
		*width = 16;
	return r;
}
