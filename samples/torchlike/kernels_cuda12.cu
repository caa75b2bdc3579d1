/* SPDX-License-Identifier: MIT
 *
 * kernels_cuda12.cu - samples/torchlike's kernels with the 4 KB argument
 * structs of PyTorch builds for CUDA <= 12 (--layout cuda12): the same
 * names as kernels.cu's, other parameter sizes, so a module (and, on the
 * CPU device, a kernel library) of its own: libtorchlike_cuda12.so embeds it.
 */
#define TL_LAYOUT_CUDA12 1
#include "kernels.cu"
