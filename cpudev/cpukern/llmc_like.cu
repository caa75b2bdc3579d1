/* SPDX-License-Identifier: MIT
 *
 * llmc_like.cu - host and device code written as llm.c's train_gpt2.cu
 * writes it: a cudaCheck(...) helper, NVTX ranges and a named stream
 * (<nvtx3/nvToolsExt.h>, <nvtx3/nvToolsExtCudaRt.h>), pinned host memory
 * through the C++ overload cudaMallocHost(char **, size_t, int flags), an
 * event created with flags (cudaEventCreate's overload), the templates of
 * cuda_runtime.h (cudaFuncGetAttributes, the occupancy query with flags,
 * cudaGetSymbolSize, cudaMemcpyFromSymbolAsync), and kernel launches that
 * span several lines with NULL among their arguments (g++ -E wraps NULL's
 * __null in line markers).  Results against host references.
 */
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>
#include <nvtx3/nvToolsExtCudaRt.h>
#include <nvtx3/nvtx3.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "check.cuh"

// ----------------------------------------------------------------------------
// CUDA utils, as llm.c has them

void cuda_check(cudaError_t error, const char *file, int line)
{
	if (error != cudaSuccess) {
		printf("not ok - [CUDA ERROR] at file %s:%d:\n%s\n", file, line, cudaGetErrorString(error));
		exit(EXIT_FAILURE);
	}
}
#define cudaCheck(err) (cuda_check(err, __FILE__, __LINE__))

class NvtxRange {
public:
	NvtxRange(const char *s) { nvtxRangePush(s); }
	~NvtxRange() { nvtxRangePop(); }
};
#define NVTX_RANGE_FN() NvtxRange nvtx_range(__FUNCTION__)

__device__ int launches_seen;

// ----------------------------------------------------------------------------
// kernels

// One warp-free row per thread: the row's softmax, its loss at the target;
// probs (optional) gets the row's probabilities, dlogits (optional) the
// gradient of the mean loss.
__global__ void fused_classifier_kernel(const float *logits, float *losses, float *probs, float *dlogits,
					const int *targets, int B, int V)
{
	int b = blockIdx.x * blockDim.x + threadIdx.x;
	if (b >= B)
		return;
	const float *x = logits + (size_t)b * V;
	float maxv = -INFINITY, sum = 0.0f;
	for (int i = 0; i < V; i++)
		maxv = fmaxf(maxv, x[i]);
	for (int i = 0; i < V; i++)
		sum += expf(x[i] - maxv);
	int t = targets[b];
	losses[b] = -(x[t] - maxv - logf(sum));
	for (int i = 0; i < V; i++) {
		float p = expf(x[i] - maxv) / sum;
		if (probs != NULL)
			probs[(size_t)b * V + i] = p;
		if (dlogits != NULL)
			dlogits[(size_t)b * V + i] = (p - (i == t ? 1.0f : 0.0f)) / B;
	}
	if (b == 0)
		atomicAdd(&launches_seen, 1);
}

__global__ void residual_forward_kernel(float *out, const float *inp1, const float *inp2, const float *bias, int N)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;
	if (i < N)
		out[i] = inp1[i] + inp2[i] + (bias != NULL ? bias[i] : 0.0f);
}

// ----------------------------------------------------------------------------
// kernel launchers, multi-line as llm.c writes them

void fused_classifier(float *logits, float *losses, float *dlogits, const int *targets, int B, int V,
		      cudaStream_t stream)
{
	NVTX_RANGE_FN();
	const int block_size = 32;
	const int grid_size = (B + block_size - 1) / block_size;
	fused_classifier_kernel<<<grid_size, block_size, 0, stream>>>(logits, losses,
								       NULL, dlogits,
								       targets, B, V);
	cudaCheck(cudaGetLastError());
}

void residual_forward(float *out, const float *inp1, const float *inp2, int N, cudaStream_t stream)
{
	NVTX_RANGE_FN();
	const int block_size = 256;
	const int grid_size = (N + block_size - 1) / block_size;
	residual_forward_kernel<<<grid_size, block_size, 0,
				  stream>>>(out,
					    inp1, inp2,
					    NULL,
					    N);
	cudaCheck(cudaGetLastError());
}

int main()
{
	const int B = 40, V = 50, N = 3000;
	cudaStream_t stream;
	cudaCheck(cudaStreamCreate(&stream));
	nvtxNameCudaStreamA(stream, "main stream");
	nvtx3::scoped_range whole{"main"};
	nvtxRangePushA("setup");

	// pinned host buffers through the overloads with flags
	char *cpu_buffer;
	float *cpu_logits;
	cudaCheck(cudaMallocHost(&cpu_buffer, (size_t)B * V * sizeof(float), cudaHostAllocDefault));
	cudaCheck(cudaMallocHost(&cpu_logits, (size_t)B * V * sizeof(float)));
	cudaEvent_t done;
	cudaCheck(cudaEventCreate(&done, cudaEventDisableTiming));

	std::vector<int> targets(B);
	float *logits = (float *)cpu_buffer;
	for (int i = 0; i < B * V; i++)
		logits[i] = (float)((i * 37 % 101) - 50) / 17.0f;
	for (int b = 0; b < B; b++)
		targets[b] = (b * 7) % V;
	float *d_logits, *d_losses, *d_dlogits, *d_a, *d_b, *d_out;
	int *d_targets;
	cudaCheck(cudaMalloc(&d_logits, (size_t)B * V * sizeof(float)));
	cudaCheck(cudaMalloc(&d_dlogits, (size_t)B * V * sizeof(float)));
	cudaCheck(cudaMalloc(&d_losses, B * sizeof(float)));
	cudaCheck(cudaMalloc(&d_targets, B * sizeof(int)));
	cudaCheck(cudaMalloc(&d_a, N * sizeof(float)));
	cudaCheck(cudaMalloc(&d_b, N * sizeof(float)));
	cudaCheck(cudaMalloc(&d_out, N * sizeof(float)));
	cudaCheck(cudaMemcpyAsync(d_logits, logits, (size_t)B * V * sizeof(float), cudaMemcpyHostToDevice, stream));
	cudaCheck(cudaMemcpy(d_targets, targets.data(), B * sizeof(int), cudaMemcpyHostToDevice));
	std::vector<float> a(N), bb(N);
	for (int i = 0; i < N; i++) {
		a[i] = 0.5f * i;
		bb[i] = 1.0f - i;
	}
	cudaCheck(cudaMemcpy(d_a, a.data(), N * sizeof(float), cudaMemcpyHostToDevice));
	cudaCheck(cudaMemcpy(d_b, bb.data(), N * sizeof(float), cudaMemcpyHostToDevice));
	nvtxRangePop();

	// the templates of cuda_runtime.h
	cudaFuncAttributes attr;
	cudaCheck(cudaFuncGetAttributes(&attr, fused_classifier_kernel));
	int blocks = 0;
	cudaCheck(cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags(&blocks, residual_forward_kernel, 256, 0,
									cudaOccupancyDefault));
	size_t sym_size = 0;
	cudaCheck(cudaGetSymbolSize(&sym_size, launches_seen));
	expect("cudaFuncGetAttributes, the occupancy query with flags and cudaGetSymbolSize through their templates",
	       attr.maxThreadsPerBlock > 0 && blocks > 0 && sym_size == sizeof(int));

	fused_classifier(d_logits, d_losses, d_dlogits, d_targets, B, V, stream);
	residual_forward(d_out, d_a, d_b, N, stream);
	cudaCheck(cudaEventRecord(done, stream));
	cudaCheck(cudaEventSynchronize(done));

	std::vector<float> losses(B), dlogits((size_t)B * V), out(N);
	cudaCheck(cudaMemcpy(losses.data(), d_losses, B * sizeof(float), cudaMemcpyDeviceToHost));
	cudaCheck(cudaMemcpy(dlogits.data(), d_dlogits, (size_t)B * V * sizeof(float), cudaMemcpyDeviceToHost));
	cudaCheck(cudaMemcpy(out.data(), d_out, N * sizeof(float), cudaMemcpyDeviceToHost));
	int seen = 0;
	cudaCheck(cudaMemcpyFromSymbolAsync(&seen, launches_seen, sizeof(int), 0, cudaMemcpyDeviceToHost, stream));
	cudaCheck(cudaStreamSynchronize(stream));

	double maxerr = 0, maxgerr = 0;
	for (int b = 0; b < B; b++) {
		const float *x = logits + (size_t)b * V;
		double m = -INFINITY, s = 0;
		for (int i = 0; i < V; i++)
			m = fmax(m, x[i]);
		for (int i = 0; i < V; i++)
			s += exp(x[i] - m);
		maxerr = fmax(maxerr, fabs(losses[b] - (-(x[targets[b]] - m - log(s)))));
		for (int i = 0; i < V; i++) {
			double g = (exp(x[i] - m) / s - (i == targets[b])) / B;
			maxgerr = fmax(maxgerr, fabs(dlogits[(size_t)b * V + i] - g));
		}
	}
	printf("# loss max error %.3g, dlogits max error %.3g\n", maxerr, maxgerr);
	expect("multi-line launch with NULL among its arguments: losses equal the host reference", maxerr < 1e-4);
	expect("multi-line launch with NULL among its arguments: dlogits equal the host reference", maxgerr < 1e-6);
	int bad = 0;
	for (int i = 0; i < N; i++)
		bad += out[i] != a[i] + bb[i];
	expect("launch split inside <<< >>> with NULL for the bias: out = a + b", bad == 0);
	expect("cudaMemcpyFromSymbolAsync through its template reads the device variable", seen == 1);

	cudaCheck(cudaEventDestroy(done));
	cudaCheck(cudaFreeHost(cpu_buffer));
	cudaCheck(cudaFreeHost(cpu_logits));
	cudaCheck(cudaFree(d_logits));
	cudaCheck(cudaFree(d_dlogits));
	cudaCheck(cudaFree(d_losses));
	cudaCheck(cudaFree(d_targets));
	cudaCheck(cudaFree(d_a));
	cudaCheck(cudaFree(d_b));
	cudaCheck(cudaFree(d_out));
	cudaCheck(cudaStreamDestroy(stream));
	return cpuk_failures ? 1 : 0;
}
