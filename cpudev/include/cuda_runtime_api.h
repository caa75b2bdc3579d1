/* SPDX-License-Identifier: MIT
 *
 * cuda_runtime_api.h (CPU device shim) - declarations of the CUDA runtime
 * API that a program's host code mentions, so that a .cu file mixing host
 * and device code compiles into its CPU-device kernel library
 * (ddp-cpu-kernels, exec.mk).  Nothing here is defined: the host code of a
 * kernel library is never run, and the link drops it (--gc-sections), so
 * these names never reach the library.  Types whose members host code reads
 * (cudaDeviceProp, cudaFuncAttributes, cudaPointerAttributes,
 * cudaLaunchConfig_t) have the members; the rest are opaque handles and
 * enums.  A runtime function missing here fails the build with one line
 * naming it: add its declaration.
 *
 * Contract: header only; C++ (kernel libraries are compiled as C++17).
 */
#ifndef SIM_CUDA_RUNTIME_API_H
#define SIM_CUDA_RUNTIME_API_H
#include <cstddef>

#ifndef CUDART_VERSION
#define CUDART_VERSION 13000
#endif
#define CUDARTAPI
#define CUDART_CB
#define __dv(v) = v
#define cudaHostAllocDefault 0x00
#define cudaHostAllocPortable 0x01
#define cudaHostAllocMapped 0x02
#define cudaHostAllocWriteCombined 0x04
#define cudaHostRegisterDefault 0x00
#define cudaHostRegisterPortable 0x01
#define cudaHostRegisterMapped 0x02
#define cudaStreamDefault 0x00
#define cudaStreamNonBlocking 0x01
#define cudaStreamLegacy ((cudaStream_t)0x1)
#define cudaStreamPerThread ((cudaStream_t)0x2)
#define cudaEventDefault 0x00
#define cudaEventBlockingSync 0x01
#define cudaEventDisableTiming 0x02
#define cudaEventInterprocess 0x04
#define cudaOccupancyDefault 0x00
#define cudaOccupancyDisableCachingOverride 0x01
#define cudaDeviceScheduleAuto 0x00
#define cudaDeviceScheduleSpin 0x01
#define cudaDeviceScheduleYield 0x02
#define cudaDeviceScheduleBlockingSync 0x04
#define cudaDeviceMapHost 0x08
#define cudaMemAttachGlobal 0x01
#define cudaMemAttachHost 0x02
#define cudaCpuDeviceId ((int)-1)
#define cudaInvalidDeviceId ((int)-2)

enum cudaError {
	cudaSuccess = 0, cudaErrorInvalidValue = 1, cudaErrorMemoryAllocation = 2,
	cudaErrorInitializationError = 3, cudaErrorCudartUnloading = 4, cudaErrorProfilerDisabled = 5,
	cudaErrorInvalidConfiguration = 9, cudaErrorInvalidPitchValue = 12, cudaErrorInvalidSymbol = 13,
	cudaErrorInvalidHostPointer = 16, cudaErrorInvalidDevicePointer = 17, cudaErrorInvalidTexture = 18,
	cudaErrorInvalidMemcpyDirection = 21, cudaErrorInsufficientDriver = 35, cudaErrorNoDevice = 100,
	cudaErrorInvalidDevice = 101, cudaErrorStartupFailure = 127, cudaErrorInvalidKernelImage = 200,
	cudaErrorDeviceUninitialized = 201, cudaErrorInvalidContext = 201, cudaErrorNoKernelImageForDevice = 209,
	cudaErrorInvalidSource = 300, cudaErrorFileNotFound = 301, cudaErrorInvalidResourceHandle = 400,
	cudaErrorIllegalState = 401, cudaErrorSymbolNotFound = 500, cudaErrorNotReady = 600,
	cudaErrorIllegalAddress = 700, cudaErrorLaunchOutOfResources = 701, cudaErrorLaunchTimeout = 702,
	cudaErrorPeerAccessAlreadyEnabled = 704, cudaErrorPeerAccessNotEnabled = 705,
	cudaErrorAssert = 710, cudaErrorHostMemoryAlreadyRegistered = 712, cudaErrorLaunchFailure = 719,
	cudaErrorCooperativeLaunchTooLarge = 720, cudaErrorNotPermitted = 800, cudaErrorNotSupported = 801,
	cudaErrorStreamCaptureUnsupported = 900, cudaErrorStreamCaptureInvalidated = 901,
	cudaErrorUnknown = 999, cudaErrorApiFailureBase = 10000
};
typedef enum cudaError cudaError_t;

enum cudaMemcpyKind {
	cudaMemcpyHostToHost = 0, cudaMemcpyHostToDevice = 1, cudaMemcpyDeviceToHost = 2,
	cudaMemcpyDeviceToDevice = 3, cudaMemcpyDefault = 4
};
enum cudaFuncCache { cudaFuncCachePreferNone, cudaFuncCachePreferShared, cudaFuncCachePreferL1, cudaFuncCachePreferEqual };
enum cudaSharedMemConfig { cudaSharedMemBankSizeDefault, cudaSharedMemBankSizeFourByte, cudaSharedMemBankSizeEightByte };
enum cudaFuncAttribute {
	cudaFuncAttributeMaxDynamicSharedMemorySize = 8, cudaFuncAttributePreferredSharedMemoryCarveout = 9,
	cudaFuncAttributeClusterDimMustBeSet = 10, cudaFuncAttributeRequiredClusterWidth = 11,
	cudaFuncAttributeNonPortableClusterSizeAllowed = 14, cudaFuncAttributeMax
};
enum cudaLimit {
	cudaLimitStackSize = 0, cudaLimitPrintfFifoSize = 1, cudaLimitMallocHeapSize = 2,
	cudaLimitDevRuntimeSyncDepth = 3, cudaLimitDevRuntimePendingLaunchCount = 4, cudaLimitMaxL2FetchGranularity = 5,
	cudaLimitPersistingL2CacheSize = 6
};
enum cudaMemoryType { cudaMemoryTypeUnregistered = 0, cudaMemoryTypeHost = 1, cudaMemoryTypeDevice = 2, cudaMemoryTypeManaged = 3 };
enum cudaMemoryAdvise {
	cudaMemAdviseSetReadMostly = 1, cudaMemAdviseUnsetReadMostly, cudaMemAdviseSetPreferredLocation,
	cudaMemAdviseUnsetPreferredLocation, cudaMemAdviseSetAccessedBy, cudaMemAdviseUnsetAccessedBy
};
enum cudaMemLocationType {
	cudaMemLocationTypeInvalid = 0, cudaMemLocationTypeNone = 0, cudaMemLocationTypeDevice = 1,
	cudaMemLocationTypeHost = 2, cudaMemLocationTypeHostNuma = 3, cudaMemLocationTypeHostNumaCurrent = 4
};
struct cudaMemLocation {
	enum cudaMemLocationType type;
	int id;
};
enum cudaStreamCaptureMode { cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed };
enum cudaStreamCaptureStatus { cudaStreamCaptureStatusNone, cudaStreamCaptureStatusActive, cudaStreamCaptureStatusInvalidated };
enum cudaDeviceAttr {
	cudaDevAttrMaxThreadsPerBlock = 1, cudaDevAttrMaxBlockDimX = 2, cudaDevAttrMaxBlockDimY = 3,
	cudaDevAttrMaxBlockDimZ = 4, cudaDevAttrMaxGridDimX = 5, cudaDevAttrMaxGridDimY = 6, cudaDevAttrMaxGridDimZ = 7,
	cudaDevAttrMaxSharedMemoryPerBlock = 8, cudaDevAttrTotalConstantMemory = 9, cudaDevAttrWarpSize = 10,
	cudaDevAttrMaxPitch = 11, cudaDevAttrMaxRegistersPerBlock = 12, cudaDevAttrClockRate = 13,
	cudaDevAttrMultiProcessorCount = 16, cudaDevAttrComputeCapabilityMajor = 75,
	cudaDevAttrComputeCapabilityMinor = 76, cudaDevAttrMaxSharedMemoryPerMultiprocessor = 81,
	cudaDevAttrMaxThreadsPerMultiProcessor = 39, cudaDevAttrL2CacheSize = 38, cudaDevAttrMemoryClockRate = 36,
	cudaDevAttrGlobalMemoryBusWidth = 37, cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
	cudaDevAttrCooperativeLaunch = 95, cudaDevAttrManagedMemory = 83
};
enum cudaDataType_t {
	CUDA_R_16F = 2, CUDA_C_16F = 6, CUDA_R_16BF = 14, CUDA_C_16BF = 15, CUDA_R_32F = 0, CUDA_C_32F = 4,
	CUDA_R_64F = 1, CUDA_C_64F = 5, CUDA_R_8I = 3, CUDA_C_8I = 7, CUDA_R_8U = 8, CUDA_C_8U = 9,
	CUDA_R_32I = 10, CUDA_C_32I = 11, CUDA_R_8F_E4M3 = 28, CUDA_R_8F_E5M2 = 29
};
typedef enum cudaDataType_t cudaDataType;
enum libraryPropertyType_t { MAJOR_VERSION, MINOR_VERSION, PATCH_LEVEL };
typedef enum libraryPropertyType_t libraryPropertyType;

typedef struct CUstream_st *cudaStream_t;
typedef struct CUevent_st *cudaEvent_t;
typedef struct CUgraph_st *cudaGraph_t;
typedef struct CUgraphExec_st *cudaGraphExec_t;
typedef struct CUgraphNode_st *cudaGraphNode_t;
typedef struct CUfunc_st *cudaFunction_t;
typedef struct CUkern_st *cudaKernel_t;
typedef struct CUlib_st *cudaLibrary_t;
typedef struct CUmemPoolHandle_st *cudaMemPool_t;
typedef struct cudaArray *cudaArray_t;
typedef const struct cudaArray *cudaArray_const_t;
typedef struct cudaGraphicsResource *cudaGraphicsResource_t;
typedef unsigned long long cudaTextureObject_t;
typedef unsigned long long cudaSurfaceObject_t;
typedef void (*cudaHostFn_t)(void *userData);
typedef void (*cudaStreamCallback_t)(cudaStream_t stream, cudaError_t status, void *userData);
struct cudaUUID_t { char bytes[16]; };
typedef struct cudaUUID_t cudaUUID_t;
struct cudaIpcMemHandle_t { char reserved[64]; };
struct cudaIpcEventHandle_t { char reserved[64]; };

/* the stream-ordered allocator's pools (driver_types.h of CUDA 13) */
enum cudaMemPoolAttr {
	cudaMemPoolReuseFollowEventDependencies = 0x1, cudaMemPoolReuseAllowOpportunistic = 0x2,
	cudaMemPoolReuseAllowInternalDependencies = 0x3, cudaMemPoolAttrReleaseThreshold = 0x4,
	cudaMemPoolAttrReservedMemCurrent = 0x5, cudaMemPoolAttrReservedMemHigh = 0x6,
	cudaMemPoolAttrUsedMemCurrent = 0x7, cudaMemPoolAttrUsedMemHigh = 0x8
};
enum cudaMemAccessFlags { cudaMemAccessFlagsProtNone = 0, cudaMemAccessFlagsProtRead = 1, cudaMemAccessFlagsProtReadWrite = 3 };
struct cudaMemAccessDesc { struct cudaMemLocation location; enum cudaMemAccessFlags flags; };
enum cudaMemAllocationType {
	cudaMemAllocationTypeInvalid = 0x0, cudaMemAllocationTypePinned = 0x1, cudaMemAllocationTypeManaged = 0x2,
	cudaMemAllocationTypeMax = 0x7FFFFFFF
};
enum cudaMemAllocationHandleType {
	cudaMemHandleTypeNone = 0x0, cudaMemHandleTypePosixFileDescriptor = 0x1, cudaMemHandleTypeWin32 = 0x2,
	cudaMemHandleTypeWin32Kmt = 0x4, cudaMemHandleTypeFabric = 0x8
};
struct cudaMemPoolProps {
	enum cudaMemAllocationType allocType;
	enum cudaMemAllocationHandleType handleTypes;
	struct cudaMemLocation location;
	void *win32SecurityAttributes;
	size_t maxSize;
	unsigned short usage;
	unsigned char reserved[54];
};
struct cudaMemPoolPtrExportData { unsigned char reserved[64]; };

struct cudaDeviceProp {
	char name[256];
	cudaUUID_t uuid;
	char luid[8];
	unsigned int luidDeviceNodeMask;
	size_t totalGlobalMem, sharedMemPerBlock;
	int regsPerBlock, warpSize;
	size_t memPitch;
	int maxThreadsPerBlock, maxThreadsDim[3], maxGridSize[3];
	size_t totalConstMem;
	int major, minor;
	size_t textureAlignment, texturePitchAlignment;
	int multiProcessorCount, integrated, canMapHostMemory;
	int maxTexture1D, maxTexture2D[2], maxTexture3D[3];
	size_t surfaceAlignment;
	int concurrentKernels, ECCEnabled, pciBusID, pciDeviceID, pciDomainID, tccDriver, asyncEngineCount,
		unifiedAddressing, memoryBusWidth, l2CacheSize, persistingL2CacheMaxSize,
		maxThreadsPerMultiProcessor, streamPrioritiesSupported, globalL1CacheSupported,
		localL1CacheSupported;
	size_t sharedMemPerMultiprocessor;
	int regsPerMultiprocessor, managedMemory, isMultiGpuBoard, multiGpuBoardGroupID,
		hostNativeAtomicSupported, pageableMemoryAccess, concurrentManagedAccess,
		computePreemptionSupported, canUseHostPointerForRegisteredMem, cooperativeLaunch;
	size_t sharedMemPerBlockOptin;
	int pageableMemoryAccessUsesHostPageTables, directManagedMemAccessFromHost, maxBlocksPerMultiProcessor,
		accessPolicyMaxWindowSize;
	size_t reservedSharedMemPerBlock;
	int hostRegisterSupported, sparseCudaArraySupported, hostRegisterReadOnlySupported,
		timelineSemaphoreInteropSupported, memoryPoolsSupported, gpuDirectRDMASupported;
	unsigned int gpuDirectRDMAFlushWritesOptions;
	int gpuDirectRDMAWritesOrdering;
	unsigned int memoryPoolSupportedHandleTypes;
	int deferredMappingCudaArraySupported, ipcEventSupported, clusterLaunch, unifiedFunctionPointers;
	int clockRate, memoryClockRate, deviceOverlap, kernelExecTimeoutEnabled, computeMode;
	int reserved[56];
};
struct cudaFuncAttributes {
	size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
	int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion, cacheModeCA, maxDynamicSharedSizeBytes,
		preferredShmemCarveout, clusterDimMustBeSet, requiredClusterWidth, requiredClusterHeight,
		requiredClusterDepth, clusterSchedulingPolicyPreference, nonPortableClusterSizeAllowed;
	int reserved[16];
};
struct cudaPointerAttributes {
	enum cudaMemoryType type;
	int device;
	void *devicePointer, *hostPointer;
};
struct cudaLaunchAttribute_st { int id; char pad[4]; union { char pad[64]; } val; };
typedef struct cudaLaunchAttribute_st cudaLaunchAttribute;
struct cudaLaunchConfig_st {
	dim3 gridDim, blockDim;
	size_t dynamicSmemBytes;
	cudaStream_t stream;
	cudaLaunchAttribute *attrs;
	unsigned int numAttrs;
};
typedef struct cudaLaunchConfig_st cudaLaunchConfig_t;
struct cudaPitchedPtr { void *ptr; size_t pitch, xsize, ysize; };
struct cudaExtent { size_t width, height, depth; };
struct cudaPos { size_t x, y, z; };
struct cudaMemcpy3DParms;
struct cudaChannelFormatDesc { int x, y, z, w; int f; };

extern "C" {
const char *cudaGetErrorName(cudaError_t error);
const char *cudaGetErrorString(cudaError_t error);
cudaError_t cudaGetLastError(void);
cudaError_t cudaPeekAtLastError(void);
cudaError_t cudaDriverGetVersion(int *v);
cudaError_t cudaRuntimeGetVersion(int *v);
cudaError_t cudaGetDeviceCount(int *count);
cudaError_t cudaGetDevice(int *device);
cudaError_t cudaSetDevice(int device);
cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags);
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device);
cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device);
cudaError_t cudaDeviceGetLimit(size_t *v, enum cudaLimit limit);
cudaError_t cudaDeviceSetLimit(enum cudaLimit limit, size_t v);
cudaError_t cudaDeviceSynchronize(void);
cudaError_t cudaDeviceReset(void);
cudaError_t cudaSetDeviceFlags(unsigned int flags);
cudaError_t cudaGetDeviceFlags(unsigned int *flags);
cudaError_t cudaDeviceSetCacheConfig(enum cudaFuncCache c);
cudaError_t cudaDeviceSetSharedMemConfig(enum cudaSharedMemConfig c);
cudaError_t cudaDeviceGetStreamPriorityRange(int *least, int *greatest);
cudaError_t cudaDeviceCanAccessPeer(int *can, int device, int peer);
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int flags);
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int device);
cudaError_t cudaMemGetInfo(size_t *free, size_t *total);
cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaMallocHost(void **p, size_t size);
cudaError_t cudaHostAlloc(void **p, size_t size, unsigned int flags);
cudaError_t cudaMallocManaged(void **p, size_t size, unsigned int flags = cudaMemAttachGlobal);
cudaError_t cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height);
cudaError_t cudaMallocAsync(void **p, size_t size, cudaStream_t s);
cudaError_t cudaFree(void *p);
cudaError_t cudaFreeHost(void *p);
cudaError_t cudaFreeAsync(void *p, cudaStream_t s);
cudaError_t cudaHostRegister(void *p, size_t size, unsigned int flags);
cudaError_t cudaHostUnregister(void *p);
cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned int flags);
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p);
cudaError_t cudaMemcpy(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t n, enum cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind);
cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch, size_t width, size_t height, enum cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemcpyPeer(void *dst, int dd, const void *src, int sd, size_t n);
cudaError_t cudaMemcpyPeerAsync(void *dst, int dd, const void *src, int sd, size_t n, cudaStream_t s = 0);
cudaError_t cudaMemset(void *p, int v, size_t n);
cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s = 0);
cudaError_t cudaMemset2D(void *p, size_t pitch, int v, size_t w, size_t h);
/* CUDA 13's forms (a location; the device-ordinal forms of CUDA 12 are gone) */
cudaError_t cudaMemPrefetchAsync(const void *p, size_t n, struct cudaMemLocation loc, unsigned int flags, cudaStream_t s = 0);
cudaError_t cudaMemAdvise(const void *p, size_t n, enum cudaMemoryAdvise a, struct cudaMemLocation loc);
cudaError_t cudaMemcpyToSymbol(const void *symbol, const void *src, size_t n, size_t offset = 0, enum cudaMemcpyKind kind = cudaMemcpyHostToDevice);
cudaError_t cudaMemcpyFromSymbol(void *dst, const void *symbol, size_t n, size_t offset = 0, enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost);
cudaError_t cudaMemcpyToSymbolAsync(const void *symbol, const void *src, size_t n, size_t offset, enum cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const void *symbol, size_t n, size_t offset, enum cudaMemcpyKind kind, cudaStream_t s = 0);
cudaError_t cudaGetSymbolAddress(void **p, const void *symbol);
cudaError_t cudaGetSymbolSize(size_t *n, const void *symbol);
cudaError_t cudaStreamCreate(cudaStream_t *s);
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags);
cudaError_t cudaStreamCreateWithPriority(cudaStream_t *s, unsigned int flags, int priority);
cudaError_t cudaStreamDestroy(cudaStream_t s);
cudaError_t cudaStreamSynchronize(cudaStream_t s);
cudaError_t cudaStreamQuery(cudaStream_t s);
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags = 0);
cudaError_t cudaStreamAddCallback(cudaStream_t s, cudaStreamCallback_t cb, void *user, unsigned int flags);
cudaError_t cudaStreamGetFlags(cudaStream_t s, unsigned int *flags);
cudaError_t cudaStreamGetPriority(cudaStream_t s, int *priority);
cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode);
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *g);
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *st);
cudaError_t cudaLaunchHostFunc(cudaStream_t s, cudaHostFn_t fn, void *user);
cudaError_t cudaEventCreate(cudaEvent_t *e);
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags);
cudaError_t cudaEventDestroy(cudaEvent_t e);
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = 0);
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t s = 0, unsigned int flags = 0);
cudaError_t cudaEventQuery(cudaEvent_t e);
cudaError_t cudaEventSynchronize(cudaEvent_t e);
cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end);
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *ge, cudaGraph_t g, unsigned long long flags = 0);
cudaError_t cudaGraphLaunch(cudaGraphExec_t ge, cudaStream_t s);
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t ge);
cudaError_t cudaGraphDestroy(cudaGraph_t g);
cudaError_t cudaLaunchKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s);
cudaError_t cudaLaunchCooperativeKernel(const void *func, dim3 grid, dim3 block, void **args, size_t shmem, cudaStream_t s);
cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t *config, const void *func, void **args);
cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, const void *func);
cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value);
cudaError_t cudaFuncSetCacheConfig(const void *func, enum cudaFuncCache c);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, const void *func, int block, size_t shmem);
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, const void *func, int block, size_t shmem, unsigned int flags);
cudaError_t cudaOccupancyMaxPotentialBlockSize_internal(int *grid, int *block, const void *func, size_t shmem, int limit);
cudaError_t cudaProfilerStart(void);
cudaError_t cudaProfilerStop(void);
cudaError_t cudaIpcGetMemHandle(struct cudaIpcMemHandle_t *h, void *p);
cudaError_t cudaIpcOpenMemHandle(void **p, struct cudaIpcMemHandle_t h, unsigned int flags);
cudaError_t cudaIpcCloseMemHandle(void *p);
cudaError_t cudaThreadSynchronize(void);
cudaError_t cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s);
cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *pool, int device);
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *pool, int device);
cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t pool);
cudaError_t cudaMemPoolCreate(cudaMemPool_t *pool, const struct cudaMemPoolProps *props);
cudaError_t cudaMemPoolDestroy(cudaMemPool_t pool);
cudaError_t cudaMemPoolTrimTo(cudaMemPool_t pool, size_t minBytesToKeep);
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value);
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t pool, enum cudaMemPoolAttr attr, void *value);
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const struct cudaMemAccessDesc *descs, size_t count);
cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags *flags, cudaMemPool_t pool, struct cudaMemLocation *location);
cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t *pool, struct cudaMemLocation *location, enum cudaMemAllocationType type);
cudaError_t cudaMemGetMemPool(cudaMemPool_t *pool, struct cudaMemLocation *location, enum cudaMemAllocationType type);
cudaError_t cudaMemSetMemPool(struct cudaMemLocation *location, enum cudaMemAllocationType type, cudaMemPool_t pool);
cudaError_t cudaMemPoolExportToShareableHandle(void *handle, cudaMemPool_t pool, enum cudaMemAllocationHandleType type, unsigned int flags);
cudaError_t cudaMemPoolImportFromShareableHandle(cudaMemPool_t *pool, void *handle, enum cudaMemAllocationHandleType type, unsigned int flags);
cudaError_t cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData *data, void *p);
cudaError_t cudaMemPoolImportPointer(void **p, cudaMemPool_t pool, struct cudaMemPoolPtrExportData *data);
cudaError_t cudaFuncSetSharedMemConfig(const void *func, enum cudaSharedMemConfig c);
cudaError_t cudaFuncGetName(const char **name, const void *func);
cudaError_t cudaGetKernel(cudaKernel_t *k, const void *func);
cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *bytes, const void *func, int blocks, int block);
cudaError_t cudaOccupancyMaxPotentialClusterSize(int *n, const void *func, const cudaLaunchConfig_t *config);
cudaError_t cudaOccupancyMaxActiveClusters(int *n, const void *func, const cudaLaunchConfig_t *config);
cudaError_t cudaLibraryGetGlobal(void **p, size_t *bytes, cudaLibrary_t lib, const char *name);
cudaError_t cudaLibraryGetManaged(void **p, size_t *bytes, cudaLibrary_t lib, const char *name);
cudaError_t cudaLibraryGetUnifiedFunction(void **p, cudaLibrary_t lib, const char *name);
} /* extern "C" */

/* The C++ overloads of cuda_runtime.h. */
template <class T> static inline cudaError_t cudaMalloc(T **p, size_t size) { return ::cudaMalloc((void **)p, size); }
static inline cudaError_t cudaEventCreate(cudaEvent_t *e, unsigned int flags) { return ::cudaEventCreateWithFlags(e, flags); }
static inline cudaError_t cudaMallocHost(void **p, size_t size, unsigned int flags) { return ::cudaHostAlloc(p, size, flags); }
template <class T> static inline cudaError_t cudaMallocHost(T **p, size_t size, unsigned int flags = 0)
{ return ::cudaMallocHost((void **)p, size, flags); }
template <class T> static inline cudaError_t cudaHostGetDevicePointer(T **p, void *host, unsigned int flags)
{ return ::cudaHostGetDevicePointer((void **)p, host, flags); }
static inline cudaError_t cudaMallocAsync(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s)
{ return ::cudaMallocFromPoolAsync(p, size, pool, s); }
template <class T> static inline cudaError_t cudaMallocAsync(T **p, size_t size, cudaMemPool_t pool, cudaStream_t s)
{ return ::cudaMallocFromPoolAsync((void **)p, size, pool, s); }
template <class T> static inline cudaError_t cudaMallocFromPoolAsync(T **p, size_t size, cudaMemPool_t pool, cudaStream_t s)
{ return ::cudaMallocFromPoolAsync((void **)p, size, pool, s); }
template <class T> static inline cudaError_t cudaHostAlloc(T **p, size_t size, unsigned int flags)
{ return ::cudaHostAlloc((void **)p, size, flags); }
template <class T> static inline cudaError_t cudaMallocManaged(T **p, size_t size, unsigned int flags = cudaMemAttachGlobal)
{ return ::cudaMallocManaged((void **)p, size, flags); }
template <class T> static inline cudaError_t cudaMallocAsync(T **p, size_t size, cudaStream_t s)
{ return ::cudaMallocAsync((void **)p, size, s); }
template <class T> static inline cudaError_t cudaMallocPitch(T **p, size_t *pitch, size_t w, size_t h)
{ return ::cudaMallocPitch((void **)p, pitch, w, h); }
template <class T> static inline cudaError_t cudaMemcpyToSymbol(const T &symbol, const void *src, size_t n, size_t offset = 0,
								 enum cudaMemcpyKind kind = cudaMemcpyHostToDevice)
{ return ::cudaMemcpyToSymbol((const void *)&symbol, src, n, offset, kind); }
template <class T> static inline cudaError_t cudaMemcpyFromSymbol(void *dst, const T &symbol, size_t n, size_t offset = 0,
								   enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost)
{ return ::cudaMemcpyFromSymbol(dst, (const void *)&symbol, n, offset, kind); }
template <class T> static inline cudaError_t cudaMemcpyToSymbolAsync(const T &symbol, const void *src, size_t n, size_t offset = 0,
								      enum cudaMemcpyKind kind = cudaMemcpyHostToDevice, cudaStream_t s = 0)
{ return ::cudaMemcpyToSymbolAsync((const void *)&symbol, src, n, offset, kind, s); }
template <class T> static inline cudaError_t cudaGetSymbolAddress(void **p, const T &symbol)
{ return ::cudaGetSymbolAddress(p, (const void *)&symbol); }
template <class T> static inline cudaError_t cudaMemcpyFromSymbolAsync(void *dst, const T &symbol, size_t n, size_t offset = 0,
									enum cudaMemcpyKind kind = cudaMemcpyDeviceToHost, cudaStream_t s = 0)
{ return ::cudaMemcpyFromSymbolAsync(dst, (const void *)&symbol, n, offset, kind, s); }
template <class T> static inline cudaError_t cudaGetSymbolSize(size_t *size, const T &symbol)
{ return ::cudaGetSymbolSize(size, (const void *)&symbol); }
template <class T> static inline cudaError_t cudaFuncSetSharedMemConfig(T *func, enum cudaSharedMemConfig c)
{ return ::cudaFuncSetSharedMemConfig((const void *)func, c); }
template <class T> static inline cudaError_t cudaFuncGetName(const char **name, T *func)
{ return ::cudaFuncGetName(name, (const void *)func); }
template <class T> static inline cudaError_t cudaGetKernel(cudaKernel_t *k, T *func)
{ return ::cudaGetKernel(k, (const void *)func); }
template <class T> static inline cudaError_t cudaLibraryGetGlobal(T **p, size_t *bytes, cudaLibrary_t lib, const char *name)
{ return ::cudaLibraryGetGlobal((void **)p, bytes, lib, name); }
template <class T> static inline cudaError_t cudaLibraryGetManaged(T **p, size_t *bytes, cudaLibrary_t lib, const char *name)
{ return ::cudaLibraryGetManaged((void **)p, bytes, lib, name); }
template <class T> static inline cudaError_t cudaLibraryGetUnifiedFunction(T **p, cudaLibrary_t lib, const char *name)
{ return ::cudaLibraryGetUnifiedFunction((void **)p, lib, name); }
template <class T> static inline cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *a, T *func)
{ return ::cudaFuncGetAttributes(a, (const void *)func); }
template <class T> static inline cudaError_t cudaFuncSetAttribute(T *func, enum cudaFuncAttribute attr, int value)
{ return ::cudaFuncSetAttribute((const void *)func, attr, value); }
template <class T> static inline cudaError_t cudaFuncSetCacheConfig(T *func, enum cudaFuncCache c)
{ return ::cudaFuncSetCacheConfig((const void *)func, c); }
template <class T> static inline cudaError_t cudaLaunchKernel(T *func, dim3 grid, dim3 block, void **args, size_t shmem = 0,
							       cudaStream_t s = 0)
{ return ::cudaLaunchKernel((const void *)func, grid, block, args, shmem, s); }
template <class T> static inline cudaError_t cudaLaunchCooperativeKernel(T *func, dim3 grid, dim3 block, void **args,
									  size_t shmem = 0, cudaStream_t s = 0)
{ return ::cudaLaunchCooperativeKernel((const void *)func, grid, block, args, shmem, s); }
template <class... K, class... A>
static inline cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t *config, void (*kernel)(K...), A &&...)
{ return ::cudaLaunchKernelExC(config, (const void *)kernel, nullptr); }
template <class T> static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int *n, T func, int block, size_t shmem)
{ return ::cudaOccupancyMaxActiveBlocksPerMultiprocessor(n, (const void *)func, block, shmem); }
template <class T> static inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int *grid, int *block, T func, size_t shmem = 0,
									      int limit = 0)
{ return ::cudaOccupancyMaxPotentialBlockSize_internal(grid, block, (const void *)func, shmem, limit); }
template <class T> static inline cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(int *n, T func, int block,
											   size_t shmem, unsigned int flags)
{ return ::cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(n, (const void *)func, block, shmem, flags); }
template <class T> static inline cudaError_t cudaOccupancyMaxPotentialBlockSizeWithFlags(int *grid, int *block, T func,
										       size_t shmem = 0, int limit = 0,
										       unsigned int = 0)
{ return ::cudaOccupancyMaxPotentialBlockSize_internal(grid, block, (const void *)func, shmem, limit); }
/* The variable-shared-memory forms: the size of the largest block's
 * shared memory, as the driver's search would try first. */
template <class T, class F>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags(int *grid, int *block, T func, F smem_of_block,
										     int limit = 0, unsigned int = 0)
{ return ::cudaOccupancyMaxPotentialBlockSize_internal(grid, block, (const void *)func, (size_t)smem_of_block(limit > 0 ? limit : 1024), limit); }
template <class T, class F>
static inline cudaError_t cudaOccupancyMaxPotentialBlockSizeVariableSMem(int *grid, int *block, T func, F smem_of_block, int limit = 0)
{ return cudaOccupancyMaxPotentialBlockSizeVariableSMemWithFlags(grid, block, func, smem_of_block, limit, 0); }
template <class T> static inline cudaError_t cudaOccupancyAvailableDynamicSMemPerBlock(size_t *bytes, T *func, int blocks, int block)
{ return ::cudaOccupancyAvailableDynamicSMemPerBlock(bytes, (const void *)func, blocks, block); }
template <class T> static inline cudaError_t cudaOccupancyMaxPotentialClusterSize(int *n, T *func, const cudaLaunchConfig_t *config)
{ return ::cudaOccupancyMaxPotentialClusterSize(n, (const void *)func, config); }
template <class T> static inline cudaError_t cudaOccupancyMaxActiveClusters(int *n, T *func, const cudaLaunchConfig_t *config)
{ return ::cudaOccupancyMaxActiveClusters(n, (const void *)func, config); }
template <class T> static inline cudaError_t cudaStreamAttachMemAsync(cudaStream_t, T *, size_t = 0, unsigned int = 0)
{ return cudaSuccess; }
#endif /* SIM_CUDA_RUNTIME_API_H */
