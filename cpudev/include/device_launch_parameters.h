/* SPDX-License-Identifier: MIT
 * device_launch_parameters.h (CPU device shim): everything a kernel needs is in sim_kernel.h,
 * which is force-included; this file only keeps `#include <device_launch_parameters.h>` valid. */
#include "sim_kernel.h"
