// SPDX-License-Identifier: MIT
// grid_group::sync needs a cooperative launch: one line naming this use.
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
__global__ void two_phase(float *x)
{
	x[blockIdx.x] = 1.0f;
	cg::this_grid().sync(); // ERROR-LINE
	x[blockIdx.x] += x[0];
}
