/* SPDX-License-Identifier: MIT
 * cuda_device_runtime_api.h (CPU device shim): its declarations are in sim_kernel.h and
 * cuda_runtime_api.h here. */
#include "cuda_runtime.h"
