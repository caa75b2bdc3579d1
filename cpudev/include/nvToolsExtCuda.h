/* SPDX-License-Identifier: MIT
 * nvToolsExtCuda.h (CPU device shim): see nvtx3/nvToolsExtCuda.h here. */
#include "nvtx3/nvToolsExtCuda.h"
