/* SPDX-License-Identifier: MIT
 *
 * ddp_ptx.c - kernel names and parameter layouts from PTX text, for images
 * (or fatbin containers) that carry no ELF entry for the device.
 *
 * A kernel is declared
 *     [.visible|.weak|.extern] .entry NAME ( .param TYPE NAME, ... ) [perf directives] { body }
 * where a parameter is one of
 *     .param .u64 NAME                      scalar: size and alignment = width
 *     .param .u64 .ptr [.global] [.align N] NAME   pointer (DDP_KPARAM_POINTER);
 *                                           here N is the pointee's alignment
 *     .param .align N .b8 NAME[SIZE]        aggregate: alignment N, SIZE bytes
 * Offsets follow the PTX (= C++ ABI) rule: each parameter starts at the next
 * multiple of its alignment; the area ends right after the last parameter.
 * Declarations without a body (`.extern .entry f(...);`) are skipped.
 *
 * Contract: pure function of its input; any thread.  Reads only
 * [text, text + len); the text need not be NUL-terminated.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_fatbin.h"

#define PTX_NAME_MAX 4096u    /* longer identifiers are refused          */
#define PTX_PARAMS_MAX 65536u /* more parameters than any real kernel     */

enum tok_kind {
	TOK_END,
	TOK_DIRECTIVE,
	TOK_IDENT,
	TOK_NUMBER,
	TOK_PUNCT
};

struct lexer {
	const char *p, *end;
	/* current token */
	enum tok_kind kind;
	const char *tok;
	size_t toklen;
};

static bool is_ident_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '$' || c == '%';
}

static bool is_ident_char(char c)
{
	return is_ident_start(c) || (c >= '0' && c <= '9');
}

/* Reads the next token, skipping blanks, comments and string literals. */
static void lex_next(struct lexer *lx)
{
	const char *p = lx->p, *end = lx->end;
	for (;;) {
		while (p < end &&
		       (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r' || *p == '\f' || *p == '\v'))
			p++;
		if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
			continue;
		}
		if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			p += 2;
			while (end - p >= 2 && !(p[0] == '*' && p[1] == '/'))
				p++;
			p = end - p >= 2 ? p + 2 : end;
			continue;
		}
		if (p < end && *p == '"') { /* .file 1 "name": skip the string */
			p++;
			while (p < end && *p != '"' && *p != '\n')
				p++;
			if (p < end)
				p++;
			continue;
		}
		break;
	}
	lx->tok = p;
	if (p >= end) {
		lx->kind = TOK_END;
		lx->toklen = 0;
		lx->p = end;
		return;
	}
	const char *s = p;
	if (*p == '.' && end - p >= 2 && is_ident_start(p[1])) {
		p++;
		while (p < end && is_ident_char(*p))
			p++;
		lx->kind = TOK_DIRECTIVE;
	} else if (is_ident_start(*p)) {
		while (p < end && is_ident_char(*p))
			p++;
		lx->kind = TOK_IDENT;
	} else if (*p >= '0' && *p <= '9') {
		while (p < end && is_ident_char(*p)) /* 123, 0x7f, 10U */
			p++;
		lx->kind = TOK_NUMBER;
	} else {
		p++;
		lx->kind = TOK_PUNCT;
	}
	lx->toklen = (size_t)(p - s);
	lx->p = p;
}

static bool tok_is(const struct lexer *lx, const char *s)
{
	size_t n = strlen(s);
	return lx->toklen == n && memcmp(lx->tok, s, n) == 0;
}

/* Parses a decimal or 0x-hex number token; false when malformed or huge. */
static bool tok_number(const struct lexer *lx, uint64_t *v)
{
	const char *p = lx->tok, *e = lx->tok + lx->toklen;
	uint64_t x = 0;
	unsigned base = 10;
	if (lx->kind != TOK_NUMBER)
		return false;
	if (e - p > 2 && p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	}
	if (p < e && (e[-1] == 'U' || e[-1] == 'u'))
		e--;
	if (p == e)
		return false;
	for (; p < e; p++) {
		unsigned d;
		if (*p >= '0' && *p <= '9')
			d = (unsigned)(*p - '0');
		else if (base == 16 && *p >= 'a' && *p <= 'f')
			d = (unsigned)(*p - 'a' + 10);
		else if (base == 16 && *p >= 'A' && *p <= 'F')
			d = (unsigned)(*p - 'A' + 10);
		else
			return false;
		x = x * base + d;
		if (x > UINT32_MAX)
			return false;
	}
	*v = x;
	return true;
}

/* Width in bytes of a PTX fundamental type directive; 0 when not a type. */
static uint32_t ptx_type_size(const struct lexer *lx)
{
	static const struct {
		const char *name;
		uint32_t size;
	} types[] = {
		{ ".b8", 1 },  { ".u8", 1 },  { ".s8", 1 },    { ".b16", 2 },    { ".u16", 2 },
		{ ".s16", 2 }, { ".f16", 2 }, { ".bf16", 2 },  { ".b32", 4 },    { ".u32", 4 },
		{ ".s32", 4 }, { ".f32", 4 }, { ".f16x2", 4 }, { ".bf16x2", 4 }, { ".b64", 8 },
		{ ".u64", 8 }, { ".s64", 8 }, { ".f64", 8 },   { ".b128", 16 },  { ".pred", 1 },
	};
	for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
		if (tok_is(lx, types[i].name))
			return types[i].size;
	return 0;
}

struct ptx_ctx {
	const char *text; /* for byte offsets in messages */
	char *err;
	size_t errlen;
};

static size_t at(const struct ptx_ctx *c, const struct lexer *lx)
{
	return (size_t)(lx->tok - c->text);
}

/* Parses one `.param ...` (the lexer stands on .param) into *p, advancing
 * *cur (the running offset).  Leaves the lexer on the token after the
 * parameter (',' or ')'). */
static ddp_result parse_param(struct ptx_ctx *c, struct lexer *lx, const char *kname, uint32_t ord,
			      uint64_t *cur, struct ddp_kparam *p)
{
	uint64_t align = 0, count = 1;
	uint32_t tsize = 0;
	bool ptr = false;

	for (lex_next(lx); lx->kind == TOK_DIRECTIVE; lex_next(lx)) {
		uint32_t ts = ptx_type_size(lx);
		if (ts) {
			tsize = ts;
		} else if (tok_is(lx, ".align")) {
			lex_next(lx);
			if (!tok_number(lx, &align) || align == 0 || (align & (align - 1)) || align > 4096)
				return ddp_fatbin_fail(c->err, c->errlen,
						       "PTX: kernel %s parameter %u: bad .align at byte %zu",
						       kname, ord, at(c, lx));
		} else if (tok_is(lx, ".ptr")) {
			ptr = true;
		} else if (tok_is(lx, ".global") || tok_is(lx, ".const") || tok_is(lx, ".local") ||
			   tok_is(lx, ".shared") || tok_is(lx, ".param")) {
			/* state space of a .ptr: nothing to record */
		} else {
			return ddp_fatbin_fail(
				c->err, c->errlen, "PTX: kernel %s parameter %u: unexpected %.*s at byte %zu",
				kname, ord, (int)(lx->toklen > 32 ? 32 : lx->toklen), lx->tok, at(c, lx));
		}
	}
	if (!tsize)
		return ddp_fatbin_fail(c->err, c->errlen, "PTX: kernel %s parameter %u has no type (byte %zu)",
				       kname, ord, at(c, lx));
	if (lx->kind != TOK_IDENT)
		return ddp_fatbin_fail(c->err, c->errlen, "PTX: kernel %s parameter %u has no name (byte %zu)",
				       kname, ord, at(c, lx));
	lex_next(lx);
	if (lx->kind == TOK_PUNCT && tok_is(lx, "[")) {
		lex_next(lx);
		if (!tok_number(lx, &count) || count == 0 || count > 65536)
			return ddp_fatbin_fail(c->err, c->errlen,
					       "PTX: kernel %s parameter %u: bad array size at byte %zu",
					       kname, ord, at(c, lx));
		lex_next(lx);
		if (!tok_is(lx, "]"))
			return ddp_fatbin_fail(c->err, c->errlen,
					       "PTX: kernel %s parameter %u: ']' expected at byte %zu", kname,
					       ord, at(c, lx));
		lex_next(lx);
	}
	/* After .ptr, .align is the pointee's alignment (nvcc 13 writes
	 * `.param .u64 .ptr .align 1 p` for sm_100): the parameter itself is
	 * aligned to its type. */
	if (!align || ptr)
		align = tsize;
	uint64_t size = count * tsize;
	uint64_t off = (*cur + align - 1) / align * align;
	if (off + size > UINT32_MAX / 2)
		return ddp_fatbin_fail(c->err, c->errlen, "PTX: kernel %s parameter area is over 2 GB", kname);
	p->offset = (uint32_t)off;
	p->size = (uint32_t)size;
	p->flags = ptr ? DDP_KPARAM_POINTER : 0;
	*cur = off + size;
	return DDP_OK;
}

/* Parses `NAME ( params )` after .entry; *decl_only is set for a
 * declaration without a body. */
static ddp_result parse_entry(struct ptx_ctx *c, struct lexer *lx, struct ddp_kernel_info *k, bool *decl_only)
{
	struct ddp_kparam *params = NULL;
	size_t cap = 0;
	uint32_t n = 0;
	uint64_t cur = 0;
	ddp_result rc = DDP_OK;

	lex_next(lx);
	if (lx->kind != TOK_IDENT || lx->toklen > PTX_NAME_MAX)
		return ddp_fatbin_fail(c->err, c->errlen, "PTX: .entry without a valid name at byte %zu",
				       at(c, lx));
	k->name = strndup(lx->tok, lx->toklen);
	if (!k->name)
		return DDP_ERR_NOMEM;
	lex_next(lx);
	if (tok_is(lx, "(")) {
		lex_next(lx);
		while (!tok_is(lx, ")")) {
			if (!tok_is(lx, ".param")) {
				rc = ddp_fatbin_fail(c->err, c->errlen,
						     "PTX: kernel %s: .param or ')' expected at byte %zu",
						     k->name, at(c, lx));
				goto out_free_params;
			}
			if (n >= PTX_PARAMS_MAX) {
				rc = ddp_fatbin_fail(c->err, c->errlen, "PTX: kernel %s has over %u parameters",
						     k->name, PTX_PARAMS_MAX);
				goto out_free_params;
			}
			if (n == cap) {
				size_t ncap = cap ? 2 * cap : 8;
				struct ddp_kparam *np = realloc(params, ncap * sizeof *np);
				if (!np) {
					rc = DDP_ERR_NOMEM;
					goto out_free_params;
				}
				params = np;
				cap = ncap;
			}
			DDP_CHECK_GOTO(parse_param(c, lx, k->name, n, &cur, &params[n]), rc, out_free_params);
			n++;
			if (tok_is(lx, ","))
				lex_next(lx);
			else if (!tok_is(lx, ")")) {
				rc = ddp_fatbin_fail(c->err, c->errlen,
						     "PTX: kernel %s: ',' or ')' expected at byte %zu",
						     k->name, at(c, lx));
				goto out_free_params;
			}
		}
		lex_next(lx);
	}
	/* Performance directives (.maxntid 256, 1, 1 ...) until '{' or ';'. */
	while (lx->kind != TOK_END && !tok_is(lx, "{") && !tok_is(lx, ";"))
		lex_next(lx);
	if (lx->kind == TOK_END) {
		rc = ddp_fatbin_fail(c->err, c->errlen, "PTX: kernel %s has no body", k->name);
		goto out_free_params;
	}
	*decl_only = tok_is(lx, ";");
	k->params = params;
	k->nparams = n;
	k->param_bytes = (uint32_t)cur;
	return DDP_OK;

out_free_params:
	free(params);
	return rc;
}

ddp_result ddp_ptx_parse(const char *text, size_t len, struct ddp_module_info *m, char *err, size_t errlen)
{
	struct ptx_ctx c = { text, err, errlen };
	bool saw_version = false;

	if (!text)
		return ddp_fatbin_fail(err, errlen, "PTX text pointer is NULL");
	struct lexer lx = { text, text + len, TOK_END, text, 0 };
	for (lex_next(&lx); lx.kind != TOK_END; lex_next(&lx)) {
		if (tok_is(&lx, ".version"))
			saw_version = true;
		if (lx.kind != TOK_DIRECTIVE || !tok_is(&lx, ".entry"))
			continue;
		struct ddp_kernel_info k;
		bool decl_only = false;
		memset(&k, 0, sizeof k);
		ddp_result rc = parse_entry(&c, &lx, &k, &decl_only);
		if (rc == DDP_OK && !decl_only)
			rc = ddp_module_add_kernel(m, &k);
		ddp_kernel_info_clear(&k);
		if (rc != DDP_OK)
			return rc;
	}
	if (!saw_version)
		return ddp_fatbin_fail(err, errlen, "PTX text has no .version directive");
	return DDP_OK;
}
