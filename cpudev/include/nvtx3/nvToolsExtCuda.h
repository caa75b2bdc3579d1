/* SPDX-License-Identifier: MIT
 *
 * nvtx3/nvToolsExtCuda.h (CPU device shim) - naming CUDA driver devices, contexts, streams and events: no-ops, as in
 * nvtx3/nvToolsExt.h here (NVTX is annotation for profilers).
 *
 * Contract: header only.
 */
#ifndef SIM_NVTOOLSEXTCUDA_H
#define SIM_NVTOOLSEXTCUDA_H
#include "nvToolsExt.h"
#include <cuda.h>
static inline void nvtxNameCuDeviceA(CUdevice, const char *) {}
static inline void nvtxNameCuDeviceW(CUdevice, const wchar_t *) {}
static inline void nvtxNameCuContextA(CUcontext, const char *) {}
static inline void nvtxNameCuContextW(CUcontext, const wchar_t *) {}
static inline void nvtxNameCuStreamA(CUstream, const char *) {}
static inline void nvtxNameCuStreamW(CUstream, const wchar_t *) {}
static inline void nvtxNameCuEventA(CUevent, const char *) {}
static inline void nvtxNameCuEventW(CUevent, const wchar_t *) {}
#define nvtxNameCuDevice nvtxNameCuDeviceA
#define nvtxNameCuContext nvtxNameCuContextA
#define nvtxNameCuStream nvtxNameCuStreamA
#define nvtxNameCuEvent nvtxNameCuEventA
#endif /* SIM_NVTOOLSEXTCUDA_H */
