/* SPDX-License-Identifier: MIT
 *
 * ddp_sig.h - reads a demangled kernel signature: what each parameter is.
 *
 *   "void adamw<float>(float*, float const*, __nv_bfloat16 const*, int, Meta)"
 *      -> 5 params: float* (writable pointer, f32), float const* (read-only
 *         pointer, f32), bf16 read-only pointer, int scalar, Meta by value;
 *         template dtype f32.
 *
 * Parameters are split at top-level commas (template <...> and (...) nest).
 * A parameter is a pointer when its type ends in '*' (after dropping
 * __restrict__ / restrict); it is read-only when const qualifies the pointee
 * ("float const*", "const float*"), not the pointer ("float* const").  The
 * element type is recognised from common spellings (float, double, __half,
 * half, __nv_bfloat16, c10::Half, c10::BFloat16, at::BFloat16, int, long,
 * unsigned char, bool ...) as an enum ddp_dtype (ddp_dtype.h names them and
 * gives their sizes).  Other by-value types are structs.
 *
 * Contract: pure function, no allocation (fills a caller struct with
 * offsets into the input), thread-safe.
 */
#ifndef DDP_SIG_H
#define DDP_SIG_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_dtype.h"
#include "ddp_err.h"

#define DDP_SIG_MAX_PARAMS 128

enum ddp_ptype {
	DDP_PT_UNKNOWN = 0, /* no signature (extern "C")                  */
	DDP_PT_POINTER,     /* T*                                          */
	DDP_PT_SCALAR,      /* arithmetic type by value                    */
	DDP_PT_STRUCT,      /* anything else by value (struct, functor)    */
};

struct ddp_sig_param {
	uint16_t off, len; /* the parameter's text in the signature       */
	uint8_t ptype;     /* enum ddp_ptype                              */
	uint8_t dtype;     /* enum ddp_dtype: pointee for pointers, else the type */
	uint8_t is_const;  /* pointer to const: read-only                 */
	uint8_t depth;     /* pointer depth (T** = 2)                     */
};

struct ddp_sig {
	uint32_t nparams;
	int truncated;               /* more than DDP_SIG_MAX_PARAMS     */
	uint8_t template_dtype;      /* enum ddp_dtype: first arithmetic template arg */
	uint16_t name_off, name_len; /* function name (without templates) */
	struct ddp_sig_param params[DDP_SIG_MAX_PARAMS];
};

/* Parses sig; DDP_ERR_INVALID when it has no parameter list (a plain C
 * name), in which case *out has nparams 0. */
ddp_result ddp_sig_parse(const char *sig, struct ddp_sig *out /* OUT */);

/* Element type of a type spelling ("float const", "__nv_bfloat16"). */
enum ddp_dtype ddp_sig_dtype(const char *type, size_t len);

#endif /* DDP_SIG_H */
