// SPDX-License-Identifier: MIT
// hiddenupd.cu - device code of tests/e2e/progs/hiddenupd.c: one linear
// layer with tanh, a squared-error loss, its backward, and two updates:
// hu_apply updates the weights and the bias in ONE launch (two tensors of
// different sizes, a kernel named like no optimizer: libddp cannot find it),
// hu_apply_list the same for pointers in a by-value struct (nothing to bound
// them), hu_step one tensor per launch (elementwise: the data flow finds it).
struct hu_list {
	float *p[2];
	const float *g[2];
	int n[2];
};

__global__ void hu_forward(const float *w, const float *b, const float *x, float *y, int n, int m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n) {
		float s = b[i];
		for (int j = 0; j < m; j++)
			s += w[i * m + j] * x[j];
		y[i] = tanhf(s);
	}
}

__global__ void hu_loss_grad(const float *y, const float *t, float *dy, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		dy[i] = (y[i] - t[i]) * (1.0f - y[i] * y[i]);
}

__global__ void hu_backward(const float *dy, const float *x, float *dw, float *db, int n, int m)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n * m)
		dw[i] = dy[i / m] * x[i % m];
	if (i < n)
		db[i] = dy[i];
}

__global__ void hu_apply(float *w, const float *dw, float *b, const float *db, int nw, int nb, float lr)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < nw)
		w[i] -= lr * dw[i];
	if (i < nb)
		b[i] -= lr * db[i];
}

__global__ void hu_step(float *p, const float *g, float lr, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] -= lr * g[i];
}

__global__ void hu_apply_list(struct hu_list L, float lr)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	for (int k = 0; k < 2; k++)
		if (i < L.n[k])
			L.p[k][i] -= lr * L.g[k][i];
}
