// SPDX-License-Identifier: MIT
//
// model.cu - the model's own kernels: the embedding lookup and its
// gradient, softmax cross-entropy.  Tokens travel as a float matrix
// [B][context + 1] (the last column is the target).
#include "tensorclass.cuh"

// out[b][t * D + d] = table[tok[b][t]][d]
__global__ void embed_kernel(const float *table, const float *tok, float *out, int batch, int context, int dim)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < batch * context * dim) {
		int b = i / (context * dim), t = (i / dim) % context, d = i % dim;
		int v = (int)tok[b * (context + 1) + t];
		out[i] = table[v * dim + d];
	}
}

// dtable[v][d] = sum over (b, t) with tok[b][t] == v of dx[b][t * D + d], in
// (b, t) order: one thread per output element, no atomics, deterministic
__global__ void embed_grad_kernel(const float *dx, const float *tok, float *dtable, int batch, int context, int dim,
				  int vocab)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < vocab * dim) {
		int v = i / dim, d = i % dim;
		float s = 0.0f;
		for (int b = 0; b < batch; b++)
			for (int t = 0; t < context; t++)
				if ((int)tok[b * (context + 1) + t] == v)
					s += dx[b * context * dim + t * dim + d];
		dtable[i] = s;
	}
}

// one thread per row: loss[b] = logsumexp(z) - z[target]; dz = (softmax - onehot) / B
__global__ void softmax_xent_kernel(const float *z, const float *tok, float *dz, float *loss, int batch, int vocab,
				    int context)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b < batch) {
		const float *row = z + b * vocab;
		int target = (int)tok[b * (context + 1) + context];
		float mx = row[0];
		for (int v = 1; v < vocab; v++)
			mx = fmaxf(mx, row[v]);
		float sum = 0.0f;
		for (int v = 0; v < vocab; v++)
			sum += expf(row[v] - mx);
		loss[b] = logf(sum) + mx - row[target];
		for (int v = 0; v < vocab; v++)
			dz[b * vocab + v] = (expf(row[v] - mx) / sum - (v == target ? 1.0f : 0.0f)) / (float)batch;
	}
}

Matrix embed(const Matrix &table, const Matrix &tokens, int context)
{
	int batch = tokens.rows(), dim = table.cols();
	Matrix out(batch, context * dim);
	embed_kernel<<<(unsigned)((out.size() + 127) / 128), 128, 0, tc_stream()>>>(table.data(), tokens.data(),
										     out.data(), batch, context, dim);
	LAUNCH_CHECK();
	return out;
}

Matrix embed_grad(const Matrix &dx, const Matrix &tokens, int context, int vocab)
{
	int batch = tokens.rows(), dim = dx.cols() / context;
	Matrix out(vocab, dim);
	embed_grad_kernel<<<(unsigned)((out.size() + 127) / 128), 128, 0, tc_stream()>>>(
		dx.data(), tokens.data(), out.data(), batch, context, dim, vocab);
	LAUNCH_CHECK();
	return out;
}

Matrix softmax_xent(const Matrix &logits, const Matrix &tokens, Matrix *loss)
{
	int batch = logits.rows(), vocab = logits.cols();
	Matrix dz(batch, vocab);
	*loss = Matrix(batch, 1);
	softmax_xent_kernel<<<(unsigned)((batch + 63) / 64), 64, 0, tc_stream()>>>(
		logits.data(), tokens.data(), dz.data(), loss->data(), batch, vocab, tokens.cols() - 1);
	LAUNCH_CHECK();
	return dz;
}
