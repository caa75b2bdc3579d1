/* SPDX-License-Identifier: MIT
 *
 * kernels.cuh - the hand-written kernels of samples/cublas_mlp and the host
 * functions that launch them with <<<grid, block, 0, stream>>> (kernels.cu).
 * The matrix products are cuBLAS calls in main.cu.
 *
 * Layouts: row-major float32 as in ../common/nn_kernels.cuh (W[out][in],
 * activations [rows][features]).
 *
 * Contract: every function only enqueues work on `s` and returns; errors are
 * reported by the caller's cudaGetLastError() check.
 */
#ifndef SAMPLES_CUBLAS_MLP_KERNELS_CUH
#define SAMPLES_CUBLAS_MLP_KERNELS_CUH

#include <cuda_runtime.h>

/* X[r][c*D + d] = E[token(record r, slot c)][d] */
void launch_embed_forward(const unsigned char *rec, int rec_bytes, const float *E, float *X, int rows,
			  int C, int D, cudaStream_t s);
/* Y[r][o] = act(Y[r][o] + b[o]); act 1 = tanh, 0 = none */
void launch_bias_act(float *Y, const float *b, int rows, int out, int act, cudaStream_t s);
/* loss[r], dlogits[r][v] = (softmax - onehot(target)) * scale */
void launch_softmax_xent(const float *logits, const unsigned char *rec, int rec_bytes, int target_off,
			 float *loss, float *dlogits, int rows, int V, float scale, cudaStream_t s);
/* out[0] = mean of loss[0..n) */
void launch_loss_mean(const float *loss, int n, float *out, cudaStream_t s);
/* db[o] = sum_r dY[r][o] */
void launch_bias_grad(const float *dY, float *db, int rows, int out, cudaStream_t s);
/* dH[i] *= 1 - H[i]^2 (H: the tanh output) */
void launch_tanh_backward(float *dH, const float *H, long n, cudaStream_t s);
/* dE[v][d] = sum of dX over the (row, slot) pairs whose token is v */
void launch_embed_backward(const unsigned char *rec, int rec_bytes, const float *dX, float *dE, int rows,
			   int C, int V, int D, cudaStream_t s);
/* PyTorch SGD with momentum: buf = momentum*buf + grad; param -= lr*buf */
void launch_sgd_momentum(float *param, const float *grad, float *buf, float lr, float momentum, int n,
			 cudaStream_t s);

#endif /* SAMPLES_CUBLAS_MLP_KERNELS_CUH */
