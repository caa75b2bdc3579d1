/* SPDX-License-Identifier: MIT
 * cublas.h (CPU device shim): see cublas_api.h here. */
#include "cublas_api.h"
