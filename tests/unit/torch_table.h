/* SPDX-License-Identifier: MIT
 *
 * torch_table.h - reads PyTorch's real kernel table for the tests:
 * tests/data/torch-2.15.0+cu132-sm90-kernels.tsv.zst (every sm_90 kernel of
 * the torch 2.15.0+cu132 wheel, as ddp_module_parse read it; see
 * ../shared/data/README.md).  One line per kernel, tab-separated: mangled
 * name, demangled name, parameter count, parameter area size, parameters as
 * "size@offset,...".
 *
 * Contract: torch_table_load reads the whole file once (libzstd) and keeps
 * it until exit; entries point into that buffer.  Not thread-safe.
 */
#ifndef TORCH_TABLE_H
#define TORCH_TABLE_H

#include <stddef.h>
#include <stdint.h>

#define TORCH_TABLE_PATH "tests/data/torch-2.15.0+cu132-sm90-kernels.tsv.zst"

struct torch_kernel {
	const char *mangled;
	const char *demangled;
	uint32_t nparams;
	uint32_t param_bytes;
	uint32_t *offset, *size;   /* nparams entries each */
};

struct torch_table {
	struct torch_kernel *k;
	size_t n;
};

/* Loads the table from path (NULL: TORCH_TABLE_PATH).  Returns 0, or -1
 * with a one-line reason in err. */
int torch_table_load(const char *path, struct torch_table *t, char *err, size_t errlen);

/* The entry with this mangled name, or NULL. */
const struct torch_kernel *torch_table_find(const struct torch_table *t, const char *mangled);

#endif
