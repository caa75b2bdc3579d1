/* SPDX-License-Identifier: MIT
 *
 * train.cu - a small trainer written the way a user writes one, to run the
 * three-command recipe of docs/cpu-device.md (cpudev/cpukern/recipe.sh):
 * a regression MLP (8 -> 16 tanh -> 1) trained with SGD on examples read
 * with fopen/fread from a file of raw records (8 float inputs, 1 float
 * target: 36 bytes each), BATCH records per step, starting over at the end
 * of the file.  Runtime API, <<<>>> launches in kernels.cu, one allocation
 * per tensor, gradients zeroed with cudaMemset every step.  It knows
 * nothing of ddprun or of the CPU device.
 *
 *   train [--data FILE] [--steps N] [--batch B] [--lr F] [--save FILE]
 *
 * Prints "step K loss L" per step; --save writes the parameters (W1, b1,
 * w2, b2) as float32.
 */
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "toy_model.cuh"

#define CHECK(call) do { \
	cudaError_t e_ = (call); \
	if (e_ != cudaSuccess) { \
		fprintf(stderr, "train: %s: %s\n", #call, cudaGetErrorString(e_)); \
		exit(1); \
	} \
} while (0)

static const int sizes[4] = { TOY_HID * TOY_IN, TOY_HID, TOY_HID, 1 };

static float **slot(ToyParams &p, int k)
{
	float **s[4] = { &p.W1, &p.b1, &p.w2, &p.b2 };
	return s[k];
}

/* Reads `batch` records, starting over at the end of the file. */
static void next_batch(FILE *f, const char *path, int batch, std::vector<float> &x, std::vector<float> &y)
{
	float rec[TOY_IN + 1];
	for (int s = 0; s < batch; s++) {
		if (fread(rec, sizeof(rec), 1, f) != 1) {
			if (fseek(f, 0, SEEK_SET) != 0 || fread(rec, sizeof(rec), 1, f) != 1) {
				fprintf(stderr, "train: %s: cannot read a record\n", path);
				exit(1);
			}
		}
		memcpy(&x[s * TOY_IN], rec, TOY_IN * sizeof(float));
		y[s] = rec[TOY_IN];
	}
}

int main(int argc, char **argv)
{
	const char *data = "train.bin", *save = nullptr;
	int steps = 20, batch = 16;
	float lr = 0.05f;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--data") && i + 1 < argc)
			data = argv[++i];
		else if (!strcmp(argv[i], "--steps") && i + 1 < argc)
			steps = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--batch") && i + 1 < argc)
			batch = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--lr") && i + 1 < argc)
			lr = (float)atof(argv[++i]);
		else if (!strcmp(argv[i], "--save") && i + 1 < argc)
			save = argv[++i];
		else {
			fprintf(stderr, "usage: train [--data FILE] [--steps N] [--batch B] [--lr F] [--save FILE]\n");
			return 2;
		}
	}
	if (batch < 1 || batch > 4096 || steps < 1) {
		fprintf(stderr, "train: bad --batch or --steps\n");
		return 2;
	}
	FILE *f = fopen(data, "rb");
	if (!f) {
		perror(data);
		return 1;
	}

	/* parameters: a fixed pseudo-random start; gradients: same shapes */
	ToyParams p, g;
	unsigned seed = 12345;
	for (int k = 0; k < 4; k++) {
		std::vector<float> init(sizes[k]);
		for (float &v : init) {
			seed = seed * 1664525u + 1013904223u;
			v = ((float)(seed >> 8) / 16777216.0f - 0.5f) * (k == 0 ? 0.7f : 0.4f);
		}
		CHECK(cudaMalloc(slot(p, k), sizes[k] * sizeof(float)));
		CHECK(cudaMalloc(slot(g, k), sizes[k] * sizeof(float)));
		CHECK(cudaMemcpy(*slot(p, k), init.data(), sizes[k] * sizeof(float), cudaMemcpyHostToDevice));
	}
	float *dX, *dY, *dH, *dYhat, *ddY, *dloss;
	CHECK(cudaMalloc(&dX, batch * TOY_IN * sizeof(float)));
	CHECK(cudaMalloc(&dY, batch * sizeof(float)));
	CHECK(cudaMalloc(&dH, batch * TOY_HID * sizeof(float)));
	CHECK(cudaMalloc(&dYhat, batch * sizeof(float)));
	CHECK(cudaMalloc(&ddY, batch * sizeof(float)));
	CHECK(cudaMalloc(&dloss, sizeof(float)));
	cudaStream_t s;
	CHECK(cudaStreamCreate(&s));

	std::vector<float> x(batch * TOY_IN), y(batch);
	for (int step = 1; step <= steps; step++) {
		next_batch(f, data, batch, x, y);
		CHECK(cudaMemcpyAsync(dX, x.data(), x.size() * sizeof(float), cudaMemcpyHostToDevice, s));
		CHECK(cudaMemcpyAsync(dY, y.data(), y.size() * sizeof(float), cudaMemcpyHostToDevice, s));
		for (int k = 0; k < 4; k++)
			CHECK(cudaMemsetAsync(*slot(g, k), 0, sizes[k] * sizeof(float), s));
		toy_forward(dX, p, dH, dYhat, batch, s);
		toy_loss(dYhat, dY, ddY, dloss, batch, s);
		toy_backward(dX, dH, ddY, p, g, batch, s);
		for (int k = 0; k < 4; k++)
			toy_sgd(*slot(p, k), *slot(g, k), lr, sizes[k], s);
		CHECK(cudaGetLastError());
		float loss = 0.0f;
		CHECK(cudaMemcpyAsync(&loss, dloss, sizeof(float), cudaMemcpyDeviceToHost, s));
		CHECK(cudaStreamSynchronize(s));
		printf("step %d loss %.6f\n", step, loss);
	}
	fclose(f);

	if (save) {
		FILE *o = fopen(save, "wb");
		if (!o) {
			perror(save);
			return 1;
		}
		for (int k = 0; k < 4; k++) {
			std::vector<float> v(sizes[k]);
			CHECK(cudaMemcpy(v.data(), *slot(p, k), sizes[k] * sizeof(float), cudaMemcpyDeviceToHost));
			if (fwrite(v.data(), sizeof(float), sizes[k], o) != (size_t)sizes[k]) {
				perror(save);
				return 1;
			}
		}
		if (fclose(o)) {
			perror(save);
			return 1;
		}
	}
	for (int k = 0; k < 4; k++) {
		cudaFree(*slot(p, k));
		cudaFree(*slot(g, k));
	}
	return 0;
}
