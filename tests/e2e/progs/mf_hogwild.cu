// SPDX-License-Identifier: MIT
//
// mf_hogwild.cu - a matrix-factorisation trainer with Hogwild SGD, written
// the way the CUDA recommender examples are (for tests/e2e/sync/fused.sh,
// issue 33): the runtime API, the ratings in CSR by user (row pointers and
// column indices as int, the values as float) built on the host from the
// rating records and copied to the device once, the user and item factors
// and biases initialised on the host and copied once, and ONE kernel named
// like an optimizer, sgd_update, that rewrites the factors and biases in
// place from the ratings: no gradient buffer exists.
//
//   mf_hogwild RATINGS OUT [--epochs E]
//
// RATINGS: records of (int32 user < USERS, int32 item < ITEMS, float32
// rating), 12 bytes each (under ddprun --shard RATINGS:record=12 each rank
// reads its share).  One launch per epoch, one thread per user (Hogwild: the
// item rows race, as the method accepts).  The global mean (the biases'
// baseline) is this process's mean rating.  OUT: the user factors, the item
// factors, the user biases and the item biases as float32, written at the
// end.  Prints "ratings N mean M" on stdout.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define USERS 48
#define ITEMS 40
#define K 8

#define CK(x)                                                                                              \
	do {                                                                                                \
		cudaError_t e_ = (x);                                                                       \
		if (e_ != cudaSuccess) {                                                                    \
			fprintf(stderr, "mf_hogwild: %s: %s\n", #x, cudaGetErrorString(e_));                \
			exit(1);                                                                            \
		}                                                                                           \
	} while (0)

struct rating {
	int user, item;
	float value;
};

__global__ void sgd_update(const int *row_ptr, const int *col_idx, const float *ratings, float *user_f,
			   float *item_f, float *user_b, float *item_b, int n_users, int k, float mu, float lr,
			   float reg)
{
	int u = blockIdx.x * blockDim.x + threadIdx.x;
	if (u >= n_users)
		return;
	for (int j = row_ptr[u]; j < row_ptr[u + 1]; j++) {
		int i = col_idx[j];
		float pred = mu + user_b[u] + item_b[i];
		for (int d = 0; d < k; d++)
			pred += user_f[u * k + d] * item_f[i * k + d];
		float err = ratings[j] - pred;
		user_b[u] += lr * (err - reg * user_b[u]);
		item_b[i] += lr * (err - reg * item_b[i]);
		for (int d = 0; d < k; d++) {
			float pu = user_f[u * k + d], qi = item_f[i * k + d];
			user_f[u * k + d] += lr * (err * qi - reg * pu);
			item_f[i * k + d] += lr * (err * pu - reg * qi);
		}
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: mf_hogwild RATINGS OUT [--epochs E]\n");
		return 2;
	}
	int epochs = 10;
	for (int i = 3; i + 1 < argc; i += 2)
		if (!strcmp(argv[i], "--epochs"))
			epochs = atoi(argv[i + 1]);
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f) / (long)sizeof(struct rating);
	fseek(f, 0, SEEK_SET);
	struct rating *r = (struct rating *)malloc((size_t)n * sizeof *r + 1);
	if (!r || fread(r, sizeof *r, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "mf_hogwild: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);

	// CSR by user, and the global mean
	int *row_ptr = (int *)calloc(USERS + 1, sizeof(int)), *col = (int *)malloc((size_t)n * sizeof(int) + 1);
	float *val = (float *)malloc((size_t)n * sizeof(float) + 1);
	double sum = 0;
	for (long j = 0; j < n; j++) {
		if (r[j].user < 0 || r[j].user >= USERS || r[j].item < 0 || r[j].item >= ITEMS) {
			fprintf(stderr, "mf_hogwild: record %ld out of range\n", j);
			return 1;
		}
		row_ptr[r[j].user + 1]++;
		sum += r[j].value;
	}
	for (int u = 0; u < USERS; u++)
		row_ptr[u + 1] += row_ptr[u];
	int *fill = (int *)calloc(USERS, sizeof(int));
	for (long j = 0; j < n; j++) {
		int at = row_ptr[r[j].user] + fill[r[j].user]++;
		col[at] = r[j].item;
		val[at] = r[j].value;
	}
	float mu = n ? (float)(sum / (double)n) : 0.f;

	static float hu[USERS * K], hi[ITEMS * K], hbu[USERS], hbi[ITEMS];
	unsigned s = 12345;
	for (int i = 0; i < USERS * K; i++)
		hu[i] = ((s = s * 1103515245u + 12345u) >> 16 & 0x7fff) / 32768.f * 0.1f;
	for (int i = 0; i < ITEMS * K; i++)
		hi[i] = ((s = s * 1103515245u + 12345u) >> 16 & 0x7fff) / 32768.f * 0.1f;

	int *d_row, *d_col;
	float *d_val, *d_u, *d_i, *d_bu, *d_bi;
	CK(cudaMalloc(&d_row, (USERS + 1) * sizeof(int)));
	CK(cudaMalloc(&d_col, (size_t)(n ? n : 1) * sizeof(int)));
	CK(cudaMalloc(&d_val, (size_t)(n ? n : 1) * sizeof(float)));
	CK(cudaMalloc(&d_u, sizeof hu));
	CK(cudaMalloc(&d_i, sizeof hi));
	CK(cudaMalloc(&d_bu, sizeof hbu));
	CK(cudaMalloc(&d_bi, sizeof hbi));
	CK(cudaMemcpy(d_row, row_ptr, (USERS + 1) * sizeof(int), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_col, col, (size_t)n * sizeof(int), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_val, val, (size_t)n * sizeof(float), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_u, hu, sizeof hu, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_i, hi, sizeof hi, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_bu, hbu, sizeof hbu, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_bi, hbi, sizeof hbi, cudaMemcpyHostToDevice));

	for (int e = 0; e < epochs; e++) {
		sgd_update<<<(USERS + 31) / 32, 32>>>(d_row, d_col, d_val, d_u, d_i, d_bu, d_bi, USERS, K, mu, 0.05f,
						       0.02f);
		CK(cudaGetLastError());
	}
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(hu, d_u, sizeof hu, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hi, d_i, sizeof hi, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hbu, d_bu, sizeof hbu, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(hbi, d_bi, sizeof hbi, cudaMemcpyDeviceToHost));
	f = fopen(argv[2], "wb");
	if (!f || fwrite(hu, sizeof hu, 1, f) != 1 || fwrite(hi, sizeof hi, 1, f) != 1 ||
	    fwrite(hbu, sizeof hbu, 1, f) != 1 || fwrite(hbi, sizeof hbi, 1, f) != 1 || fclose(f)) {
		perror(argv[2]);
		return 1;
	}
	printf("ratings %ld mean %.6f\n", n, mu);
	cudaFree(d_row);
	cudaFree(d_col);
	cudaFree(d_val);
	cudaFree(d_u);
	cudaFree(d_i);
	cudaFree(d_bu);
	cudaFree(d_bi);
	free(r);
	free(row_ptr);
	free(col);
	free(val);
	free(fill);
	return 0;
}
