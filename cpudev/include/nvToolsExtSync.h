/* SPDX-License-Identifier: MIT
 * nvToolsExtSync.h (CPU device shim): see nvtx3/nvToolsExtSync.h here. */
#include "nvtx3/nvToolsExtSync.h"
