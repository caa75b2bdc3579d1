/* SPDX-License-Identifier: MIT
 *
 * main.cu - samples/cublas_mlp: the samples/mlp model trained the way most
 * CUDA C trainers are written: the CUDA runtime API (cudaMalloc, cudaMemcpy,
 * <<<>>> launches, cudaStreamSynchronize), cuBLAS for every matrix product
 * (cublasSgemm, and cublasGemmEx for the output layer), and a hand-written
 * SGD-with-momentum kernel launched once per parameter tensor.
 *
 * Model (K = the data file's context, 8 for build/data/mlp.rec):
 *   x = concat(E[tok_0], ..., E[tok_{K-1}])      E: [96][16]
 *   h = tanh(x W1^T + b1)                         W1: [64][16K], b1: [64]
 *   logits = h W2^T + b2                          W2: [96][64],  b2: [96]
 *   loss = mean over the batch of cross-entropy(logits, target)
 * Same initialisation, data order, optimizer and save order as samples/mlp,
 * so both end with the same parameters up to float rounding (cuBLAS sums
 * in another order).
 *
 * cuBLAS is column-major: a row-major [rows][cols] matrix is a column-major
 * [cols][rows] one with leading dimension cols, so Y = X W^T (row-major) is
 * Y^T = W X^T, i.e. gemm(OP_T, OP_N, out, rows, in, W, in, X, in, Y, out).
 *
 * Contract: single-threaded; one non-blocking stream for every kernel and
 * cuBLAS call; every CUDA and cuBLAS call checked (one line, exit 1); the
 * only output on stdout is one `step K loss V` line per step.
 */
#include <cuda.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>
#include <cuda_runtime.h>

extern "C" {
#include "../common/sample.h"
}
#include "kernels.cuh"

enum { V = 96, D = 16, H = 64 };

enum { T_E, T_W1, T_B1, T_W2, T_B2, NTENSORS };

struct tensor {
	const char *name;
	size_t n;          /* elements                                   */
	float init_scale;  /* uniform in [-s, s); 0: zeros                */
	float *p;          /* parameter                                   */
	float *g;          /* gradient                                    */
	float *m;          /* momentum buffer                             */
};

static void cuda_check(cudaError_t e, const char *expr, const char *file, int line)
{
	if (e != cudaSuccess)
		sample_die(1, "%.*s failed: %s (%s:%d)", (int)strcspn(expr, "("), expr, cudaGetErrorName(e),
			   file, line);
}

static void cublas_check(cublasStatus_t st, const char *expr, const char *file, int line)
{
	if (st != CUBLAS_STATUS_SUCCESS)
		sample_die(1, "%.*s failed: %s (%s:%d)", (int)strcspn(expr, "("), expr, cublasGetStatusName(st),
			   file, line);
}

#define CUDA_CHECK(call) cuda_check((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) cublas_check((call), #call, __FILE__, __LINE__)
/* after a <<<>>> launch: a bad configuration is reported here */
#define LAUNCHED() cuda_check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)

#define USAGE "cublas_mlp --data PATH [--steps N] [--batch B] [--lr X] [--momentum M] [--seed S] [--save PATH]"

int main(int argc, char **argv)
{
	const char *data_path = NULL, *save_path = NULL;
	int steps = 300, batch = 16;
	float lr = 0.05f, momentum = 0.9f;
	uint64_t seed = 1;
	const struct sample_opt opts[] = {
		{"--data", SAMPLE_OPT_STR, &data_path, 0, 0, NULL, 1},
		{"--steps", SAMPLE_OPT_INT, &steps, 0, 1e9, NULL, 0},
		{"--batch", SAMPLE_OPT_INT, &batch, 1, 65536, NULL, 0},
		{"--lr", SAMPLE_OPT_FLOAT, &lr, 0, 1e3, NULL, 0},
		{"--momentum", SAMPLE_OPT_FLOAT, &momentum, 0, 1, NULL, 0},
		{"--seed", SAMPLE_OPT_U64, &seed, 0, 0, NULL, 0},
		{"--save", SAMPLE_OPT_STR, &save_path, 0, 0, NULL, 0},
	};
	const float one = 1.0f, zero = 0.0f;
	struct sample_data data;
	struct sample_rng rng;
	struct tensor t[NTENSORS];
	struct cudaDeviceProp prop;
	cudaStream_t stream;
	cublasHandle_t blas;
	unsigned char *d_rec, *h_rec;
	float *d_x, *d_h, *d_logits, *d_dlogits, *d_dh, *d_dx, *d_loss, *d_loss_mean, *h_buf;
	size_t i, total = 0;
	int K, in, rb, step;
	double t0;

	sample_prog = "cublas_mlp";
	setvbuf(stdout, NULL, _IOLBF, 0); /* one step line at a time, even into a pipe */
	sample_parse_args(argc, argv, opts, sizeof(opts) / sizeof(opts[0]), USAGE);
	sample_data_open(&data, data_path);
	K = (int)data.context;
	if (K > 64)
		sample_die(1, "%s: context %d is larger than this model's 64", data_path, K);
	in = K * D;
	rb = (int)data.record_bytes;

	t[T_E] = (struct tensor){"E", (size_t)V * D, 0.5f, NULL, NULL, NULL};
	t[T_W1] = (struct tensor){"W1", (size_t)H * in, 1.0f / sqrtf((float)in), NULL, NULL, NULL};
	t[T_B1] = (struct tensor){"b1", H, 0.0f, NULL, NULL, NULL};
	t[T_W2] = (struct tensor){"W2", (size_t)V * H, 1.0f / sqrtf((float)H), NULL, NULL, NULL};
	t[T_B2] = (struct tensor){"b2", V, 0.0f, NULL, NULL, NULL};
	for (i = 0; i < NTENSORS; i++)
		total += t[i].n;

	CUDA_CHECK(cudaSetDevice(0));
	CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
	CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	CUBLAS_CHECK(cublasCreate(&blas));
	CUBLAS_CHECK(cublasSetStream(blas, stream));
	/* plain fp32 products (TF32 only when asked for), so the result
	 * compares with samples/mlp */
	CUBLAS_CHECK(cublasSetMathMode(blas, CUBLAS_DEFAULT_MATH));

	/* parameters: E, W1, W2 drawn in that order; biases zero */
	h_buf = (float *)malloc(total * sizeof(float));
	h_rec = (unsigned char *)malloc((size_t)batch * rb);
	if (h_buf == NULL || h_rec == NULL)
		sample_die(1, "out of host memory");
	sample_rng_init(&rng, seed, 0);
	for (i = 0; i < NTENSORS; i++) {
		size_t bytes = t[i].n * sizeof(float);

		if (t[i].init_scale > 0.0f)
			sample_rng_uniform(&rng, h_buf, t[i].n, t[i].init_scale);
		else
			memset(h_buf, 0, bytes);
		CUDA_CHECK(cudaMalloc((void **)&t[i].p, bytes));
		CUDA_CHECK(cudaMalloc((void **)&t[i].g, bytes));
		CUDA_CHECK(cudaMalloc((void **)&t[i].m, bytes));
		CUDA_CHECK(cudaMemcpy(t[i].p, h_buf, bytes, cudaMemcpyHostToDevice));
		CUDA_CHECK(cudaMemset(t[i].m, 0, bytes));
	}
	sample_rng_close(&rng);

	CUDA_CHECK(cudaMalloc((void **)&d_rec, (size_t)batch * rb));
	CUDA_CHECK(cudaMalloc((void **)&d_x, (size_t)batch * in * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&d_dx, (size_t)batch * in * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&d_h, (size_t)batch * H * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&d_dh, (size_t)batch * H * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&d_logits, (size_t)batch * V * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&d_dlogits, (size_t)batch * V * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&d_loss, (size_t)batch * sizeof(float)));
	CUDA_CHECK(cudaMalloc((void **)&d_loss_mean, sizeof(float)));
	/* the synchronous copies above ran on the legacy default stream */
	CUDA_CHECK(cudaDeviceSynchronize());

	t0 = sample_now();
	for (step = 1; step <= steps; step++) {
		float loss;

		sample_data_read(&data, h_rec, (size_t)batch);
		CUDA_CHECK(cudaMemcpyAsync(d_rec, h_rec, (size_t)batch * rb, cudaMemcpyHostToDevice, stream));

		/* forward */
		launch_embed_forward(d_rec, rb, t[T_E].p, d_x, batch, K, D, stream);
		LAUNCHED();
		CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_T, CUBLAS_OP_N, H, batch, in, &one, t[T_W1].p, in, d_x,
					 in, &zero, d_h, H));
		launch_bias_act(d_h, t[T_B1].p, batch, H, 1 /* tanh */, stream);
		LAUNCHED();
		CUBLAS_CHECK(cublasGemmEx(blas, CUBLAS_OP_T, CUBLAS_OP_N, V, batch, H, &one, t[T_W2].p, CUDA_R_32F,
					  H, d_h, CUDA_R_32F, H, &zero, d_logits, CUDA_R_32F, V, CUBLAS_COMPUTE_32F,
					  CUBLAS_GEMM_DEFAULT));
		launch_bias_act(d_logits, t[T_B2].p, batch, V, 0 /* none */, stream);
		LAUNCHED();
		launch_softmax_xent(d_logits, d_rec, rb, K, d_loss, d_dlogits, batch, V, 1.0f / (float)batch,
				    stream);
		LAUNCHED();

		/* backward: dW2 = dlogits^T h, db2; dh = dlogits W2 * tanh';
		 * dW1 = dh^T x, db1; dx = dh W1; dE from dx */
		CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, H, V, batch, &one, d_h, H, d_dlogits, V,
					 &zero, t[T_W2].g, H));
		launch_bias_grad(d_dlogits, t[T_B2].g, batch, V, stream);
		LAUNCHED();
		CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, H, batch, V, &one, t[T_W2].p, H, d_dlogits,
					 V, &zero, d_dh, H));
		launch_tanh_backward(d_dh, d_h, (long)batch * H, stream);
		LAUNCHED();
		CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, in, H, batch, &one, d_x, in, d_dh, H,
					 &zero, t[T_W1].g, in));
		launch_bias_grad(d_dh, t[T_B1].g, batch, H, stream);
		LAUNCHED();
		CUBLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, in, batch, H, &one, t[T_W1].p, in, d_dh,
					 H, &zero, d_dx, in));
		launch_embed_backward(d_rec, rb, d_dx, t[T_E].g, batch, K, V, D, stream);
		LAUNCHED();
		launch_loss_mean(d_loss, batch, d_loss_mean, stream);
		LAUNCHED();

		/* optimizer: one launch per tensor */
		for (i = 0; i < NTENSORS; i++) {
			launch_sgd_momentum(t[i].p, t[i].g, t[i].m, lr, momentum, (int)t[i].n, stream);
			LAUNCHED();
		}
		CUDA_CHECK(cudaMemcpyAsync(&loss, d_loss_mean, sizeof(float), cudaMemcpyDeviceToHost, stream));
		CUDA_CHECK(cudaStreamSynchronize(stream));
		printf("step %d loss %.6f\n", step, loss);
	}
	fflush(stdout);
	fprintf(stderr, "cublas_mlp: ran %d steps on %s in %.2f s\n", steps, prop.name, sample_now() - t0);

	if (save_path) {
		size_t off = 0;

		for (i = 0; i < NTENSORS; i++) {
			CUDA_CHECK(cudaMemcpy(h_buf + off, t[i].p, t[i].n * sizeof(float), cudaMemcpyDeviceToHost));
			off += t[i].n;
		}
		sample_save(save_path, h_buf, total);
	}

	for (i = 0; i < NTENSORS; i++) {
		CUDA_CHECK(cudaFree(t[i].p));
		CUDA_CHECK(cudaFree(t[i].g));
		CUDA_CHECK(cudaFree(t[i].m));
	}
	CUDA_CHECK(cudaFree(d_rec));
	CUDA_CHECK(cudaFree(d_x));
	CUDA_CHECK(cudaFree(d_dx));
	CUDA_CHECK(cudaFree(d_h));
	CUDA_CHECK(cudaFree(d_dh));
	CUDA_CHECK(cudaFree(d_logits));
	CUDA_CHECK(cudaFree(d_dlogits));
	CUDA_CHECK(cudaFree(d_loss));
	CUDA_CHECK(cudaFree(d_loss_mean));
	CUBLAS_CHECK(cublasDestroy(blas));
	CUDA_CHECK(cudaStreamDestroy(stream));
	free(h_buf);
	free(h_rec);
	sample_data_close(&data);
	return 0;
}
