/* SPDX-License-Identifier: MIT
 *
 * fuzz.c - libFuzzer target over the decoders of PyTorch's argument structs
 * (runtime/track/ddp_torch_args.c): the bytes of a launch's arguments are
 * outside input.
 *
 * Input: byte 0 picks a real kernel of torch 2.15.0+cu132 (names and
 * parameter sizes from tests/data/) and its layout (CUDA 13 or 4 KB); bytes
 * 1-4 are gridDim.x; byte 5 says whether grad_scale is set; the rest fills
 * the struct parameter (zero-padded).  With byte 0 == 0xff the rest is a
 * demangled name instead, recognised with the unscale kernel's sizes.
 * Invariants (abort on violation): a decode never reports more ranges than
 * the struct can hold, every range has a non-NULL address, bytes equal
 * numel x element size, a role, and a list inside the struct's depth.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_torch_args.h"

#define NS "at::native::(anonymous namespace)::"
static const struct {
	const char *name;
	uint32_t n, size13[11], size4k0; /* size4k0: parameter 0/1 in the 4 KB build */
} kernels[] = {
	{ "void " NS "multi_tensor_apply_kernel<" NS "TensorListMetadata<1>, " NS "UnaryOpFunctor<float, 1, 1, 0>, "
	  "at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(c10::ArrayRef<at::Tensor>, at::Tensor&, "
	  "at::Tensor const&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() const::{lambda(float)#1}>("
	  NS "TensorListMetadata<1>, " NS "UnaryOpFunctor<float, 1, 1, 0>, at::native::_amp_foreach_non_finite_check_"
	  "and_unscale_cuda_(c10::ArrayRef<at::Tensor>, at::Tensor&, at::Tensor const&)::{lambda()#1}::operator()() "
	  "const::{lambda()#2}::operator()() const::{lambda(float)#1})", 3, { 25768, 1, 24 }, 3368 },
	{ "void " NS "multi_tensor_apply_kernel<" NS "TensorListMetadata<2>, " NS "TernaryOpScalarFunctor<float, 2, 2, 0>, "
	  "at::native::LerpFunctor<float>, float>(" NS "TensorListMetadata<2>, " NS "TernaryOpScalarFunctor<float, 2, 2, 0>, "
	  "at::native::LerpFunctor<float>, float)", 4, { 24200, 1, 1, 4 }, 3144 },
	{ "void " NS "multi_tensor_apply_kernel<" NS "TensorListScalarListMetadata<float, 3>, " NS "PointwiseOpScalarListFunctor<float, 3, 3, 0>, "
	  "std::multiplies<float> >(" NS "TensorListScalarListMetadata<float, 3>, " NS "PointwiseOpScalarListFunctor<float, 3, 3, 0>, "
	  "std::multiplies<float>)", 3, { 25536, 1, 1 }, 3328 },
	{ "void " NS "multi_tensor_apply_kernel<" NS "FusedOptimizerTensorListMetadata<4>, " NS "FusedAdamMathFunctor<float, 4, "
	  "(at::native::ADAM_MODE)1, false>, float const*, double, double, double, double, double, bool, float const*, float const*>("
	  NS "FusedOptimizerTensorListMetadata<4>, " NS "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>, "
	  "float const*, double, double, double, double, double, bool, float const*, float const*)", 11,
	  { 25544, 1, 8, 8, 8, 8, 8, 8, 1, 8, 8 }, 3336 },
	{ "void " NS "multi_tensor_apply_kernel<" NS "TensorListMetadata<4>, " NS "PointwiseOpScalarFunctor<float, 4, 3, 3>, "
	  "std::multiplies<float>, float>(" NS "TensorListMetadata<4>, " NS "PointwiseOpScalarFunctor<float, 4, 3, 3>, "
	  "std::multiplies<float>, float)", 4, { 23528, 1, 1, 4 }, 3048 },
	{ "void " NS "multi_tensor_apply_kernel<" NS "TensorListScalarListMetadata<c10::complex<double>, 1>, " NS
	  "BinaryOpScalarListFunctor<c10::complex<double>, 1, 1, 0>, " NS "power_functor<c10::complex<double> > >(" NS
	  "TensorListScalarListMetadata<c10::complex<double>, 1>, " NS "BinaryOpScalarListFunctor<c10::complex<double>, 1, 1, 0>, "
	  NS "power_functor<c10::complex<double> >)", 3, { 29568, 1, 1 }, 0 },
	{ "void at::native::lpnorm_cleanup<float, (at::native::NormType)2, float, true, float>(float const*, "
	  "at::native::TensorListAddresses, long const*, int)", 4, { 8, 25600, 8, 4 }, 3200 },
	{ "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>, "
	  "false>(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)", 3, { 4, 4, 24 }, 0 },
	{ "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
	  "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	  "unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
	  "at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	  "unsigned int, float, 4, 4>)", 1, { 1048 }, 0 },
};
#define NK (sizeof kernels / sizeof *kernels)

static uint8_t buf[32768];

static void check_ranges(const struct ddp_torch_kernel *tk, const struct ddp_trange *r, size_t n, size_t cap)
{
	size_t lim = (size_t)(tk->depth + 1) * (tk->max_tensors ? tk->max_tensors : 1);
	if (tk->kind == DDP_TK_REDUCE) /* dst, src, acc_buf, cta_buf, semaphores */
		lim = 5;
	if (n > lim)
		abort();
	for (size_t i = 0; i < n && i < cap; i++) {
		if (!r[i].addr || !r[i].role)
			abort();
		if (r[i].esize && r[i].bytes != r[i].numel * r[i].esize)
			abort();
		if (r[i].list >= tk->depth && r[i].list != DDP_TLIST_STEPS)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct ddp_trange r[4096];
	struct ddp_torch_kernel tk;
	uint32_t grid;
	size_t n;

	if (size < 6)
		return 0;
	if (data[0] == 0xff) {
		char name[1024];
		size_t l = size - 1 < sizeof name - 1 ? size - 1 : sizeof name - 1;
		memcpy(name, data + 1, l);
		name[l] = 0;
		if (ddp_torch_kernel_info(name, kernels[0].size13, kernels[0].n, &tk) == DDP_OK) {
			const void *p[11] = { buf, buf, buf, buf, buf, buf, buf, buf, buf, buf, buf };
			memset(buf, 0, sizeof buf);
			if (ddp_torch_decode(&tk, p, 1, r, 4096, &n) == DDP_OK)
				check_ranges(&tk, r, n, 4096);
		}
		return 0;
	}
	size_t ki = data[0] % NK;
	int use4k = (data[0] / NK) & 1;
	uint32_t sizes[11];
	memcpy(sizes, kernels[ki].size13, sizeof sizes);
	if (use4k && kernels[ki].size4k0) {
		int sp = strstr(kernels[ki].name, "lpnorm_cleanup") ? 1 : 0;
		sizes[sp] = kernels[ki].size4k0;
	}
	if (ddp_torch_kernel_info(kernels[ki].name, sizes, kernels[ki].n, &tk) != DDP_OK)
		abort(); /* every listed kernel is known */
	memcpy(&grid, data + 1, 4);
	memset(buf, 0, sizeof buf);
	size_t l = size - 6 < tk.struct_size ? size - 6 : tk.struct_size;
	memcpy(buf, data + 6, l);
	uint64_t gs = data[5] ? 0x1000 : 0;
	int32_t count;
	memcpy(&count, buf, 4);
	const void *p[11];
	for (int i = 0; i < 11; i++)
		p[i] = &gs;
	p[tk.struct_param] = buf;
	if (tk.kind == DDP_TK_ELEMWISE)
		p[tk.count_param] = data + 1;
	if (ddp_torch_decode(&tk, p, grid, r, 4096, &n) == DDP_OK)
		check_ranges(&tk, r, n, 4096);
	struct ddp_trange_vec v = { 0 };
	if (ddp_trange_vec_decode(&v, &tk, p, grid) == DDP_OK)
		check_ranges(&tk, v.v, v.n, v.n);
	ddp_trange_vec_free(&v);
	return 0;
}
