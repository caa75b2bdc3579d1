/* SPDX-License-Identifier: MIT
 *
 * test_fatbin.c - unit tests of the fatbin/cubin/PTX reader
 * (runtime/image/ddp_fatbin.c, ddp_cubin.c, ddp_ptx.c, ddp_demangle.c) on real
 * nvcc output built by tests/unit/fatbin.mk from the .cu files in tests/unit/kernels/ and
 * embedded in this binary.
 *
 * Expected layouts are written by hand from the C++ ABI (each parameter at
 * the next multiple of its alignment) and cross-checked against offsetof on
 * host structs with the same members, so neither comes from the parser.
 */
#define CHECK_MAIN
#include "../check.h"

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "ddp_fatbin.h"

/* ---- embedded images (tests/unit/fatbin.mk) ----------------------------- */

#define IMAGE(n) extern const unsigned char fb_##n[], fb_##n##_end[]
IMAGE(params_sm75_cubin);
IMAGE(params_sm80_cubin);
IMAGE(params_sm90_cubin);
IMAGE(params_sm100_cubin);
IMAGE(params_ptx);
IMAGE(params_multi_fatbin);
IMAGE(params_none_fatbin);
IMAGE(params_speed_fatbin);
IMAGE(params_size_fatbin);
IMAGE(params_debug_fatbin);
IMAGE(params_ptxonly_fatbin);
IMAGE(other_fatbin);
IMAGE(concat_fatbin);

struct image {
	const char *name;
	const unsigned char *data;
	size_t len;
};
#define IMG(n) ((struct image){ #n, fb_##n, (size_t)(fb_##n##_end - fb_##n) })

/* ---- expected layouts ---------------------------------------------------- */

struct S { int a; double b; char c; };   /* as in params.cu */
struct Big { float v[1100]; };

/* Host mirrors of the parameter lists (the C++ ABI lays them out as a struct). */
struct scalars_args { char c; double d; short s; float *p; long long q; int i; float f; struct S st; char tail; };
struct axpy_f_args { float a; const float *x; float *y; int n; };
struct axpy_h_args { uint16_t a; const uint16_t *x; uint16_t *y; int n; }; /* __half: 2 bytes, align 2 */
struct big_args { struct Big b; unsigned char flag; float *out; };
struct ns_args { const float *in; double *out; unsigned short k; };
struct other_args { int *p; int v; };

#define MAXP 10
struct exp_param {
	uint32_t offset, size;
	int pointer; /* a pointer parameter: flagged on sm_100+ */
};
struct exp_kernel {
	const char *name, *demangled;
	uint32_t nparams, bytes;
	struct exp_param p[MAXP];
	size_t host_off[MAXP]; /* offsetof in the host mirror */
	size_t host_end;       /* offsetof + sizeof of the last member */
};

#define END(T, m) (offsetof(T, m) + sizeof(((T *)0)->m))

static const struct exp_kernel expected[] = {
	{ "_Z3big3BighPf", "big(Big, unsigned char, float*)", 3, 4416,
	  { { 0, 4400, 0 }, { 4400, 1, 0 }, { 4408, 8, 1 } },
	  { offsetof(struct big_args, b), offsetof(struct big_args, flag), offsetof(struct big_args, out) },
	  END(struct big_args, out) },
	{ "_Z4axpyI6__halfEvT_PKS1_PS1_i", "void axpy<__half>(__half, __half const*, __half*, int)", 4, 28,
	  { { 0, 2, 0 }, { 8, 8, 1 }, { 16, 8, 1 }, { 24, 4, 0 } },
	  { offsetof(struct axpy_h_args, a), offsetof(struct axpy_h_args, x), offsetof(struct axpy_h_args, y),
	    offsetof(struct axpy_h_args, n) },
	  END(struct axpy_h_args, n) },
	{ "_Z4axpyIfEvT_PKS0_PS0_i", "void axpy<float>(float, float const*, float*, int)", 4, 28,
	  { { 0, 4, 0 }, { 8, 8, 1 }, { 16, 8, 1 }, { 24, 4, 0 } },
	  { offsetof(struct axpy_f_args, a), offsetof(struct axpy_f_args, x), offsetof(struct axpy_f_args, y),
	    offsetof(struct axpy_f_args, n) },
	  END(struct axpy_f_args, n) },
	{ "_ZN3ddp9ns_kernelEPKfPdt", "ddp::ns_kernel(float const*, double*, unsigned short)", 3, 18,
	  { { 0, 8, 1 }, { 8, 8, 1 }, { 16, 2, 0 } },
	  { offsetof(struct ns_args, in), offsetof(struct ns_args, out), offsetof(struct ns_args, k) },
	  END(struct ns_args, k) },
	{ "noparams", "noparams", 0, 0, { { 0, 0, 0 } }, { 0 }, 0 },
	{ "scalars", "scalars", 9, 73,
	  { { 0, 1, 0 }, { 8, 8, 0 }, { 16, 2, 0 }, { 24, 8, 1 }, { 32, 8, 0 }, { 40, 4, 0 }, { 44, 4, 0 },
	    { 48, 24, 0 }, { 72, 1, 0 } },
	  { offsetof(struct scalars_args, c), offsetof(struct scalars_args, d), offsetof(struct scalars_args, s),
	    offsetof(struct scalars_args, p), offsetof(struct scalars_args, q), offsetof(struct scalars_args, i),
	    offsetof(struct scalars_args, f), offsetof(struct scalars_args, st), offsetof(struct scalars_args, tail) },
	  END(struct scalars_args, tail) },
};
#define NEXPECTED (sizeof expected / sizeof expected[0])

static const struct exp_kernel expected_other = {
	"other_kernel", "other_kernel", 2, 12, { { 0, 8, 1 }, { 8, 4, 0 } },
	{ offsetof(struct other_args, p), offsetof(struct other_args, v) }, END(struct other_args, v)
};

/* How pointer flags are expected: only sm_100+ cubins mark pointers. */
enum ptr_mode { PTR_NONE, PTR_MARKED };

static void check_kernel(const struct ddp_module_info *m, const struct exp_kernel *x, enum ptr_mode pm,
			 const char *what)
{
	const struct ddp_kernel_info *k = ddp_module_find(m, x->name);
	if (!k) {
		CHECK_FAIL_("%s: kernel %s not found", what, x->name);
		return;
	}
	CHECK_EQ_STR(k->name, x->name);
	CHECK_EQ_STR(k->demangled, x->demangled);
	CHECK_EQ_INT(k->nparams, x->nparams);
	CHECK_EQ_INT(k->param_bytes, x->bytes);
	for (uint32_t i = 0; i < x->nparams && i < k->nparams; i++) {
		if (k->params[i].offset != x->p[i].offset || k->params[i].size != x->p[i].size)
			CHECK_FAIL_("%s: %s param %u at %u size %u, expected %u size %u", what, x->name, i,
				    k->params[i].offset, k->params[i].size, x->p[i].offset, x->p[i].size);
		uint32_t want = (pm == PTR_MARKED && x->p[i].pointer) ? DDP_KPARAM_POINTER : 0;
		if (k->params[i].flags != want)
			CHECK_FAIL_("%s: %s param %u flags 0x%x, expected 0x%x", what, x->name, i, k->params[i].flags, want);
	}
}

static void check_all_kernels(const struct ddp_module_info *m, enum ptr_mode pm, const char *what)
{
	CHECK_EQ_INT(m->nkernels, NEXPECTED);
	for (size_t i = 0; i < NEXPECTED; i++)
		check_kernel(m, &expected[i], pm, what);
	for (size_t i = 1; i < m->nkernels; i++)
		CHECK(strcmp(m->kernels[i - 1].name, m->kernels[i].name) < 0);
}

/* Parses a copy of exactly len bytes (so ASan sees any over-read). */
static ddp_result parse_copy(const void *data, size_t len, uint32_t arch, struct ddp_module_info *m,
			     char *err, size_t errlen)
{
	void *copy = calloc(1, len ? len : 1); /* len 0: the empty string */
	REQUIRE(copy);
	memcpy(copy, data, len);
	ddp_result rc = ddp_module_parse(copy, len, arch, m, err, errlen);
	free(copy);
	return rc;
}

/* ---- tests ---------------------------------------------------------------- */

TEST(hand_layouts_match_host_offsetof)
{
	for (size_t i = 0; i < NEXPECTED; i++) {
		const struct exp_kernel *x = &expected[i];
		for (uint32_t j = 0; j < x->nparams; j++)
			if (x->host_off[j] != x->p[j].offset)
				CHECK_FAIL_("%s param %u: hand offset %u, offsetof %zu", x->name, j, x->p[j].offset,
					    x->host_off[j]);
		if (x->nparams) {
			const struct exp_param *last = &x->p[x->nparams - 1];
			CHECK_EQ_INT(last->offset + last->size, x->host_end);
			CHECK_EQ_INT(x->bytes, x->host_end);
		}
	}
	CHECK_EQ_INT(sizeof(struct S), 24);
	CHECK_EQ_INT(expected_other.host_off[1], expected_other.p[1].offset);
	CHECK_EQ_INT(expected_other.host_end, expected_other.bytes);
}

static void check_cubin(struct image im, uint32_t arch, enum ptr_mode pm)
{
	struct ddp_module_info m;
	char err[256];
	CHECK_EQ_INT(ddp_image_kind(im.data, im.len), DDP_IMAGE_CUBIN);
	ddp_result rc = parse_copy(im.data, im.len, 0, &m, err, sizeof err);
	if (rc != DDP_OK)
		CHECK_FAIL_("%s: %s", im.name, err);
	REQUIRE(rc == DDP_OK);
	CHECK_EQ_INT(m.kind, DDP_IMAGE_CUBIN);
	CHECK_EQ_INT(m.arch, arch);
	CHECK_EQ_INT(m.image_size, im.len);
	check_all_kernels(&m, pm, im.name);
	ddp_module_info_free(&m);

	/* Length unknown: the size comes from the ELF headers alone. */
	CHECK(ddp_module_parse(im.data, 0, 0, &m, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(m.image_size, im.len);
	CHECK_EQ_INT(m.nkernels, NEXPECTED);
	ddp_module_info_free(&m);
	size_t size = 0;
	CHECK(ddp_cubin_size(im.data, 0, &size, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(size, im.len);
}

TEST(cubin_sm75) { check_cubin(IMG(params_sm75_cubin), 75, PTR_NONE); }
TEST(cubin_sm80) { check_cubin(IMG(params_sm80_cubin), 80, PTR_NONE); }
TEST(cubin_sm90) { check_cubin(IMG(params_sm90_cubin), 90, PTR_NONE); }
TEST(cubin_sm100_marks_pointers) { check_cubin(IMG(params_sm100_cubin), 100, PTR_MARKED); }

TEST(ptx_text)
{
	struct image im = IMG(params_ptx);
	struct ddp_module_info m;
	char err[256];
	CHECK_EQ_INT(ddp_image_kind(im.data, im.len), DDP_IMAGE_PTX);
	CHECK_EQ_INT(ddp_image_kind(im.data, 0), DDP_IMAGE_PTX);
	ddp_result rc = parse_copy(im.data, im.len, 90, &m, err, sizeof err);
	if (rc != DDP_OK)
		CHECK_FAIL_("%s", err);
	REQUIRE(rc == DDP_OK);
	CHECK_EQ_INT(m.kind, DDP_IMAGE_PTX);
	CHECK_EQ_INT(m.arch, 0);
	CHECK_EQ_INT(m.image_size, im.len);
	check_all_kernels(&m, PTR_NONE, "params.ptx");
	ddp_module_info_free(&m);
	/* NUL-terminated, length unknown (the embedded image ends with a NUL). */
	CHECK(ddp_module_parse(im.data, 0, 90, &m, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(m.image_size, im.len + 1);
	CHECK_EQ_INT(m.nkernels, NEXPECTED);
	ddp_module_info_free(&m);
}

TEST(ptx_syntax_variants)
{
	/* .ptr attributes, hex sizes, comments, a declaration without a body
	 * and a kernel without a parameter list. */
	static const char ptx[] =
		"// comment\n.version 8.0\n.target sm_80\n.address_size 64\n"
		".extern .entry decl_only(.param .u32 x);\n"
		"/* block\n comment .entry fake( */\n"
		".visible .entry k(\n"
		"\t.param .u8 k_p0,\n"
		"\t.param .u64 .ptr .global .align 16 k_p1,\n"
		"\t.param .align 16 .b8 k_p2[0x20],\n"
		"\t.param .f16 k_p3,\n"
		"\t.param .b32 k_p4[3]\n"
		") .maxntid 128, 1, 1\n{\n\tret;\n}\n"
		".entry bare\n{\n\tret;\n}\n";
	struct ddp_module_info m;
	char err[256];
	ddp_result rc = ddp_module_parse(ptx, sizeof ptx - 1, 0, &m, err, sizeof err);
	if (rc != DDP_OK)
		CHECK_FAIL_("%s", err);
	REQUIRE(rc == DDP_OK);
	CHECK_EQ_INT(m.nkernels, 2);
	CHECK(ddp_module_find(&m, "decl_only") == NULL);
	CHECK(ddp_module_find(&m, "fake") == NULL);
	const struct ddp_kernel_info *k = ddp_module_find(&m, "k");
	REQUIRE(k && k->nparams == 5);
	/* .align after .ptr is the pointee's: p1 sits at 8. */
	static const uint32_t off[] = { 0, 8, 16, 48, 52 }, size[] = { 1, 8, 32, 2, 12 };
	for (int i = 0; i < 5; i++) {
		CHECK_EQ_INT(k->params[i].offset, off[i]);
		CHECK_EQ_INT(k->params[i].size, size[i]);
		CHECK_EQ_INT(k->params[i].flags, i == 1 ? DDP_KPARAM_POINTER : 0);
	}
	CHECK_EQ_INT(k->param_bytes, 64);
	k = ddp_module_find(&m, "bare");
	REQUIRE(k);
	CHECK_EQ_INT(k->nparams, 0);
	CHECK_EQ_INT(k->param_bytes, 0);
	ddp_module_info_free(&m);
}

struct arch_case { uint32_t want; uint32_t got; /* 0: PTX */ };

TEST(multi_arch_selection)
{
	struct image im = IMG(params_multi_fatbin);
	/* sm_75, sm_80, sm_90, sm_100 SASS and compute_100 PTX. */
	static const struct arch_case cases[] = {
		{ 75, 75 }, { 80, 80 }, { 86, 80 }, { 89, 80 }, { 90, 90 }, { 100, 100 }, { 103, 100 },
		{ 0, 100 }, { 120, 0 }, { 110, 0 },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct ddp_module_info m;
		char err[256], what[64];
		snprintf(what, sizeof what, "multi want sm_%u", cases[i].want);
		ddp_result rc = parse_copy(im.data, im.len, cases[i].want, &m, err, sizeof err);
		if (rc != DDP_OK) {
			CHECK_FAIL_("%s: %s", what, err);
			continue;
		}
		CHECK_EQ_INT(m.kind, DDP_IMAGE_FATBIN);
		CHECK_EQ_INT(m.arch, cases[i].got);
		CHECK_EQ_INT(m.image_size, im.len);
		/* sm_100 SASS marks pointers, and so does compute_100 PTX (.ptr). */
		check_all_kernels(&m, cases[i].got >= 100 || cases[i].got == 0 ? PTR_MARKED : PTR_NONE, what);
		ddp_module_info_free(&m);
	}
	/* sm_70: no sm_7x SASS <= 70 and the PTX is compute_100. */
	struct ddp_module_info m;
	char err[256] = "";
	CHECK(parse_copy(im.data, im.len, 70, &m, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "sm_70") && strstr(err, "sm_75") && strstr(err, "sm_100") && strstr(err, "compute_100"));
	CHECK_EQ_INT(m.nkernels, 0);
	ddp_module_info_free(&m);
}

TEST(multi_entries_listing)
{
	struct image im = IMG(params_multi_fatbin);
	struct ddp_fatbin_entry e[8];
	size_t n = 0;
	char err[256];
	REQUIRE(ddp_fatbin_entries(im.data, im.len, e, 8, &n, err, sizeof err) == DDP_OK);
	REQUIRE(n == 5);
	int elf_mask = 0, ptx = 0;
	for (size_t i = 0; i < n; i++) {
		CHECK(e[i].payload > im.data && e[i].payload + e[i].payload_size <= im.data + im.len);
		if (e[i].kind == 2) {
			CHECK_EQ_INT(e[i].flags & 0xa000, 0); /* default: ELF stored */
			elf_mask |= e[i].arch == 75 ? 1 : e[i].arch == 80 ? 2 : e[i].arch == 90 ? 4 : e[i].arch == 100 ? 8 : 16;
			CHECK(memcmp(e[i].payload, "\177ELF", 4) == 0);
		} else if (e[i].kind == 1) {
			ptx++;
			CHECK_EQ_INT(e[i].arch, 100);
			CHECK(e[i].flags & 0x8000); /* default: PTX zstd */
			uint8_t *d;
			size_t sz;
			REQUIRE(ddp_fatbin_entry_data(&e[i], &d, &sz, err, sizeof err) == DDP_OK);
			CHECK_EQ_INT(sz, e[i].decompressed_size);
			CHECK(strstr((char *)d, ".target sm_100") != NULL);
			free(d);
		}
	}
	CHECK_EQ_INT(elf_mask, 15);
	CHECK_EQ_INT(ptx, 1);
	/* max smaller than the count: n still counts all. */
	CHECK(ddp_fatbin_entries(im.data, im.len, e, 2, &n, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(n, 5);
}

/* Finds the kind-k entry of a single-container fatbin and decompresses it. */
static uint8_t *entry_data(struct image im, uint16_t kind, uint64_t *flags, size_t *size)
{
	struct ddp_fatbin_entry e[8];
	size_t n = 0;
	char err[256];
	uint8_t *d = NULL;
	if (ddp_fatbin_entries(im.data, im.len, e, 8, &n, err, sizeof err) != DDP_OK)
		return NULL;
	for (size_t i = 0; i < n && i < 8; i++) {
		if (e[i].kind != kind)
			continue;
		*flags = e[i].flags;
		if (ddp_fatbin_entry_data(&e[i], &d, size, err, sizeof err) != DDP_OK)
			CHECK_FAIL_("%s kind %u: %s", im.name, kind, err);
		return d;
	}
	return NULL;
}

TEST(compress_modes)
{
	struct image none = IMG(params_none_fatbin), speed = IMG(params_speed_fatbin), size = IMG(params_size_fatbin);
	struct image cubin = IMG(params_sm90_cubin), ptx = IMG(params_ptx);
	uint64_t f;
	size_t n;
	char *ptx0 = NULL;
	/* What nvcc 13 does: none stores all; speed LZ4 for PTX only; size zstd for both. */
	struct { struct image im; uint64_t elf_bits, ptx_bits; } modes[] = {
		{ none, 0, 0 }, { speed, 0, 0x2000 }, { size, 0x8000, 0x8000 },
	};
	for (size_t i = 0; i < 3; i++) {
		struct image im = modes[i].im;
		uint8_t *elf = entry_data(im, 2, &f, &n);
		REQUIRE(elf);
		CHECK_EQ_INT(f & 0xa000, modes[i].elf_bits);
		/* The stored ELF, decompressed, is the standalone sm_90 cubin. */
		CHECK(n == cubin.len && memcmp(elf, cubin.data, n) == 0);
		free(elf);
		uint8_t *text = entry_data(im, 1, &f, &n);
		REQUIRE(text);
		CHECK_EQ_INT(f & 0xa000, modes[i].ptx_bits);
		CHECK(strstr((char *)text, ".entry scalars(") != NULL);
		/* The fatbin's PTX is nvcc -ptx's without comments: same .version. */
		CHECK(strstr((char *)text, ".version 9.0") && strstr((const char *)ptx.data, ".version 9.0"));
		/* Stored, LZ4 and zstd give the same text. */
		if (i == 0)
			ptx0 = (char *)text;
		else {
			CHECK_EQ_STR((char *)text, ptx0);
			free(text);
		}

		struct ddp_module_info m;
		char err[256];
		ddp_result rc = parse_copy(im.data, im.len, 90, &m, err, sizeof err);
		if (rc != DDP_OK)
			CHECK_FAIL_("%s: %s", im.name, err);
		REQUIRE(rc == DDP_OK);
		CHECK_EQ_INT(m.arch, 90);
		check_all_kernels(&m, PTR_NONE, im.name);
		ddp_module_info_free(&m);
		/* An sm_100 device takes the compute_90 PTX. */
		rc = parse_copy(im.data, im.len, 100, &m, err, sizeof err);
		CHECK(rc == DDP_OK);
		CHECK_EQ_INT(m.arch, 0);
		check_all_kernels(&m, PTR_NONE, im.name);
		ddp_module_info_free(&m);
	}
	free(ptx0);
}

TEST(device_debug_G)
{
	struct image im = IMG(params_debug_fatbin);
	struct ddp_module_info m;
	char err[256];
	ddp_result rc = parse_copy(im.data, im.len, 90, &m, err, sizeof err);
	if (rc != DDP_OK)
		CHECK_FAIL_("%s", err);
	REQUIRE(rc == DDP_OK);
	CHECK_EQ_INT(m.arch, 90);
	check_all_kernels(&m, PTR_NONE, "-G");
	ddp_module_info_free(&m);
}

TEST(ptx_only_fatbin)
{
	struct image im = IMG(params_ptxonly_fatbin);
	struct ddp_module_info m;
	char err[256] = "";
	ddp_result rc = parse_copy(im.data, im.len, 90, &m, err, sizeof err);
	if (rc != DDP_OK)
		CHECK_FAIL_("%s", err);
	REQUIRE(rc == DDP_OK);
	CHECK_EQ_INT(m.kind, DDP_IMAGE_FATBIN);
	CHECK_EQ_INT(m.arch, 0);
	check_all_kernels(&m, PTR_NONE, "ptx-only");
	ddp_module_info_free(&m);
	CHECK(parse_copy(im.data, im.len, 0, &m, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(m.nkernels, NEXPECTED);
	ddp_module_info_free(&m);
	/* compute_90 PTX cannot serve an sm_80 device. */
	CHECK(parse_copy(im.data, im.len, 80, &m, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "compute_90") != NULL);
}

TEST(concatenated_containers)
{
	struct image im = IMG(concat_fatbin), first = IMG(params_size_fatbin);
	struct ddp_module_info m;
	char err[256];
	struct ddp_fatbin_entry e[8];
	size_t n = 0;
	CHECK(ddp_fatbin_entries(im.data, im.len, e, 8, &n, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(n, 4);
	ddp_result rc = parse_copy(im.data, im.len, 90, &m, err, sizeof err);
	if (rc != DDP_OK)
		CHECK_FAIL_("%s", err);
	REQUIRE(rc == DDP_OK);
	CHECK_EQ_INT(m.nkernels, NEXPECTED + 1);
	CHECK_EQ_INT(m.image_size, im.len);
	CHECK_EQ_INT(m.arch, 90);
	for (size_t i = 0; i < NEXPECTED; i++)
		check_kernel(&m, &expected[i], PTR_NONE, "concat");
	check_kernel(&m, &expected_other, PTR_NONE, "concat");
	ddp_module_info_free(&m);
	/* Unknown length: only the first container is read. */
	CHECK(ddp_module_parse(im.data, 0, 90, &m, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(m.nkernels, NEXPECTED);
	CHECK_EQ_INT(m.image_size, first.len);
	CHECK(ddp_module_find(&m, "other_kernel") == NULL);
	ddp_module_info_free(&m);
	/* Trailing padding after the last container is not a container. */
	uint8_t *pad = calloc(1, im.len + 13);
	REQUIRE(pad);
	memcpy(pad, im.data, im.len);
	CHECK(ddp_module_parse(pad, im.len + 13, 90, &m, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(m.image_size, im.len);
	ddp_module_info_free(&m);
	free(pad);
}

/* Device variables of other.cu: name, size, constant bank; none of the
 * compiler's $-names. */
TEST(device_variables)
{
	struct image im = IMG(other_fatbin);
	struct ddp_module_info m;
	char err[256];
	REQUIRE(parse_copy(im.data, im.len, 90, &m, err, sizeof err) == DDP_OK);
	const struct ddp_global_info *g = ddp_module_find_global(&m, "other_counter");
	REQUIRE(g != NULL);
	CHECK_EQ_INT(g->size, 4);
	CHECK_EQ_INT(g->constant, 0);
	g = ddp_module_find_global(&m, "other_coef");
	REQUIRE(g != NULL);
	CHECK_EQ_INT(g->size, 24);
	CHECK_EQ_INT(g->constant, 1);
	g = ddp_module_find_global(&m, "_ZN3ons11other_scaleE");
	REQUIRE(g != NULL);
	CHECK_EQ_INT(g->size, 8);
	CHECK(ddp_module_find_global(&m, "nosuch") == NULL);
	CHECK(ddp_module_find_global(&m, "other_kernel") == NULL);
	for (size_t i = 0; i < m.nglobals; i++) {
		CHECK(m.globals[i].name[0] != '$');
		if (i)
			CHECK(strcmp(m.globals[i - 1].name, m.globals[i].name) < 0);
	}
	ddp_module_info_free(&m);
	/* params.cu has none. */
	im = IMG(params_sm90_cubin);
	REQUIRE(parse_copy(im.data, im.len, 90, &m, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(m.nglobals, 0);
	ddp_module_info_free(&m);
}

struct wrapper {
	int magic;
	int version;
	const unsigned long long *data;
	void *filename_or_fatbins;
};

TEST(cudart_wrapper)
{
	struct image im = IMG(params_multi_fatbin);
	struct wrapper w = { (int)DDP_FATBIN_WRAPPER_MAGIC, 1, (const unsigned long long *)im.data, NULL };
	struct ddp_module_info m;
	char err[256] = "";
	CHECK_EQ_INT(ddp_image_kind(&w, 0), DDP_IMAGE_WRAPPER);
	ddp_result rc = ddp_module_parse(&w, 0, 90, &m, err, sizeof err);
	if (rc != DDP_OK)
		CHECK_FAIL_("%s", err);
	REQUIRE(rc == DDP_OK);
	CHECK_EQ_INT(m.kind, DDP_IMAGE_WRAPPER);
	CHECK_EQ_INT(m.arch, 90);
	CHECK_EQ_INT(m.image_size, im.len);
	check_all_kernels(&m, PTR_NONE, "wrapper");
	ddp_module_info_free(&m);
	/* With a length, the data pointer must lie inside it. */
	CHECK(ddp_module_parse(&w, sizeof w, 90, &m, err, sizeof err) == DDP_ERR_INVALID);
	CHECK(strstr(err, "outside") != NULL);
	/* Wrapper followed by its fatbin in one buffer. */
	uint8_t *buf = malloc(32 + im.len);
	REQUIRE(buf);
	memcpy(buf + 32, im.data, im.len);
	w.data = (const unsigned long long *)(buf + 32);
	memcpy(buf, &w, sizeof w);
	CHECK(ddp_module_parse(buf, 32 + im.len, 80, &m, err, sizeof err) == DDP_OK);
	CHECK_EQ_INT(m.arch, 80);
	ddp_module_info_free(&m);
	/* Bad version, NULL data. */
	w.version = 7;
	memcpy(buf, &w, sizeof w);
	CHECK(ddp_module_parse(buf, 32 + im.len, 80, &m, err, sizeof err) == DDP_ERR_INVALID);
	w.version = 1;
	w.data = NULL;
	CHECK(ddp_module_parse(&w, 0, 80, &m, err, sizeof err) == DDP_ERR_INVALID);
	free(buf);
}

TEST(image_kind_and_find)
{
	CHECK_EQ_INT(ddp_image_kind(NULL, 0), DDP_IMAGE_UNKNOWN);
	CHECK_EQ_INT(ddp_image_kind("", 0), DDP_IMAGE_UNKNOWN);
	CHECK_EQ_INT(ddp_image_kind(".ve", 0), DDP_IMAGE_UNKNOWN);
	CHECK_EQ_INT(ddp_image_kind("\n// x\n.version 8.0", 0), DDP_IMAGE_PTX);
	CHECK_EQ_INT(ddp_image_kind(".version 8.0", 5), DDP_IMAGE_UNKNOWN); /* cut */
	CHECK_EQ_INT(ddp_image_kind("\177ELF", 4), DDP_IMAGE_CUBIN);
	CHECK_EQ_INT(ddp_image_kind("\177EL", 3), DDP_IMAGE_UNKNOWN);
	CHECK_EQ_INT(ddp_image_kind(fb_params_multi_fatbin, 16), DDP_IMAGE_FATBIN);
	struct ddp_module_info m;
	char err[256];
	REQUIRE(ddp_module_parse(fb_params_sm90_cubin, 0, 0, &m, err, sizeof err) == DDP_OK);
	CHECK(ddp_module_find(&m, "scalars") != NULL);
	CHECK(ddp_module_find(&m, "scalar") == NULL);
	CHECK(ddp_module_find(&m, "zzz") == NULL);
	CHECK(ddp_module_find(&m, "") == NULL);
	CHECK(ddp_module_find(NULL, "scalars") == NULL);
	ddp_module_info_free(&m);
	ddp_module_info_free(&m); /* safe twice */
}

TEST(demangle)
{
	char *s = ddp_demangle("_Z4axpyIfEvT_PKS0_PS0_i");
	CHECK_EQ_STR(s, "void axpy<float>(float, float const*, float*, int)");
	free(s);
	CHECK(ddp_demangle("scalars") == NULL);
	CHECK(ddp_demangle("_Z") == NULL);
	CHECK(ddp_demangle("_Zjunk!!") == NULL);
	CHECK(ddp_demangle(NULL) == NULL);
}

/* Concurrent parses (the interposer may load modules from several threads):
 * every thread must get the full, correct module. */
static void *parse_many(void *arg)
{
	uintptr_t bad = 0;
	uint32_t arch = (uint32_t)(uintptr_t)arg;
	for (int i = 0; i < 20; i++) {
		struct ddp_module_info m;
		char err[256];
		struct image im = IMG(params_multi_fatbin);
		if (ddp_module_parse(im.data, im.len, arch, &m, err, sizeof err) != DDP_OK || m.arch != arch ||
		    m.nkernels != NEXPECTED || !ddp_module_find(&m, "scalars") ||
		    ddp_module_find(&m, "scalars")->param_bytes != 73)
			bad++;
		ddp_module_info_free(&m);
	}
	return (void *)bad;
}

TEST(concurrent_parses)
{
	static const uint32_t archs[] = { 75, 80, 90, 100 };
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		REQUIRE(pthread_create(&t[i], NULL, parse_many, (void *)(uintptr_t)archs[i]) == 0);
	for (int i = 0; i < 4; i++) {
		void *bad;
		pthread_join(t[i], &bad);
		CHECK_EQ_INT((uintptr_t)bad, 0);
	}
}

/* ---- bad input ------------------------------------------------------------ */

static void expect_invalid(const void *data, size_t len, uint32_t arch, const char *what)
{
	struct ddp_module_info m;
	char err[256];
	memset(err, 0, sizeof err);
	ddp_result rc = parse_copy(data, len, arch, &m, err, sizeof err);
	if (rc != DDP_ERR_INVALID || !err[0])
		CHECK_FAIL_("%s: rc %d, err \"%s\"", what, rc, err);
	CHECK_EQ_INT(m.nkernels, 0);
	CHECK(m.kernels == NULL);
	ddp_module_info_free(&m);
}

static void truncations(struct image im)
{
	char what[96];
	for (size_t cut = 1; cut < im.len; cut += 37) {
		snprintf(what, sizeof what, "%s cut at %zu of %zu", im.name, cut, im.len);
		expect_invalid(im.data, cut, 90, what);
	}
}

TEST(truncated_fatbin) { truncations(IMG(params_multi_fatbin)); truncations(IMG(params_size_fatbin)); }
TEST(truncated_cubin) { truncations(IMG(params_sm90_cubin)); truncations(IMG(params_sm100_cubin)); }

static void put16(uint8_t *p, uint16_t v) { memcpy(p, &v, 2); }
static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* Applies f to a copy of im and expects DDP_ERR_INVALID. */
#define CORRUPT(im, arch, what, stmt) do { \
	uint8_t *b = malloc((im).len); \
	REQUIRE(b); \
	memcpy(b, (im).data, (im).len); \
	stmt; \
	expect_invalid(b, (im).len, (arch), what); \
	free(b); \
} while (0)

TEST(corrupt_fatbin_headers)
{
	struct image sz = IMG(params_size_fatbin), sp = IMG(params_speed_fatbin), multi = IMG(params_multi_fatbin);
	/* container: entries at 16; params_size: PTX entry at 16 (hdr 80), ELF after */
	CORRUPT(sz, 90, "header size 0", put16(b + 6, 0));
	CORRUPT(sz, 90, "header size 8", put16(b + 6, 8));
	CORRUPT(sz, 90, "header size 65535", put16(b + 6, 0xffff));
	CORRUPT(sz, 90, "container size huge", put64(b + 8, 1ull << 40));
	CORRUPT(sz, 90, "container size +1", put64(b + 8, sz.len - 16 + 1));
	CORRUPT(sz, 90, "container size -1", put64(b + 8, sz.len - 16 - 1));
	CORRUPT(sz, 90, "entry header size 0", put32(b + 16 + 4, 0));
	CORRUPT(sz, 90, "entry header size huge", put32(b + 16 + 4, 0xfffffff0u));
	CORRUPT(sz, 90, "entry payload huge", put64(b + 16 + 8, ~0ull));
	CORRUPT(sz, 90, "entry payload +8", put64(b + 16 + 8, 0x410 + 8));
	/* ELF entry of params_size at 0x470: zstd */
	CORRUPT(sz, 90, "zstd decompressed size huge", put64(b + 0x470 + 56, 1ull << 40));
	CORRUPT(sz, 90, "zstd decompressed size 0", put64(b + 0x470 + 56, 0));
	CORRUPT(sz, 90, "zstd decompressed size -1", put64(b + 0x470 + 56, 0x44d0 - 1));
	CORRUPT(sz, 90, "zstd both flags", put64(b + 0x470 + 40, 0x8011 | 0x2000));
	CORRUPT(sz, 90, "zstd frame corrupt", memset(b + 0x470 + 64, 0x5a, 8));
	CORRUPT(sz, 90, "zstd flag cleared", put64(b + 0x470 + 40, 0x11)); /* no ELF magic */
	CORRUPT(sz, 90, "only LTO kinds", (put16(b + 16, 8), put16(b + 0x470, 8)));
	/* params_speed: LZ4 PTX entry at 16 (csize 0x666, dsize 0x133a) */
	CORRUPT(sp, 100, "lz4 decompressed size +1", put64(b + 16 + 56, 0x133a + 1));
	CORRUPT(sp, 100, "lz4 decompressed size huge", put64(b + 16 + 56, 1ull << 33));
	CORRUPT(sp, 100, "lz4 compressed size -1", put32(b + 16 + 16, 0x666 - 1));
	CORRUPT(sp, 100, "lz4 data corrupt", memset(b + 16 + 80 + 16, 0xff, 64));
	/* Second container damaged after a good first one. */
	uint8_t *two = malloc(2 * multi.len);
	REQUIRE(two);
	memcpy(two, multi.data, multi.len);
	memcpy(two + multi.len, multi.data, multi.len);
	put64(two + multi.len + 8, 1ull << 20);
	expect_invalid(two, 2 * multi.len, 90, "second container oversized");
	free(two);
}

/* Offset of the first KPARAM_INFO record (04 17 0c 00) in a cubin. */
static size_t find_kparam(struct image im)
{
	for (size_t i = 0; i + 4 <= im.len; i++)
		if (memcmp(im.data + i, "\x04\x17\x0c\x00", 4) == 0)
			return i;
	return 0;
}

TEST(corrupt_cubin)
{
	struct image c = IMG(params_sm90_cubin);
	size_t kp = find_kparam(c);
	REQUIRE(kp > 64);
	CORRUPT(c, 90, "e_machine", put16(b + 18, 62));
	CORRUPT(c, 90, "ELF class 32", b[4] = 1);
	CORRUPT(c, 90, "big endian", b[5] = 2);
	CORRUPT(c, 90, "e_shoff huge", put64(b + 40, 1ull << 40));
	CORRUPT(c, 90, "e_shoff past end", put64(b + 40, c.len - 8));
	CORRUPT(c, 90, "e_shentsize", put16(b + 58, 32));
	CORRUPT(c, 90, "e_shnum huge", put16(b + 60, 0xffff));
	CORRUPT(c, 90, "e_phoff huge", put64(b + 32, ~0ull - 8));
	CORRUPT(c, 90, "e_phnum huge", put16(b + 56, 0xffff));
	CORRUPT(c, 90, "nv.info bad format", b[kp] = 9);
	CORRUPT(c, 90, "nv.info SVAL too long", put16(b + kp + 2, 0xfff0));
	CORRUPT(c, 90, "nv.info KPARAM too short", put16(b + kp + 2, 4));
	CORRUPT(c, 90, "nv.info parameter gap", put16(b + kp + 8, 40));
	CORRUPT(c, 90, "nv.info param past cbank", put16(b + kp + 10, 0x7000));
	/* Section header 1 (.shstrtab) pointing past the end. */
	uint64_t shoff;
	memcpy(&shoff, c.data + 40, 8);
	CORRUPT(c, 90, "section offset past end", put64(b + shoff + 64 + 24, c.len));
	CORRUPT(c, 90, "section size huge", put64(b + shoff + 64 + 32, 1ull << 50));
}

/* Length unknown (0): huge declared sizes are refused before anything past
 * the headers is read (the buffers below are only as big as the headers). */
TEST(huge_sizes_with_unknown_length)
{
	struct ddp_module_info m;
	char err[256];
	uint8_t *fb = calloc(1, 16);
	REQUIRE(fb);
	put32(fb, DDP_FATBIN_MAGIC);
	put16(fb + 4, 1);
	put16(fb + 6, 16);
	put64(fb + 8, 1ull << 40);
	err[0] = 0;
	CHECK(ddp_module_parse(fb, 0, 90, &m, err, sizeof err) == DDP_ERR_INVALID && err[0]);
	free(fb);

	uint8_t *elf = calloc(1, 64);
	REQUIRE(elf);
	memcpy(elf, IMG(params_sm90_cubin).data, 64);
	put64(elf + 40, 1ull << 40); /* e_shoff */
	err[0] = 0;
	CHECK(ddp_module_parse(elf, 0, 90, &m, err, sizeof err) == DDP_ERR_INVALID && err[0]);
	memcpy(elf, IMG(params_sm90_cubin).data, 64);
	put64(elf + 32, ~0ull - 100); /* e_phoff */
	err[0] = 0;
	CHECK(ddp_module_parse(elf, 0, 90, &m, err, sizeof err) == DDP_ERR_INVALID && err[0]);
	free(elf);
}

TEST(garbage_and_empty)
{
	static const uint32_t magics[] = { 0, DDP_FATBIN_MAGIC, DDP_FATBIN_WRAPPER_MAGIC, 0x464c457f };
	uint64_t x = 0x9e3779b97f4a7c15ull;
	uint8_t buf[4096];
	expect_invalid("", 0, 90, "empty string");
	expect_invalid("\0\0\0\0", 4, 90, "zeros");
	for (int round = 0; round < 400; round++) {
		size_t len = 1 + (size_t)(round * 37 % (int)sizeof buf);
		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			buf[i] = (uint8_t)x;
		}
		if (len >= 4)
			put32(buf, magics[round % 4]);
		if (len >= 16 && round % 8 == 1)
			put16(buf + 6, 16); /* plausible container header */
		char what[64];
		snprintf(what, sizeof what, "garbage round %d (%zu bytes)", round, len);
		expect_invalid(buf, len, 90, what);
	}
	struct ddp_module_info m;
	CHECK(ddp_module_parse(NULL, 0, 90, &m, NULL, 0) == DDP_ERR_INVALID);
}

int main(int argc, char **argv) { return check_main(argc, argv); }
