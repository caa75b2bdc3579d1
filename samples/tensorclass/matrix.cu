// SPDX-License-Identifier: MIT
//
// matrix.cu - the Matrix class: each operation launches one kernel on the
// program's stream and returns a new matrix from the allocator.
#include "tensorclass.cuh"

namespace {
constexpr int kThreads = 128;
int blocks_for(size_t n) { return (int)((n + kThreads - 1) / kThreads); }
} // namespace

__global__ void fill_kernel(float *out, float v, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = v;
}

__global__ void add_kernel(const float *a, const float *b, float *out, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = a[i] + b[i];
}

__global__ void mul_kernel(const float *a, const float *b, float *out, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = a[i] * b[i];
}

__global__ void scale_kernel(const float *a, float s, float *out, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = a[i] * s;
}

__global__ void transpose_kernel(const float *a, float *out, int rows, int cols)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < rows * cols) {
		int r = i / cols, c = i % cols;
		out[c * rows + r] = a[i];
	}
}

__global__ void add_row_kernel(const float *a, const float *row, float *out, int rows, int cols)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < rows * cols)
		out[i] = a[i] + row[i % cols];
}

__global__ void col_sum_kernel(const float *a, float *out, int rows, int cols)
{
	int c = blockIdx.x * blockDim.x + threadIdx.x;
	if (c < cols) {
		float s = 0.0f;
		for (int r = 0; r < rows; r++)
			s += a[r * cols + c];
		out[c] = s;
	}
}

__global__ void tanh_kernel(const float *a, float *out, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = tanhf(a[i]);
}

__global__ void one_minus_square_kernel(const float *a, float *out, size_t n)
{
	size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = 1.0f - a[i] * a[i];
}

// C[m][n] = sum_k A[m][k] B[k][n], one thread per output, k in order
__global__ void matmul_kernel(const float *a, const float *b, float *c, int m, int k, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < m * n) {
		int r = i / n, col = i % n;
		float s = 0.0f;
		for (int j = 0; j < k; j++)
			s += a[r * k + j] * b[j * n + col];
		c[i] = s;
	}
}

Matrix::Matrix(int rows, int cols)
	: rows_(rows), cols_(cols),
	  block_(static_cast<float *>(alloc_get((size_t)rows * cols * sizeof(float))), alloc_put)
{
}

Matrix Matrix::zeros(int rows, int cols)
{
	Matrix m(rows, cols);
	fill_kernel<<<blocks_for(m.size()), kThreads, 0, tc_stream()>>>(m.data(), 0.0f, m.size());
	LAUNCH_CHECK();
	return m;
}

Matrix Matrix::from_host(int rows, int cols, const float *h)
{
	Matrix m(rows, cols);
	CUDA_CHECK(cudaMemcpyAsync(m.data(), h, m.size() * sizeof(float), cudaMemcpyHostToDevice, tc_stream()));
	CUDA_CHECK(cudaStreamSynchronize(tc_stream())); // h may go away
	return m;
}

void Matrix::to_host(float *h) const
{
	CUDA_CHECK(cudaMemcpyAsync(h, data(), size() * sizeof(float), cudaMemcpyDeviceToHost, tc_stream()));
	CUDA_CHECK(cudaStreamSynchronize(tc_stream()));
}

static void same_shape(const Matrix &a, const Matrix &b, const char *op)
{
	if (a.rows() != b.rows() || a.cols() != b.cols()) {
		std::fprintf(stderr, "tensorclass: %s of %dx%d and %dx%d\n", op, a.rows(), a.cols(), b.rows(), b.cols());
		std::exit(1);
	}
}

Matrix Matrix::operator+(const Matrix &o) const
{
	same_shape(*this, o, "operator+");
	Matrix out(rows_, cols_);
	add_kernel<<<blocks_for(size()), kThreads, 0, tc_stream()>>>(data(), o.data(), out.data(), size());
	LAUNCH_CHECK();
	return out;
}

Matrix Matrix::operator*(const Matrix &o) const
{
	same_shape(*this, o, "operator*");
	Matrix out(rows_, cols_);
	mul_kernel<<<blocks_for(size()), kThreads, 0, tc_stream()>>>(data(), o.data(), out.data(), size());
	LAUNCH_CHECK();
	return out;
}

Matrix Matrix::operator*(float s) const
{
	Matrix out(rows_, cols_);
	scale_kernel<<<blocks_for(size()), kThreads, 0, tc_stream()>>>(data(), s, out.data(), size());
	LAUNCH_CHECK();
	return out;
}

Matrix Matrix::T() const
{
	Matrix out(cols_, rows_);
	transpose_kernel<<<blocks_for(size()), kThreads, 0, tc_stream()>>>(data(), out.data(), rows_, cols_);
	LAUNCH_CHECK();
	return out;
}

Matrix Matrix::add_row(const Matrix &row) const
{
	if (row.rows() != 1 || row.cols() != cols_) {
		std::fprintf(stderr, "tensorclass: add_row of %dx%d to %dx%d\n", row.rows(), row.cols(), rows_, cols_);
		std::exit(1);
	}
	Matrix out(rows_, cols_);
	add_row_kernel<<<blocks_for(size()), kThreads, 0, tc_stream()>>>(data(), row.data(), out.data(), rows_,
									     cols_);
	LAUNCH_CHECK();
	return out;
}

Matrix Matrix::col_sum() const
{
	Matrix out(1, cols_);
	col_sum_kernel<<<blocks_for(cols_), kThreads, 0, tc_stream()>>>(data(), out.data(), rows_, cols_);
	LAUNCH_CHECK();
	return out;
}

Matrix Matrix::tanh() const
{
	Matrix out(rows_, cols_);
	tanh_kernel<<<blocks_for(size()), kThreads, 0, tc_stream()>>>(data(), out.data(), size());
	LAUNCH_CHECK();
	return out;
}

Matrix Matrix::one_minus_square() const
{
	Matrix out(rows_, cols_);
	one_minus_square_kernel<<<blocks_for(size()), kThreads, 0, tc_stream()>>>(data(), out.data(), size());
	LAUNCH_CHECK();
	return out;
}

Matrix matmul(const Matrix &a, const Matrix &b)
{
	if (a.cols() != b.rows()) {
		std::fprintf(stderr, "tensorclass: matmul of %dx%d and %dx%d\n", a.rows(), a.cols(), b.rows(), b.cols());
		std::exit(1);
	}
	Matrix out(a.rows(), b.cols());
	matmul_kernel<<<blocks_for(out.size()), kThreads, 0, tc_stream()>>>(a.data(), b.data(), out.data(), a.rows(),
									      a.cols(), b.cols());
	LAUNCH_CHECK();
	return out;
}
