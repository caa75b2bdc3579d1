/* SPDX-License-Identifier: MIT
 * cuda_runtime.h (CPU device shim): the kernel surface is sim_kernel.h
 * (force-included); this adds the runtime API's host declarations
 * (cuda_runtime_api.h here), as CUDA's cuda_runtime.h does. */
#ifndef SIM_CUDA_RUNTIME_H
#define SIM_CUDA_RUNTIME_H
#include "sim_kernel.h"
#include "cuda_runtime_api.h"
#endif
