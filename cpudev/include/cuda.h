/* SPDX-License-Identifier: MIT
 *
 * cuda.h (CPU device shim).  The kernel surface is sim_kernel.h
 * (force-included).  Host code of a driver-API program mentions CUresult,
 * cuLaunchKernel and the like: when SIM_CUDA_H_PATH names the toolkit's
 * cuda.h (ddp-cpu-kernels passes it), its declarations come from there; that
 * header is plain C declarations (no device code, no other CUDA header).
 */
#ifndef SIM_CUDA_H
#define SIM_CUDA_H
#include "sim_kernel.h"
#ifdef SIM_CUDA_H_PATH
#include SIM_CUDA_H_PATH
#endif
#endif
