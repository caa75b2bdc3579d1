/* SPDX-License-Identifier: MIT
 *
 * ddp_sig.c - demangled-signature reader (see ddp_sig.h).
 *
 * Contract: pure functions of their input; no allocation; thread-safe.
 */
#include <string.h>
#include "ddp_sig.h"

static const struct {
	const char *name;
	enum ddp_dtype t;
} dtype_names[] = {
	{ "float", DDP_DT_F32 },
	{ "double", DDP_DT_F64 },
	{ "__half", DDP_DT_F16 },
	{ "half", DDP_DT_F16 },
	{ "c10::Half", DDP_DT_F16 },
	{ "at::Half", DDP_DT_F16 },
	{ "__nv_half", DDP_DT_F16 },
	{ "__nv_bfloat16", DDP_DT_BF16 },
	{ "c10::BFloat16", DDP_DT_BF16 },
	{ "at::BFloat16", DDP_DT_BF16 },
	{ "nv_bfloat16", DDP_DT_BF16 },
	{ "signed char", DDP_DT_I8 },
	{ "char", DDP_DT_I8 },
	{ "unsigned char", DDP_DT_U8 },
	{ "short", DDP_DT_I16 },
	{ "unsigned short", DDP_DT_U16 },
	{ "int", DDP_DT_I32 },
	{ "unsigned int", DDP_DT_U32 },
	{ "unsigned", DDP_DT_U32 },
	{ "long", DDP_DT_I64 },
	{ "unsigned long", DDP_DT_U64 },
	{ "long long", DDP_DT_I64 },
	{ "unsigned long long", DDP_DT_U64 },
	{ "bool", DDP_DT_BOOL },
	{ "void", DDP_DT_VOID },
};

static int is_ident(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == ':';
}

/* Does [s, s+len) contain `word` as a whole word outside <...>? */
static int has_word(const char *s, size_t len, const char *word)
{
	size_t wl = strlen(word);
	int depth = 0;
	for (size_t i = 0; i + wl <= len; i++) {
		if (s[i] == '<')
			depth++;
		else if (s[i] == '>')
			depth--;
		if (depth == 0 && memcmp(s + i, word, wl) == 0 && (i == 0 || !is_ident(s[i - 1])) &&
		    (i + wl == len || !is_ident(s[i + wl])))
			return 1;
	}
	return 0;
}

enum ddp_dtype ddp_sig_dtype(const char *type, size_t len)
{
	/* normalise: drop const/volatile words and collapse blanks */
	char buf[128];
	size_t n = 0;
	size_t i = 0;
	while (i < len && n < sizeof buf - 1) {
		if (type[i] == ' ') {
			i++;
			continue;
		}
		size_t j = i;
		while (j < len && type[j] != ' ')
			j++;
		size_t wl = j - i;
		if (!((wl == 5 && memcmp(type + i, "const", 5) == 0) ||
		      (wl == 8 && memcmp(type + i, "volatile", 8) == 0))) {
			if (n && n < sizeof buf - 1)
				buf[n++] = ' ';
			for (size_t k = i; k < j && n < sizeof buf - 1; k++)
				buf[n++] = type[k];
		}
		i = j;
	}
	buf[n] = '\0';
	for (size_t k = 0; k < sizeof dtype_names / sizeof dtype_names[0]; k++)
		if (strcmp(buf, dtype_names[k].name) == 0)
			return dtype_names[k].t;
	return DDP_DT_UNKNOWN;
}

static void parse_param(const char *s, size_t off, size_t len, struct ddp_sig_param *p)
{
	const char *t = s + off;
	/* trim */
	while (len && t[0] == ' ')
		t++, off++, len--;
	while (len && t[len - 1] == ' ')
		len--;
	p->off = (uint16_t)off;
	p->len = (uint16_t)len;
	/* drop trailing qualifiers of the pointer itself */
	size_t end = len;
	for (;;) {
		while (end && t[end - 1] == ' ')
			end--;
		if (end >= 12 && memcmp(t + end - 12, "__restrict__", 12) == 0)
			end -= 12;
		else if (end >= 8 && memcmp(t + end - 8, "restrict", 8) == 0 &&
			 (end == 8 || !is_ident(t[end - 9])))
			end -= 8;
		else if (end >= 5 && memcmp(t + end - 5, "const", 5) == 0 && (end == 5 || !is_ident(t[end - 6])))
			end -= 5;
		else
			break;
	}
	size_t stars = 0, last_star = end;
	while (end && (t[end - 1] == '*' || t[end - 1] == ' ' || t[end - 1] == '&')) {
		if (t[end - 1] != ' ') {
			stars++;
			last_star = end - 1;
		}
		end--;
	}
	(void)last_star;
	p->depth = (uint8_t)stars;
	if (stars) {
		/* const-ness of the pointee: the segment after the previous '*' */
		size_t seg = end;
		while (seg && t[seg - 1] != '*')
			seg--;
		p->ptype = DDP_PT_POINTER;
		p->is_const = (uint8_t)has_word(t + seg, end - seg, "const");
		p->dtype = stars == 1 ? (uint8_t)ddp_sig_dtype(t, end) : DDP_DT_UNKNOWN;
	} else {
		p->is_const = 0;
		p->dtype = (uint8_t)ddp_sig_dtype(t, end);
		p->ptype = p->dtype != DDP_DT_UNKNOWN ? DDP_PT_SCALAR : DDP_PT_STRUCT;
	}
}

/* First arithmetic type among the words of [s, s+len). */
static uint8_t first_dtype(const char *s, size_t len)
{
	for (size_t i = 0; i < len;) {
		if (!is_ident(s[i])) {
			i++;
			continue;
		}
		size_t j = i;
		while (j < len && is_ident(s[j]))
			j++;
		enum ddp_dtype t = ddp_sig_dtype(s + i, j - i);
		if (t != DDP_DT_UNKNOWN && t != DDP_DT_VOID && t != DDP_DT_BOOL)
			return (uint8_t)t;
		i = j;
	}
	return DDP_DT_UNKNOWN;
}

ddp_result ddp_sig_parse(const char *sig, struct ddp_sig *out)
{
	size_t n = strlen(sig);

	memset(out, 0, sizeof *out);
	if (n == 0 || n > 65535)
		return DDP_ERR_INVALID;
	/* the parameter list: the parenthesis group ending the signature */
	size_t close = n;
	while (close && sig[close - 1] == ' ')
		close--;
	if (!close || sig[close - 1] != ')')
		return DDP_ERR_INVALID;
	close--;
	size_t open = close;
	int depth = 0;
	for (;;) {
		if (sig[open] == ')')
			depth++;
		else if (sig[open] == '(' && --depth == 0)
			break;
		if (open == 0)
			return DDP_ERR_INVALID;
		open--;
	}
	/* the name: before '(' and its template arguments; skip a return type */
	size_t name_end = open;
	if (name_end && sig[name_end - 1] == '>') {
		/* the matching '<'; angle brackets inside (...) are operators of a
		 * template-argument expression ("f<((1)>(2))>"), not brackets.  No
		 * match (unbalanced, "f<(8)>>(2)>"): no template part. */
		size_t tmpl_close = name_end - 1, k = name_end;
		int d = 0, paren = 0, found = 0;
		while (k > 0) {
			char c = sig[--k];
			if (c == ')')
				paren++;
			else if (c == '(' && paren > 0)
				paren--;
			else if (paren == 0 && c == '>')
				d++;
			else if (paren == 0 && c == '<' && --d == 0) {
				found = 1;
				break;
			}
		}
		if (found) {
			name_end = k;
			out->template_dtype = first_dtype(sig + k + 1, tmpl_close - k - 1);
		}
	}
	size_t name_start = name_end;
	while (name_start && sig[name_start - 1] != ' ')
		name_start--;
	out->name_off = (uint16_t)name_start;
	out->name_len = (uint16_t)(name_end - name_start);

	/* split the list at top-level commas; as for the name, '<' and '>'
	 * inside (...) are operators of an expression, not brackets */
	size_t start = open + 1;
	int paren = 0;
	depth = 0;
	for (size_t i = open + 1; i <= close; i++) {
		char c = sig[i];
		if (c == '(' || c == '[')
			paren++;
		else if ((c == ')' || c == ']') && i != close)
			paren--;
		else if (c == '<' && paren == 0)
			depth++;
		else if (c == '>' && paren == 0)
			depth--;
		if ((c == ',' && depth == 0 && paren == 0) || i == close) {
			size_t len = i - start;
			const char *t = sig + start;
			while (len && *t == ' ')
				t++, len--;
			if (i == close && out->nparams == 0 &&
			    (len == 0 || (len == 4 && memcmp(t, "void", 4) == 0)))
				break;
			if (out->nparams == DDP_SIG_MAX_PARAMS) {
				out->truncated = 1;
				break;
			}
			parse_param(sig, start, i - start, &out->params[out->nparams++]);
			start = i + 1;
		}
	}
	return DDP_OK;
}
