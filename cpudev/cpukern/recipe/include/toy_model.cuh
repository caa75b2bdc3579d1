/* SPDX-License-Identifier: MIT
 *
 * toy_model.cuh - the shapes of the toy regression model of train.cu and
 * the launchers of kernels.cu.  A user's program, as a user writes one: it
 * knows nothing of ddprun or of the CPU device.
 */
#pragma once
#include <cuda_runtime.h>

#define TOY_IN 8  /* inputs per example */
#define TOY_HID 16 /* hidden units */

struct ToyParams {
	float *W1; /* TOY_HID x TOY_IN, row-major */
	float *b1; /* TOY_HID */
	float *w2; /* TOY_HID */
	float *b2; /* 1 */
};

void toy_forward(const float *X, const ToyParams &p, float *H, float *Yhat, int batch, cudaStream_t s);
void toy_loss(const float *Yhat, const float *Y, float *dY, float *loss, int batch, cudaStream_t s);
void toy_backward(const float *X, const float *H, const float *dY, const ToyParams &p, const ToyParams &g, int batch,
		  cudaStream_t s);
void toy_sgd(float *param, const float *grad, float lr, int n, cudaStream_t s);
