/* SPDX-License-Identifier: MIT
 *
 * nvtx3/nvToolsExtCudaRt.h (CPU device shim) - naming CUDA runtime devices, streams and events: no-ops, as in
 * nvtx3/nvToolsExt.h here (NVTX is annotation for profilers).
 *
 * Contract: header only.
 */
#ifndef SIM_NVTOOLSEXTCUDART_H
#define SIM_NVTOOLSEXTCUDART_H
#include "nvToolsExt.h"
#include <cuda_runtime_api.h>
static inline void nvtxNameCudaDeviceA(int, const char *) {}
static inline void nvtxNameCudaDeviceW(int, const wchar_t *) {}
static inline void nvtxNameCudaStreamA(cudaStream_t, const char *) {}
static inline void nvtxNameCudaStreamW(cudaStream_t, const wchar_t *) {}
static inline void nvtxNameCudaEventA(cudaEvent_t, const char *) {}
static inline void nvtxNameCudaEventW(cudaEvent_t, const wchar_t *) {}
#define nvtxNameCudaDevice nvtxNameCudaDeviceA
#define nvtxNameCudaStream nvtxNameCudaStreamA
#define nvtxNameCudaEvent nvtxNameCudaEventA
#endif /* SIM_NVTOOLSEXTCUDART_H */
