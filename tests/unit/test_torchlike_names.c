/* SPDX-License-Identifier: MIT
 *
 * test_torchlike_names.c - samples/torchlike uses PyTorch's real kernel
 * names and argument layouts: every mangled kernel in its fatbin (sm_90
 * code, read by the project's own fatbin reader, as the table was) is a
 * kernel of torch 2.15.0+cu132 (tests/data/) with the same parameter count,
 * the same parameter sizes and offsets, and the same parameter area.  The
 * unmangled kernels are only the cuBLAS-style GEMMs and the two declared
 * stand-ins (samples/torchlike/kernels.cu says why).
 *
 * The CUDA 12 build of the same kernels (kernels_cuda12.fatbin, --layout
 * cuda12; the table is a CUDA 13 build, so it has no such sizes): the same
 * names as the CUDA 13 fatbin, each in the table with the same parameter
 * count and sizes except the multi-tensor metadata struct (parameter 0)
 * and lpnorm_cleanup's TensorListAddresses (parameter 1), which have the
 * 4 KB sizes of ../shared/PYTORCH.md section 4 (TensorListAddresses: 400
 * addresses, 3200 bytes: MAX_TENSORS_PER_KERNEL of ForeachReduceOp.cu before
 * CUDA 13, the size ddp_torch_args.c decodes).
 *
 * The fatbin is argv[1] (make passes it), the CUDA 12 one the same path
 * with kernels_cuda12.fatbin; a negative control checks that a name not in
 * the table, or a size that differs, would be caught.
 */
#define CHECK_MAIN
#include "check.h"
#include <stdio.h>
#include <stdlib.h>
#include "ddp_fatbin.h"
#include "torch_table.h"

static const char *fatbin_path;  /* argv[1], else $BUILD/samples/obj/torchlike/kernels.fatbin */
static char fatbin12_path[4200]; /* the same folder, kernels_cuda12.fatbin */
static struct torch_table tab;
static struct ddp_module_info mod, mod12;
static int loaded;

static int parse_file(const char *path, struct ddp_module_info *m)
{
	char err[256];
	FILE *f = fopen(path, "rb");
	if (!f) {
		CHECK_FAIL_("cannot open %s (make build-all builds it)", path);
		return 0;
	}
	static unsigned char buf[16 << 20];
	size_t n = fread(buf, 1, sizeof buf, f);
	fclose(f);
	if (ddp_module_parse(buf, n, 90, m, err, sizeof err) != DDP_OK) {
		CHECK_FAIL_("%s: %s", path, err);
		return 0;
	}
	return 1;
}

static int load(void)
{
	if (loaded)
		return loaded > 0;
	loaded = -1;
	char err[256];
	if (torch_table_load(NULL, &tab, err, sizeof err) != 0) {
		CHECK_FAIL_("cannot read the real table: %s", err);
		return 0;
	}
	if (!parse_file(fatbin_path, &mod) || !parse_file(fatbin12_path, &mod12))
		return 0;
	loaded = 1;
	return 1;
}

/* 0 when k matches its table entry, else prints why and returns -1. */
static int matches(const struct ddp_kernel_info *k, const struct torch_kernel *t)
{
	if (!t) {
		printf("# not a kernel of torch 2.15.0+cu132: %s\n", k->demangled);
		return -1;
	}
	if (k->nparams != t->nparams || k->param_bytes != t->param_bytes) {
		printf("# %s: %u params, %u bytes; the table has %u, %u\n", k->demangled, k->nparams,
		       k->param_bytes, t->nparams, t->param_bytes);
		return -1;
	}
	for (uint32_t i = 0; i < k->nparams; i++)
		if (k->params[i].size != t->size[i] || k->params[i].offset != t->offset[i]) {
			printf("# %s: parameter %u is %u@%u, the table's %u@%u\n", k->demangled, i,
			       k->params[i].size, k->params[i].offset, t->size[i], t->offset[i]);
			return -1;
		}
	return 0;
}

static int allowed_unmangled(const char *name)
{
	size_t l = strlen(name);
	return strncmp(name, "sm90_xmma_gemm_", 15) == 0 || (l > 8 && strcmp(name + l - 8, "_standin") == 0);
}

TEST(every_mangled_kernel_is_pytorchs)
{
	if (!load())
		return;
	size_t mangled = 0, other = 0;
	for (size_t i = 0; i < mod.nkernels; i++) {
		const struct ddp_kernel_info *k = &mod.kernels[i];
		if (strncmp(k->name, "_Z", 2) == 0) {
			mangled++;
			CHECK(matches(k, torch_table_find(&tab, k->name)) == 0);
		} else {
			other++;
			if (!allowed_unmangled(k->name))
				CHECK_FAIL_("unmangled kernel %s is neither a cuBLAS-style GEMM nor a declared stand-in",
					    k->name);
		}
	}
	printf("# %zu PyTorch kernels (all in the table), %zu GEMM/stand-in kernels\n", mangled, other);
	CHECK(mangled >= 40);
}

/* The 4 KB size of a CUDA <= 12 struct named in a demangled kernel name, or 0. */
static uint32_t cuda12_size(const char *demangled, uint32_t param)
{
	static const struct {
		const char *type;
		uint32_t size;
	} sizes[] = {
		{"::TensorListMetadata<1>", 3368}, {"::TensorListMetadata<2>", 3144},
		{"::TensorListMetadata<3>", 3144}, {"::TensorListMetadata<4>", 3048},
		{"::FusedOptimizerTensorListMetadata<4>", 3336},
		{"::TensorListScalarListMetadata<float, 1>", 3520}, {"::TensorListScalarListMetadata<float, 3>", 3328},
	};
	const char *mta = strstr(demangled, "multi_tensor_apply_kernel<");
	if (mta && param == 0) {
		/* the metadata struct is the first template argument */
		const char *first = mta + strlen("multi_tensor_apply_kernel<"), *end = first;
		for (int depth = 0; *end && !(depth == 0 && *end == ','); end++)
			depth += *end == '<' ? 1 : *end == '>' ? -1 : 0;
		for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
			size_t l = strlen(sizes[i].type);
			if ((size_t)(end - first) >= l && !strncmp(end - l, sizes[i].type, l))
				return sizes[i].size;
		}
		return 0;
	}
	if (strstr(demangled, "lpnorm_cleanup<") && param == 1)
		return 3200;
	return 0;
}

TEST(cuda12_build_same_names_4k_structs)
{
	if (!load())
		return;
	size_t checked = 0, structs = 0;
	CHECK(mod12.nkernels == mod.nkernels);
	for (size_t i = 0; i < mod12.nkernels; i++) {
		const struct ddp_kernel_info *k = &mod12.kernels[i];
		if (!ddp_module_find(&mod, k->name))
			CHECK_FAIL_("%s is in the CUDA 12 build only", k->demangled);
		if (strncmp(k->name, "_Z", 2) != 0)
			continue;
		const struct torch_kernel *t = torch_table_find(&tab, k->name);
		if (!t) {
			CHECK_FAIL_("not a kernel of torch 2.15.0+cu132: %s", k->demangled);
			continue;
		}
		checked++;
		if (k->nparams != t->nparams) {
			CHECK_FAIL_("%s: %u params, the table has %u", k->demangled, k->nparams, t->nparams);
			continue;
		}
		for (uint32_t j = 0; j < k->nparams; j++) {
			uint32_t want = cuda12_size(k->demangled, j);
			if (want) {
				structs++;
				if (k->params[j].size != want || t->size[j] == want)
					CHECK_FAIL_("%s: parameter %u is %u bytes, the 4 KB layout has %u (CUDA 13: %u)",
						    k->demangled, j, k->params[j].size, want, t->size[j]);
			} else if (k->params[j].size != t->size[j]) {
				CHECK_FAIL_("%s: parameter %u is %u bytes, the table's %u", k->demangled, j,
					    k->params[j].size, t->size[j]);
			}
		}
	}
	printf("# CUDA 12 build: %zu PyTorch kernels in the table by name, %zu 4 KB structs\n", checked, structs);
	CHECK(checked >= 40);
	CHECK(structs >= 17);
}

/* The check could fail: a name one character off, and a size one byte off. */
TEST(negative_control)
{
	if (!load())
		return;
	const struct ddp_kernel_info *k = NULL;
	for (size_t i = 0; i < mod.nkernels && !k; i++)
		if (strstr(mod.kernels[i].name, "multi_tensor_apply_kernel"))
			k = &mod.kernels[i];
	REQUIRE(k != NULL);
	char *wrong = strdup(k->name);
	wrong[strlen(wrong) - 2] ^= 1;
	CHECK(torch_table_find(&tab, wrong) == NULL);
	free(wrong);
	struct ddp_kernel_info copy = *k;
	struct ddp_kparam p[16];
	REQUIRE(k->nparams <= 16);
	memcpy(p, k->params, k->nparams * sizeof *p);
	p[0].size -= 8;
	copy.params = p;
	CHECK(matches(&copy, torch_table_find(&tab, k->name)) == -1);
}

int main(int argc, char **argv)
{
	static char path[4096];
	const char *b = getenv("BUILD");
	snprintf(path, sizeof path, "%s/samples/obj/torchlike/kernels.fatbin", b && *b ? b : "build");
	fatbin_path = path;
	if (argc > 1 && strstr(argv[1], ".fatbin")) {
		fatbin_path = argv[1];
		argc--, argv++;
	}
	snprintf(fatbin12_path, sizeof fatbin12_path, "%s", fatbin_path);
	char *dot = strstr(fatbin12_path, ".fatbin");
	if (dot)
		snprintf(dot, sizeof fatbin12_path - (size_t)(dot - fatbin12_path), "_cuda12.fatbin");
	return check_main(argc, argv);
}
