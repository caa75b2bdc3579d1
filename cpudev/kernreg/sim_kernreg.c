/* SPDX-License-Identifier: MIT
 *
 * sim_kernreg.c - sim-kernreg: writes the kernel registry of a CPU-device
 * kernel library from a program's fatbin.
 *
 *   sim-kernreg FATBIN SOURCE.cu > X.reg.cpp     the registry translation unit
 *   sim-kernreg --list FATBIN                    the kernels' mangled names
 *   sim-kernreg --names FILE SOURCE.cu           same, names from FILE (one a line)
 *
 * X.reg.cpp #includes SOURCE.cu (compiled with sim_kernel.h forced in) and
 * lists every kernel of the fatbin with SIM_KERNEL(mangled, signature,
 * static_cast<void (*)(PARAMS)>(&NAME)): the cast picks the overload and
 * instantiates templates; NAME and PARAMS come from the demangled name
 * (`void axpy<float>(float, float const*, float*)`).  extern "C" kernels
 * (unmangled) are referenced by name.  A kernel whose name holds a lambda
 * closure type is listed as SIM_KERNEL_LATE(mangled, signature): the source
 * records it with SIM_KERNEL_INSTANCE (sim_kernel.h says how).  exec.mk then checks that the built
 * library defines each mangled name, i.e. that g++ mangles like nvcc.
 *
 * Device variables (__device__, __constant__) of the cubin whose names are
 * plain or namespace-qualified identifiers are listed with SIM_GLOBAL, so the
 * driver hands their host storage to cuModuleGetGlobal; each is referenced
 * as ::ns::name, with a sim_reg::absent placeholder reachable through a
 * using-directive for names the source does not define (qualified lookup
 * looks at using-directives only when the namespace itself has no such
 * name).  Others (templates, function-local statics, anonymous namespaces,
 * the compiler's __cudart and __nv tables) are left out: cuModuleGetGlobal
 * answers CUDA_ERROR_NOT_FOUND for them.
 *
 * Contract: a command-line tool; reads its inputs whole; errors are one line
 * on stderr (`sim-kernreg: ...`) and exit status 1.
 */
#include "ddp_fatbin.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

static int read_file(const char *path, unsigned char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	unsigned char *buf = malloc(cap + 1);

	if (!f || !buf) {
		fprintf(stderr, "sim-kernreg: cannot read %s\n", path);
		if (f)
			fclose(f);
		free(buf);
		return -1;
	}
	for (;;) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		cap *= 2;
		unsigned char *g = realloc(buf, cap + 1);
		if (!g) {
			fclose(f);
			free(buf);
			return -1;
		}
		buf = g;
	}
	fclose(f);
	buf[n] = 0;
	*data = buf;
	*len = n;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Device variables of the fatbin (sorted, unique), for emit_globals. */
static char **gnames;
static size_t ngnames;

/* Collects the kernels' mangled names (sorted, unique) into *names, and the
 * device variables into gnames. */
static int collect(const char *path, int from_list, char ***names, size_t *n)
{
	unsigned char *data;
	size_t len, cnt = 0;
	char **v;

	if (read_file(path, &data, &len))
		return -1;
	if (from_list) {
		size_t cap = 16;
		v = malloc(cap * sizeof(*v));
		for (char *save = NULL, *l = strtok_r((char *)data, "\r\n", &save); l && v;
		     l = strtok_r(NULL, "\r\n", &save)) {
			if (!*l)
				continue;
			if (cnt == cap)
				v = realloc(v, (cap *= 2) * sizeof(*v));
			if (v)
				v[cnt++] = strdup(l);
		}
	} else {
		struct ddp_module_info m = {0};
		char err[256] = "";

		if (ddp_module_parse(data, len, 0, &m, err, sizeof(err)) != DDP_OK) {
			fprintf(stderr, "sim-kernreg: %s: %s\n", path, err);
			free(data);
			return -1;
		}
		v = calloc(m.nkernels + 1, sizeof(*v));
		for (size_t i = 0; v && i < m.nkernels; i++)
			v[cnt++] = strdup(m.kernels[i].name);
		gnames = calloc(m.nglobals + 1, sizeof(*gnames));
		for (size_t i = 0; gnames && i < m.nglobals; i++)
			gnames[ngnames++] = strdup(m.globals[i].name); /* sorted, unique */
		ddp_module_info_free(&m);
	}
	free(data);
	if (!v) {
		fprintf(stderr, "sim-kernreg: out of memory\n");
		return -1;
	}
	qsort(v, cnt, sizeof(*v), cmp_str);
	size_t out = 0;
	for (size_t i = 0; i < cnt; i++)
		if (!out || strcmp(v[i], v[out - 1]))
			v[out++] = v[i];
	*names = v;
	*n = out;
	return 0;
}

/* Removes every occurrence of pat from s, in place. */
static void strip_all(char *s, const char *pat)
{
	size_t pl = strlen(pat);
	char *p;

	while ((p = strstr(s, pat)))
		memmove(p, p + pl, strlen(p + pl) + 1);
}

/* The identifier of the first <len>_GLOBAL__N_... source name in a mangled
 * name: 0, or -1 when there is none. */
static int anon_name(const char *mangled, char *out, size_t cap)
{
	const char *g = strstr(mangled, "_GLOBAL__N_");
	const char *q = g;
	if (!g)
		return -1;
	while (q > mangled && q[-1] >= '0' && q[-1] <= '9')
		q--;
	size_t len = strtoul(q, NULL, 10);
	if (q == g || !len || len >= cap || strlen(g) < len)
		return -1;
	memcpy(out, g, len);
	out[len] = 0;
	return 0;
}

/* Replaces every occurrence of pat in *s by rep (reallocating). */
static void replace_all(char **s, const char *pat, const char *rep)
{
	size_t pl = strlen(pat), rl = strlen(rep), n = 0;
	for (const char *p = *s; (p = strstr(p, pat)); p += pl)
		n++;
	char *o = malloc(strlen(*s) + n * (rl > pl ? rl - pl : 0) + 1), *w = o;
	if (!o)
		return;
	for (const char *p = *s;;) {
		const char *h = strstr(p, pat);
		size_t k = h ? (size_t)(h - p) : strlen(p);
		memcpy(w, p, k);
		w += k;
		if (!h)
			break;
		memcpy(w, rep, rl);
		w += rl;
		p = h + pl;
	}
	*w = 0;
	free(*s);
	*s = o;
}

/* Writes one SIM_KERNEL line; 0 ok. */
static int emit(FILE *o, const char *mangled)
{
	int st = 0;
	char *d = strncmp(mangled, "_Z", 2) ? NULL : __cxa_demangle(mangled, NULL, NULL, &st);
	char *s, *open = NULL;
	size_t len;
	int depth = 0;

	if (!d) {
		if (!strncmp(mangled, "_Z", 2)) {
			fprintf(stderr, "sim-kernreg: cannot demangle %s\n", mangled);
			return -1;
		}
		fprintf(o, "\tSIM_KERNEL(\"%s\", \"%s\", &%s),\n", mangled, mangled, mangled);
		return 0;
	}
	/* A closure type has no name to write here: the source records the
	 * instance (SIM_KERNEL_INSTANCE) and the entry is looked up by name. */
	if (strstr(d, "{lambda(")) {
		fprintf(o, "\tSIM_KERNEL_LATE(\"%s\", \"%s\"),\n", mangled, d);
		free(d);
		return 0;
	}
	fprintf(o, "\tSIM_KERNEL(\"%s\", \"%s\",\n", mangled, d);
	/* A namespace written with nvcc's own name for an anonymous one
	 * (_GLOBAL__N__<hash>_<file>_cu_<hash>, as a program reproducing a
	 * library's exact kernel names does) demangles as "(anonymous
	 * namespace)": put its real name back.  A true anonymous namespace has
	 * no name to refer to; it is dropped (the registry includes the .cu). */
	char anon[256];
	if (anon_name(mangled, anon, sizeof anon) == 0)
		replace_all(&d, "(anonymous namespace)", anon);
	else
		strip_all(d, "(anonymous namespace)::");
	s = d;
	if (!strncmp(s, "void ", 5))
		s += 5;
	len = strlen(s);
	if (!len || s[len - 1] != ')') {
		fprintf(stderr, "sim-kernreg: unexpected signature for %s: %s\n", mangled, d);
		free(d);
		return -1;
	}
	for (size_t i = len; i-- > 0;) {
		if (s[i] == ')')
			depth++;
		else if (s[i] == '(' && --depth == 0) {
			open = s + i;
			break;
		}
	}
	if (!open || open == s) {
		fprintf(stderr, "sim-kernreg: unexpected signature for %s: %s\n", mangled, d);
		free(d);
		return -1;
	}
	*open = 0;
	s[len - 1] = 0;
	fprintf(o, "\t\tstatic_cast<void (*)(%s)>(&%s)),\n", open + 1, s);
	free(d);
	return 0;
}

/* The C++ name of a device variable ("ns::name"), malloc'd; NULL when it is
 * not a chain of identifiers we can refer to from the registry. */
static char *global_cxx_name(const char *sym)
{
	int st = 0;
	char *d = !strncmp(sym, "_Z", 2) ? __cxa_demangle(sym, NULL, NULL, &st) : strdup(sym);

	if (!d)
		return NULL;
	if (!strncmp(d, "__cudart", 8) || !strncmp(d, "__nv", 4))
		goto no;
	for (const char *p = d;;) {
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
			goto no;
		while (*p == '_' || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9'))
			p++;
		if (!*p)
			return d;
		if (p[0] != ':' || p[1] != ':')
			goto no;
		p += 2;
	}
no:
	free(d);
	return NULL;
}

/* Writes the placeholders, the using-directives and the SIM_GLOBAL array;
 * returns the number of entries. */
static size_t emit_globals(FILE *o)
{
	char **cxx = calloc(ngnames + 1, sizeof(*cxx));
	size_t n = 0;

	if (!cxx)
		return 0;
	for (size_t i = 0; i < ngnames; i++) {
		cxx[i] = global_cxx_name(gnames[i]);
		if (!cxx[i])
			fprintf(o, "// device variable %s: not referable from here, left out\n", gnames[i]);
		else
			n++;
	}
	if (!n) {
		free(cxx);
		return 0;
	}
	/* Placeholders: namespace sim_absent_globals { namespace ns { inline constexpr absent x{}; } } */
	fprintf(o, "\n// Device variables: placeholders for names the source does not define.\n");
	for (size_t i = 0; i < ngnames; i++) {
		if (!cxx[i])
			continue;
		char *last = strrchr(cxx[i], ':');
		fprintf(o, "namespace sim_absent_globals { ");
		if (last) {
			fprintf(o, "namespace %.*s { ", (int)(last - 1 - cxx[i]), cxx[i]);
		}
		fprintf(o, "inline constexpr ::sim_reg::absent %s{}; }%s\n", last ? last + 1 : cxx[i], last ? " }" : "");
	}
	fprintf(o, "using namespace ::sim_absent_globals;\n");
	for (size_t i = 0; i < ngnames; i++) {
		char *last = cxx[i] ? strrchr(cxx[i], ':') : NULL;
		if (last)
			fprintf(o, "namespace %.*s { using namespace ::sim_absent_globals::%.*s; }\n",
				(int)(last - 1 - cxx[i]), cxx[i], (int)(last - 1 - cxx[i]), cxx[i]);
	}
	fprintf(o, "static const struct sim_global_entry sim_global_entries[] = {\n");
	for (size_t i = 0; i < ngnames; i++)
		if (cxx[i])
			fprintf(o, "\tSIM_GLOBAL(\"%s\", ::%s),\n", gnames[i], cxx[i]);
	fprintf(o, "};\n");
	for (size_t i = 0; i < ngnames; i++)
		free(cxx[i]);
	free(cxx);
	return n;
}

int main(int argc, char **argv)
{
	char **names = NULL, real[PATH_MAX];
	size_t n = 0;
	int list = argc == 3 && !strcmp(argv[1], "--list");
	int from_names = argc == 4 && !strcmp(argv[1], "--names");
	const char *input, *src;
	int rc = 0;

	if (!list && !from_names && argc != 3) {
		fprintf(stderr, "usage: sim-kernreg FATBIN SOURCE.cu > X.reg.cpp | --list FATBIN | --names FILE SOURCE.cu\n");
		return 2;
	}
	input = list ? argv[2] : from_names ? argv[2] : argv[1];
	src = list ? NULL : argv[argc - 1];
	if (collect(input, from_names, &names, &n))
		return 1;
	if (list) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", names[i]);
		return 0;
	}
	if (!realpath(src, real)) {
		fprintf(stderr, "sim-kernreg: cannot find %s\n", src);
		return 1;
	}
	printf("// Generated by sim-kernreg from %s; do not edit.\n", input);
	printf("// Compile with: g++ -std=c++17 -include sim_kernel.h (cpudev/exec.mk).\n");
	printf("#include \"%s\"\n\n", real);
	size_t ng = emit_globals(stdout);
	if (!n) {
		printf(ng ? "SIM_KERNEL_TABLE_EMPTY_G(sim_global_entries);\n" : "SIM_KERNEL_TABLE_EMPTY();\n");
		return 0;
	}
	printf("static const struct sim_kernel_entry sim_kernel_entries[] = {\n");
	for (size_t i = 0; i < n; i++)
		if (emit(stdout, names[i]))
			rc = 1;
	printf(ng ? "};\nSIM_KERNEL_TABLE_G(sim_kernel_entries, sim_global_entries);\n"
		  : "};\nSIM_KERNEL_TABLE(sim_kernel_entries);\n");
	return rc;
}
