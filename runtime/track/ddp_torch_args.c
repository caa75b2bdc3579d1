/* SPDX-License-Identifier: MIT
 *
 * ddp_torch_args.c - decoders for PyTorch's kernel argument structs (see
 * ddp_torch_args.h).
 *
 * The struct layouts follow aten/src/ATen/native/cuda/MultiTensorApply.cuh
 * (DepthToMaxConfig: the 4 KB configuration and the large-argument one that
 * CUDA 13 builds use) and ForeachReduceOp.cu (TensorListAddresses); the unit
 * test checks every computed size against the parameter sizes of the real
 * torch 2.15.0+cu132 table (tests/data/).
 *
 * Contract: pure functions; the argument bytes are read with memcpy at
 * offsets checked against the struct size; no allocation except growing a
 * ddp_trange_vec.
 */
#include <stdlib.h>
#include <string.h>
#include "ddp_sig.h"
#include "ddp_array.h"
#include "ddp_bytes.h"
#include "ddp_torch_args.h"

/* ---- layouts */

struct mt_conf {
	uint32_t tensors[5];         /* depth_to_max_tensors             */
	uint32_t blocks;             /* depth_to_max_blocks (all depths) */
	uint32_t tensors_sl[5];      /* depth_to_max_tensors_scalarlist  */
	uint32_t tensors_cdouble[2]; /* ..._scalarlist_of_complex_double */
	uint32_t btt;                /* sizeof block_to_tensor entry     */
	uint32_t addrs;              /* TensorListAddresses slots        */
};

static const struct mt_conf conf_4k = {
	{ 110, 64, 48, 36, 30 }, 320, { 96, 64, 48, 36, 30 }, { 72, 60 }, 1, 400,
};
static const struct mt_conf conf_13 = {
	{ 770, 448, 336, 252, 210 }, 2240, { 672, 448, 336, 252, 210 }, { 504, 420 }, 2, 3200,
};

static uint32_t align_up(uint32_t x, uint32_t a)
{
	return (x + a - 1) / a * a;
}

/* ---- ReduceOp (aten/src/ATen/native/cuda/Reduce.cuh, OffsetCalculator.cuh) */

enum {
	RED_MAX_DIMS = 25,                             /* OffsetCalculator's MAX_DIMS */
	RED_CONFIG = 64,                               /* sizeof(ReduceConfig)       */
	RED_IN_CALC = 4 + RED_MAX_DIMS * 12 + RED_MAX_DIMS * 4,  /* OffsetCalculator<1> */
	RED_OUT_CALC = 4 + RED_MAX_DIMS * 12 + RED_MAX_DIMS * 8, /* OffsetCalculator<2> */
	RED_TAIL = 64, /* src, dst[2], acc_buf, cta_buf, semaphores, base_idx,
			* accumulate, final_output, noutputs               */
	RED_MIN_SIZE = 4 + RED_CONFIG + RED_IN_CALC + RED_OUT_CALC + RED_TAIL,
};

/* IntDivider<unsigned int>(d) as PyTorch builds it: the smallest shift with
 * 2^shift >= d, m1 = 2^32 (2^shift - d) / d + 1. */
static int red_divider_ok(const uint8_t *p)
{
	uint32_t d = ddp_rd32(p), m1 = ddp_rd32(p + 4), shift = ddp_rd32(p + 8);
	uint32_t sh;
	if (d < 1 || d > 0x7fffffffu)
		return 0;
	for (sh = 0; sh < 32; sh++)
		if ((1ull << sh) >= d)
			break;
	uint64_t magic = ((1ull << 32) * ((1ull << sh) - d)) / d + 1;
	return shift == sh && magic <= 0xffffffffull && m1 == (uint32_t)magic;
}

/* An OffsetCalculator<nargs> at p: dims, its live dividers valid (the
 * entries past dims are not written: garbage); *prod = the product of the
 * sizes, span[a] = the largest offset of argument a (sum of (size - 1) x
 * stride).  0 when it does not fit. */
static int red_calc(const uint8_t *p, int nargs, uint64_t *prod, uint64_t *span)
{
	int32_t dims = (int32_t)ddp_rd32(p);
	if (dims < 0 || dims > RED_MAX_DIMS)
		return 0;
	*prod = 1;
	for (int a = 0; a < nargs; a++)
		span[a] = 0;
	for (int i = 0; i < dims; i++) {
		const uint8_t *dv = p + 4 + 12 * i;
		if (!red_divider_ok(dv))
			return 0;
		uint64_t size = ddp_rd32(dv);
		*prod *= size; /* each size < 2^31, the product kept <= 2^32 */
		if (*prod > 0xffffffffull)
			return 0;
		for (int a = 0; a < nargs; a++)
			span[a] += (size - 1) * ddp_rd32(p + 4 + 12 * RED_MAX_DIMS + 4 * (uint32_t)(i * nargs + a));
	}
	return 1;
}

struct red_fit {
	uint64_t out_span;    /* bytes: the output's last offset                */
	uint64_t in_out_span; /* bytes: the input's last offset over the outputs */
	uint64_t in_span;     /* bytes: the input's last offset per output      */
};

/* The config at offset c of ReduceOp b fits the calculators after it:
 * make_input_calculator spans the reduced dims (num_inputs elements per
 * output), make_output_calculator the kept ones (num_outputs, strides of
 * the output and of the input); every stride in bytes (thread_reduce
 * divides by sizeof(scalar_t); the real wheel's launches: a [16][10]
 * input's reduced dim has stride 40). */
static int red_fit_at(const uint8_t *b, uint32_t c, struct red_fit *f)
{
	int32_t cfg[3];
	uint64_t in_prod, out_prod, in_span[1], out_span[2];
	memcpy(cfg, b + c, sizeof cfg); /* element_size_bytes, num_inputs, num_outputs */
	if (cfg[0] < 1 || cfg[0] > 64 || cfg[1] < 1 || cfg[2] < 1)
		return 0;
	if (!red_calc(b + c + RED_CONFIG, 1, &in_prod, in_span) ||
	    !red_calc(b + c + RED_CONFIG + RED_IN_CALC, 2, &out_prod, out_span))
		return 0;
	f->out_span = out_span[0];
	f->in_out_span = out_span[1];
	f->in_span = in_span[0];
	return out_prod == (uint64_t)cfg[2] && in_prod == (uint64_t)cfg[1];
}

/* Fills the offsets of tk for (kind, layout, depth); returns the struct
 * size, 0 when the combination does not exist.  cdouble: the scalar list
 * holds c10::complex<double> (its own slot counts for depth 1 and 2). */
static uint32_t layout_fill(struct ddp_torch_kernel *tk, enum ddp_torch_kind kind, enum ddp_torch_layout lay,
			    int depth, int sesize, int salign, int cdouble)
{
	const struct mt_conf *c = lay == DDP_TL_4K ? &conf_4k : lay == DDP_TL_CUDA13 ? &conf_13 : NULL;
	struct ddp_torch_kernel t = { 0 };
	uint32_t T, off, algn = 8;

	if (!c)
		return 0;
	if (kind == DDP_TK_ADDRS) {
		t.max_tensors = c->addrs;
		t.struct_size = 8 * c->addrs;
		goto done;
	}
	if (depth < 1 || depth > 5)
		return 0;
	if (kind == DDP_TK_SCALARLIST) {
		if (sesize <= 0 || salign <= 0)
			return 0;
		T = cdouble && depth <= 2 ? c->tensors_cdouble[depth - 1] : c->tensors_sl[depth - 1];
	} else if (kind == DDP_TK_TLM || kind == DDP_TK_FUSED) {
		T = c->tensors[depth - 1];
	} else {
		return 0;
	}
	off = 8u * (uint32_t)depth * T;
	t.off_numel = off;
	off += 8 * T;
	if (kind == DDP_TK_SCALARLIST) {
		off = align_up(off, (uint32_t)salign);
		t.off_scalars = off;
		off += (uint32_t)sesize * T;
		if ((uint32_t)salign > algn)
			algn = (uint32_t)salign;
	}
	if (kind == DDP_TK_FUSED) {
		t.off_steps = off;
		off += 8 * c->tensors_sl[depth - 1];
	}
	t.off_btt = off;
	off += c->btt * c->blocks;
	off = align_up(off, 4);
	t.off_btc = off;
	off += 4 * c->blocks;
	if (kind != DDP_TK_SCALARLIST) {
		t.has_start = 1;
		t.off_start = off;
		off += 4;
	}
	t.struct_size = align_up(off, algn);
	t.max_tensors = T;
	t.max_blocks = c->blocks;
	t.btt_size = (uint8_t)c->btt;
done:
	if (tk) {
		tk->layout = (uint8_t)lay;
		tk->max_tensors = t.max_tensors;
		tk->max_blocks = t.max_blocks;
		tk->btt_size = t.btt_size;
		tk->has_start = t.has_start;
		tk->off_numel = t.off_numel;
		tk->off_scalars = t.off_scalars;
		tk->off_steps = t.off_steps;
		tk->off_btt = t.off_btt;
		tk->off_btc = t.off_btc;
		tk->off_start = t.off_start;
		tk->struct_size = t.struct_size;
	}
	return t.struct_size;
}

uint32_t ddp_torch_struct_size(enum ddp_torch_kind kind, enum ddp_torch_layout layout, int depth,
			       int scalar_esize, int scalar_align)
{
	return layout_fill(NULL, kind, layout, depth, scalar_esize, scalar_align, scalar_esize == 16);
}

/* ---- reading the demangled name */

struct span {
	const char *s;
	size_t n;
};

static int span_eq(struct span a, const char *lit)
{
	size_t l = strlen(lit);
	return a.n == l && memcmp(a.s, lit, l) == 0;
}

static struct span trim(struct span a)
{
	while (a.n && a.s[0] == ' ')
		a.s++, a.n--;
	while (a.n && a.s[a.n - 1] == ' ')
		a.n--;
	return a;
}

/* Splits the template argument list starting at s[0] == '<' into top-level
 * arguments; returns the count (at most max stored), -1 when unbalanced.
 * *end receives the position after the closing '>'. */
static int split_targs(const char *s, struct span *args, int max, const char **end)
{
	int depth = 0, n = 0;
	const char *start = s + 1;
	if (*s != '<')
		return -1;
	for (const char *p = s; *p; p++) {
		char ch = *p;
		if (ch == '<' || ch == '(' || ch == '[' || ch == '{') {
			depth++;
		} else if (ch == '>' || ch == ')' || ch == ']' || ch == '}') {
			depth--;
			if (depth == 0) {
				if (ch != '>')
					return -1;
				if (n < max)
					args[n] = trim((struct span){ start, (size_t)(p - start) });
				n++;
				if (end)
					*end = p + 1;
				return n;
			}
			if (depth < 0)
				return -1;
		} else if (ch == ',' && depth == 1) {
			if (n < max)
				args[n] = trim((struct span){ start, (size_t)(p - start) });
			n++;
			start = p + 1;
		}
	}
	return -1;
}

/* The last component of a qualified type ("a::(anonymous namespace)::X<...>"
 * gives "X" and, when present, the position of its '<'). */
static struct span base_name(struct span a, const char **lt)
{
	int depth = 0;
	const char *last = a.s;
	*lt = NULL;
	for (size_t i = 0; i < a.n; i++) {
		char ch = a.s[i];
		if (ch == '<' && depth == 0) {
			*lt = a.s + i;
			break;
		}
		if (ch == '(' || ch == '{')
			depth++;
		else if (ch == ')' || ch == '}')
			depth--;
		else if (depth == 0 && ch == ':' && i + 1 < a.n && a.s[i + 1] == ':')
			last = a.s + i + 2;
	}
	size_t n = *lt ? (size_t)(*lt - last) : (size_t)(a.s + a.n - last);
	return (struct span){ last, n };
}

static int parse_int(struct span a, int *v)
{
	char buf[24];
	char *e;
	a = trim(a);
	/* "(at::native::NormType)2" style casts: take the number after ')' */
	const char *rp = memchr(a.s, ')', a.n);
	if (rp) {
		a.n -= (size_t)(rp + 1 - a.s);
		a.s = rp + 1;
	}
	if (!a.n || a.n >= sizeof buf)
		return -1;
	memcpy(buf, a.s, a.n);
	buf[a.n] = 0;
	long x = strtol(buf, &e, 10);
	while (*e == 'u' || *e == 'l' || *e == 'U' || *e == 'L')
		e++;
	if (*e || x < -1000000 || x > 1000000)
		return -1;
	*v = (int)x;
	return 0;
}

/* Element type, size and alignment of a type spelling; size 0 = unknown. */
static void type_info(struct span a, uint8_t *dtype, int *esize, int *align)
{
	a = trim(a);
	*dtype = DDP_DT_UNKNOWN;
	*esize = 0;
	*align = 0;
	if (span_eq(a, "c10::complex<float>")) {
		*esize = 8, *align = 8;
		return;
	}
	if (span_eq(a, "c10::complex<double>")) {
		*esize = 16, *align = 16;
		return;
	}
	if (span_eq(a, "c10::complex<c10::Half>")) {
		*esize = 4, *align = 4;
		return;
	}
	if (a.n > 14 && memcmp(a.s, "c10::Float8_", 12) == 0) {
		*esize = 1, *align = 1;
		return;
	}
	enum ddp_dtype t = ddp_sig_dtype(a.s, a.n);
	size_t sz = ddp_dtype_size(t);
	if (t == DDP_DT_VOID || !sz)
		return;
	*dtype = (uint8_t)t;
	*esize = (int)sz;
	*align = (int)sz;
}

static int set_list_type(struct ddp_torch_kernel *tk, int l, struct span type)
{
	int es, al;
	type_info(type, &tk->dtype[l], &es, &al);
	tk->esize[l] = (uint8_t)es;
	return es > 0 ? 0 : -1;
}

/* The function name of a demangled signature: the text before its first
 * '<' or '(' (after a leading return type), and that delimiter. */
static struct span func_name(const char *d, const char **delim)
{
	const char *p = d;
	if (strncmp(p, "void ", 5) == 0)
		p += 5;
	const char *q = p;
	while (*q && *q != '<' && *q != '(')
		q += strncmp(q, "::(anonymous namespace)", 23) == 0 ? 23 : 1;
	*delim = q;
	struct span s = { p, (size_t)(q - p) };
	const char *lt;
	return base_name(s, &lt);
}

static ddp_result info_mta(const char *lt, const uint32_t *psize, uint32_t np, struct ddp_torch_kernel *tk)
{
	struct span a[8], m[4], f[10];
	const char *mlt, *flt;
	int na = split_targs(lt, a, 8, NULL);
	if (na < 2 || np < 2)
		return DDP_ERR_UNSUPPORTED;

	/* the metadata struct */
	struct span mb = base_name(a[0], &mlt);
	int nm = mlt ? split_targs(mlt, m, 4, NULL) : 0;
	int depth = 0, sesize = 0, salign = 0;
	uint8_t sdt;
	if (span_eq(mb, "TensorListMetadata") && nm >= 1) {
		tk->kind = DDP_TK_TLM;
		if (parse_int(m[0], &depth))
			return DDP_ERR_UNSUPPORTED;
	} else if (span_eq(mb, "FusedOptimizerTensorListMetadata") && nm >= 1) {
		tk->kind = DDP_TK_FUSED;
		if (parse_int(m[0], &depth))
			return DDP_ERR_UNSUPPORTED;
	} else if (span_eq(mb, "TensorListScalarListMetadata") && nm >= 2) {
		tk->kind = DDP_TK_SCALARLIST;
		if (parse_int(m[1], &depth))
			return DDP_ERR_UNSUPPORTED;
		type_info(m[0], &sdt, &sesize, &salign);
		if (!sesize)
			return DDP_ERR_UNSUPPORTED;
	} else {
		return DDP_ERR_UNSUPPORTED;
	}
	if (depth < 1 || depth > DDP_TLIST_MAX)
		return DDP_ERR_UNSUPPORTED;
	tk->depth = (uint8_t)depth;
	tk->struct_param = 0;
	tk->grad_list_scaled = 0xff;

	/* the layout, by parameter 0's size */
	int cd = tk->kind == DDP_TK_SCALARLIST && sesize == 16;
	struct ddp_torch_kernel tmp = *tk;
	if (layout_fill(&tmp, tk->kind, DDP_TL_CUDA13, depth, sesize, salign, cd) == psize[0])
		*tk = tmp;
	else if (tmp = *tk, layout_fill(&tmp, tk->kind, DDP_TL_4K, depth, sesize, salign, cd) == psize[0])
		*tk = tmp;
	else
		return DDP_ERR_INVALID;

	/* the functor */
	struct span fb = base_name(a[1], &flt);
	int nf = flt ? split_targs(flt, f, 10, NULL) : 0;
	if (nf < 1)
		return DDP_ERR_INVALID;
	int T_ok = set_list_type(tk, 0, f[0]) == 0;
	for (int l = 1; l < depth; l++) {
		tk->dtype[l] = tk->dtype[0];
		tk->esize[l] = tk->esize[0];
	}
	if (span_eq(fb, "LpNormFunctor") || span_eq(fb, "LpMaxFunctor")) {
		tk->functor = DDP_TF_LPNORM;
		tk->role[0] = DDP_TROLE_READ;
	} else if (span_eq(fb, "ZeroFunctor")) {
		tk->functor = DDP_TF_ZERO;
		tk->role[0] = DDP_TROLE_WRITE;
	} else if (span_eq(fb, "CopyFunctor")) {
		/* CopyFunctor<dst_t, src_t, 2, 1, 1>: list 0 src, list 1 dst */
		if (nf < 2 || depth != 2)
			return DDP_ERR_INVALID;
		tk->functor = DDP_TF_COPY;
		T_ok = set_list_type(tk, 1, f[0]) == 0 && set_list_type(tk, 0, f[1]) == 0;
		tk->role[0] = DDP_TROLE_READ;
		tk->role[1] = DDP_TROLE_WRITE;
	} else if (span_eq(fb, "FusedAdamMathFunctor") || span_eq(fb, "FusedSgdMathFunctor") ||
		   span_eq(fb, "FusedAdagradMathFunctor")) {
		/* list 0 params, 1 grads, the rest state; grad_scale: the
		 * second-to-last argument of Adam/Adagrad and SGD */
		tk->functor = span_eq(fb, "FusedAdamMathFunctor")  ? DDP_TF_FUSED_ADAM
			      : span_eq(fb, "FusedSgdMathFunctor") ? DDP_TF_FUSED_SGD
								   : DDP_TF_FUSED_ADAGRAD;
		if (depth < 2 || np < 4)
			return DDP_ERR_INVALID;
		for (int l = 0; l < depth; l++)
			tk->role[l] = l == 1 ? DDP_TROLE_READ : DDP_TROLE_READ | DDP_TROLE_WRITE;
		tk->grad_list_scaled = 1;
		tk->grad_scale_param = np - 2;
		if (psize[np - 2] != 8 || psize[np - 1] != 8)
			return DDP_ERR_INVALID;
	} else if (span_eq(fb, "FusedAdamMathFunctorMP")) {
		tk->functor = DDP_TF_FUSED_ADAM_MP;
		return DDP_ERR_UNSUPPORTED;
	} else {
		/* Functor<T, depth, r_args_depth, res_arg_index> */
		int fd, r, res;
		if (nf < 4 || parse_int(f[1], &fd) || parse_int(f[2], &r) || parse_int(f[3], &res))
			return DDP_ERR_UNSUPPORTED;
		if (fd != depth || r < 0 || r > depth || res < 0 || res >= depth)
			return DDP_ERR_INVALID;
		tk->functor = DDP_TF_GENERIC;
		tk->r_args_depth = (uint8_t)r;
		tk->res_arg_index = (uint8_t)res;
		for (int l = 0; l < depth; l++)
			tk->role[l] =
				(uint8_t)((l < r ? DDP_TROLE_READ : 0) | (l == res ? DDP_TROLE_WRITE : 0));
		if (span_eq(fb, "UnaryOpFunctor") && na >= 3 &&
		    memmem(a[2].s, a[2].n, "_amp_foreach_non_finite_check_and_unscale", 41))
			tk->functor = DDP_TF_AMP_UNSCALE;
	}
	if (!T_ok)
		return DDP_ERR_UNSUPPORTED;
	return DDP_OK;
}

static ddp_result info_cleanup(const char *lt, int lpnorm, const uint32_t *psize, uint32_t np,
			       struct ddp_torch_kernel *tk)
{
	struct span a[6];
	int na = split_targs(lt, a, 6, NULL);
	/* lpnorm_cleanup<T, norm, out_t, ...>: the outputs are out_t;
	 * lpmax_cleanup<T>: T.  The struct is parameter 1. */
	if (np < 2 || na < (lpnorm ? 3 : 1))
		return DDP_ERR_UNSUPPORTED;
	tk->kind = DDP_TK_ADDRS;
	tk->functor = DDP_TF_CLEANUP;
	tk->depth = 1;
	tk->struct_param = 1;
	tk->grad_list_scaled = 0xff;
	struct ddp_torch_kernel tmp = *tk;
	if (layout_fill(&tmp, DDP_TK_ADDRS, DDP_TL_CUDA13, 1, 0, 0, 0) == psize[1])
		*tk = tmp;
	else if (tmp = *tk, layout_fill(&tmp, DDP_TK_ADDRS, DDP_TL_4K, 1, 0, 0, 0) == psize[1])
		*tk = tmp;
	else
		return DDP_ERR_INVALID;
	tk->role[0] = DDP_TROLE_WRITE;
	if (set_list_type(tk, 0, a[lpnorm ? 2 : 0]))
		return DDP_ERR_UNSUPPORTED;
	return DDP_OK;
}

static ddp_result info_elemwise(const char *lt, int vectorized, const uint32_t *psize, uint32_t np,
				struct ddp_torch_kernel *tk)
{
	struct span a[8], arr[2];
	const char *alt;
	int na = split_targs(lt, a, 8, NULL);
	/* vectorized_elementwise_kernel<vec, F, std::array<char*, N>[, bool]>
	 * unrolled_elementwise_kernel<F, std::array<char*, N>, ..., LoadWithoutCast, StoreWithoutCast> */
	int fi = vectorized ? 1 : 0;
	if (na < fi + 2 || np < 3)
		return DDP_ERR_UNSUPPORTED;
	if (!vectorized) {
		int nocast = 0;
		for (int i = 2; i < na && i < 8; i++)
			nocast |= span_eq(a[i], "at::native::memory::LoadWithoutCast");
		if (!nocast)
			return DDP_ERR_UNSUPPORTED; /* casts: dtypes known only at run time */
	}
	struct span ab = base_name(a[fi + 1], &alt);
	int N;
	if (!span_eq(ab, "array") || !alt || split_targs(alt, arr, 2, NULL) != 2 ||
	    !span_eq(arr[0], "char*") || parse_int(arr[1], &N))
		return DDP_ERR_UNSUPPORTED;
	tk->kind = DDP_TK_ELEMWISE;
	tk->functor = DDP_TF_ELEMWISE;
	if (N < 1 || N > DDP_TLIST_MAX || psize[0] != 4 || psize[2] != 8u * (uint32_t)N)
		return DDP_ERR_INVALID;
	tk->depth = (uint8_t)N;
	tk->count_param = 0;
	tk->struct_param = 2;
	tk->struct_size = 8u * (uint32_t)N;
	tk->grad_list_scaled = 0xff;
	/* every operand: the first arithmetic type named in the functor (its
	 * template argument or its lambda's parameter), when there is one */
	uint8_t dt = DDP_DT_UNKNOWN;
	int es = 0;
	const char *fs = a[fi].s;
	for (size_t i = 0; i < a[fi].n && !es; i++) {
		static const char *const words[] = { "c10::BFloat16", "c10::Half", "float", "double", NULL };
		for (int w = 0; words[w]; w++) {
			size_t wl = strlen(words[w]);
			if (i + wl <= a[fi].n && memcmp(fs + i, words[w], wl) == 0 &&
			    (i == 0 || fs[i - 1] == '<' || fs[i - 1] == '(' || fs[i - 1] == ' ') &&
			    (fs[i + wl] == '>' || fs[i + wl] == ',' || fs[i + wl] == ')')) {
				int al;
				type_info((struct span){ fs + i, wl }, &dt, &es, &al);
				break;
			}
		}
	}
	for (int l = 0; l < N; l++) {
		tk->role[l] = l == 0 ? DDP_TROLE_WRITE : DDP_TROLE_READ;
		tk->dtype[l] = dt;
		tk->esize[l] = (uint8_t)es;
	}
	return DDP_OK;
}

/* reduce_kernel<nt, vt, at::native::ReduceOp<scalar_t, ops_t, index_t,
 * out_scalar_t, vt0, ivs> > (see the header) */
static ddp_result info_reduce(const char *lt, const uint32_t *psize, uint32_t np, struct ddp_torch_kernel *tk)
{
	struct span a[4], r[8];
	const char *rlt;
	int es_in, es_out, al;
	if (split_targs(lt, a, 4, NULL) != 3 || np != 1)
		return DDP_ERR_UNSUPPORTED;
	struct span rb = base_name(a[2], &rlt);
	if (!span_eq(rb, "ReduceOp") || !rlt || split_targs(rlt, r, 8, NULL) != 6 ||
	    !span_eq(r[2], "unsigned int"))
		return DDP_ERR_UNSUPPORTED;
	uint8_t dt_in, dt_out;
	type_info(r[0], &dt_in, &es_in, &al);
	type_info(r[3], &dt_out, &es_out, &al);
	/* complex or unknown types: the generic decoder (a complex arg_t may
	 * align the struct to 16 and move its tail) */
	if (!es_in || !es_out || dt_in == DDP_DT_UNKNOWN || dt_out == DDP_DT_UNKNOWN)
		return DDP_ERR_UNSUPPORTED;
	tk->kind = DDP_TK_REDUCE;
	tk->functor = DDP_TF_REDUCE;
	if (psize[0] < RED_MIN_SIZE || psize[0] % 8)
		return DDP_ERR_INVALID;
	tk->depth = 3;
	tk->struct_param = 0;
	tk->struct_size = psize[0];
	tk->grad_list_scaled = 0xff;
	tk->role[0] = DDP_TROLE_WRITE;
	tk->dtype[0] = dt_out;
	tk->esize[0] = (uint8_t)es_out;
	tk->role[1] = DDP_TROLE_READ;
	tk->dtype[1] = dt_in;
	tk->esize[1] = (uint8_t)es_in;
	tk->role[2] = DDP_TROLE_WRITE;
	return DDP_OK;
}

ddp_result ddp_torch_kernel_info(const char *demangled, const uint32_t *param_size, uint32_t nparams,
				 struct ddp_torch_kernel *out)
{
	const char *delim;
	memset(out, 0, sizeof *out);
	if (!demangled || (nparams && !param_size))
		return DDP_ERR_UNSUPPORTED;
	struct span fn = func_name(demangled, &delim);
	if (*delim != '<')
		return DDP_ERR_UNSUPPORTED;
	if (span_eq(fn, "multi_tensor_apply_kernel"))
		return info_mta(delim, param_size, nparams, out);
	if (span_eq(fn, "lpnorm_cleanup"))
		return info_cleanup(delim, 1, param_size, nparams, out);
	if (span_eq(fn, "lpmax_cleanup"))
		return info_cleanup(delim, 0, param_size, nparams, out);
	if (span_eq(fn, "vectorized_elementwise_kernel"))
		return info_elemwise(delim, 1, param_size, nparams, out);
	if (span_eq(fn, "unrolled_elementwise_kernel"))
		return info_elemwise(delim, 0, param_size, nparams, out);
	if (span_eq(fn, "reduce_kernel"))
		return info_reduce(delim, param_size, nparams, out);
	return DDP_ERR_UNSUPPORTED;
}

/* ---- decoding a launch */

static int emit(struct ddp_trange *out, size_t cap, size_t *n, uint64_t addr, uint64_t numel, int esize,
		int dtype, uint32_t tensor, int list, int role)
{
	uint64_t bytes = 0;
	if (!addr)
		return -1;
	if (esize) {
		if (numel > UINT64_MAX / (uint64_t)esize)
			return -1;
		bytes = numel * (uint64_t)esize;
		if (addr + bytes < addr)
			return -1;
	}
	if (*n < cap) {
		struct ddp_trange *r = &out[*n];
		r->addr = addr;
		r->bytes = bytes;
		r->numel = numel;
		r->tensor = tensor;
		r->list = (uint8_t)list;
		r->role = (uint8_t)role;
		r->dtype = (uint8_t)dtype;
		r->esize = (uint8_t)esize;
	}
	(*n)++;
	return 0;
}

/* One reduce_kernel launch (see the header). */
static ddp_result decode_reduce(const struct ddp_torch_kernel *tk, const uint8_t *b, struct ddp_trange *out,
				size_t cap, size_t *n_out)
{
	uint32_t S = tk->struct_size, tail = S - RED_TAIL;
	struct red_fit f, g;
	size_t n = 0;
	/* the config ends where the input calculator begins; the output
	 * calculator ends at src or 4 bytes before it (src is 8-aligned) */
	uint32_t c0 = tail - RED_OUT_CALC - RED_IN_CALC - RED_CONFIG;
	int fit0 = red_fit_at(b, c0, &f);
	int fit1 = c0 >= 8 && red_fit_at(b, c0 - 4, &g);
	if (fit0 == fit1)
		return DDP_ERR_INVALID; /* neither place, or both: not bounded */
	if (fit1)
		f = g;
	uint64_t src = ddp_rd64(b + tail), dst = ddp_rd64(b + tail + 8);
	uint8_t accumulate = b[tail + 56], final_output = b[tail + 57];
	int32_t noutputs;
	memcpy(&noutputs, b + tail + 60, 4);
	if (noutputs != 1 || !final_output || accumulate > 1 || final_output > 1)
		return DDP_ERR_INVALID;
	uint64_t ob = f.out_span + tk->esize[0];
	uint64_t ib = f.in_out_span + f.in_span + tk->esize[1];
	if (ob % tk->esize[0] || ib % tk->esize[1])
		return DDP_ERR_INVALID;
	if (emit(out, cap, &n, dst, ob / tk->esize[0], tk->esize[0], tk->dtype[0], 0, 0,
		 DDP_TROLE_WRITE | (accumulate ? DDP_TROLE_READ : 0)) ||
	    emit(out, cap, &n, src, ib / tk->esize[1], tk->esize[1], tk->dtype[1], 0, 1, DDP_TROLE_READ))
		return DDP_ERR_INVALID;
	for (uint32_t i = 0; i < 3; i++) { /* acc_buf, cta_buf, semaphores */
		uint64_t a = ddp_rd64(b + tail + 24 + 8 * i);
		if (a && emit(out, cap, &n, a, 0, 0, DDP_DT_UNKNOWN, i, 2, DDP_TROLE_WRITE))
			return DDP_ERR_INVALID;
	}
	*n_out = n;
	return DDP_OK;
}

ddp_result ddp_torch_decode(const struct ddp_torch_kernel *tk, const void *const *param, unsigned grid_x,
			    struct ddp_trange *out, size_t cap, size_t *n_out)
{
	size_t n = 0;
	*n_out = 0;
	if (!tk || !param || tk->kind == DDP_TK_NONE)
		return DDP_ERR_INVALID;
	const uint8_t *b = param[tk->struct_param];
	if (!b)
		return DDP_ERR_INVALID;

	if (tk->kind == DDP_TK_ELEMWISE) {
		const void *cp = param[tk->count_param];
		int32_t cnt;
		if (!cp)
			return DDP_ERR_INVALID;
		memcpy(&cnt, cp, 4);
		if (cnt < 0)
			return DDP_ERR_INVALID;
		if (cnt == 0)
			return DDP_OK;
		for (int l = 0; l < tk->depth; l++)
			if (emit(out, cap, &n, ddp_rd64(b + 8u * (uint32_t)l), (uint64_t)cnt, tk->esize[l],
				 tk->dtype[l], 0, l, tk->role[l]))
				return DDP_ERR_INVALID;
		*n_out = n;
		return DDP_OK;
	}

	if (tk->kind == DDP_TK_REDUCE)
		return decode_reduce(tk, b, out, cap, n_out);

	if (tk->kind == DDP_TK_ADDRS) {
		if (grid_x == 0 || grid_x > tk->max_tensors)
			return DDP_ERR_INVALID;
		for (uint32_t t = 0; t < grid_x; t++)
			if (emit(out, cap, &n, ddp_rd64(b + 8 * t), 1, tk->esize[0], tk->dtype[0], t, 0,
				 tk->role[0]))
				return DDP_ERR_INVALID;
		*n_out = n;
		return DDP_OK;
	}

	/* metadata structs */
	if (grid_x == 0 || grid_x > tk->max_blocks)
		return DDP_ERR_INVALID;
	uint32_t last;
	if (tk->btt_size == 2) {
		uint16_t v;
		memcpy(&v, b + tk->off_btt + 2 * (grid_x - 1), 2);
		last = v;
	} else {
		last = b[tk->off_btt + grid_x - 1];
	}
	uint32_t count = last + 1;
	if (count > tk->max_tensors)
		return DDP_ERR_INVALID;
	uint8_t role[DDP_TLIST_MAX];
	memcpy(role, tk->role, sizeof role);
	if (tk->grad_list_scaled < DDP_TLIST_MAX && tk->grad_scale_param) {
		const void *gp = param[tk->grad_scale_param];
		uint64_t gs = 0;
		if (!gp)
			return DDP_ERR_INVALID;
		memcpy(&gs, gp, 8);
		if (gs)
			role[tk->grad_list_scaled] |= DDP_TROLE_WRITE;
	}
	for (uint32_t t = 0; t < count; t++) {
		int64_t numel;
		memcpy(&numel, b + tk->off_numel + 8 * t, 8);
		if (numel <= 0)
			return DDP_ERR_INVALID;
		for (uint32_t l = 0; l < tk->depth; l++) {
			if (!role[l])
				continue;
			uint64_t a = ddp_rd64(b + 8 * (l * tk->max_tensors + t));
			if (emit(out, cap, &n, a, (uint64_t)numel, tk->esize[l], tk->dtype[l], t, (int)l,
				 role[l]))
				return DDP_ERR_INVALID;
		}
		if (tk->kind == DDP_TK_FUSED) {
			uint64_t a = ddp_rd64(b + tk->off_steps + 8 * t);
			if (emit(out, cap, &n, a, 1, 4, DDP_DT_F32, t, DDP_TLIST_STEPS, DDP_TROLE_READ))
				return DDP_ERR_INVALID;
		}
	}
	*n_out = n;
	return DDP_OK;
}

ddp_result ddp_trange_vec_decode(struct ddp_trange_vec *vec, const struct ddp_torch_kernel *tk,
				 const void *const *param, unsigned grid_x)
{
	size_t need;
	for (;;) {
		ddp_result rc = ddp_torch_decode(tk, param, grid_x, vec->v, vec->cap, &need);
		if (rc != DDP_OK) {
			vec->n = 0;
			return rc;
		}
		if (need <= vec->cap) {
			vec->n = need;
			return DDP_OK;
		}
		struct ddp_trange *v = ddp_array_grow(vec->v, &vec->cap, need, sizeof *v, 64);
		if (!v)
			return DDP_ERR_NOMEM;
		vec->v = v;
	}
}

void ddp_trange_vec_free(struct ddp_trange_vec *vec)
{
	free(vec->v);
	vec->v = NULL;
	vec->n = vec->cap = 0;
}

const char *ddp_torch_kind_name(enum ddp_torch_kind k)
{
	switch (k) {
	case DDP_TK_TLM: return "TensorListMetadata";
	case DDP_TK_SCALARLIST: return "TensorListScalarListMetadata";
	case DDP_TK_FUSED: return "FusedOptimizerTensorListMetadata";
	case DDP_TK_ADDRS: return "TensorListAddresses";
	case DDP_TK_ELEMWISE: return "elementwise";
	case DDP_TK_REDUCE: return "ReduceOp";
	default: return "none";
	}
}
