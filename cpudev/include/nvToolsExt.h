/* SPDX-License-Identifier: MIT
 * nvToolsExt.h (CPU device shim): see nvtx3/nvToolsExt.h here. */
#include "nvtx3/nvToolsExt.h"
