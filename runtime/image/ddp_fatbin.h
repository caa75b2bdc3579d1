/* SPDX-License-Identifier: MIT
 *
 * ddp_fatbin.h - the one reader of CUDA module images (fatbin containers,
 * cudart fatbin wrappers, cubin ELF files, PTX text), shared by the
 * interposer (kernel registry) and the CPU device (cpudev).
 *
 * An image is what a program hands to cuModuleLoadData / cuModuleLoadFatBinary
 * / cuLibraryLoadData: often without a length.  The reader finds the length
 * from the headers (fatbin header size field, ELF section table), picks the
 * ELF entry for the requested SM architecture, decompresses it (zstd, LZ4
 * through libzstd/liblz4), opens it with libelf and returns, for every kernel
 * (.text.<name> with a .nv.info.<name> section, or an .entry in PTX), its
 * mangled and demangled names and its parameter layout from
 * EIATTR_KPARAM_INFO / EIATTR_KPARAM_INFO_V2 / EIATTR_CBANK_PARAM_SIZE.
 *
 * Contract: pure functions of their input, thread-safe, no global state.
 * Never reads outside [image, image + len) when len != 0; when len == 0 it
 * trusts only the sizes the headers declare.  Malformed input returns
 * DDP_ERR_INVALID with a one-line reason in err; it never crashes or aborts.
 */
#ifndef DDP_FATBIN_H
#define DDP_FATBIN_H

#include <stddef.h>
#include <stdint.h>
#include "ddp_err.h"

#define DDP_FATBIN_MAGIC 0xBA55ED50u         /* fatbin container header      */
#define DDP_FATBIN_WRAPPER_MAGIC 0x466243B1u /* __fatBinC_Wrapper_t (cudart)  */

/* What the image handed to the loader is. */
enum ddp_image_kind {
	DDP_IMAGE_UNKNOWN = 0,
	DDP_IMAGE_FATBIN,  /* one or more concatenated fatbin containers */
	DDP_IMAGE_WRAPPER, /* __fatBinC_Wrapper_t pointing at a fatbin    */
	DDP_IMAGE_CUBIN,   /* an ELF cubin                                */
	DDP_IMAGE_PTX,     /* NUL-terminated PTX text                     */
};

/* One kernel parameter, in ordinal order. */
struct ddp_kparam {
	uint32_t offset; /* byte offset in the parameter area          */
	uint32_t size;   /* size in bytes                              */
	uint32_t flags;  /* DDP_KPARAM_* bits                          */
};
#define DDP_KPARAM_POINTER 0x1u /* the cubin marks it a pointer (sm_100+ space=5), or PTX .ptr */

struct ddp_kernel_info {
	char *name;                /* mangled (or extern "C") name, owned        */
	char *demangled;           /* demangled signature, or a copy of name     */
	uint32_t nparams;          /* number of parameters                        */
	struct ddp_kparam *params; /* nparams entries, ordinal order, owned    */
	uint32_t param_bytes;      /* size of the parameter area (CBANK_PARAM_SIZE
				   when present, else end of the last param)  */
};

/* One variable with device storage (__device__, __constant__, and the
 * compiler's own: math tables, printf strings), from the cubin's symbols. */
struct ddp_global_info {
	char *name;        /* symbol name (mangled when namespaced), owned */
	uint64_t size;     /* bytes                                       */
	uint32_t constant; /* 1: in a .nv.constant bank (__constant__)    */
};

struct ddp_module_info {
	enum ddp_image_kind kind; /* what the top-level image was             */
	uint32_t arch;            /* SM of the chosen ELF entry (e.g. 90), 0 for PTX */
	size_t image_size;        /* bytes the image occupies (as declared)   */
	size_t nkernels;
	struct ddp_kernel_info *kernels; /* owned; sorted by name               */
	size_t nglobals;                 /* device variables (none from PTX)         */
	struct ddp_global_info *globals; /* owned; sorted by name, unique       */
};

/* Classifies an image from its first bytes; len 0 means unknown length. */
enum ddp_image_kind ddp_image_kind(const void *image, size_t len);

/*
 * Parses a module image and fills *out (which the caller frees with
 * ddp_module_info_free).  want_arch is the device's SM (e.g. 90): the reader
 * picks the ELF entry with the highest arch <= want_arch of the same major
 * (the rule the driver follows for SASS), and falls back to PTX when no ELF
 * entry fits.  want_arch 0 takes the highest ELF entry.  len 0: unknown.
 * On error *out is left empty and err (if non-NULL) holds one line.
 */
ddp_result ddp_module_parse(const void *image, size_t len, uint32_t want_arch,
			    struct ddp_module_info *out /* OUT */, char *err /* OUT, may be NULL */,
			    size_t errlen);

/* Frees what ddp_module_parse allocated; safe on a zeroed struct. */
void ddp_module_info_free(struct ddp_module_info *m);

/* Looks a kernel up by mangled name (binary search); NULL when absent. */
const struct ddp_kernel_info *ddp_module_find(const struct ddp_module_info *m, const char *name);
/* Looks a device variable up by symbol name; NULL when absent. */
const struct ddp_global_info *ddp_module_find_global(const struct ddp_module_info *m, const char *name);

/* One ELF entry of a fatbin, as listed by ddp_fatbin_entries. */
struct ddp_fatbin_entry {
	uint16_t kind;            /* 1 PTX, 2 ELF                               */
	uint32_t arch;            /* SM number                                  */
	uint64_t flags;           /* 0x2000 LZ4, 0x8000 zstd, ...               */
	size_t payload_size;      /* bytes stored                               */
	size_t decompressed_size; /* 0 when not compressed                    */
	const uint8_t *payload;   /* points into the image                      */
};

/*
 * Lists the entries of (possibly concatenated) fatbin containers.  Fills at
 * most max entries, sets *n to the number found (may exceed max).
 */
ddp_result ddp_fatbin_entries(const void *image, size_t len, struct ddp_fatbin_entry *entries /* OUT */,
			      size_t max, size_t *n /* OUT */, char *err, size_t errlen);

/*
 * Decompresses (or copies) one entry into a malloc'd buffer the caller frees.
 */
ddp_result ddp_fatbin_entry_data(const struct ddp_fatbin_entry *e, uint8_t **data /* OUT */,
				 size_t *size /* OUT */, char *err, size_t errlen);

/* Demangles an Itanium C++ name into a malloc'd string; NULL when the name is
 * not mangled (extern "C") or on failure. */
char *ddp_demangle(const char *mangled);

/* ---- Internal to the reader (ddp_fatbin.c, ddp_cubin.c, ddp_ptx.c) ------
 * Other modules call ddp_module_parse; these are declared here so the
 * reader's files can share them without a second header. */

/* Largest image, entry or decompressed payload the reader accepts. */
#define DDP_FATBIN_MAX_SIZE ((size_t)1 << 30)

/* Bytes an ELF cubin occupies (end of its headers, section table, program
 * headers and section contents).  Never reads past len when len != 0. */
ddp_result ddp_cubin_size(const void *image, size_t len, size_t *size /* OUT */, char *err, size_t errlen);

/* Appends the kernels of the cubin [elf, elf + size) to m->kernels (unsorted,
 * demangled left NULL).  Sets m->arch from e_flags when it is 0. */
ddp_result ddp_cubin_parse(const uint8_t *elf, size_t size, struct ddp_module_info *m, char *err,
			   size_t errlen);

/* Appends the kernels (.entry) of PTX text [text, text + len) to m->kernels
 * (unsorted, demangled left NULL); the text need not be NUL-terminated. */
ddp_result ddp_ptx_parse(const char *text, size_t len, struct ddp_module_info *m, char *err, size_t errlen);

/* Appends *k (moved: the module owns its pointers afterwards) to m->kernels. */
ddp_result ddp_module_add_kernel(struct ddp_module_info *m, struct ddp_kernel_info *k);

/* Frees the pointers of one kernel record. */
void ddp_kernel_info_clear(struct ddp_kernel_info *k);

/* snprintf into err (when err && errlen) and return DDP_ERR_INVALID. */
ddp_result ddp_fatbin_fail(char *err, size_t errlen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif /* DDP_FATBIN_H */
