/* SPDX-License-Identifier: MIT
 * cublas_v2.h (CPU device shim): see cublas_api.h here. */
#include "cublas_api.h"
