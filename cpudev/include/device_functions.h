/* SPDX-License-Identifier: MIT
 * device_functions.h (CPU device shim): its declarations are in sim_kernel.h and
 * cuda_runtime_api.h here. */
#include "cuda_runtime.h"
