/* SPDX-License-Identifier: MIT
 *
 * test_sig.c - the demangled-signature reader (runtime/image/ddp_sig.c) and how
 * the kernel registry applies it (ddp_kreg_apply_signature).
 */
#define CHECK_MAIN
#include "check.h"
#include "ddp_kreg.h"
#include "ddp_sig.h"

static struct ddp_sig sig;

#define P(i) (sig.params[i])

TEST(pointers_and_const)
{
	REQUIRE(ddp_sig_parse("sgd(float*, float const*, const float*, float* const, int)", &sig) == DDP_OK);
	CHECK_EQ_INT(sig.nparams, 5);
	CHECK(P(0).ptype == DDP_PT_POINTER && !P(0).is_const && P(0).dtype == DDP_DT_F32);
	CHECK(P(1).ptype == DDP_PT_POINTER && P(1).is_const && P(1).dtype == DDP_DT_F32);
	CHECK(P(2).ptype == DDP_PT_POINTER && P(2).is_const);
	CHECK(P(3).ptype == DDP_PT_POINTER && !P(3).is_const);   /* const pointer, writable data */
	CHECK(P(4).ptype == DDP_PT_SCALAR && P(4).dtype == DDP_DT_I32);
	CHECK_EQ_INT(sig.name_len, 3);
}

TEST(types_and_restrict)
{
	REQUIRE(ddp_sig_parse("k(__nv_bfloat16*, __half const* __restrict__, double*, unsigned long, "
			      "long long, unsigned char const*, bool, c10::BFloat16*)", &sig) == DDP_OK);
	CHECK_EQ_INT(sig.nparams, 8);
	CHECK(P(0).dtype == DDP_DT_BF16 && P(0).ptype == DDP_PT_POINTER);
	CHECK(P(1).dtype == DDP_DT_F16 && P(1).is_const);
	CHECK(P(2).dtype == DDP_DT_F64);
	CHECK(P(3).ptype == DDP_PT_SCALAR && P(3).dtype == DDP_DT_U64);
	CHECK(P(4).dtype == DDP_DT_I64);
	CHECK(P(5).dtype == DDP_DT_U8 && P(5).is_const);
	CHECK(P(6).dtype == DDP_DT_BOOL);
	CHECK(P(7).dtype == DDP_DT_BF16);
}

TEST(templates_structs_and_nesting)
{
	const char *s = "void multi_tensor_apply_kernel<TensorListMetadata<4>, FusedAdamFunctor<__nv_bfloat16>, "
			"float>(TensorListMetadata<4>, FusedAdamFunctor<__nv_bfloat16>, float, "
			"at::(anonymous namespace)::Foo<int, (char)1>, void (*)(int, float))";
	REQUIRE(ddp_sig_parse(s, &sig) == DDP_OK);
	CHECK_EQ_INT(sig.nparams, 5);
	CHECK(P(0).ptype == DDP_PT_STRUCT);
	CHECK(P(1).ptype == DDP_PT_STRUCT);
	CHECK(P(2).ptype == DDP_PT_SCALAR && P(2).dtype == DDP_DT_F32);
	CHECK(P(3).ptype == DDP_PT_STRUCT);
	CHECK(P(4).ptype == DDP_PT_POINTER || P(4).ptype == DDP_PT_STRUCT);
	CHECK_EQ_INT(sig.template_dtype, DDP_DT_BF16);
	CHECK(strncmp(s + sig.name_off, "multi_tensor_apply_kernel", sig.name_len) == 0);
}

TEST(no_params_and_c_names)
{
	CHECK(ddp_sig_parse("empty()", &sig) == DDP_OK && sig.nparams == 0);
	CHECK(ddp_sig_parse("empty(void)", &sig) == DDP_OK && sig.nparams == 0);
	CHECK(ddp_sig_parse("c_scale", &sig) == DDP_ERR_INVALID && sig.nparams == 0);
	CHECK(ddp_sig_parse("", &sig) == DDP_ERR_INVALID);
	CHECK(ddp_sig_parse("broken(int, (float", &sig) == DDP_ERR_INVALID);
	CHECK(ddp_sig_parse("x)", &sig) == DDP_ERR_INVALID);
	CHECK(ddp_sig_parse("f(float**, int const**)", &sig) == DDP_OK && P(0).depth == 2 &&
	      P(0).dtype == DDP_DT_UNKNOWN);
}

TEST(dtype_names)
{
	CHECK_EQ_STR(ddp_dtype_name(DDP_DT_BF16), "bf16");
	CHECK_EQ_INT(ddp_dtype_size(DDP_DT_F16), 2);
	CHECK_EQ_INT(ddp_sig_dtype("float const", 11), DDP_DT_F32);
	CHECK_EQ_INT(ddp_sig_dtype("unsigned int", 12), DDP_DT_U32);
	CHECK_EQ_INT(ddp_sig_dtype("MyStruct", 8), DDP_DT_UNKNOWN);
}

TEST(kreg_applies_signature)
{
	struct ddp_kparam_desc p[3] = { { 0, 8, 0, 0, 0, 0 }, { 8, 8, 0, 0, 0, 0 }, { 16, 4, 0, 0, 0, 0 } };
	struct ddp_kfunc k = { 0 };
	k.name = "_Z3sgdPfPKfi";
	k.demangled = "sgd(float*, float const*, int)";
	k.nparams = 3;
	k.params = p;
	k.layout_known = 1;
	ddp_kreg_apply_signature(&k);
	CHECK(k.types_known);
	CHECK(p[0].ptype == DDP_PT_POINTER && !p[0].is_const);
	CHECK(p[1].ptype == DDP_PT_POINTER && p[1].is_const);
	CHECK(p[2].ptype == DDP_PT_SCALAR);
	/* a layout that disagrees with the signature: types are not guessed */
	struct ddp_kfunc k2 = k;
	struct ddp_kparam_desc q[2] = { { 0, 8, 0, 0, 0, 0 }, { 8, 8, 0, 0, 0, 0 } };
	k2.params = q;
	k2.nparams = 2;
	k2.types_known = 0;
	ddp_kreg_apply_signature(&k2);
	CHECK(!k2.types_known && q[0].ptype == DDP_PT_UNKNOWN);
	CHECK(ddp_kreg_is_optimizer_name("void adamw_update<float>(float*)"));
	CHECK(ddp_kreg_is_optimizer_name("multi_tensor_apply_kernel<X>"));
	CHECK(ddp_kreg_is_optimizer_name("SGD_Momentum"));
	CHECK(!ddp_kreg_is_optimizer_name("linear_forward(float const*)"));
}

int main(int argc, char **argv) { return check_main(argc, argv); }
