// SPDX-License-Identifier: MIT
//
// w2v_cbow.cu - a word2vec CBOW trainer with negative sampling, written the
// way the CUDA ports of word2vec are (for tests/e2e/sync/fused.sh, issue 33):
// the runtime API, the embedding tables syn0 (input vectors) and syn1neg
// (output vectors) initialised on the host and copied to the device once,
// the corpus copied once, and ONE kernel that reads a batch of sentences and
// adds into both tables in place with atomicAdd: no gradient buffer exists.
//
//   w2v_cbow CORPUS OUT [--mode step|all] [--epochs E] [--batch B]
//
// CORPUS: int32 token ids, sentences of SENT tokens (ids < VOCAB; under
// ddprun --shard CORPUS:record=<SENT*4> each rank reads its share).
// --mode step (default): one launch per batch of B sentences, E epochs;
// --mode all: the whole training (every epoch, every sentence) in one launch.
// OUT: syn0 as VOCAB*DIM float32, written at the end.  Prints
// "sentences N launches L" on stdout.
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB 64
#define DIM 16
#define SENT 8
#define WINDOW 2
#define NEG 3

#define CK(x)                                                                                              \
	do {                                                                                                \
		cudaError_t e_ = (x);                                                                       \
		if (e_ != cudaSuccess) {                                                                    \
			fprintf(stderr, "w2v_cbow: %s: %s\n", #x, cudaGetErrorString(e_));                  \
			exit(1);                                                                            \
		}                                                                                           \
	} while (0)

__device__ unsigned hash32(unsigned x)
{
	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

// One thread per (sentence, position): the context's mean vector h, one
// positive and NEG negative targets; syn1neg and syn0 updated in place.
__global__ void cbow_kernel(const int *sentences, int first, int count, int epochs, float *syn0, float *syn1neg,
			    float alpha)
{
	int t = blockIdx.x * blockDim.x + threadIdx.x;
	int per_epoch = count * SENT;
	if (t >= per_epoch * epochs)
		return;
	int e = t / per_epoch, s = first + (t % per_epoch) / SENT, pos = t % SENT;
	const int *sen = sentences + (size_t)s * SENT;
	float h[DIM], eh[DIM];
	int cw = 0;
	for (int d = 0; d < DIM; d++)
		h[d] = eh[d] = 0.f;
	for (int j = pos - WINDOW; j <= pos + WINDOW; j++) {
		if (j < 0 || j >= SENT || j == pos)
			continue;
		for (int d = 0; d < DIM; d++)
			h[d] += syn0[sen[j] * DIM + d];
		cw++;
	}
	if (!cw)
		return;
	for (int d = 0; d < DIM; d++)
		h[d] /= cw;
	for (int n = 0; n <= NEG; n++) {
		int target = n == 0 ? sen[pos] : (int)(hash32((unsigned)(t * 7 + n + e * 131)) % VOCAB);
		float label = n == 0 ? 1.f : 0.f;
		if (n && target == sen[pos])
			continue;
		float f = 0.f;
		for (int d = 0; d < DIM; d++)
			f += h[d] * syn1neg[target * DIM + d];
		float g = (label - 1.f / (1.f + expf(-f))) * alpha;
		for (int d = 0; d < DIM; d++) {
			eh[d] += g * syn1neg[target * DIM + d];
			atomicAdd(&syn1neg[target * DIM + d], g * h[d]);
		}
	}
	for (int j = pos - WINDOW; j <= pos + WINDOW; j++) {
		if (j < 0 || j >= SENT || j == pos)
			continue;
		for (int d = 0; d < DIM; d++)
			atomicAdd(&syn0[sen[j] * DIM + d], eh[d]);
	}
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: w2v_cbow CORPUS OUT [--mode step|all] [--epochs E] [--batch B]\n");
		return 2;
	}
	const char *mode = "step";
	int epochs = 3, batch = 16;
	for (int i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--mode"))
			mode = argv[i + 1];
		else if (!strcmp(argv[i], "--epochs"))
			epochs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "--batch"))
			batch = atoi(argv[i + 1]);
	}
	FILE *f = fopen(argv[1], "rb");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long bytes = ftell(f);
	fseek(f, 0, SEEK_SET);
	int nsent = (int)(bytes / (SENT * (long)sizeof(int)));
	int *corpus = (int *)malloc((size_t)nsent * SENT * sizeof(int) + 1);
	if (!corpus || fread(corpus, sizeof(int), (size_t)nsent * SENT, f) != (size_t)nsent * SENT) {
		fprintf(stderr, "w2v_cbow: cannot read %s\n", argv[1]);
		return 1;
	}
	fclose(f);

	// word2vec's initialisation: syn0 uniform in [-0.5, 0.5) / DIM from a
	// fixed LCG, syn1neg zeros
	static float h0[VOCAB * DIM], h1[VOCAB * DIM];
	unsigned long long next = 1;
	for (int i = 0; i < VOCAB * DIM; i++) {
		next = next * 25214903917ULL + 11;
		h0[i] = (((next & 0xFFFF) / 65536.f) - 0.5f) / DIM;
		h1[i] = 0.f;
	}
	int *d_corpus;
	float *d_syn0, *d_syn1;
	CK(cudaMalloc(&d_corpus, (size_t)nsent * SENT * sizeof(int)));
	CK(cudaMalloc(&d_syn0, sizeof h0));
	CK(cudaMalloc(&d_syn1, sizeof h1));
	CK(cudaMemcpy(d_corpus, corpus, (size_t)nsent * SENT * sizeof(int), cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_syn0, h0, sizeof h0, cudaMemcpyHostToDevice));
	CK(cudaMemcpy(d_syn1, h1, sizeof h1, cudaMemcpyHostToDevice));

	int launches = 0;
	const float alpha = 0.025f;
	if (!strcmp(mode, "all")) {
		int threads = nsent * SENT * epochs;
		cbow_kernel<<<(threads + 127) / 128, 128>>>(d_corpus, 0, nsent, epochs, d_syn0, d_syn1, alpha);
		CK(cudaGetLastError());
		launches++;
	} else {
		for (int e = 0; e < epochs; e++)
			for (int s = 0; s < nsent; s += batch) {
				int count = s + batch <= nsent ? batch : nsent - s;
				cbow_kernel<<<(count * SENT + 127) / 128, 128>>>(d_corpus, s, count, 1, d_syn0, d_syn1,
										 alpha);
				CK(cudaGetLastError());
				launches++;
			}
	}
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(h0, d_syn0, sizeof h0, cudaMemcpyDeviceToHost));
	f = fopen(argv[2], "wb");
	if (!f || fwrite(h0, sizeof h0, 1, f) != 1 || fclose(f)) {
		perror(argv[2]);
		return 1;
	}
	printf("sentences %d launches %d\n", nsent, launches);
	cudaFree(d_corpus);
	cudaFree(d_syn0);
	cudaFree(d_syn1);
	free(corpus);
	return 0;
}
