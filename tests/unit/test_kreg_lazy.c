/* SPDX-License-Identifier: MIT
 *
 * test_kreg_lazy.c - the kernel registry reads module images lazily
 * (runtime/track/ddp_kreg.c): an image in the program (here the reader
 * test's embedded fatbin, sm_75/80/90/100 + compute_100) is not read at
 * load, and is read when a kernel of it is first registered, giving that
 * kernel its layout; a heap copy (the program may free it) is read at load;
 * an unloaded module is never read.
 */
#define CHECK_MAIN
#include "check.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ddp_kreg.h"

extern const unsigned char fb_params_multi_fatbin[], fb_params_multi_fatbin_end[];

TEST(image_in_program_read_at_first_kernel)
{
	REQUIRE(ddp_kreg_init() == DDP_OK);
	ddp_kreg_set_arch(90);
	const void *mod = (const void *)(uintptr_t)0x1000;
	ddp_kreg_module_loaded(mod, 1, fb_params_multi_fatbin, 0, "memory");
	const struct ddp_kmodule *m = ddp_kreg_module(mod);
	REQUIRE(m != NULL);
	CHECK(m->image == fb_params_multi_fatbin); /* not read at load */
	CHECK(!m->parsed);
	struct ddp_kfunc *k = ddp_kreg_register((const void *)(uintptr_t)0x2000, mod, "noparams");
	REQUIRE(k != NULL);
	CHECK(m->image == NULL); /* read now */
	CHECK(m->parsed);
	CHECK(k->layout_known);
	CHECK_EQ_INT(k->nparams, 0);
	struct ddp_kfunc *s = ddp_kreg_register((const void *)(uintptr_t)0x2010, mod, "scalars");
	REQUIRE(s != NULL);
	CHECK(s->layout_known);
	CHECK_EQ_INT(s->nparams, 9);
}

TEST(heap_image_read_at_load)
{
	size_t n = (size_t)(fb_params_multi_fatbin_end - fb_params_multi_fatbin);
	unsigned char *copy = malloc(n);
	REQUIRE(copy != NULL);
	memcpy(copy, fb_params_multi_fatbin, n);
	const void *mod = (const void *)(uintptr_t)0x3000;
	ddp_kreg_module_loaded(mod, 1, copy, 0, "memory");
	memset(copy, 0, n); /* the program's buffer, reused at once */
	free(copy);
	const struct ddp_kmodule *m = ddp_kreg_module(mod);
	REQUIRE(m != NULL);
	CHECK(m->image == NULL);
	CHECK(m->parsed);
	struct ddp_kfunc *k = ddp_kreg_register((const void *)(uintptr_t)0x4000, mod, "scalars");
	REQUIRE(k != NULL);
	CHECK(k->layout_known);
}

TEST(unloaded_module_never_read)
{
	const void *mod = (const void *)(uintptr_t)0x5000;
	ddp_kreg_module_loaded(mod, 1, fb_params_multi_fatbin, 0, "memory");
	const struct ddp_kmodule *m = ddp_kreg_module(mod);
	REQUIRE(m != NULL);
	ddp_kreg_module_unloaded(mod);
	CHECK(m->image == NULL);
	CHECK(!m->parsed);
	CHECK(ddp_kreg_module(mod) == NULL);
}

int main(int argc, char **argv)
{
	return check_main(argc, argv);
}
