/* SPDX-License-Identifier: MIT
 * cuda_runtime.h (CPU device shim): everything a kernel needs is in sim_kernel.h,
 * which is force-included; this file only keeps `#include <cuda_runtime.h>` valid. */
#include "sim_kernel.h"
