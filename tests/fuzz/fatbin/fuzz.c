/* SPDX-License-Identifier: MIT
 *
 * fuzz.c - libFuzzer target for the module image reader (runtime/image/ddp_fatbin.c,
 * ddp_cubin.c, ddp_ptx.c, ddp_demangle.c).
 *
 * Each input is handed to ddp_image_kind and ddp_module_parse with its exact
 * length (never 0: that means "unknown length" and would let the reader
 * trust headers past the input), for want_arch 0 and a device SM taken from
 * the last byte.  A success is walked completely (names, layouts, lookups);
 * a failure must come with a message.  Fatbin inputs also go through
 * ddp_fatbin_entries and ddp_fatbin_entry_data.  Seeds in corpus/ are tiny
 * nvcc 13 outputs plus truncated and corrupted variants (docs/fatbin-reader.md).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ddp_fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const struct ddp_module_info *m)
{
	for (size_t i = 0; i < m->nkernels; i++) {
		const struct ddp_kernel_info *k = &m->kernels[i];
		if (!k->name || !k->demangled || !k->name[0] || (k->nparams && !k->params))
			abort();
		if (ddp_module_find(m, k->name) != k)
			abort();
		if (i && strcmp(m->kernels[i - 1].name, k->name) >= 0)
			abort();
		volatile uint64_t sum = strlen(k->demangled);
		for (uint32_t j = 0; j < k->nparams; j++)
			sum += k->params[j].offset + k->params[j].size + k->params[j].flags;
		(void)sum;
	}
}

static void parse(const uint8_t *data, size_t size, uint32_t arch)
{
	struct ddp_module_info m;
	char err[256];
	err[0] = 0;
	ddp_result rc = ddp_module_parse(data, size, arch, &m, err, sizeof err);
	if (rc == DDP_OK)
		walk(&m);
	else if (!err[0] || m.nkernels || m.kernels)
		abort();
	ddp_module_info_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t archs[] = { 75, 80, 86, 90, 100, 120 };
	if (size == 0)
		return 0;
	enum ddp_image_kind kind = ddp_image_kind(data, size);
	parse(data, size, 0);
	parse(data, size, archs[data[size - 1] % (sizeof archs / sizeof archs[0])]);

	if (kind == DDP_IMAGE_FATBIN) {
		struct ddp_fatbin_entry e[16];
		size_t n = 0;
		char err[256];
		if (ddp_fatbin_entries(data, size, e, 16, &n, err, sizeof err) == DDP_OK) {
			for (size_t i = 0; i < n && i < 16; i++) {
				uint8_t *d;
				size_t sz;
				if (e[i].payload < data || e[i].payload + e[i].payload_size > data + size)
					abort();
				if (ddp_fatbin_entry_data(&e[i], &d, &sz, err, sizeof err) == DDP_OK)
					free(d);
			}
		}
	}
	return 0;
}
