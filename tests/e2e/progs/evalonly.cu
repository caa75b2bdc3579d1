// SPDX-License-Identifier: MIT
// evalonly.cu - device code of tests/e2e/progs/evalonly.c: one linear layer
// (logits = W x + b) and the arg max of each row; ev_nudge is the control's
// hidden update (it rewrites the weights the forward read).
__global__ void ev_linear(const float *w, const float *b, const float *x, float *y, int rows, int in, int out)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < rows * out) {
		int r = i / out, o = i % out;
		float s = b[o];
		for (int j = 0; j < in; j++)
			s += w[o * in + j] * x[r * in + j];
		y[i] = s;
	}
}

__global__ void ev_argmax(const float *y, int *pred, int rows, int out)
{
	int r = blockIdx.x * blockDim.x + threadIdx.x;
	if (r < rows) {
		int best = 0;
		for (int o = 1; o < out; o++)
			if (y[r * out + o] > y[r * out + best])
				best = o;
		pred[r] = best;
	}
}

__global__ void ev_nudge(float *w, const float *y, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		w[i] += 1e-3f * y[i % 4];
}
