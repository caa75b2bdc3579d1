/* SPDX-License-Identifier: MIT
 *
 * ddp_cpu_kernels.c - ddp-cpu-kernels: builds the CPU device's kernel
 * library (<program>.kern.so) of any CUDA C program from its .cu files.
 *
 *   ddp-cpu-kernels [-o OUT.kern.so] [-I DIR] [-D NAME[=V]] [-U NAME]
 *                   [-std=c++17|c++20] [-O N] [-g] [-v] [--keep] FILE.cu...
 *
 * For each FILE.cu (host and device code mixed, runtime or driver API,
 * cuBLAS/cuRAND/NVTX includes):
 *   1. nvcc -fatbin -arch=sm_90 FILE.cu       the kernels nvcc sees
 *   2. sim-kernreg FATBIN FILE.cu              the registry unit (#includes FILE.cu)
 *   3. g++ -E with the CPU device's headers first (cpudev/include,
 *      then the user's -I dirs minus any CUDA toolkit include dir, then a
 *      folder that turns every other toolkit header into an #error), as
 *      nvcc's device pass: __CUDACC__, __NVCC__, __CUDA_ARCH__=900,
 *      cuda_runtime.h included first (nvcc does so: no #include needed)
 *   4. rewrite: each `k<<<cfg>>>(args)` becomes a type-checked expression
 *      that launches nothing (sim_kernel.h's sim_launch_site); inline
 *      assembly in the user's files is refused
 *   5. g++ -c -O2 -fPIC -w -ffunction-sections -fdata-sections
 * then one unit joins the parts' tables, extern __shared__ arrays get
 * their storage (dynshared.sh), and the link keeps only what the kernels
 * reach (--gc-sections, a version script exporting the kernels and
 * sim_kernel_table, -z defs).  Finally every kernel of every fatbin must be
 * defined under nvcc's mangled name (check_names.sh).
 *
 * Default output: <first file's stem>.kern.so in the current directory.
 * Errors: ONE line on stderr, `ddp-cpu-kernels: FILE:LINE: what` for a
 * problem in the source (the first compiler error, placed at the user's
 * line when it arises in a CPU-device header), exit status 1; -v shows
 * every command and the tools' own messages.
 *
 * Contract: a command-line tool; its paths (headers, sim-kernreg, scripts,
 * nvcc, the toolkit's cuda.h) are fixed when it is built (exec.mk), so it
 * works from any directory; $CXX and $NVCC may be several words ("ccache
 * g++"); temporary files go to a mkdtemp directory,
 * removed unless --keep.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#if !defined(SIM_INC_DIR) || !defined(SIM_POISON_DIR) || !defined(SIM_KERNREG_PATH) || !defined(SIM_SCRIPT_DIR) || \
	!defined(SIM_NVCC) || !defined(SIM_CUDA_H) || !defined(SIM_DYN_SHARED_BYTES) || !defined(SIM_CUDA_VERSION)
#error "build ddp-cpu-kernels through cpudev/exec.mk (it sets the paths)"
#endif

#define MAX_ARGS 512

struct argv_buf {
	char *v[MAX_ARGS];
	int n;
};

static int verbose, keep;
static char tmpdir[PATH_MAX];
static char cwd[PATH_MAX];

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void cleanup(void)
{
	char cmd[PATH_MAX + 16];

	if (!tmpdir[0] || keep)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "ddp-cpu-kernels: could not remove %s\n", tmpdir);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("ddp-cpu-kernels: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (keep && tmpdir[0])
		fprintf(stderr, "ddp-cpu-kernels: temporary files kept in %s\n", tmpdir);
	cleanup();
	exit(1);
}

static void add(struct argv_buf *a, const char *s)
{
	if (a->n >= MAX_ARGS - 1)
		die("too many arguments");
	a->v[a->n++] = strdup(s);
	a->v[a->n] = NULL;
}

/* A command that may be several words (CXX="ccache g++"), as a shell splits it. */
static void add_words(struct argv_buf *a, const char *cmd)
{
	char *copy = strdup(cmd), *save = NULL;
	int n = a->n;

	if (!copy)
		die("out of memory");
	for (char *w = strtok_r(copy, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
		add(a, w);
	free(copy);
	if (a->n == n)
		die("'%s' is not a command (check CXX and NVCC)", cmd);
}

static void addf(struct argv_buf *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct argv_buf *a, const char *fmt, ...)
{
	char buf[PATH_MAX * 2];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	add(a, buf);
}

static char *tmp_path(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *tmp_path(const char *fmt, ...)
{
	char name[256], *p;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(name, sizeof(name), fmt, ap);
	va_end(ap);
	if (asprintf(&p, "%s/%s", tmpdir, name) < 0)
		die("out of memory");
	return p;
}

/* Runs argv with stdout to out (NULL: inherited; with -v stderr too) and
 * stderr to err (NULL: inherited); returns the exit status. */
static int run(struct argv_buf *a, const char *out, const char *err)
{
	pid_t pid;
	int st;

	if (verbose) {
		for (int i = 0; i < a->n; i++)
			fprintf(stderr, "%s%s", i ? " " : "+ ", a->v[i]);
		fprintf(stderr, "%s%s\n", out ? " > " : "", out ? out : "");
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
		die("fork: %s", strerror(errno));
	if (pid == 0) {
		if (out) {
			int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || dup2(fd, 1) < 0)
				_exit(126);
			close(fd);
		}
		if (err) {
			int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd < 0 || dup2(fd, 2) < 0)
				_exit(126);
			close(fd);
		}
		execvp(a->v[0], a->v);
		fprintf(stderr, "ddp-cpu-kernels: cannot run %s: %s\n", a->v[0], strerror(errno));
		_exit(127);
	}
	while (waitpid(pid, &st, 0) < 0)
		if (errno != EINTR)
			die("waitpid: %s", strerror(errno));
	if (WIFEXITED(st))
		return WEXITSTATUS(st);
	return 128 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0);
}

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 16, n = 0;
	char *buf;

	if (!f)
		return NULL;
	buf = malloc(cap + 1);
	while (buf) {
		size_t r = fread(buf + n, 1, cap - n, f);
		n += r;
		if (n < cap)
			break;
		char *g = realloc(buf, cap * 2 + 1);
		if (!g) {
			free(buf);
			buf = NULL;
			break;
		}
		buf = g;
		cap *= 2;
	}
	fclose(f);
	if (!buf)
		die("out of memory reading %s", path);
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

static void dump(const char *path)
{
	char *s = read_all(path, NULL);

	if (s && *s)
		fputs(s, stderr);
	free(s);
}

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* A file the user wrote (not a CPU-device header, not a system header,
 * not one of our temporary files). */
static int user_file(const char *f)
{
	return !starts(f, SIM_INC_DIR) && !starts(f, SIM_POISON_DIR) && !starts(f, tmpdir) && !starts(f, "/usr/include") &&
	       !starts(f, "/usr/lib") && !starts(f, "/usr/local/include") && strcmp(f, "<command-line>") &&
	       strcmp(f, "<built-in>");
}

/* A path for messages: relative to the current directory when below it. */
static const char *shown(const char *f)
{
	size_t n = strlen(cwd);

	if (n > 1 && !strncmp(f, cwd, n) && f[n] == '/')
		return f + n + 1;
	return f;
}

/* Parses "FILE:LINE:" at the start of s (FILE may hold no ':' + digits + ':').
 * Returns the length of FILE, 0 when there is none; *line set. */
static size_t parse_loc(const char *s, long *line)
{
	for (const char *p = s; *p && *p != '\n'; p++) {
		if (*p == ':' && p[1] >= '0' && p[1] <= '9') {
			char *end;
			long l = strtol(p + 1, &end, 10);
			if (*end == ':' || *end == ',' || *end == '\n' || *end == 0) {
				*line = l;
				return (size_t)(p - s);
			}
		}
	}
	return 0;
}

/* The first error of a compiler's messages as one line; 1 if found. */
static int first_error(const char *msgs, char *out, size_t outlen)
{
	char ufile[PATH_MAX] = "";
	long uline = 0;
	const char *l = msgs;

	while (*l) {
		const char *eol = strchr(l, '\n');
		size_t len = eol ? (size_t)(eol - l) : strlen(l);
		char line[4096];
		const char *loc = line;
		long ln = 0;
		size_t fl;

		if (len >= sizeof(line))
			len = sizeof(line) - 1;
		memcpy(line, l, len);
		line[len] = 0;
		l = eol ? eol + 1 : l + len;
		while (*loc == ' ')
			loc++;
		if (starts(loc, "In file included from "))
			loc += strlen("In file included from ");
		else if (starts(loc, "from "))
			loc += 5;
		fl = parse_loc(loc, &ln);
		if (!fl)
			continue;
		char file[PATH_MAX];
		snprintf(file, sizeof(file), "%.*s", (int)fl, loc);
		const char *e = strstr(loc, ": error: ");
		const char *fe = strstr(loc, ": fatal error: ");
		if (!e && !fe) {
			if (user_file(file)) {
				snprintf(ufile, sizeof(ufile), "%s", file);
				uline = ln;
			}
			continue;
		}
		const char *msg = e ? e + strlen(": error: ") : fe + strlen(": fatal error: ");
		char m[2048];
		snprintf(m, sizeof(m), "%s", msg);
		if (starts(m, "#error ")) {
			memmove(m, m + 7, strlen(m + 7) + 1);
			size_t ml = strlen(m);
			if (ml >= 2 && m[0] == '"' && m[ml - 1] == '"') {
				m[ml - 1] = 0;
				memmove(m, m + 1, ml - 1);
			}
		}
		if (starts(m, "static assertion failed: "))
			memmove(m, m + 25, strlen(m + 25) + 1);
		if (!user_file(file) && ufile[0])
			snprintf(out, outlen, "%s:%ld: %s", shown(ufile), uline, m);
		else
			snprintf(out, outlen, "%s:%ld: %s", shown(file), ln, m);
		return 1;
	}
	return 0;
}

static void compile_failed(const char *errfile, const char *what)
{
	char *msgs = read_all(errfile, NULL), one[4096];

	if (verbose && msgs)
		fputs(msgs, stderr);
	if (msgs && first_error(msgs, one, sizeof(one)))
		die("%s (%s; -v shows all its messages)", one, what);
	die("%s failed: %s", what, msgs && *msgs ? msgs : "(no message)");
}

/* ---- the <<<>>> rewriter ------------------------------------------------ */

enum { T_ID, T_NUM, T_STR, T_PUNCT };

struct tok {
	size_t b, e;       /* [b, e) in the text                 */
	int kind;
	long line;         /* source line                        */
	int file;          /* index into files[]                 */
};

static char **files;
static size_t nfiles;

static int file_index(const char *name, size_t len)
{
	for (size_t i = 0; i < nfiles; i++)
		if (strlen(files[i]) == len && !memcmp(files[i], name, len))
			return (int)i;
	files = realloc(files, (nfiles + 1) * sizeof(*files));
	if (!files)
		die("out of memory");
	files[nfiles] = strndup(name, len);
	return (int)nfiles++;
}

static int is_id(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '$';
}

static struct tok *tokenize(const char *s, size_t n, size_t *ntok)
{
	size_t cap = 1 << 16, k = 0, i = 0;
	struct tok *t = malloc(cap * sizeof(*t));
	long line = 1;
	int file = file_index("?", 1), bol = 1;
	static const char *punct3[] = {"<<<", ">>>", "<<=", ">>=", "->*", "...", NULL};
	static const char *punct2[] = {"::", "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--",
				       "+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", ".*", NULL};

	while (t && i < n) {
		char c = s[i];
		if (c == '\n') {
			line++;
			bol = 1;
			i++;
			continue;
		}
		if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
			i++;
			continue;
		}
		if (bol && c == '#') {
			/* # LINE "FILE" flags, or #pragma and the like */
			size_t j = i + 1;
			while (j < n && s[j] == ' ')
				j++;
			if (j < n && s[j] >= '0' && s[j] <= '9') {
				long l = strtol(s + j, NULL, 10);
				const char *q = memchr(s + j, '"', n - j), *nl = memchr(s + j, '\n', n - j);
				if (q && (!nl || q < nl)) {
					const char *qe = q + 1;
					while (qe < s + n && *qe != '"') {
						if (*qe == '\\')
							qe++;
						qe++;
					}
					file = file_index(q + 1, (size_t)(qe - q - 1));
				}
				line = l - 1;
			}
			while (i < n && s[i] != '\n')
				i++;
			continue;
		}
		bol = 0;
		if (k == cap) {
			cap *= 2;
			struct tok *g = realloc(t, cap * sizeof(*t));
			if (!g) {
				free(t);
				t = NULL;
				break;
			}
			t = g;
		}
		struct tok *o = &t[k];
		o->b = i;
		o->line = line;
		o->file = file;
		if (c == 'R' && i + 1 < n && s[i + 1] == '"') {
			/* raw string R"delim( ... )delim" */
			size_t d = i + 2;
			while (d < n && s[d] != '(')
				d++;
			char end[20] = ")";
			size_t dl = d - (i + 2);
			if (dl > 16)
				dl = 16;
			memcpy(end + 1, s + i + 2, dl);
			end[1 + dl] = '"';
			end[2 + dl] = 0;
			const char *e = memmem(s + d, n - d, end, strlen(end));
			size_t stop = e ? (size_t)(e - s) + strlen(end) : n;
			for (size_t x = i; x < stop; x++)
				if (s[x] == '\n')
					line++;
			i = stop;
			o->kind = T_STR;
		} else if (c == '"' || c == '\'') {
			i++;
			while (i < n && s[i] != c && s[i] != '\n') {
				if (s[i] == '\\')
					i++;
				i++;
			}
			i++;
			o->kind = T_STR;
		} else if ((c >= '0' && c <= '9') || (c == '.' && i + 1 < n && s[i + 1] >= '0' && s[i + 1] <= '9')) {
			i++;
			while (i < n) {
				if ((s[i] == '+' || s[i] == '-') && strchr("eEpP", s[i - 1]))
					i++;
				else if (is_id(s[i]) || s[i] == '.' || (s[i] == '\'' && i + 1 < n && is_id(s[i + 1])))
					i++;
				else
					break;
			}
			o->kind = T_NUM;
		} else if (is_id(c)) {
			while (i < n && is_id(s[i]))
				i++;
			/* string literal prefixes: u8"..", L'..' */
			if (i < n && (s[i] == '"' || s[i] == '\'') && i - o->b <= 2)
				continue; /* re-lex from the quote as part of this token */
			o->kind = T_ID;
		} else {
			size_t m = 1;
			for (int p = 0; punct3[p]; p++)
				if (i + 3 <= n && !memcmp(s + i, punct3[p], 3))
					m = 3;
			if (m == 1)
				for (int p = 0; punct2[p]; p++)
					if (i + 2 <= n && !memcmp(s + i, punct2[p], 2))
						m = 2;
			i += m;
			o->kind = T_PUNCT;
		}
		o->e = i;
		k++;
	}
	if (!t)
		die("out of memory");
	*ntok = k;
	return t;
}

static int tok_is(const char *s, const struct tok *t, const char *w)
{
	size_t l = strlen(w);
	return t->e - t->b == l && !memcmp(s + t->b, w, l);
}

/* Index of the token that closes the bracket opened at i (or n). */
static size_t match_fwd(const char *s, const struct tok *t, size_t n, size_t i)
{
	int depth = 0;
	for (size_t j = i; j < n; j++) {
		if (t[j].kind != T_PUNCT)
			continue;
		char c = s[t[j].b];
		if (t[j].e - t[j].b == 1 && (c == '(' || c == '[' || c == '{'))
			depth++;
		else if (t[j].e - t[j].b == 1 && (c == ')' || c == ']' || c == '}'))
			if (--depth == 0)
				return j;
	}
	return n;
}

/* First token of the callee that ends at token i (the one before <<<). */
static long callee_start(const char *s, const struct tok *t, long i)
{
	long p = i;
	for (;;) {
		if (p < 0)
			return -1;
		if (tok_is(s, &t[p], ">") || tok_is(s, &t[p], ">>")) {
			int depth = 0;
			for (; p >= 0; p--) {
				if (tok_is(s, &t[p], ">"))
					depth++;
				else if (tok_is(s, &t[p], ">>"))
					depth += 2;
				else if (tok_is(s, &t[p], "<"))
					depth--;
				else if (tok_is(s, &t[p], "<<"))
					depth -= 2;
				if (depth <= 0)
					break;
			}
			p--; /* the template's name */
			if (p < 0 || t[p].kind != T_ID)
				return -1;
		} else if (tok_is(s, &t[p], ")")) {
			int depth = 0;
			for (; p >= 0; p--) {
				if (tok_is(s, &t[p], ")"))
					depth++;
				else if (tok_is(s, &t[p], "("))
					if (--depth == 0)
						break;
			}
			if (p < 0)
				return -1;
			if (p == 0 || t[p - 1].kind != T_ID || tok_is(s, &t[p - 1], "return"))
				return p;
			p--; /* a call: its function name */
		} else if (t[p].kind != T_ID) {
			return -1;
		}
		if (p >= 1 && (tok_is(s, &t[p - 1], "::") || tok_is(s, &t[p - 1], ".") || tok_is(s, &t[p - 1], "->"))) {
			if (p >= 2 && (t[p - 2].kind == T_ID || tok_is(s, &t[p - 2], ">") || tok_is(s, &t[p - 2], ">>") ||
				       tok_is(s, &t[p - 2], ")"))) {
				p -= 2;
				if (tok_is(s, &t[p + 1], "::") && tok_is(s, &t[p], "template") && p >= 1)
					p--;
				continue;
			}
			return p - 1; /* ::name */
		}
		return p;
	}
}

/* Copies s[b, e) onto one line: each newline becomes a space (counted in
 * *newlines), and a line that starts with '#' (the `# N "file" 3 4` line
 * markers g++ -E puts around a macro from a system header, such as NULL's
 * __null, inside a multi-line launch) is left out (counted in *markers). */
static void put_squashed(FILE *o, const char *s, size_t b, size_t e, int *newlines, int *markers)
{
	int bol = 0;

	for (size_t x = b; x < e; x++) {
		if (bol && s[x] == '#') {
			while (x < e && s[x] != '\n')
				x++;
			(*markers)++;
			if (x == e)
				break;
		}
		if (s[x] == '\n') {
			(*newlines)++;
			fputc(' ', o);
			bol = 1;
		} else {
			fputc(s[x], o);
			if (s[x] != ' ' && s[x] != '\t')
				bol = 0;
		}
	}
}

/* Whether the identifier at i names the constructor attribute of a host
 * function: __attribute__((..., constructor[(N)], ...)) or
 * [[gnu::constructor]].  Returns the index just past it (past "(N)"), 0 if not. */
static size_t constructor_attr(const char *s, const struct tok *t, size_t n, size_t i)
{
	if (!tok_is(s, &t[i], "constructor") && !tok_is(s, &t[i], "__constructor__"))
		return 0;
	size_t end = i + 1;
	if (end < n && tok_is(s, &t[end], "(")) {
		end = match_fwd(s, t, n, end);
		if (end >= n)
			return 0;
		end++;
	}
	if (i >= 2 && tok_is(s, &t[i - 1], "::") && (tok_is(s, &t[i - 2], "gnu") || tok_is(s, &t[i - 2], "__gnu__")))
		return end;
	/* back over "a, b(1), " to the attribute list's "((" */
	for (long j = (long)i - 1; j >= 2; j--) {
		if (tok_is(s, &t[j], "(") && tok_is(s, &t[j - 1], "("))
			return tok_is(s, &t[j - 2], "__attribute__") || tok_is(s, &t[j - 2], "__attribute") ? end : 0;
		if (tok_is(s, &t[j], ")")) {
			int depth = 0;
			for (; j >= 0; j--) {
				if (tok_is(s, &t[j], ")"))
					depth++;
				else if (tok_is(s, &t[j], "(") && --depth == 0)
					break;
			}
			if (j < 0)
				return 0;
			continue;
		}
		if (t[j].kind != T_ID && !tok_is(s, &t[j], ","))
			return 0;
	}
	return 0;
}

/* Rewrites the launches of the preprocessed unit in -> out, and the
 * constructor attributes of the user's host functions to "unused" (the host
 * code of a kernel library never runs: a program's constructor must not run
 * when the driver loads its kernels, nor drag its host calls into the link);
 * refuses inline assembly in the user's files.  Returns the number of
 * launches. */
static int rewrite(const char *in, const char *out)
{
	size_t n, nt, copied = 0;
	char *s = read_all(in, &n);
	struct tok *t;
	FILE *o;
	int launches = 0;

	if (!s)
		die("cannot read %s", in);
	t = tokenize(s, n, &nt);
	for (size_t i = 0; i < nt; i++) {
		const char *f = files[t[i].file];
		if (t[i].kind == T_ID && user_file(f) &&
		    (tok_is(s, &t[i], "asm") || tok_is(s, &t[i], "__asm__") || tok_is(s, &t[i], "__asm")))
			die("%s:%ld: inline assembly (asm) is not supported: the CPU device compiles kernels for the host "
			    "processor; write the operation in C++ (or guard it so g++ does not see it)",
			    shown(f), t[i].line);
	}
	o = fopen(out, "wb");
	if (!o)
		die("cannot write %s", out);
	for (size_t i = 0; i < nt; i++) {
		size_t ctor_end = t[i].kind == T_ID && user_file(files[t[i].file]) ? constructor_attr(s, t, nt, i) : 0;
		if (ctor_end) {
			if (verbose)
				fprintf(stderr, "ddp-cpu-kernels: %s:%ld: host constructor left out of the kernel library\n",
					shown(files[t[i].file]), t[i].line);
			fwrite(s + copied, 1, t[i].b - copied, o);
			fputs("unused", o);
			for (size_t k = i + 1; k < ctor_end; k++) /* keep the line count of "(N)" */
				for (size_t c = t[k].b; c < t[k].e; c++)
					if (s[c] == '\n')
						fputc('\n', o);
			copied = t[ctor_end - 1].e;
			i = ctor_end - 1;
			continue;
		}
		if (!tok_is(s, &t[i], "<<<") || (i > 0 && tok_is(s, &t[i - 1], "operator")))
			continue;
		const char *f = files[t[i].file];
		size_t j, open, close;
		int depth = 0;
		for (j = i + 1; j < nt; j++) {
			if (t[j].kind == T_PUNCT && t[j].e - t[j].b == 1 && strchr("([{", s[t[j].b]))
				depth++;
			else if (t[j].kind == T_PUNCT && t[j].e - t[j].b == 1 && strchr(")]}", s[t[j].b]))
				depth--;
			else if (depth == 0 && tok_is(s, &t[j], ">>>"))
				break;
			if (depth < 0)
				break;
		}
		if (j >= nt || depth < 0)
			die("%s:%ld: a <<< without its >>>: cannot read this kernel launch", shown(f), t[i].line);
		open = j + 1;
		if (open >= nt || !tok_is(s, &t[open], "("))
			die("%s:%ld: a kernel launch <<<...>>> not followed by its arguments in ( )", shown(f), t[i].line);
		close = match_fwd(s, t, nt, open);
		if (close >= nt)
			die("%s:%ld: a kernel launch whose argument list is not closed", shown(f), t[i].line);
		long start = i ? callee_start(s, t, (long)i - 1) : -1;
		if (start < 0 || t[start].b < copied)
			die("%s:%ld: cannot find the kernel this <<<>>> launches (write it as name<<<...>>>(...))",
			    shown(f), t[i].line);
		int nl = 0, markers = 0;
		fwrite(s + copied, 1, t[start].b - copied, o);
		fputs("(::sim_launch_site(), (void)sizeof((", o);
		put_squashed(o, s, t[i].e, t[j].b, &nl, &markers);
		fputs("), 0), (void)sizeof(decltype(", o);
		put_squashed(o, s, t[start].b, t[i].b, &nl, &markers);
		put_squashed(o, s, t[open].b, t[close].e, &nl, &markers);
		fputs(") *))", o);
		if (markers) /* the rest of the line is the launch's last line */
			fprintf(o, "\n# %ld \"%s\"\n", t[close].line, files[t[close].file]);
		else
			while (nl-- > 0)
				fputc('\n', o);
		copied = t[close].e;
		i = close;
		launches++;
	}
	fwrite(s + copied, 1, n - copied, o);
	if (fclose(o))
		die("cannot write %s", out);
	free(t);
	free(s);
	return launches;
}

/* ---- options ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: ddp-cpu-kernels [-o OUT.kern.so] [-I DIR] [-D NAME[=V]] [-U NAME] [-std=c++17|c++20]\n"
		   "                       [-O LEVEL] [-g] [-v] [--keep] FILE.cu...\n"
		   "Builds the CPU device's kernel library of a CUDA C program (default <first file's stem>.kern.so);\n"
		   "put it next to the program or list it in SIMCUDA_KERNELS.  See docs/cpu-device-kernels.md.\n");
}

/* A CUDA toolkit include folder (its headers must not replace the CPU device's). */
static int toolkit_dir(const char *d)
{
	char p[PATH_MAX];
	snprintf(p, sizeof(p), "%s/cuda_runtime_api.h", d);
	return access(p, F_OK) == 0;
}

#define MAX_SRCS 256

/* The command line, and the tools it runs. */
struct options {
	const char *out, *std, *opt;
	const char *cxx, *nvcc;
	char *srcs[MAX_SRCS];
	int nsrc, debug;
	struct argv_buf user;    /* -I -D -U for nvcc                          */
	struct argv_buf userinc; /* the same for g++, minus toolkit folders     */
	char outbuf[PATH_MAX];
};

/* An option that takes a value ("-o X", "-IX"): records it. */
static void option_value(struct options *o, char flag, const char *val)
{
	switch (flag) {
	case 'o': o->out = val; break;
	case 'I':
		addf(&o->user, "-I%s", val);
		if (!toolkit_dir(val))
			addf(&o->userinc, "-I%s", val);
		break;
	case 'D': addf(&o->user, "-D%s", val); addf(&o->userinc, "-D%s", val); break;
	case 'U': addf(&o->user, "-U%s", val); addf(&o->userinc, "-U%s", val); break;
	}
}

/* Reads the command line into o.  Returns -1 to go on, else the exit
 * status (0 after --help, 2 for a usage error). */
static int parse_options(int argc, char **argv, struct options *o)
{
	o->std = "-std=c++17";
	o->opt = "-O2";
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-v")) {
			verbose = 1;
		} else if (!strcmp(a, "--keep")) {
			keep = 1;
		} else if (!strcmp(a, "-g")) {
			o->debug = 1;
		} else if (starts(a, "-std=")) {
			o->std = a;
		} else if (starts(a, "-O")) {
			o->opt = a;
		} else if (!strcmp(a, "-o") || !strcmp(a, "-I") || !strcmp(a, "-D") || !strcmp(a, "-U")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "ddp-cpu-kernels: %s needs a value\n", a);
				return 2;
			}
			val = argv[++i];
		} else if ((starts(a, "-I") || starts(a, "-D") || starts(a, "-U")) && a[2]) {
			val = a + 2;
		} else if (a[0] == '-') {
			fprintf(stderr, "ddp-cpu-kernels: unknown option %s\n", a);
			usage(stderr);
			return 2;
		} else {
			if (o->nsrc == MAX_SRCS) {
				fprintf(stderr, "ddp-cpu-kernels: too many files\n");
				return 2;
			}
			o->srcs[o->nsrc++] = argv[i];
			continue;
		}
		if (val)
			option_value(o, a[1], val);
	}
	if (!o->nsrc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

/* Every source readable, the output named, the temporary folder made, the
 * tools chosen.  Returns -1 to go on, else the exit status. */
static int prepare(struct options *o)
{
	if (!getcwd(cwd, sizeof(cwd)))
		cwd[0] = 0;
	for (int i = 0; i < o->nsrc; i++) {
		if (access(o->srcs[i], R_OK) != 0) {
			fprintf(stderr, "ddp-cpu-kernels: cannot read %s: %s\n", o->srcs[i], strerror(errno));
			return 1;
		}
	}
	if (!o->out) {
		const char *base = strrchr(o->srcs[0], '/');
		base = base ? base + 1 : o->srcs[0];
		const char *dot = strrchr(base, '.');
		snprintf(o->outbuf, sizeof(o->outbuf), "%.*s.kern.so",
			 (int)(dot && dot != base ? dot - base : (long)strlen(base)), base);
		o->out = o->outbuf;
	}
	const char *t = getenv("TMPDIR");
	snprintf(tmpdir, sizeof(tmpdir), "%s/ddp-cpu-kernels.XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "ddp-cpu-kernels: cannot create a temporary directory in %s: %s\n", t && *t ? t : "/tmp",
			strerror(errno));
		tmpdir[0] = 0;
		return 1;
	}
	/* Headers come only from the command line. */
	unsetenv("CPATH");
	unsetenv("CPLUS_INCLUDE_PATH");
	unsetenv("C_INCLUDE_PATH");
	o->cxx = getenv("CXX") && *getenv("CXX") ? getenv("CXX") : "g++";
	o->nvcc = getenv("NVCC") && *getenv("NVCC") ? getenv("NVCC") : SIM_NVCC;
	return -1;
}

/* ---- one source file: nvcc, registry, preprocessing, rewrite, compile --- */

/* nvcc's first "FILE(LINE): error: MSG" as one line; never returns. */
static void nvcc_failed(const char *err, const char *src)
{
	char *m = read_all(err, NULL), one[4096];

	if (verbose && m)
		fputs(m, stderr);
	char *e = m ? strstr(m, "): error: ") : NULL;
	if (e) {
		char *ls = e;
		while (ls > m && ls[-1] != '\n')
			ls--;
		char *eol = strchr(e, '\n');
		if (eol)
			*eol = 0;
		snprintf(one, sizeof(one), "%s", ls);
		char *paren = strrchr(one, '(');
		if (paren && strstr(paren, "): error: ")) {
			long ln = strtol(paren + 1, NULL, 10);
			*paren = 0;
			die("%s:%ld: %s (nvcc; -v shows all its messages)", shown(one), ln, strstr(e, "): error: ") + 10);
		}
	}
	die("nvcc could not compile %s%s", src, verbose ? "" : " (-v shows its messages)");
}

/* 1. nvcc: the kernels as nvcc sees them */
static void nvcc_fatbin(const struct options *o, const char *src, const char *fatbin, const char *err)
{
	struct argv_buf a = {{0}, 0};

	add_words(&a, o->nvcc);
	add(&a, "-fatbin");
	add(&a, "-arch=sm_90");
	add(&a, o->std);
	for (int u = 0; u < o->user.n; u++)
		add(&a, o->user.v[u]);
	add(&a, "-o");
	add(&a, fatbin);
	add(&a, src);
	if (run(&a, NULL, err))
		nvcc_failed(err, src);
}

/* 2. the registry unit, and the kernels' names into the export map */
static void registry(const char *src, const char *fatbin, const char *reg, const char *list, const char *err,
		     FILE *ex)
{
	struct argv_buf a = {{0}, 0};

	add(&a, SIM_KERNREG_PATH);
	add(&a, fatbin);
	add(&a, src);
	if (run(&a, reg, err)) {
		dump(err);
		die("sim-kernreg failed for %s", src);
	}
	a.n = 0;
	add(&a, SIM_KERNREG_PATH);
	add(&a, "--list");
	add(&a, fatbin);
	if (run(&a, list, err)) {
		dump(err);
		die("sim-kernreg --list failed for %s", src);
	}
	char *names = read_all(list, NULL);
	for (char *sv = NULL, *nm = strtok_r(names, "\n", &sv); nm; nm = strtok_r(NULL, "\n", &sv))
		fprintf(ex, "    %s;\n", nm);
	free(names);
}

/* 3. preprocess as nvcc's device pass, with the CPU device's headers */
static void preprocess(const struct options *o, int part, const char *reg, const char *ii, const char *err)
{
	struct argv_buf a = {{0}, 0};

	add_words(&a, o->cxx);
	add(&a, o->std);
	add(&a, "-E");
	add(&a, "-x");
	add(&a, "c++");
	add(&a, "-D__CUDACC__");
	add(&a, "-D__NVCC__");
	add(&a, "-D__CUDA_ARCH__=900");
	addf(&a, "-D__CUDACC_VER_MAJOR__=%d", SIM_CUDA_VERSION / 1000);
	addf(&a, "-D__CUDACC_VER_MINOR__=%d", SIM_CUDA_VERSION % 1000 / 10);
	addf(&a, "-DSIM_KERNEL_PART=%d", part);
	addf(&a, "-DSIM_CUDA_H_PATH=\"%s\"", SIM_CUDA_H);
	addf(&a, "-I%s", SIM_INC_DIR);
	for (int u = 0; u < o->userinc.n; u++)
		add(&a, o->userinc.v[u]);
	addf(&a, "-I%s", SIM_POISON_DIR);
	add(&a, "-include");
	addf(&a, "%s/sim_kernel.h", SIM_INC_DIR);
	/* nvcc includes cuda_runtime.h into every .cu file before the
	 * first line: cudaMalloc & co. need no #include */
	add(&a, "-include");
	addf(&a, "%s/cuda_runtime.h", SIM_INC_DIR);
	add(&a, reg);
	add(&a, "-o");
	add(&a, ii);
	if (run(&a, NULL, err))
		compile_failed(err, "g++ -E");
}

/* 5. compile the rewritten unit */
static void compile_part(const struct options *o, const char *rw, const char *obj, const char *err)
{
	struct argv_buf a = {{0}, 0};

	add_words(&a, o->cxx);
	add(&a, o->std);
	add(&a, "-x");
	add(&a, "c++-cpp-output");
	add(&a, "-c");
	add(&a, o->opt);
	if (o->debug)
		add(&a, "-g");
	add(&a, "-fPIC");
	add(&a, "-w");
	add(&a, "-ffunction-sections");
	add(&a, "-fdata-sections");
	add(&a, rw);
	add(&a, "-o");
	add(&a, obj);
	if (run(&a, NULL, err))
		compile_failed(err, "g++");
}

/* Source i into tmpdir/<i>.o, its kernels' names into the export map. */
static void build_part(const struct options *o, int i, FILE *ex)
{
	char *fatbin = tmp_path("%d.fatbin", i), *reg = tmp_path("%d.reg.cpp", i), *list = tmp_path("%d.list", i);
	char *ii = tmp_path("%d.ii", i), *rw = tmp_path("%d.rw.ii", i), *obj = tmp_path("%d.o", i);
	char *err = tmp_path("%d.err", i);

	nvcc_fatbin(o, o->srcs[i], fatbin, err);
	registry(o->srcs[i], fatbin, reg, list, err, ex);
	preprocess(o, i, reg, ii, err);
	/* 4. launches out, inline assembly refused */
	int nl = rewrite(ii, rw);
	if (verbose)
		fprintf(stderr, "ddp-cpu-kernels: %s: %d <<<>>> launch%s rewritten\n", o->srcs[i], nl, nl == 1 ? "" : "es");
	compile_part(o, rw, obj, err);
}

/* ---- the library: joining unit, extern __shared__ storage, link -------- */

/* The unit joining the parts' tables, compiled to joino. */
static void join_parts(const struct options *o, const char *join, const char *joino, const char *err)
{
	FILE *j = fopen(join, "w");
	struct argv_buf a = {{0}, 0};

	if (!j)
		die("cannot write %s", join);
	fprintf(j, "// Generated by ddp-cpu-kernels: the table of the library's %d part(s).\n", o->nsrc);
	for (int i = 0; i < o->nsrc; i++)
		fprintf(j, "extern \"C\" SIM_HIDDEN const struct sim_kernel_part sim_kernel_part_%d;\n", i);
	fputs("SIM_KERNEL_TABLE_PARTS(", j);
	for (int i = 0; i < o->nsrc; i++)
		fprintf(j, "%s&sim_kernel_part_%d", i ? ", " : "", i);
	fputs(");\n", j);
	if (fclose(j))
		die("cannot write %s", join);
	add_words(&a, o->cxx);
	add(&a, "-std=c++17");
	add(&a, "-c");
	add(&a, "-fPIC");
	add(&a, "-O2");
	addf(&a, "-I%s", SIM_INC_DIR);
	add(&a, "-include");
	addf(&a, "%s/sim_kernel.h", SIM_INC_DIR);
	add(&a, join);
	add(&a, "-o");
	add(&a, joino);
	if (run(&a, NULL, err))
		compile_failed(err, "g++ (the joining unit)");
}

/* One relocatable object of the parts (all), then storage for their
 * extern __shared__ arrays (dyno). */
static void merge_parts(const struct options *o, const char *all, const char *dyno, const char *err)
{
	char *dyns = tmp_path("dynshared.s");
	struct argv_buf a = {{0}, 0};

	add(&a, "ld");
	add(&a, "-r");
	add(&a, "-o");
	add(&a, all);
	for (int i = 0; i < o->nsrc; i++)
		add(&a, tmp_path("%d.o", i));
	if (run(&a, NULL, err)) {
		dump(err);
		die("ld -r failed");
	}
	a.n = 0;
	add(&a, "sh");
	addf(&a, "%s/dynshared.sh", SIM_SCRIPT_DIR);
	add(&a, all);
	addf(&a, "%d", SIM_DYN_SHARED_BYTES);
	if (run(&a, dyns, err)) {
		dump(err);
		die("dynshared.sh failed");
	}
	a.n = 0;
	add_words(&a, o->cxx);
	add(&a, "-c");
	add(&a, "-x");
	add(&a, "assembler");
	add(&a, dyns);
	add(&a, "-o");
	add(&a, dyno);
	if (run(&a, NULL, err)) {
		dump(err);
		die("assembling the extern __shared__ storage failed");
	}
}

static void link_cmd(struct argv_buf *a, const struct options *o, const char *out, const char *all,
		     const char *dyno, const char *joino, const char *exports)
{
	add_words(a, o->cxx);
	add(a, "-shared");
	add(a, "-o");
	add(a, out);
	add(a, all);
	add(a, dyno);
	add(a, joino);
	add(a, "-Wl,--gc-sections");
	add(a, "-Wl,-z,defs");
	addf(a, "-Wl,--version-script=%s", exports);
	add(a, "-lm");
}

/* The first line of a user's file in addr2line's answer (innermost inlined
 * call first) for the reference to sym in section sec of obj, into where. */
static void user_line_of(const char *obj, const char *sec, const char *sym, const char *err, char *where, size_t len)
{
	struct argv_buf a = {{0}, 0};
	char *relocs = tmp_path("locate.relocs"), *lines = tmp_path("locate.lines"), off[80] = "";

	add(&a, "objdump");
	add(&a, "-r");
	addf(&a, "--section=%s", sec);
	add(&a, obj);
	if (run(&a, relocs, err))
		return;
	char *m = read_all(relocs, NULL), *save = NULL;
	size_t sl = strlen(sym);
	for (char *l = m ? strtok_r(m, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		char o[64], type[64], value[512];
		if (sscanf(l, "%63s %63s %511s", o, type, value) == 3 && !strncmp(value, sym, sl) &&
		    (value[sl] == 0 || value[sl] == '-' || value[sl] == '+')) {
			snprintf(off, sizeof(off), "0x%s", o);
			break;
		}
	}
	if (!off[0])
		return;
	a.n = 0;
	add(&a, "addr2line");
	add(&a, "-i");
	add(&a, "-e");
	add(&a, obj);
	addf(&a, "--section=%s", sec);
	add(&a, off);
	if (run(&a, lines, err))
		return;
	m = read_all(lines, NULL);
	for (char *l = m ? strtok_r(m, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		char *c = strrchr(l, ':'), *d = c ? strchr(c, ' ') : NULL;
		if (d)
			*d = 0; /* " (discriminator N)" */
		if (c && c[1] != '?' && c[1] != '0') {
			*c = 0;
			if (user_file(l)) {
				snprintf(where, len, "%s:%s", shown(l), c + 1);
				return;
			}
		}
	}
}

/* Where the undefined reference to sym is made, as "FILE:LINE" of the
 * user's source in where: the parts compiled again with -g (only on
 * failure: it costs a second compile) and linked again without demangling,
 * so the linker names the function, i.e. the section, that makes it; then
 * addr2line walks the inlined calls out to the user's line. */
static void locate_undefined(const struct options *o, const char *sym, const char *dyno, const char *joino,
			     const char *exports, char *where, size_t len)
{
	struct options g = *o;
	struct argv_buf a = {{0}, 0};
	char *err = tmp_path("locate.err"), *all = tmp_path("all.g.o");

	g.debug = 1;
	add(&a, "ld");
	add(&a, "-r");
	add(&a, "-o");
	add(&a, all);
	for (int i = 0; i < o->nsrc; i++) {
		char *obj = tmp_path("%d.g.o", i);
		compile_part(&g, tmp_path("%d.rw.ii", i), obj, err);
		add(&a, obj);
	}
	if (run(&a, NULL, err))
		return;
	a.n = 0;
	link_cmd(&a, o, tmp_path("locate.so"), all, dyno, joino, exports);
	add(&a, "-Wl,--no-demangle");
	if (!run(&a, NULL, err))
		return;
	char *m = read_all(err, NULL), pat[512];
	snprintf(pat, sizeof(pat), "undefined reference to `%s'", sym);
	char *u = m ? strstr(m, pat) : NULL, *fn = NULL;
	for (char *f = m; u && (f = strstr(f, "in function `")) && f < u; f++)
		fn = f + strlen("in function `");
	char *q = fn ? strchr(fn, '\'') : NULL;
	if (!q)
		return;
	*q = 0;
	/* -ffunction-sections: the function's section is .text.<fn> (or
	 * .text.startup.<fn>, .text.unlikely.<fn>, ...) */
	char *secs = tmp_path("locate.sections");
	a.n = 0;
	add(&a, "objdump");
	add(&a, "-h");
	add(&a, all);
	if (run(&a, secs, err))
		return;
	char *h = read_all(secs, NULL), *save = NULL;
	size_t fl = strlen(fn);
	for (char *l = h ? strtok_r(h, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
		char idx[32], name[1024];
		if (sscanf(l, "%31s %1023s", idx, name) != 2 || strncmp(name, ".text", 5))
			continue;
		size_t nl = strlen(name);
		if (nl > fl && name[nl - fl - 1] == '.' && !strcmp(name + nl - fl, fn)) {
			user_line_of(all, name, sym, err, where, len);
			return;
		}
	}
}

/* The linker's first undefined reference as one line, placed at the source
 * line that makes it; never returns. */
static void link_failed(const struct options *o, const char *err, const char *dyno, const char *joino,
			const char *exports)
{
	char *m = read_all(err, NULL);

	if (verbose && m)
		fputs(m, stderr);
	unlink(o->out);
	char *u = m ? strstr(m, "undefined reference to `") : NULL;
	if (u) {
		u += strlen("undefined reference to `");
		char *q = strchr(u, '\'');
		if (q)
			*q = 0;
		char *fn = strstr(m, "in function `"), caller[1024] = "", where[PATH_MAX + 32] = "";
		if (fn && fn < u) {
			fn += strlen("in function `");
			char *fq = strchr(fn, '\'');
			if (fq && starts(fn, "_GLOBAL__sub_I"))
				snprintf(caller, sizeof(caller), " (in a global object's initialiser)");
			else if (fq)
				snprintf(caller, sizeof(caller), " (in %.*s)", (int)(fq - fn), fn);
		}
		locate_undefined(o, u, dyno, joino, exports, where, sizeof(where));
		die("%s: the kernel library needs %s%s, host code it cannot link.  It keeps only what the kernels "
		    "and the global initialisers reach: if a kernel or __device__ function calls this, keep host calls "
		    "out of device code; if a global object's initialiser does, create that object inside a function "
		    "(e.g. main) instead", where[0] ? where : "(the linker did not say which file)", u, caller);
	}
	die("linking %s failed%s", o->out, verbose ? "" : " (-v shows the linker's messages)");
}

/* link: only what the kernels reach */
static void link_library(const struct options *o, const char *all, const char *dyno, const char *joino,
			 const char *exports, const char *err)
{
	struct argv_buf a = {{0}, 0};

	link_cmd(&a, o, o->out, all, dyno, joino, exports);
	if (run(&a, NULL, err))
		link_failed(o, err, dyno, joino, exports);
}

/* every kernel under nvcc's mangled name */
static void check_kernel_names(const struct options *o, const char *err)
{
	struct argv_buf a = {{0}, 0};

	for (int i = 0; i < o->nsrc; i++) {
		a.n = 0;
		add(&a, "sh");
		addf(&a, "%s/check_names.sh", SIM_SCRIPT_DIR);
		add(&a, SIM_KERNREG_PATH);
		add(&a, tmp_path("%d.fatbin", i));
		add(&a, o->out);
		if (run(&a, NULL, err)) {
			char *m = read_all(err, NULL);
			unlink(o->out);
			if (verbose && m)
				fputs(m, stderr);
			char *nl = m ? strstr(m, ":\n") : NULL;
			for (char *c = nl ? nl + 1 : NULL; c && *c; c++)
				if (*c == '\n' || *c == '\t')
					*c = ' ';
			die("%s: kernels g++ did not define under nvcc's names (static kernels, or mangling differs):%s",
			    shown(o->srcs[i]), nl ? nl + 1 : " ?");
		}
	}
}

int main(int argc, char **argv)
{
	static struct options o;
	int rc = parse_options(argc, argv, &o);

	if (rc < 0)
		rc = prepare(&o);
	if (rc >= 0)
		return rc;

	char *exports = tmp_path("exports.map");
	FILE *ex = fopen(exports, "w");
	if (!ex)
		die("cannot write %s", exports);
	fputs("{\n  global:\n    sim_kernel_table;\n", ex);
	for (int i = 0; i < o.nsrc; i++)
		build_part(&o, i, ex);
	fputs("  local:\n    *;\n};\n", ex);
	if (fclose(ex))
		die("cannot write %s", exports);

	char *join = tmp_path("join.cpp"), *joino = tmp_path("join.o"), *err = tmp_path("link.err");
	char *all = tmp_path("all.o"), *dyno = tmp_path("dynshared.o");
	join_parts(&o, join, joino, err);
	merge_parts(&o, all, dyno, err);
	link_library(&o, all, dyno, joino, exports, err);
	check_kernel_names(&o, err);
	if (verbose)
		fprintf(stderr, "ddp-cpu-kernels: wrote %s\n", o.out);
	cleanup();
	return 0;
}
