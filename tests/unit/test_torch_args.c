/* SPDX-License-Identifier: MIT
 *
 * test_torch_args.c - the decoders of PyTorch's argument structs
 * (runtime/track/ddp_torch_args.c): layouts checked against the parameter
 * sizes of the real torch 2.15.0+cu132 table (tests/data/) and the 4 KB
 * table of ../shared/PYTORCH.md, and launches decoded from synthetic
 * argument buffers written the way MultiTensorApply.cuh fills them (live
 * slots first, stale garbage after them).
 */
#define CHECK_MAIN
#include "check.h"
#include <stdint.h>
#include "ddp_torch_args.h"
#include "torch_table.h"

#define NS "at::native::(anonymous namespace)::"
#define MTA(meta, functor, rest) \
	"void " NS "multi_tensor_apply_kernel<" NS meta ", " functor rest ">(" NS meta ", " functor rest ")"

static const char *const k_unscale =
	MTA("TensorListMetadata<1>", NS "UnaryOpFunctor<float, 1, 1, 0>",
	    ", at::native::_amp_foreach_non_finite_check_and_unscale_cuda_(c10::ArrayRef<at::Tensor>, "
	    "at::Tensor&, at::Tensor const&)::{lambda()#1}::operator()() const::{lambda()#2}::operator()() "
	    "const::{lambda(float)#1}");
static const char *const k_lerp =
	MTA("TensorListMetadata<2>", NS "TernaryOpScalarFunctor<float, 2, 2, 0>", ", at::native::LerpFunctor<float>, float");
static const char *const k_addcdiv_sl =
	MTA("TensorListScalarListMetadata<float, 3>", NS "PointwiseOpScalarListFunctor<float, 3, 3, 0>",
	    ", std::divides<float> ");
static const char *const k_fused_adamw =
	MTA("FusedOptimizerTensorListMetadata<4>", NS "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>",
	    ", float const*, double, double, double, double, double, bool, float const*, float const*");
static const char *const k_sqrt =
	MTA("TensorListMetadata<2>", NS "UnaryOpFunctor<float, 2, 1, 1>", ", at::native::Sqrt<float> ");
static const char *const k_lpnorm =
	"void " NS "multi_tensor_apply_kernel<" NS "TensorListMetadata<1>, at::native::LpNormFunctor<float, "
	"(at::native::NormType)2, float, 1, 1, 0>, float*, long const*>(" NS "TensorListMetadata<1>, "
	"at::native::LpNormFunctor<float, (at::native::NormType)2, float, 1, 1, 0>, float*, long const*)";
static const char *const k_cleanup =
	"void at::native::lpnorm_cleanup<float, (at::native::NormType)2, c10::Half, true, float>(float const*, "
	"at::native::TensorListAddresses, long const*, int)";
static const char *const k_zero = MTA("TensorListMetadata<1>", NS "ZeroFunctor<c10::BFloat16, 1, 1, 0>", "");
static const char *const k_vec_add =
	"void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>, "
	"false>(int, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul>)";

static struct ddp_torch_kernel tk;

/* ---- layouts */

TEST(struct_sizes_cuda13_and_4k)
{
	/* CUDA 13: ../shared/PYTORCH.md section 4 (measured in the real table) */
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_CUDA13, 1, 0, 0), 25768);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_CUDA13, 2, 0, 0), 24200);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_CUDA13, 3, 0, 0), 24200);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_CUDA13, 4, 0, 0), 23528);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_SCALARLIST, DDP_TL_CUDA13, 1, 4, 4), 26880);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_SCALARLIST, DDP_TL_CUDA13, 3, 4, 4), 25536);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_FUSED, DDP_TL_CUDA13, 4, 0, 0), 25544);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_ADDRS, DDP_TL_CUDA13, 1, 0, 0), 25600);
	/* 4 KB: the table of PYTORCH.md section 4 (MultiTensorApply.cuh) */
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_4K, 1, 0, 0), 3368);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_4K, 2, 0, 0), 3144);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_4K, 3, 0, 0), 3144);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_4K, 4, 0, 0), 3048);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_FUSED, DDP_TL_4K, 4, 0, 0), 3336);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_SCALARLIST, DDP_TL_4K, 1, 4, 4), 3520);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_SCALARLIST, DDP_TL_4K, 3, 4, 4), 3328);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_ADDRS, DDP_TL_4K, 1, 0, 0), 3200);
	CHECK_EQ_INT(ddp_torch_struct_size(DDP_TK_TLM, DDP_TL_4K, 6, 0, 0), 0);
}

TEST(offsets_4k_as_in_pytorch_md)
{
	const char *k1 = MTA("TensorListMetadata<1>", NS "BinaryOpScalarFunctor<float, 1, 1, 0>", ", std::multiplies<float>, float");
	uint32_t s1[3] = { 3368, 1, 4 };
	REQUIRE(ddp_torch_kernel_info(k1, s1, 3, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.layout, DDP_TL_4K);
	CHECK_EQ_INT(tk.max_tensors, 110);
	CHECK_EQ_INT(tk.off_numel, 880);
	CHECK_EQ_INT(tk.off_btt, 1760);
	CHECK_EQ_INT(tk.off_btc, 2080);
	CHECK_EQ_INT(tk.off_start, 3360);
	CHECK_EQ_INT(tk.btt_size, 1);
	uint32_t s4[11] = { 3336, 1, 8, 8, 8, 8, 8, 8, 1, 8, 8 };
	REQUIRE(ddp_torch_kernel_info(k_fused_adamw, s4, 11, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.off_numel, 1152);
	CHECK_EQ_INT(tk.off_steps, 1440);
	CHECK_EQ_INT(tk.off_btt, 1728);
	CHECK_EQ_INT(tk.off_btc, 2048);
	CHECK_EQ_INT(tk.off_start, 3328);
	uint32_t s3[3] = { 3328, 1, 1 };
	REQUIRE(ddp_torch_kernel_info(k_addcdiv_sl, s3, 3, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.off_numel, 1152);
	CHECK_EQ_INT(tk.off_scalars, 1536);
	CHECK_EQ_INT(tk.off_btt, 1728);
	CHECK_EQ_INT(tk.off_btc, 2048);
	CHECK_EQ_INT(tk.has_start, 0);
}

/* Every multi-tensor and norm-cleanup kernel of the real table: its struct
 * parameter has the size the CUDA 13 layout predicts. */
TEST(real_table_layouts)
{
	static struct torch_table tab;
	char err[256];
	if (torch_table_load(NULL, &tab, err, sizeof err) != 0) {
		CHECK_FAIL_("cannot read the real kernel table: %s", err);
		return;
	}
	size_t mta = 0, ok = 0, mp = 0, cleanup = 0, elem = 0, elem_ok = 0, bad = 0;
	size_t kinds[6] = { 0 };
	for (size_t i = 0; i < tab.n; i++) {
		const struct torch_kernel *k = &tab.k[i];
		int is_mta = strstr(k->demangled, "multi_tensor_apply_kernel<") != NULL;
		int is_cl = strstr(k->demangled, "lpnorm_cleanup<") || strstr(k->demangled, "lpmax_cleanup<");
		int is_el = strncmp(k->demangled, "void at::native::vectorized_elementwise_kernel<", 47) == 0;
		ddp_result rc = ddp_torch_kernel_info(k->demangled, k->size, k->nparams, &tk);
		if (!is_mta && !is_cl && !is_el)
			continue;
		mta += is_mta;
		cleanup += is_cl;
		elem += is_el;
		if (rc == DDP_OK) {
			kinds[tk.kind]++;
			if (!is_el && tk.layout != DDP_TL_CUDA13 && bad++ < 5)
				printf("# not the CUDA 13 layout: %s\n", k->demangled);
			if (!is_el && tk.struct_size != k->size[tk.struct_param] && bad++ < 5)
				printf("# struct size %u != %u: %s\n", tk.struct_size, k->size[tk.struct_param],
				       k->demangled);
			ok += !is_el;
			elem_ok += is_el;
		} else if (rc == DDP_ERR_UNSUPPORTED && tk.functor == DDP_TF_FUSED_ADAM_MP) {
			mp++;
		} else if (!is_el && bad++ < 5) {
			printf("# %s: %s\n", rc == DDP_ERR_INVALID ? "invalid" : "unsupported", k->demangled);
		}
	}
	printf("# %zu multi_tensor_apply, %zu cleanup: %zu decoded (%zu TLM, %zu scalar list, %zu fused, "
	       "%zu addresses), %zu mixed-precision fused Adam not yet; %zu of %zu vectorized elementwise\n",
	       mta, cleanup, ok, kinds[DDP_TK_TLM], kinds[DDP_TK_SCALARLIST], kinds[DDP_TK_FUSED],
	       kinds[DDP_TK_ADDRS], mp, elem_ok, elem);
	CHECK_EQ_INT(bad, 0);
	CHECK_EQ_INT(mta + cleanup, ok + mp);
	CHECK_EQ_INT(mp, 4);
	CHECK(elem_ok * 10 >= elem * 9); /* the rest: functors naming no float type */
}

/* ---- synthetic launches */

static uint8_t meta[32768];

static void put64(uint32_t off, uint64_t v) { memcpy(meta + off, &v, 8); }

static void fill_garbage(void)
{
	for (size_t i = 0; i < sizeof meta; i++)
		meta[i] = (uint8_t)(0xA5 ^ (i * 131));
}

/* Fills a TLM/ScalarList/Fused struct the way multi_tensor_apply does:
 * tensors 0..n-1 with numel[i], one block per 65536-element chunk. */
static unsigned fill_meta(const struct ddp_torch_kernel *k, int n, const int64_t *numel, uint64_t base)
{
	unsigned blocks = 0;
	for (int t = 0; t < n; t++) {
		put64(k->off_numel + 8 * t, (uint64_t)numel[t]);
		for (int l = 0; l < k->depth; l++)
			put64(8 * (l * k->max_tensors + t), base + 0x100000ull * l + 0x1000ull * t);
		if (k->kind == DDP_TK_FUSED)
			put64(k->off_steps + 8 * t, base + 0x900000ull + 16 * t);
		int64_t chunks = (numel[t] + 65535) / 65536;
		for (int64_t c = 0; c < chunks; c++, blocks++) {
			if (k->btt_size == 2) {
				uint16_t v = (uint16_t)t;
				memcpy(meta + k->off_btt + 2 * blocks, &v, 2);
			} else {
				meta[k->off_btt + blocks] = (uint8_t)t;
			}
			int32_t cc = (int32_t)c;
			memcpy(meta + k->off_btc + 4 * blocks, &cc, 4);
		}
	}
	return blocks;
}

TEST(lerp_in_place_roles_and_stale_slots)
{
	uint32_t s[4] = { 24200, 1, 1, 4 };
	REQUIRE(ddp_torch_kernel_info(k_lerp, s, 4, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.kind, DDP_TK_TLM);
	CHECK_EQ_INT(tk.layout, DDP_TL_CUDA13);
	CHECK_EQ_INT(tk.depth, 2);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_READ | DDP_TROLE_WRITE); /* exp_avgs, lerp_ in place */
	CHECK_EQ_INT(tk.role[1], DDP_TROLE_READ);                   /* grads */
	fill_garbage();   /* stale pointers past the live count */
	int64_t numel[3] = { 5, 70000, 16 };
	unsigned grid = fill_meta(&tk, 3, numel, 0x7f0000000000ull);
	CHECK_EQ_INT(grid, 4);
	const void *p[4] = { meta, "", "", "\0\0\0" };
	struct ddp_trange r[16];
	size_t n;
	REQUIRE(ddp_torch_decode(&tk, p, grid, r, 16, &n) == DDP_OK);
	CHECK_EQ_INT(n, 6);
	CHECK_EQ_INT(r[0].addr, 0x7f0000000000ull);
	CHECK_EQ_INT(r[0].bytes, 20);
	CHECK_EQ_INT(r[0].list, 0);
	CHECK_EQ_INT(r[1].list, 1);
	CHECK_EQ_INT(r[1].role, DDP_TROLE_READ);
	CHECK_EQ_INT(r[1].addr, 0x7f0000100000ull);
	CHECK_EQ_INT(r[2].bytes, 280000);
	CHECK_EQ_INT(r[4].bytes, 64);
	CHECK_EQ_INT(r[4].dtype, DDP_DT_F32);
	CHECK_EQ_INT(r[5].tensor, 2);
}

TEST(unscale_reads_and_writes_list0_many_tensors)
{
	uint32_t s[3] = { 25768, 1, 24 };
	REQUIRE(ddp_torch_kernel_info(k_unscale, s, 3, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.functor, DDP_TF_AMP_UNSCALE);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_READ | DDP_TROLE_WRITE);
	CHECK_EQ_INT(tk.max_tensors, 770);
	/* 700 tiny tensors in one launch: far past the old 256-buffer cap */
	static int64_t numel[700];
	for (int i = 0; i < 700; i++)
		numel[i] = 1 + i % 16;
	fill_garbage();
	unsigned grid = fill_meta(&tk, 700, numel, 0x7f0000000000ull);
	CHECK_EQ_INT(grid, 700);
	struct ddp_trange_vec v = { 0 };
	const void *p[3] = { meta, "", meta };
	REQUIRE(ddp_trange_vec_decode(&v, &tk, p, grid) == DDP_OK);
	CHECK_EQ_INT(v.n, 700);
	CHECK(v.cap >= 700);
	CHECK_EQ_INT(v.v[699].bytes, 4 * (1 + 699 % 16));
	/* a partial launch of the same kernel: grid 10 -> 10 tensors */
	REQUIRE(ddp_trange_vec_decode(&v, &tk, p, 10) == DDP_OK);
	CHECK_EQ_INT(v.n, 10);
	ddp_trange_vec_free(&v);
}

TEST(same_kernel_4k_layout)
{
	uint32_t s[3] = { 3368, 1, 24 };
	REQUIRE(ddp_torch_kernel_info(k_unscale, s, 3, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.layout, DDP_TL_4K);
	CHECK_EQ_INT(tk.max_tensors, 110);
	int64_t numel[110];
	for (int i = 0; i < 110; i++)
		numel[i] = 100 + i;
	fill_garbage();
	unsigned grid = fill_meta(&tk, 110, numel, 0x7f0000000000ull);
	struct ddp_trange r[200];
	size_t n;
	const void *p[3] = { meta, "", meta };
	REQUIRE(ddp_torch_decode(&tk, p, grid, r, 200, &n) == DDP_OK);
	CHECK_EQ_INT(n, 110);
	CHECK_EQ_INT(r[109].bytes, 4 * 209);
	/* a size that fits no layout is refused, never guessed */
	uint32_t bad[3] = { 4096, 1, 24 };
	CHECK(ddp_torch_kernel_info(k_unscale, bad, 3, &tk) == DDP_ERR_INVALID);
}

TEST(sqrt_out_of_place_and_zero)
{
	uint32_t s[3] = { 24200, 1, 1 };
	REQUIRE(ddp_torch_kernel_info(k_sqrt, s, 3, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_READ);
	CHECK_EQ_INT(tk.role[1], DDP_TROLE_WRITE);
	uint32_t z[2] = { 25768, 1 };
	REQUIRE(ddp_torch_kernel_info(k_zero, z, 2, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.functor, DDP_TF_ZERO);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_WRITE);
	CHECK_EQ_INT(tk.dtype[0], DDP_DT_BF16);
	CHECK_EQ_INT(tk.esize[0], 2);
	uint32_t l[4] = { 25768, 1, 8, 8 };
	REQUIRE(ddp_torch_kernel_info(k_lpnorm, l, 4, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.functor, DDP_TF_LPNORM);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_READ);
}

TEST(fused_adamw_grad_scale_and_steps)
{
	uint32_t s[11] = { 25544, 1, 8, 8, 8, 8, 8, 8, 1, 8, 8 };
	REQUIRE(ddp_torch_kernel_info(k_fused_adamw, s, 11, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.kind, DDP_TK_FUSED);
	CHECK_EQ_INT(tk.functor, DDP_TF_FUSED_ADAM);
	CHECK_EQ_INT(tk.grad_scale_param, 9);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_READ | DDP_TROLE_WRITE);
	CHECK_EQ_INT(tk.role[1], DDP_TROLE_READ);
	CHECK_EQ_INT(tk.role[3], DDP_TROLE_READ | DDP_TROLE_WRITE);
	int64_t numel[2] = { 8, 300 };
	fill_garbage();
	unsigned grid = fill_meta(&tk, 2, numel, 0x7f0000000000ull);
	uint64_t null = 0, scale = 0x7f0000a00000ull;
	const void *p[11] = { meta, "", &null, &null, &null, &null, &null, &null, "", &null, &null };
	struct ddp_trange r[16];
	size_t n;
	REQUIRE(ddp_torch_decode(&tk, p, grid, r, 16, &n) == DDP_OK);
	CHECK_EQ_INT(n, 10); /* 2 tensors x (4 lists + state step) */
	CHECK_EQ_INT(r[1].list, 1);
	CHECK_EQ_INT(r[1].role, DDP_TROLE_READ);
	CHECK_EQ_INT(r[4].list, DDP_TLIST_STEPS);
	CHECK_EQ_INT(r[4].bytes, 4);
	p[9] = &scale;   /* grad_scale set: the unscaled gradients are written back */
	REQUIRE(ddp_torch_decode(&tk, p, grid, r, 16, &n) == DDP_OK);
	CHECK_EQ_INT(r[1].role, DDP_TROLE_READ | DDP_TROLE_WRITE);
	CHECK_EQ_INT(r[6].bytes, 1200);
}

TEST(scalar_list_addcdiv)
{
	uint32_t s[3] = { 25536, 1, 1 };
	REQUIRE(ddp_torch_kernel_info(k_addcdiv_sl, s, 3, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.kind, DDP_TK_SCALARLIST);
	CHECK_EQ_INT(tk.max_tensors, 336);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_READ | DDP_TROLE_WRITE);
	CHECK_EQ_INT(tk.role[2], DDP_TROLE_READ);
	int64_t numel[4] = { 1, 2, 3, 4 };
	fill_garbage();
	unsigned grid = fill_meta(&tk, 4, numel, 0x7f0000000000ull);
	struct ddp_trange r[16];
	size_t n;
	const void *p[3] = { meta, "", "" };
	REQUIRE(ddp_torch_decode(&tk, p, grid, r, 16, &n) == DDP_OK);
	CHECK_EQ_INT(n, 12);
	CHECK_EQ_INT(r[11].bytes, 16);
	CHECK_EQ_INT(r[11].list, 2);
}

TEST(lpnorm_cleanup_outputs)
{
	uint32_t s[4] = { 8, 25600, 8, 4 };
	REQUIRE(ddp_torch_kernel_info(k_cleanup, s, 4, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.kind, DDP_TK_ADDRS);
	CHECK_EQ_INT(tk.max_tensors, 3200);
	CHECK_EQ_INT(tk.role[0], DDP_TROLE_WRITE);
	CHECK_EQ_INT(tk.dtype[0], DDP_DT_F16);
	fill_garbage();
	for (int t = 0; t < 3; t++)
		put64(8 * t, 0x7f0000000000ull + 2 * t);
	const void *p[4] = { "", meta, "", "" };
	struct ddp_trange r[4];
	size_t n;
	REQUIRE(ddp_torch_decode(&tk, p, 3, r, 4, &n) == DDP_OK);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(r[2].addr, 0x7f0000000004ull);
	CHECK_EQ_INT(r[2].bytes, 2);
	CHECK(ddp_torch_decode(&tk, p, 3201, r, 4, &n) == DDP_ERR_INVALID);
	uint32_t s4k[4] = { 8, 3200, 8, 4 };
	REQUIRE(ddp_torch_kernel_info(k_cleanup, s4k, 4, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.layout, DDP_TL_4K);
	CHECK_EQ_INT(tk.max_tensors, 400);
}

TEST(vectorized_elementwise)
{
	uint32_t s[3] = { 4, 4, 24 };
	REQUIRE(ddp_torch_kernel_info(k_vec_add, s, 3, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.kind, DDP_TK_ELEMWISE);
	CHECK_EQ_INT(tk.depth, 3);
	uint64_t arr[3] = { 0x7f0000000000ull, 0x7f0000001000ull, 0x7f0000002000ull };
	int32_t count = 100;
	float alpha = 1;
	const void *p[3] = { &count, &alpha, arr };
	struct ddp_trange r[4];
	size_t n;
	REQUIRE(ddp_torch_decode(&tk, p, 1, r, 4, &n) == DDP_OK);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(r[0].role, DDP_TROLE_WRITE);
	CHECK_EQ_INT(r[1].role, DDP_TROLE_READ);
	CHECK_EQ_INT(r[2].bytes, 400);
	count = -1;
	CHECK(ddp_torch_decode(&tk, p, 1, r, 4, &n) == DDP_ERR_INVALID);
}

TEST(bad_bytes_are_refused)
{
	uint32_t s[4] = { 24200, 1, 1, 4 };
	REQUIRE(ddp_torch_kernel_info(k_lerp, s, 4, &tk) == DDP_OK);
	int64_t numel[2] = { 10, 10 };
	struct ddp_trange r[8];
	size_t n;
	const void *p[4] = { meta, "", "", "\0\0\0" };
	memset(meta, 0, sizeof meta);
	unsigned grid = fill_meta(&tk, 2, numel, 0x7f0000000000ull);
	CHECK(ddp_torch_decode(&tk, p, grid, r, 8, &n) == DDP_OK);
	CHECK(ddp_torch_decode(&tk, p, 0, r, 8, &n) == DDP_ERR_INVALID);          /* no block */
	CHECK(ddp_torch_decode(&tk, p, 2241, r, 8, &n) == DDP_ERR_INVALID);       /* more blocks than slots */
	uint16_t big = 448;                                                       /* tensor index past the slots */
	memcpy(meta + tk.off_btt + 2, &big, 2);
	CHECK(ddp_torch_decode(&tk, p, grid, r, 8, &n) == DDP_ERR_INVALID);
	grid = fill_meta(&tk, 2, numel, 0x7f0000000000ull);
	put64(tk.off_numel + 8, 0);                                               /* numel 0 */
	CHECK(ddp_torch_decode(&tk, p, grid, r, 8, &n) == DDP_ERR_INVALID);
	grid = fill_meta(&tk, 2, numel, 0x7f0000000000ull);
	put64(8 * (tk.max_tensors + 1), 0);                                       /* NULL address */
	CHECK(ddp_torch_decode(&tk, p, grid, r, 8, &n) == DDP_ERR_INVALID);
	grid = fill_meta(&tk, 2, numel, 0x7f0000000000ull);
	put64(tk.off_numel, (uint64_t)1 << 62);                                   /* range wraps */
	put64(0, UINT64_MAX - 8);
	CHECK(ddp_torch_decode(&tk, p, grid, r, 8, &n) == DDP_ERR_INVALID);
	/* a cap too small reports the count needed */
	grid = fill_meta(&tk, 2, numel, 0x7f0000000000ull);
	CHECK(ddp_torch_decode(&tk, p, grid, r, 1, &n) == DDP_OK && n == 4);
}

TEST(other_kernels_are_not_decoded)
{
	uint32_t s[2] = { 8, 8 };
	CHECK(ddp_torch_kernel_info("void sgd_update(float*, float const*)", s, 2, &tk) == DDP_ERR_UNSUPPORTED);
	CHECK_EQ_INT(tk.kind, DDP_TK_NONE);
	CHECK(ddp_torch_kernel_info("adamw_kernel", s, 2, &tk) == DDP_ERR_UNSUPPORTED);
	CHECK(ddp_torch_kernel_info("void multi_tensor_apply_kernel<", s, 2, &tk) == DDP_ERR_UNSUPPORTED);
	CHECK(ddp_torch_kernel_info(NULL, s, 2, &tk) == DDP_ERR_UNSUPPORTED);
	/* depth in the functor disagrees with the struct's */
	uint32_t l[4] = { 24200, 1, 1, 4 };
	const char *k = MTA("TensorListMetadata<2>", NS "TernaryOpScalarFunctor<float, 3, 2, 0>", ", float");
	CHECK(ddp_torch_kernel_info(k, l, 4, &tk) == DDP_ERR_INVALID);
}

/* ---- reduce_kernel's ReduceOp (Reduce.cuh) */

static const char *const k_sum_f32 =
	"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
	"at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	"unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
	"at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	"unsigned int, float, 4, 4>)";

/* Every reduce_kernel of the real table: recognised with its ReduceOp's
 * size (the tail at fixed offsets from the end, the calculators before it),
 * except complex element types (the generic decoder). */
TEST(real_table_reduce_kernels)
{
	static struct torch_table tab;
	char err[256];
	if (torch_table_load(NULL, &tab, err, sizeof err) != 0) {
		CHECK_FAIL_("cannot read the real kernel table: %s", err);
		return;
	}
	size_t n = 0, ok = 0, cplx = 0, other = 0, bad = 0;
	for (size_t i = 0; i < tab.n; i++) {
		const struct torch_kernel *k = &tab.k[i];
		if (strncmp(k->demangled, "void at::native::reduce_kernel<", 31) != 0)
			continue;
		n++;
		ddp_result rc = ddp_torch_kernel_info(k->demangled, k->size, k->nparams, &tk);
		if (rc == DDP_OK && tk.kind == DDP_TK_REDUCE && tk.struct_size == k->size[0] &&
		    k->size[0] >= 1040 && k->size[0] % 8 == 0) {
			ok++;
		} else if (rc == DDP_ERR_UNSUPPORTED && tk.kind == DDP_TK_NONE) {
			if (strstr(k->demangled, "ReduceOp<c10::complex<") ||
			    strstr(k->demangled, "unsigned int, c10::complex<"))
				cplx++;
			else if (other++ < 5)
				printf("# not decoded: %s\n", k->demangled);
		} else if (bad++ < 5) {
			printf("# refused (%d): %s\n", (int)rc, k->demangled);
		}
	}
	printf("# %zu reduce_kernel: %zu decodable, %zu complex (generic), %zu others generic\n", n, ok, cplx,
	       other);
	CHECK_EQ_INT(bad, 0);
	CHECK(n >= 600);
	CHECK_EQ_INT(n, ok + cplx + other);
	CHECK(ok * 10 >= n * 8);
	CHECK(ddp_torch_kernel_info(k_sum_f32, (uint32_t[]){ 1048 }, 1, &tk) == DDP_OK);
	CHECK_EQ_INT(tk.kind, DDP_TK_REDUCE);
	/* a size below the struct's: refused, not guessed */
	CHECK(ddp_torch_kernel_info(k_sum_f32, (uint32_t[]){ 1000 }, 1, &tk) == DDP_ERR_INVALID);
}

static void put32(uint32_t off, uint32_t v) { memcpy(meta + off, &v, 4); }

/* IntDivider<unsigned int>(d) as OffsetCalculator.cuh builds it */
static void put_divider(uint32_t off, uint32_t d)
{
	uint32_t sh = 0;
	while ((1ull << sh) < d)
		sh++;
	put32(off, d);
	put32(off + 4, (uint32_t)(((1ull << 32) * ((1ull << sh) - d)) / d + 1));
	put32(off + 8, sh);
}

/* An OffsetCalculator<nargs> at off: dims, sizes, strides (nargs per
 * dim); the entries past dims keep their garbage, as PyTorch leaves them. */
static void put_calc(uint32_t off, int nargs, int dims, const uint32_t *sizes, const uint32_t *strides)
{
	put32(off, (uint32_t)dims);
	for (int i = 0; i < dims; i++) {
		put_divider(off + 4 + 12 * (uint32_t)i, sizes[i]);
		for (int a = 0; a < nargs; a++)
			put32(off + 4 + 300 + 4 * (uint32_t)(i * nargs + a), strides[i * nargs + a]);
	}
}

/* A ReduceOp of `size` bytes with its config at c, as launch_reduce_kernel
 * fills it for sum(dim=0) of a contiguous [rows][cols] float tensor (a
 * bias gradient): the input calculator over the reduced rows (byte stride
 * 4 x cols), the output's over cols (byte strides: output 4, input 4),
 * dst a [cols] tensor.  (The real wheel's launch for a [16][10] input:
 * config (4, 16, 10, ...) at offset 8 of 1048 bytes, input dims 1 size
 * 16, output dims 1 size 10.) */
static void fill_reduce(uint32_t size, uint32_t c, uint32_t rows, uint32_t cols, uint64_t src, uint64_t dst)
{
	fill_garbage();
	int32_t cfg[16] = { 4, (int32_t)rows, (int32_t)cols, 1, 64, 1, 0, 0, 0, 1, 4, 4, 16, 64, 0, 2 };
	memcpy(meta + c, cfg, sizeof cfg);
	put_calc(c + 64, 1, 1, (uint32_t[]){ rows }, (uint32_t[]){ 4 * cols });
	put_calc(c + 64 + 404, 2, 1, (uint32_t[]){ cols }, (uint32_t[]){ 4, 4 });
	uint32_t t = size - 64;
	put64(t, src);
	put64(t + 8, dst);
	put64(t + 16, 0);
	put64(t + 24, 0);
	put64(t + 32, 0);
	put64(t + 40, 0);
	put64(t + 48, 0);
	meta[t + 56] = 0; /* accumulate */
	meta[t + 57] = 1; /* final_output */
	put32(t + 60, 1); /* noutputs */
}

/* The output's extent from the struct, wherever sizeof(ops) and arg_t put
 * the config: the real table's sizes, both paddings. */
TEST(reduce_sum_bias_gradient_extent)
{
	struct ddp_trange r[8];
	size_t n;
	const void *p[1] = { meta };
	for (uint32_t size = 1040; size <= 1088; size += 8) {
		for (uint32_t pad = 0; pad <= 4; pad += 4) {
			uint32_t c = size - 64 - pad - 504 - 404 - 64;
			if (c < 4)
				continue;
			CHECK(ddp_torch_kernel_info(k_sum_f32, (uint32_t[]){ size }, 1, &tk) == DDP_OK);
			fill_reduce(size, c, 8, 96, 0x7f0000001000ull, 0x7f0000100000ull);
			CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_OK);
			CHECK_EQ_INT(n, 2);
			CHECK(r[0].addr == 0x7f0000100000ull && r[0].bytes == 96 * 4 && r[0].list == 0);
			CHECK_EQ_INT(r[0].role, DDP_TROLE_WRITE);
			CHECK_EQ_INT(r[0].dtype, DDP_DT_F32);
			CHECK(r[1].addr == 0x7f0000001000ull && r[1].bytes == 8 * 96 * 4 && r[1].list == 1);
			CHECK_EQ_INT(r[1].role, DDP_TROLE_READ);
		}
	}
	/* a global reduction's buffers: written, size unknown */
	CHECK(ddp_torch_kernel_info(k_sum_f32, (uint32_t[]){ 1048 }, 1, &tk) == DDP_OK);
	fill_reduce(1048, 8, 4096, 16, 0x7f0000001000ull, 0x7f0000100000ull);
	put64(1048 - 64 + 32, 0x7f0000200000ull); /* cta_buf */
	put64(1048 - 64 + 40, 0x7f0000300000ull); /* semaphores */
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_OK);
	CHECK_EQ_INT(n, 4);
	CHECK(r[0].bytes == 64 && r[2].addr == 0x7f0000200000ull && r[2].bytes == 0 && r[2].list == 2 &&
	      r[2].role == DDP_TROLE_WRITE && r[3].addr == 0x7f0000300000ull);
	/* a strided output (a column of a [16][5] tensor): the last offset + 1 element */
	fill_reduce(1048, 8, 8, 16, 0x7f0000001000ull, 0x7f0000100000ull);
	put_calc(8 + 64 + 404, 2, 1, (uint32_t[]){ 16 }, (uint32_t[]){ 20, 4 });
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_OK && r[0].bytes == 15 * 20 + 4);
}

/* Two launches of the real wheel (torch 2.15.0+cu132 in trace mode on the
 * CPU device, tests/torch/train.py's MLP: the bias gradients of a
 * Linear(64, 10) and a Linear(.., 64) at batch 16, sum(dim=0)), their
 * 1048-byte ReduceOps as the launch passed them (the host's stack bytes
 * in the unwritten calculator entries included):
 * tests/data/torch-2.15.0-reduce_kernel-sum-f32.bin. */
TEST(reduce_real_wheel_launches)
{
	static const struct {
		uint64_t dst, dst_bytes, src, src_bytes;
	} want[2] = { { 0x200000007e00ull, 10 * 4, 0x200000008200ull, 16 * 10 * 4 },
		      { 0x200000008000ull, 64 * 4, 0x20000000c400ull, 16 * 64 * 4 } };
	uint8_t buf[2 * 1048];
	FILE *f = fopen("tests/data/torch-2.15.0-reduce_kernel-sum-f32.bin", "rb");
	REQUIRE(f != NULL);
	size_t got = fread(buf, 1, sizeof buf, f);
	fclose(f);
	REQUIRE(got == sizeof buf);
	CHECK(ddp_torch_kernel_info(k_sum_f32, (uint32_t[]){ 1048 }, 1, &tk) == DDP_OK);
	for (int i = 0; i < 2; i++) {
		struct ddp_trange r[4];
		size_t n = 0;
		const void *p[1] = { buf + 1048 * i };
		CHECK(ddp_torch_decode(&tk, p, 1, r, 4, &n) == DDP_OK);
		CHECK_EQ_INT(n, 2);
		CHECK(r[0].addr == want[i].dst && r[0].bytes == want[i].dst_bytes && r[0].role == DDP_TROLE_WRITE);
		CHECK(r[1].addr == want[i].src && r[1].bytes == want[i].src_bytes && r[1].role == DDP_TROLE_READ);
	}
}

/* Bytes that do not fit are refused, never bounded by a guess. */
TEST(reduce_bad_bytes_are_refused)
{
	struct ddp_trange r[8];
	size_t n;
	const void *p[1] = { meta };
	CHECK(ddp_torch_kernel_info(k_sum_f32, (uint32_t[]){ 1048 }, 1, &tk) == DDP_OK);
	fill_reduce(1048, 8, 8, 96, 0x7f0000001000ull, 0x7f0000100000ull);
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_OK);
	/* a wrong magic number in a live divider */
	put32(8 + 64 + 404 + 4 + 4, 3);
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_ERR_INVALID);
	/* num_outputs disagreeing with the output calculator's sizes */
	fill_reduce(1048, 8, 8, 96, 0x7f0000001000ull, 0x7f0000100000ull);
	put32(8 + 8, 95);
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_ERR_INVALID);
	/* two outputs (values and indices), partial results, no output */
	fill_reduce(1048, 8, 8, 96, 0x7f0000001000ull, 0x7f0000100000ull);
	put32(1048 - 4, 2);
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_ERR_INVALID);
	fill_reduce(1048, 8, 8, 96, 0x7f0000001000ull, 0x7f0000100000ull);
	meta[1048 - 64 + 57] = 0;
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_ERR_INVALID);
	fill_reduce(1048, 8, 8, 96, 0x7f0000001000ull, 0);
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_ERR_INVALID);
	/* the garbage prefix of the sample's own (fake) ReduceOp: no place fits */
	fill_garbage();
	CHECK(ddp_torch_decode(&tk, p, 1, r, 8, &n) == DDP_ERR_INVALID);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
