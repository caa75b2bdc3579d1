// SPDX-License-Identifier: MIT
//
// nullfree.cu - the runtime API's NULL and zero-size calls as programs make
// them, on the CPU device under the real cudart (nvcc's static one):
//   cudaFree(0) first, to create the context: "If devPtr is 0, no operation
//   is performed" (CUDA Runtime API, cudaFree) -> cudaSuccess;
//   cudaFreeAsync(nullptr, s), cudaFreeHost(nullptr): cudaSuccess (allocators'
//   and NCCL's teardown rely on it on a GPU);
//   zero-byte cudaMemcpy/cudaMemcpyAsync/cudaMemset: cudaSuccess;
//   controls: cudaFree of a stack address and cudaFreeHost of a device
//   pointer fail (and the error is cleared), a freed pointer freed again fails.
// Prints "ok - ..." / "not ok - ..." and exits 1 on any failure.
#include <cstdio>
#include <cuda_runtime.h>

static int fails;

static void expect(const char *what, cudaError_t got, bool want_success)
{
	bool ok = want_success ? got == cudaSuccess : got != cudaSuccess;
	printf("%s - %s (%s)\n", ok ? "ok" : "not ok", what, cudaGetErrorName(got));
	if (!ok)
		fails++;
	cudaGetLastError(); // a refused call leaves its error behind: clear it
}

int main()
{
	expect("cudaFree(0) creates the context and succeeds", cudaFree(0), true);
	cudaStream_t s;
	expect("cudaStreamCreate", cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), true);
	expect("cudaFreeAsync(nullptr, s) succeeds", cudaFreeAsync(nullptr, s), true);
	expect("cudaFreeAsync(nullptr, 0) succeeds", cudaFreeAsync(nullptr, 0), true);
	expect("cudaFreeHost(nullptr) succeeds", cudaFreeHost(nullptr), true);

	float *d = nullptr, *h = nullptr;
	expect("cudaMalloc", cudaMalloc(&d, 64), true);
	expect("cudaMallocHost", cudaMallocHost(&h, 64), true);
	expect("cudaMemcpy of 0 bytes succeeds", cudaMemcpy(d, h, 0, cudaMemcpyHostToDevice), true);
	expect("cudaMemcpyAsync of 0 bytes succeeds", cudaMemcpyAsync(h, d, 0, cudaMemcpyDeviceToHost, s), true);
	expect("cudaMemset of 0 bytes succeeds", cudaMemset(d, 0, 0), true);
	expect("cudaStreamSynchronize", cudaStreamSynchronize(s), true);

	int on_stack = 0;
	expect("control: cudaFree of a stack address fails", cudaFree(&on_stack), false);
	expect("control: cudaFreeHost of a device pointer fails", cudaFreeHost(d), false);
	expect("cudaFree of a live allocation", cudaFree(d), true);
	expect("control: cudaFree of a freed pointer fails", cudaFree(d), false);
	expect("cudaFreeHost of a live pinned buffer", cudaFreeHost(h), true);
	void *a = nullptr;
	expect("cudaMallocAsync", cudaMallocAsync(&a, 128, s), true);
	expect("cudaFreeAsync of a live allocation", cudaFreeAsync(a, s), true);
	expect("cudaStreamSynchronize", cudaStreamSynchronize(s), true);
	expect("cudaStreamDestroy", cudaStreamDestroy(s), true);
	return fails ? 1 : 0;
}
