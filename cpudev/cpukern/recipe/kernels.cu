/* SPDX-License-Identifier: MIT
 *
 * kernels.cu - the toy regression model's kernels and their launchers
 * (train.cu's second .cu file): y = w2 . tanh(W1 x + b1) + b2, mean squared
 * error, gradients accumulated (+=) into buffers the caller zeroes, plain
 * SGD.  Deterministic: every gradient element is one thread's loop over the
 * batch in a fixed order; the loss is a block tree reduction.
 */
#include "toy_model.cuh"

__global__ void forward_kernel(const float *__restrict__ X, const float *__restrict__ W1, const float *__restrict__ b1,
			       const float *__restrict__ w2, const float *__restrict__ b2, float *__restrict__ H,
			       float *__restrict__ Yhat, int batch)
{
	int s = blockIdx.x * blockDim.x + threadIdx.x;
	if (s >= batch)
		return;
	float y = b2[0];
	for (int j = 0; j < TOY_HID; j++) {
		float a = b1[j];
		for (int i = 0; i < TOY_IN; i++)
			a += W1[j * TOY_IN + i] * X[s * TOY_IN + i];
		float h = tanhf(a);
		H[s * TOY_HID + j] = h;
		y += w2[j] * h;
	}
	Yhat[s] = y;
}

/* One block: dY = 2 (yhat - y) / batch, loss = mean (yhat - y)^2. */
__global__ void mse_loss_kernel(const float *Yhat, const float *Y, float *dY, float *loss, int batch)
{
	__shared__ float part[256];
	float acc = 0.0f;
	for (int s = threadIdx.x; s < batch; s += blockDim.x) {
		float d = Yhat[s] - Y[s];
		dY[s] = 2.0f * d / batch;
		acc += d * d;
	}
	part[threadIdx.x] = acc;
	__syncthreads();
	for (int w = blockDim.x / 2; w > 0; w /= 2) {
		if (threadIdx.x < w)
			part[threadIdx.x] += part[threadIdx.x + w];
		__syncthreads();
	}
	if (threadIdx.x == 0)
		*loss = part[0] / batch;
}

/* Thread j < TOY_HID: dw2[j]; thread TOY_HID: db2. */
__global__ void grad_out_kernel(const float *H, const float *dY, float *dw2, float *db2, int batch)
{
	int j = threadIdx.x;
	if (j > TOY_HID)
		return;
	float g = 0.0f;
	for (int s = 0; s < batch; s++)
		g += dY[s] * (j < TOY_HID ? H[s * TOY_HID + j] : 1.0f);
	if (j < TOY_HID)
		dw2[j] += g;
	else
		*db2 += g;
}

/* Thread (j, i): dW1[j][i]; thread (j, TOY_IN): db1[j]. */
__global__ void grad_hidden_kernel(const float *X, const float *H, const float *dY, const float *w2, float *dW1,
				   float *db1, int batch)
{
	int j = blockIdx.x, i = threadIdx.x;
	if (j >= TOY_HID || i > TOY_IN)
		return;
	float g = 0.0f;
	for (int s = 0; s < batch; s++) {
		float h = H[s * TOY_HID + j];
		float dh = dY[s] * w2[j] * (1.0f - h * h);
		g += dh * (i < TOY_IN ? X[s * TOY_IN + i] : 1.0f);
	}
	if (i < TOY_IN)
		dW1[j * TOY_IN + i] += g;
	else
		db1[j] += g;
}

__global__ void sgd_kernel(float *param, const float *grad, float lr, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		param[i] -= lr * grad[i];
}

void toy_forward(const float *X, const ToyParams &p, float *H, float *Yhat, int batch, cudaStream_t s)
{
	forward_kernel<<<(batch + 63) / 64, 64, 0, s>>>(X, p.W1, p.b1, p.w2, p.b2, H, Yhat, batch);
}

void toy_loss(const float *Yhat, const float *Y, float *dY, float *loss, int batch, cudaStream_t s)
{
	mse_loss_kernel<<<1, 256, 0, s>>>(Yhat, Y, dY, loss, batch);
}

void toy_backward(const float *X, const float *H, const float *dY, const ToyParams &p, const ToyParams &g, int batch,
		  cudaStream_t s)
{
	grad_out_kernel<<<1, TOY_HID + 1, 0, s>>>(H, dY, g.w2, g.b2, batch);
	grad_hidden_kernel<<<TOY_HID, TOY_IN + 1, 0, s>>>(X, H, dY, p.w2, g.W1, g.b1, batch);
}

void toy_sgd(float *param, const float *grad, float lr, int n, cudaStream_t s)
{
	sgd_kernel<<<(n + 127) / 128, 128, 0, s>>>(param, grad, lr, n);
}
