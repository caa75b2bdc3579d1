/* SPDX-License-Identifier: MIT
 * nvToolsExtCudaRt.h (CPU device shim): see nvtx3/nvToolsExtCudaRt.h here. */
#include "nvtx3/nvToolsExtCudaRt.h"
