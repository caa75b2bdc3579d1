/* SPDX-License-Identifier: MIT
 *
 * test_torch_launch.c - PyTorch's launches as the gradient tracker's
 * explicit launches (runtime/grad/ddp_torch_launch.c): which kernels are
 * decoded (at::native only), which are refused, tensors placed in the
 * allocation table (a tensor straddling two adjacent VMM pages spans them),
 * tensors outside tracked memory (left out of an "other" launch, an error
 * for a consumer), and the gradient list per functor.
 */
#define CHECK_MAIN
#include "check.h"
#include <stdint.h>
#include "ddp_alloc.h"
#include "ddp_torch_args.h"
#include "ddp_torch_launch.h"

#define NS "at::native::(anonymous namespace)::"
#define MTA(meta, functor, rest) \
	"void " NS "multi_tensor_apply_kernel<" NS meta ", " functor rest ">(" NS meta ", " functor rest ")"

static char k_lerp[] =
	MTA("TensorListMetadata<2>", NS "TernaryOpScalarFunctor<float, 2, 2, 0>", ", at::native::LerpFunctor<float>, float");
static char k_fused[] =
	MTA("FusedOptimizerTensorListMetadata<4>", NS "FusedAdamMathFunctor<float, 4, (at::native::ADAM_MODE)1, false>",
	    ", float const*, double, double, double, double, double, bool, float const*, float const*");
/* an extension's own multi_tensor_apply_kernel (apex-style): not PyTorch's */
static char k_apex[] = "void multi_tensor_apply_kernel<TensorListMetadata<2>, LerpFunctor<float>, float>"
		       "(TensorListMetadata<2>, LerpFunctor<float>, float)";

static struct ddp_kparam_desc params[16];
static struct ddp_kfunc kf;

static void kernel(char *name, const uint32_t *sizes, uint32_t n)
{
	memset(&kf, 0, sizeof kf);
	memset(params, 0, sizeof params);
	uint32_t off = 0;
	for (uint32_t i = 0; i < n; i++) {
		params[i].offset = off;
		params[i].size = sizes[i];
		off += (sizes[i] + 7) & ~7u;
	}
	kf.name = kf.demangled = name;
	kf.nparams = n;
	kf.param_bytes = off;
	kf.params = params;
	kf.layout_known = 1;
	ddp_torch_launch_learn(&kf);
}

static uint8_t meta[32768];
static void put64(uint32_t off, uint64_t v) { memcpy(meta + off, &v, 8); }

/* n tensors of list l at addr[l][t] with numel[t] (one block each) */
static unsigned fill(const struct ddp_torch_kernel *k, int n, const uint64_t addr[][4], const int64_t *numel)
{
	memset(meta, 0xA5, sizeof meta);
	for (int t = 0; t < n; t++) {
		put64(k->off_numel + 8 * t, (uint64_t)numel[t]);
		for (int l = 0; l < k->depth; l++)
			put64(8 * (l * k->max_tensors + t), addr[l][t]);
		if (k->kind == DDP_TK_FUSED)
			put64(k->off_steps + 8 * t, addr[0][t] + 0x10000000); /* beyond tracked memory */
		uint16_t v = (uint16_t)t;
		memcpy(meta + k->off_btt + 2 * t, &v, 2);
		memset(meta + k->off_btc + 4 * t, 0, 4);
	}
	return (unsigned)n;
}

#define PAGE 0x200000ull
#define VA 0x7f0000000000ull

static void table(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	REQUIRE(ddp_alloc_init(64) == DDP_OK);
	/* two adjacent 2 MiB pages of an expandable segment, a plain segment */
	REQUIRE(ddp_alloc_insert(VA, PAGE, DDP_ALLOC_VMM, 0, NULL) == DDP_OK);
	REQUIRE(ddp_alloc_insert(VA + PAGE, PAGE, DDP_ALLOC_VMM, 0, NULL) == DDP_OK);
	REQUIRE(ddp_alloc_insert(VA + 8 * PAGE, PAGE, DDP_ALLOC_PLAIN, 0, NULL) == DDP_OK);
}

TEST(only_pytorch_kernels_are_explicit)
{
	uint32_t s[4] = { 24200, 1, 1, 4 };
	kernel(k_lerp, s, 4);
	CHECK_EQ_INT(kf.sync_torch_state, DDP_XT_OK);
	free(kf.sync_torch);
	kernel(k_apex, s, 4);
	CHECK_EQ_INT(kf.sync_torch_state, DDP_XT_NONE);
	/* PyTorch's, with a struct size of no known layout: refused */
	uint32_t bad[4] = { 20000, 1, 1, 4 };
	kernel(k_lerp, bad, 4);
	CHECK_EQ_INT(kf.sync_torch_state, DDP_XT_REFUSE);
}

TEST(tensors_placed_straddling_pages_and_outside)
{
	table();
	uint32_t s[4] = { 24200, 1, 1, 4 };
	kernel(k_lerp, s, 4);
	REQUIRE(kf.sync_torch_state == DDP_XT_OK);
	const struct ddp_torch_kernel *tk = kf.sync_torch;
	/* tensor 0 straddles the two pages; tensor 1 in the plain segment;
	 * tensor 2's list-1 entry is host memory nobody tracks */
	const uint64_t addr[2][4] = { { VA + PAGE - 256, VA + 8 * PAGE, VA + 4096 },
				      { VA + 8192, VA + 8 * PAGE + 4096, 0x1000 } };
	const int64_t numel[3] = { 128, 16, 16 };
	unsigned grid = fill(tk, 3, addr, numel);
	float scalar = 0.5f;
	void *kp[4] = { meta, meta, meta, &scalar };
	struct ddp_launch_call c = { .kind = DDP_LAUNCH_PLAIN, .params = kp, .grid = { grid, 1, 1 } };
	struct ddp_xargs x = { 0 };
	char msg[300];
	REQUIRE(ddp_torch_launch_args(&kf, &c, 0, &x, msg, sizeof msg) == DDP_OK);
	CHECK_EQ_INT(x.n, 5); /* the untracked tensor left out */
	CHECK_EQ_INT(x.grad_list, DDP_GRAD_NO_LIST);
	CHECK_EQ_INT(x.v[0].ptr, VA + PAGE - 256);
	CHECK_EQ_INT(x.v[0].ext, 512);
	CHECK_EQ_INT(x.v[0].base, VA);
	CHECK_EQ_INT(x.v[0].size, PAGE + 256); /* spans into the second page */
	CHECK_EQ_INT(x.v[0].tlist, 0);
	CHECK_EQ_INT(x.v[0].access, DDP_GA_READ | DDP_GA_WRITE);
	CHECK_EQ_INT(x.v[1].tlist, 1);
	CHECK_EQ_INT(x.v[1].access, DDP_GA_READ);
	CHECK_EQ_INT(x.v[1].dtype, DDP_DT_F32);
	CHECK_EQ_INT(x.v[2].base, VA + 8 * PAGE);
	CHECK_EQ_INT(x.v[2].size, PAGE);
	CHECK_EQ_INT(x.v[2].bounded, DDP_GB_EXACT);
	/* a consumer: the untracked tensor is an error, with one line */
	CHECK_EQ_INT(ddp_torch_launch_args(&kf, &c, 1, &x, msg, sizeof msg), DDP_ERR_INVALID);
	CHECK(strstr(msg, "tensor 2 of list 1") != NULL);
	ddp_xargs_free(&x);
	free(kf.sync_torch);
}

TEST(fused_gradient_list_is_list_1)
{
	table();
	uint32_t s[13] = { 25544, 1, 8, 8, 8, 8, 8, 8, 1, 8, 8 };
	kernel(k_fused, s, 11);
	REQUIRE(kf.sync_torch_state == DDP_XT_OK);
	const struct ddp_torch_kernel *tk = kf.sync_torch;
	uint64_t addr[4][4];
	for (int l = 0; l < 4; l++)
		for (int t = 0; t < 2; t++)
			addr[l][t] = VA + 8 * PAGE + 0x1000 * (uint64_t)(4 * l + t);
	const int64_t numel[2] = { 16, 32 };
	unsigned grid = fill(tk, 2, (const uint64_t(*)[4])addr, numel);
	double d = 0;
	uint8_t bo = 0;
	uint64_t null = 0;
	void *kp[11] = { meta, meta, &null, &d, &d, &d, &d, &d, &bo, &null, &null };
	struct ddp_launch_call c = { .kind = DDP_LAUNCH_PLAIN, .params = kp, .grid = { grid, 1, 1 } };
	struct ddp_xargs x = { 0 };
	char msg[300];
	REQUIRE(ddp_torch_launch_args(&kf, &c, 0, &x, msg, sizeof msg) == DDP_OK);
	CHECK_EQ_INT(x.grad_list, 1);
	CHECK_EQ_INT(x.n, 8); /* 4 lists x 2 tensors; the steps are not tracked memory */
	int grads = 0;
	for (uint32_t i = 0; i < x.n; i++)
		grads += x.v[i].tlist == 1 && x.v[i].access == DDP_GA_READ;
	CHECK_EQ_INT(grads, 2);
	ddp_xargs_free(&x);
	free(kf.sync_torch);
}

/* reduce_kernel (a bias gradient's sum over the batch): the output is an
 * exact write (an early reduction may follow it), the global reduction's
 * scratch buffer a write to its allocation's end. */
static char k_sum[] =
	"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
	"at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	"unsigned int, float, 4, 4> >(at::native::ReduceOp<float, at::native::func_wrapper_t<float, "
	"at::native::sum_functor<float, float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, "
	"unsigned int, float, 4, 4>)";

static void put32(uint32_t off, uint32_t v) { memcpy(meta + off, &v, 4); }

TEST(reduce_output_exact_scratch_unbounded)
{
	table();
	uint32_t s[1] = { 1048 };
	kernel(k_sum, s, 1);
	REQUIRE(kf.sync_torch_state == DDP_XT_OK);
	/* sum(dim=0) of [16][10] f32: config at +8, one reduced dim (16,
	 * byte stride 40), one kept dim (10, byte strides 4 and 4) */
	memset(meta, 0xA5, sizeof meta);
	int32_t cfg[3] = { 4, 16, 10 };
	memcpy(meta + 8, cfg, sizeof cfg);
	uint32_t in = 8 + 64, out = in + 404;
	put32(in, 1);
	put32(in + 4, 16), put32(in + 8, 1), put32(in + 12, 4); /* IntDivider(16) */
	put32(in + 4 + 300, 40);
	put32(out, 1);
	put32(out + 4, 10), put32(out + 8, 2576980378u), put32(out + 12, 4); /* IntDivider(10) */
	put32(out + 4 + 300, 4), put32(out + 8 + 300, 4);
	uint32_t t = 1048 - 64;
	put64(t, VA + 8 * PAGE + 0x1000);  /* src */
	put64(t + 8, VA + 8 * PAGE + 0x100); /* dst */
	put64(t + 16, 0), put64(t + 24, 0);
	put64(t + 32, VA + 8 * PAGE + 0x8000); /* cta_buf */
	put64(t + 40, 0), put64(t + 48, 0);
	meta[t + 56] = 0, meta[t + 57] = 1;
	put32(t + 60, 1);
	void *kp[1] = { meta };
	struct ddp_launch_call c = { .kind = DDP_LAUNCH_PLAIN, .params = kp, .grid = { 1, 1, 1 } };
	struct ddp_xargs x = { 0 };
	char msg[300];
	REQUIRE(ddp_torch_launch_args(&kf, &c, 0, &x, msg, sizeof msg) == DDP_OK);
	CHECK_EQ_INT(x.n, 3);
	CHECK(x.v[0].ptr == VA + 8 * PAGE + 0x100 && x.v[0].ext == 40 && x.v[0].bounded == DDP_GB_EXACT &&
	      x.v[0].access == DDP_GA_WRITE && x.v[0].dtype == DDP_DT_F32);
	CHECK(x.v[1].ptr == VA + 8 * PAGE + 0x1000 && x.v[1].ext == 640 && x.v[1].access == DDP_GA_READ);
	CHECK(x.v[2].ptr == VA + 8 * PAGE + 0x8000 && x.v[2].ext == 0 && x.v[2].bounded == DDP_GB_NONE &&
	      x.v[2].access == DDP_GA_WRITE);
	ddp_xargs_free(&x);
	free(kf.sync_torch);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
