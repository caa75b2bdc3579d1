/* SPDX-License-Identifier: MIT
 * cuda_profiler_api.h (CPU device shim): cudaProfilerStart/Stop are declared
 * with the runtime API (cuda_runtime_api.h here). */
#include "cuda_runtime.h"
