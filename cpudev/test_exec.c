/* SPDX-License-Identifier: MIT
 *
 * test_exec.c - the CPU device's kernel execution, without the driver: the
 * scheduler (sim_exec.c, sim_fiber.c, sim_kernels.c) is linked into this
 * executable (-rdynamic exports its runtime symbols), and the kernel library
 * build/cpudev/test_exec.kern.so (from kernels/exec_kernels.cu) is
 * found as "<exe>.kern.so".  Run once per SIMCUDA_THREAD_ORDER by the
 * run-test_exec-*.sh wrappers.
 *
 * Expectations are independent of the code under test: sums by formula,
 * nvcc's mangled names and parameter sizes from the fatbin (the shared
 * reader), bf16 roundings by hand.
 */
#define CHECK_MAIN
#include "check.h"
#include "sim_exec.h"
#include "ddp_fatbin.h"

#include <dlfcn.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

static const char *order(void)
{
	const char *o = getenv("SIMCUDA_THREAD_ORDER");
	return o && *o ? o : "forward";
}

static const struct sim_kernel_entry *need(const char *mangled)
{
	const struct sim_kernel_entry *k = sim_kernels_find(mangled);
	if (!k)
		printf("# kernel %s not found; searched: %s\n", mangled, sim_kernels_searched());
	return k;
}

static struct sim_dim3 d3(unsigned x, unsigned y, unsigned z)
{
	return (struct sim_dim3){x, y, z};
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* nvcc's names (from `readelf -s` of an sm_90 cubin of exec_kernels.cu). */
static const char *const nvcc_names[] = {
	"_Z10bf16_roundPKfP13__nv_bfloat16Pfi", "_Z10dyn_mirrorPKfPf", "_Z10reduce_sumPKyPyi",
	"_Z12barrier_loopPf", "_Z20reduce_sum_nobarrierPKyPyi", "_Z5saxpyfPKfPfi",
	"_Z5scaleIdEvPT_S0_i", "_Z5scaleIfEvPT_S0_i", "_Z6coordsPj", "_Z6mirrorPKiPii",
	"_Z6paramscsixfdPKi4PackhPy", "_Z7atomicsP8Counters", "_Z7trap_atPii",
	"_Z8dyn_scanIdEvPKT_PS0_i", "_Z8dyn_scanIiEvPKT_PS0_i", "_Z8warp_opsPKiPi",
	"_ZN5simns9ns_kernelEPi", "c_fill",
};

TEST(mangled_names_match_nvcc)
{
	char exe[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *h;

	REQUIRE(n > 0);
	exe[n] = 0;
	snprintf(path, sizeof(path), "%s.kern.so", exe);
	REQUIRE(sim_kernels_find("_Z6coordsPj") != NULL);
	h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
	REQUIRE(h != NULL);
	for (size_t i = 0; i < sizeof(nvcc_names) / sizeof(nvcc_names[0]); i++) {
		const struct sim_kernel_entry *k = need(nvcc_names[i]);
		CHECK(k != NULL);
		/* g++ defines the host function under nvcc's exact name. */
		if (!dlsym(h, nvcc_names[i]))
			CHECK_FAIL_("g++ did not define %s", nvcc_names[i]);
	}
	CHECK(sim_kernels_find("_Z6coordsPi") == NULL);
	CHECK(strstr(sim_kernels_searched(), "loaded") != NULL);
	dlclose(h);
}

/* A kernel instantiated with a lambda is found when the source recorded it
 * (SIM_KERNEL_INSTANCE), with the cubin's parameter sizes (the closure: a
 * float and the 8 bytes nvcc adds), and not found when it did not; a
 * lookup by sizes picks the definition whose sizes match. */
TEST(lambda_kernels_recorded_by_the_source)
{
	const struct sim_kernel_entry *k = need("_Z12apply_lambdaIZ13lambda_scaledfEUlfE_EvT_Pf");
	REQUIRE(k != NULL);
	CHECK(k->trampoline != NULL);
	CHECK(k->nparams == 2);
	CHECK(k->param_size[0] == 16);
	CHECK(k->param_size[1] == 8);
	CHECK(sim_kernels_find("_Z12apply_lambdaIZ17lambda_unrecordedvEUlfE_EvT_Pf") == NULL);
	uint32_t sizes[2] = {16, 8}, other[2] = {24, 8};
	CHECK(sim_kernels_find_sized("_Z12apply_lambdaIZ13lambda_scaledfEUlfE_EvT_Pf", 2, sizes) == k);
	/* no definition with other sizes: the first of the name (the caller reports the mismatch) */
	CHECK(sim_kernels_find_sized("_Z12apply_lambdaIZ13lambda_scaledfEUlfE_EvT_Pf", 2, other) == k);
	CHECK(sim_kernels_find_sized("_Z6coordsPi", 1, sizes) == NULL);
}

/* The host parameter sizes equal the cubin's (the layout the driver uses). */
TEST(param_sizes_match_cubin)
{
	const char *b = getenv("BUILD") ? getenv("BUILD") : "build";
	char path[512], err[256];
	FILE *f;
	static unsigned char img[1 << 22];
	size_t len;
	struct ddp_module_info m = {0};

	snprintf(path, sizeof(path), "%s/cpudev/kernels/exec_kernels.fatbin", b);
	f = fopen(path, "rb");
	REQUIRE(f != NULL);
	len = fread(img, 1, sizeof(img), f);
	fclose(f);
	REQUIRE(ddp_module_parse(img, len, 0, &m, err, sizeof(err)) == DDP_OK);
	CHECK_EQ_INT(m.nkernels, sizeof(nvcc_names) / sizeof(nvcc_names[0]) + 2); /* + the lambda kernels */
	for (size_t i = 0; i < m.nkernels; i++) {
		const struct ddp_kernel_info *ki = &m.kernels[i];
		if (strstr(ki->name, "lambda_unrecorded"))
			continue; /* not recorded on purpose */
		const struct sim_kernel_entry *k = need(ki->name);
		if (!k) {
			CHECK(k != NULL);
			continue;
		}
		CHECK_EQ_INT(k->nparams, ki->nparams);
		for (uint32_t p = 0; p < k->nparams && p < ki->nparams; p++) {
			if (k->param_size[p] != ki->params[p].size)
				CHECK_FAIL_("%s param %u: host %u bytes, cubin %u", ki->name, p,
					    k->param_size[p], ki->params[p].size);
			if (ki->params[p].offset % k->param_align[p])
				CHECK_FAIL_("%s param %u: cubin offset %u not aligned to %u", ki->name, p,
					    ki->params[p].offset, k->param_align[p]);
		}
	}
	ddp_module_info_free(&m);
}

static unsigned long long input[1 << 16], partial[1 << 10];

static int run_reduce(const char *name, unsigned bs, unsigned blocks, int n, unsigned long long base)
{
	const struct sim_kernel_entry *k = need(name);
	const unsigned long long *pin = input;
	unsigned long long *pout = partial;
	void *args[] = {&pin, &pout, &n};

	for (int i = 0; i < n; i++)
		input[i] = base + (unsigned long long)i + 1;
	memset(partial, 0, sizeof(partial));
	return k ? sim_exec_launch(k, d3(blocks, 1, 1), d3(bs, 1, 1), 0, args) : -1;
}

TEST(reduce_with_barriers_exact)
{
	static const unsigned sizes[] = {1, 3, 32, 100, 256, 257, 1000, 1024};
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
		unsigned bs = sizes[s], blocks = 7;
		int n = (int)(bs * blocks) - (int)(bs / 3);   /* last block partial */
		unsigned long long total = 0, want = (unsigned long long)n * (n + 1) / 2;
		REQUIRE(run_reduce("_Z10reduce_sumPKyPyi", bs, blocks, n, 0) == 0);
		for (unsigned b = 0; b < blocks; b++) {
			unsigned long long lo = (unsigned long long)b * bs, hi = lo + bs;
			if (hi > (unsigned long long)n) hi = (unsigned long long)n;
			unsigned long long bw = lo < hi ? (hi * (hi + 1) - lo * (lo + 1)) / 2 : 0;
			if (partial[b] != bw)
				CHECK_FAIL_("block size %u block %u: %llu, expected %llu", bs, b, partial[b], bw);
			total += partial[b];
		}
		if (total != want)
			CHECK_FAIL_("block size %u: sum %llu, expected %llu", bs, total, want);
	}
}

/* Negative control: without barriers the reduction is wrong in forward and
 * random order (a thread reads partial sums that were not written yet).  In
 * reverse order every reader runs after the threads it reads from finished,
 * which happens to give the right sum for this tree; the mirror test below
 * is wrong in every order. */
TEST(reduce_without_barriers_is_wrong)
{
	unsigned bs = 256;
	int n = 256;
	unsigned long long want;
	for (int rep = 0; rep < 2; rep++) {
		unsigned long long base = 1000 * (unsigned long long)(rep + 1);
		want = base * n + (unsigned long long)n * (n + 1) / 2;
		REQUIRE(run_reduce("_Z20reduce_sum_nobarrierPKyPyi", bs, 1, n, base) == 0);
		if (!strcmp(order(), "reverse"))
			CHECK(partial[0] == want);
		else if (partial[0] == want)
			CHECK_FAIL_("order %s: the barrier-free reduction gave the right sum %llu", order(), want);
	}
}

static int in_i[4096], out_i[4096];

TEST(mirror_needs_its_barrier)
{
	const struct sim_kernel_entry *k = need("_Z6mirrorPKiPii");
	const int *pin = in_i;
	int *pout = out_i;
	REQUIRE(k);
	for (int rep = 0; rep < 2; rep++)
		for (int use = 0; use <= 1; use++) {
			unsigned bs = 200, blocks = 3, bad = 0;
			void *args[] = {&pin, &pout, &use};
			for (unsigned i = 0; i < bs * blocks; i++)
				in_i[i] = (int)(i * 7 + 1 + 100000 * rep + 10000 * use);
			REQUIRE(sim_exec_launch(k, d3(blocks, 1, 1), d3(bs, 1, 1), 0, args) == 0);
			for (unsigned b = 0; b < blocks; b++)
				for (unsigned t = 0; t < bs; t++)
					bad += out_i[b * bs + t] != in_i[b * bs + bs - 1 - t];
			if (use && bad)
				CHECK_FAIL_("order %s: %u wrong with the barrier", order(), bad);
			if (!use && !bad)
				CHECK_FAIL_("order %s: mirror without barrier was right", order());
		}
}

struct Counters {
	unsigned u;
	int i;
	float f;
	double d;
	int imax;
	unsigned umin;
	unsigned long long ull;
	int sub;
	unsigned cas;
	unsigned exch_seen;
};

TEST(atomics_exact)
{
	const struct sim_kernel_entry *k = need("_Z7atomicsP8Counters");
	struct Counters c = {0}, *pc = &c;
	void *args[] = {&pc};
	unsigned n = 3 * 2 * 2 * 8 * 4 * 2;
	REQUIRE(k);
	c.umin = 0xffffffffu;
	c.imax = -1;
	REQUIRE(sim_exec_launch(k, d3(3, 2, 2), d3(8, 4, 2), 0, args) == 0);
	CHECK_EQ_INT(c.u, n);
	CHECK_EQ_INT(c.i, 2 * n);
	CHECK(c.f == (float)n);
	CHECK(c.d == 0.5 * n);
	CHECK_EQ_INT(c.imax, n - 1);
	CHECK_EQ_INT(c.umin, 7);
	CHECK(c.ull == (unsigned long long)n << 33);
	CHECK_EQ_INT(c.sub, -3 * (int)n);
	CHECK_EQ_INT(c.cas, n);
	CHECK(c.exch_seen >= 1 && c.exch_seen <= n);
}

static unsigned coords_out[12 * 4096];

TEST(coords_3d)
{
	const struct sim_kernel_entry *k = need("_Z6coordsPj");
	unsigned *po = coords_out, gx = 3, gy = 2, gz = 4, bx = 5, by = 3, bz = 2, bad = 0;
	void *args[] = {&po};
	REQUIRE(k);
	memset(coords_out, 0xff, sizeof(coords_out));
	REQUIRE(sim_exec_launch(k, d3(gx, gy, gz), d3(bx, by, bz), 0, args) == 0);
	for (unsigned z = 0; z < gz; z++) for (unsigned y = 0; y < gy; y++) for (unsigned x = 0; x < gx; x++)
	for (unsigned tz = 0; tz < bz; tz++) for (unsigned ty = 0; ty < by; ty++) for (unsigned tx = 0; tx < bx; tx++) {
		unsigned b = (z * gy + y) * gx + x, t = (tz * by + ty) * bx + tx;
		const unsigned *o = coords_out + 12 * (b * bx * by * bz + t);
		unsigned want[12] = {tx, ty, tz, x, y, z, bx, by, bz, gx, gy, gz};
		bad += memcmp(o, want, sizeof(want)) != 0;
	}
	CHECK_EQ_INT(bad, 0);
}

TEST(dynamic_shared)
{
	const struct sim_kernel_entry *km = need("_Z10dyn_mirrorPKfPf");
	const struct sim_kernel_entry *ki = need("_Z8dyn_scanIiEvPKT_PS0_i");
	const struct sim_kernel_entry *kd = need("_Z8dyn_scanIdEvPKT_PS0_i");
	static float fin[1024], fout[1024];
	static int iin[1024], iout[1024];
	static double din[1024], dout[1024];
	const float *pfi = fin; float *pfo = fout;
	const int *pii = iin; int *pio = iout;
	const double *pdi = din; double *pdo = dout;
	int n = 1000;
	void *am[] = {&pfi, &pfo}, *ai[] = {&pii, &pio, &n}, *ad[] = {&pdi, &pdo, &n};
	REQUIRE(km && ki && kd);
	for (int i = 0; i < 1024; i++) {
		fin[i] = (float)i * 0.5f;
		iin[i] = i + 1;
		din[i] = 0.25 * i;
	}
	REQUIRE(sim_exec_launch(km, d3(1, 1, 1), d3(300, 1, 1), 300 * 4, am) == 0);
	for (int i = 0; i < 300; i++)
		if (fout[i] != fin[299 - i]) { CHECK_FAIL_("dyn_mirror[%d] = %g", i, fout[i]); break; }
	REQUIRE(sim_exec_launch(ki, d3(1, 1, 1), d3(1024, 1, 1), 1024 * 4, ai) == 0);
	REQUIRE(sim_exec_launch(kd, d3(1, 1, 1), d3(1024, 1, 1), 1024 * 8, ad) == 0);
	for (int i = 0; i < n; i++) {
		if (iout[i] != (i + 1) * (i + 2) / 2) { CHECK_FAIL_("scan<int>[%d] = %d", i, iout[i]); break; }
		if (dout[i] != 0.25 * i * (i + 1) / 2) { CHECK_FAIL_("scan<double>[%d] = %g", i, dout[i]); break; }
	}
	/* More than the capacity is refused. */
	CHECK(sim_exec_launch(km, d3(1, 1, 1), d3(32, 1, 1), SIM_DYN_SHARED_MAX + 1, am) != 0);
}

TEST(templates_extern_c_namespaces)
{
	const struct sim_kernel_entry *kf = need("_Z5scaleIfEvPT_S0_i");
	const struct sim_kernel_entry *kd = need("_Z5scaleIdEvPT_S0_i");
	const struct sim_kernel_entry *kc = need("c_fill");
	const struct sim_kernel_entry *kn = need("_ZN5simns9ns_kernelEPi");
	float xf[100]; double xd[100]; int xi[64] = {0};
	float *pf = xf, af = 3.0f; double *pd = xd, ad = -0.5; int *pi = xi, n = 90, v = 1000;
	void *a1[] = {&pf, &af, &n}, *a2[] = {&pd, &ad, &n}, *a3[] = {&pi, &v}, *a4[] = {&pi};
	REQUIRE(kf && kd && kc && kn);
	for (int i = 0; i < 100; i++) { xf[i] = (float)i; xd[i] = i; }
	REQUIRE(sim_exec_launch(kf, d3(2, 1, 1), d3(64, 1, 1), 0, a1) == 0);
	REQUIRE(sim_exec_launch(kd, d3(2, 1, 1), d3(64, 1, 1), 0, a2) == 0);
	for (int i = 0; i < 100; i++) {
		CHECK(xf[i] == (i < 90 ? 3.0f * i : (float)i));
		CHECK(xd[i] == (i < 90 ? -0.5 * i : (double)i));
	}
	REQUIRE(sim_exec_launch(kc, d3(1, 1, 1), d3(64, 1, 1), 0, a3) == 0);
	for (int i = 0; i < 64; i++)
		CHECK_EQ_INT(xi[i], 1000 + i);
	REQUIRE(sim_exec_launch(kn, d3(1, 1, 1), d3(1, 1, 1), 0, a4) == 0);
	CHECK_EQ_INT(xi[0], 4242);
}

struct Pack {
	char c;
	double d;
	int v[3];
	short s;
};

TEST(trampoline_passes_every_kind)
{
	const struct sim_kernel_entry *k = need("_Z6paramscsixfdPKi4PackhPy");
	char c = -5; short s = -1234; int i = -123456789; long long ll = -(1LL << 40) - 3;
	float f = 2.5f; double d = -3.125; int target = 77; const int *p = &target;
	struct Pack pk = {'A', 1.5, {1, 2, 3}, -7};
	unsigned char uc = 250;
	unsigned long long out[12] = {0}, *po = out;
	void *args[] = {&c, &s, &i, &ll, &f, &d, &p, &pk, &uc, &po};
	REQUIRE(k);
	CHECK_EQ_INT(k->nparams, 10);
	CHECK_EQ_INT(k->param_size[7], sizeof(struct Pack));
	CHECK_EQ_INT(k->param_align[7], _Alignof(struct Pack));
	REQUIRE(sim_exec_launch(k, d3(1, 1, 1), d3(1, 1, 1), 0, args) == 0);
	CHECK_EQ_INT((long long)out[0], -5);
	CHECK_EQ_INT((long long)out[1], -1234);
	CHECK_EQ_INT((long long)out[2], -123456789);
	CHECK_EQ_INT((long long)out[3], ll);
	CHECK_EQ_INT((long long)out[4], 10);
	CHECK_EQ_INT((long long)out[5], -25);
	CHECK_EQ_INT((long long)out[6], 77);
	CHECK_EQ_INT((long long)out[7], 'A');
	CHECK_EQ_INT((long long)out[8], 3);
	CHECK_EQ_INT((long long)out[9], 321);
	CHECK_EQ_INT((long long)out[10], -7);
	CHECK_EQ_INT((long long)out[11], 250);
}

TEST(warp_functions)
{
	const struct sim_kernel_entry *k = need("_Z8warp_opsPKiPi");
	int in[64], out[8] = {0};
	const int *pi = in; int *po = out;
	void *args[] = {&pi, &po};
	REQUIRE(k);
	for (int t = 0; t < 64; t++)
		in[t] = t;
	REQUIRE(sim_exec_launch(k, d3(1, 1, 1), d3(64, 1, 1), 0, args) == 0);
	CHECK_EQ_INT(out[0], 31 * 32 / 2);
	CHECK_EQ_INT(out[4], (32 + 63) * 32 / 2);
	CHECK_EQ_INT((unsigned)out[1], 0xAAAAAAAAu);
	CHECK_EQ_INT((unsigned)out[5], 0xAAAAAAAAu);
	CHECK_EQ_INT(out[2], 53);
	CHECK_EQ_INT(out[6], 53);
	CHECK_EQ_INT(out[3], 4);
	CHECK_EQ_INT(out[7], 36);
}

TEST(trap_and_bad_dims_fail_cleanly)
{
	const struct sim_kernel_entry *kt = need("_Z7trap_atPii");
	const struct sim_kernel_entry *kc = need("c_fill");
	static int buf[4096];
	int *pb = buf, which = 37, v = 5;
	void *at[] = {&pb, &which}, *ac[] = {&pb, &v};
	REQUIRE(kt && kc);
	printf("# expected error messages follow\n");
	fflush(stdout);
	CHECK(sim_exec_launch(kt, d3(4, 1, 1), d3(32, 1, 1), 0, at) != 0);
	CHECK(sim_exec_launch(kc, d3(1, 1, 1), d3(1025, 1, 1), 0, ac) != 0);
	CHECK(sim_exec_launch(kc, d3(0, 1, 1), d3(32, 1, 1), 0, ac) != 0);
	CHECK(sim_exec_launch(kc, d3(1, 1, 1), d3(32, 32, 2), 0, ac) != 0);
	/* The worker is usable again after a trap. */
	memset(buf, 0, sizeof(buf));
	REQUIRE(sim_exec_launch(kc, d3(1, 1, 1), d3(1024, 1, 1), 0, ac) == 0);
	CHECK_EQ_INT(buf[1023], 5 + 1023);
}

TEST(bf16_rounding)
{
	const struct sim_kernel_entry *k = need("_Z10bf16_roundPKfP13__nv_bfloat16Pfi");
	float in[6] = {1.0f, 1.00390625f, 1.01171875f, -0.0f, 3.0e38f * 10.0f, 0.0f};
	static const uint16_t want[6] = {0x3F80, 0x3F80, 0x3F82, 0x8000, 0x7F80, 0x0000};
	uint16_t out[6];
	float back[6];
	const float *pi = in; uint16_t *po = out; float *pb = back; int n = 6;
	void *args[] = {&pi, &po, &pb, &n};
	REQUIRE(k);
	REQUIRE(sim_exec_launch(k, d3(1, 1, 1), d3(32, 1, 1), 0, args) == 0);
	for (int i = 0; i < 6; i++)
		if (out[i] != want[i])
			CHECK_FAIL_("bf16(%g) = 0x%04x, expected 0x%04x", in[i], out[i], want[i]);
	CHECK(back[2] == 1.015625f);
}

TEST(order_setting)
{
	const struct sim_kernel_entry *k = need("c_fill");
	static int buf[64];
	int *pb = buf, v = 1;
	void *args[] = {&pb, &v};
	const char *o = order();
	int valid = !strcmp(o, "forward") || !strcmp(o, "reverse") || !strcmp(o, "random");
	REQUIRE(k);
	CHECK_EQ_INT(sim_exec_launch(k, d3(1, 1, 1), d3(32, 1, 1), 0, args) != 0, !valid);
}

/* Not an assertion: numbers for docs/cpu-device-kernels.md. */
TEST(throughput_report)
{
	const struct sim_kernel_entry *ks = need("_Z5saxpyfPKfPfi");
	const struct sim_kernel_entry *kb = need("_Z12barrier_loopPf");
	static float x[1 << 20], y[1 << 20];
	const float *px = x; float *py = y, a = 2.0f; int n = 1 << 20;
	void *as[] = {&a, &px, &py, &n}, *ab[] = {&py};
	double t0, t1;
	REQUIRE(ks && kb);
	t0 = now();
	for (int r = 0; r < 5; r++)
		REQUIRE(sim_exec_launch(ks, d3(n / 256, 1, 1), d3(256, 1, 1), 0, as) == 0);
	t1 = now();
	printf("# %s: barrier-free saxpy: %.1f M threads/s\n", order(), 5.0 * n / (t1 - t0) / 1e6);
	t0 = now();
	REQUIRE(sim_exec_launch(kb, d3(64, 1, 1), d3(256, 1, 1), 0, ab) == 0);
	t1 = now();
	printf("# %s: 16 barriers per thread: %.2f M thread-barriers/s (%.0f ns each)\n", order(),
	       64.0 * 256 * 16 / (t1 - t0) / 1e6, (t1 - t0) / (64.0 * 256 * 16) * 1e9);
	/* The barrier kernel rotates each block's values left by 8. */
	for (int t = 0; t < 256; t++)
		if (y[t] != (float)((t + 8) % 256)) { CHECK_FAIL_("barrier_loop[%d] = %g", t, y[t]); break; }
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
