// SPDX-License-Identifier: MIT
//
// tensorclass.cuh - samples/tensorclass: the Matrix class, the allocator's
// interface and the model's entry points, shared by the program's five .cu
// files (docs/samples.md "tensorclass").
//
// Written the way small community C++ CUDA trainers are: a float Matrix that
// owns a device block through a shared_ptr; every operation launches one
// kernel on the program's stream into a NEW matrix (out-of-place, no op
// writes its inputs); blocks come from the program's allocator
// (allocator.cu), either its own first-fit pool carved from one cudaMalloc
// that is never given back to the driver, or cudaMallocAsync/cudaFreeAsync
// on the device's default memory pool.
#pragma once
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <cuda_runtime.h>

#define CUDA_CHECK(call)                                                                         \
	do {                                                                                     \
		cudaError_t e_ = (call);                                                          \
		if (e_ != cudaSuccess) {                                                          \
			std::fprintf(stderr, "tensorclass: %s failed: %s (%s:%d)\n", #call,       \
				     cudaGetErrorName(e_), __FILE__, __LINE__);                  \
			std::exit(1);                                                             \
		}                                                                                 \
	} while (0)
#define LAUNCH_CHECK() CUDA_CHECK(cudaGetLastError())

// ---- allocator.cu
enum class AllocMode { Pool, Async };
void alloc_init(AllocMode mode, size_t pool_bytes, cudaStream_t stream);
void *alloc_get(size_t bytes);
void alloc_put(void *p);
cudaStream_t tc_stream();

// ---- matrix.cu
class Matrix {
public:
	Matrix() : rows_(0), cols_(0) {}
	Matrix(int rows, int cols);
	int rows() const { return rows_; }
	int cols() const { return cols_; }
	size_t size() const { return (size_t)rows_ * cols_; }
	float *data() const { return block_.get(); }

	static Matrix zeros(int rows, int cols);
	static Matrix from_host(int rows, int cols, const float *h);
	void to_host(float *h) const;

	Matrix operator+(const Matrix &o) const;      // elementwise
	Matrix operator*(const Matrix &o) const;      // elementwise (Hadamard)
	Matrix operator*(float s) const;              // scale
	Matrix T() const;                             // transpose
	Matrix add_row(const Matrix &row) const;      // + row vector, every row
	Matrix col_sum() const;                       // [1, cols]
	Matrix tanh() const;
	Matrix one_minus_square() const;              // 1 - x*x

private:
	int rows_, cols_;
	std::shared_ptr<float> block_;
};
Matrix matmul(const Matrix &a, const Matrix &b);

// ---- rng.cu: uniform in [-scale, scale) from a counter-based hash
Matrix random_uniform(int rows, int cols, unsigned seed, unsigned stream_id, float scale);

// ---- model.cu
Matrix embed(const Matrix &table, const Matrix &tokens, int context);   // [B, context * D]
Matrix embed_grad(const Matrix &dx, const Matrix &tokens, int context, int vocab);
// softmax cross-entropy of logits against the tokens' last column:
// returns dlogits (mean over the batch), loss per row in *loss
Matrix softmax_xent(const Matrix &logits, const Matrix &tokens, Matrix *loss);
