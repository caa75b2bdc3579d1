/* SPDX-License-Identifier: MIT
 *
 * test_launch.c - the launch decoder (runtime/track/ddp_launch.c) against a real
 * allocation table and hand-made kernel records: pointers by const-ness,
 * scalars never taken for pointers, untyped 8-byte values, pointers inside
 * by-value structs, the packed `extra` buffer, and inconsistent arguments.
 */
#define CHECK_MAIN
#include <stdlib.h>
#include "check.h"
#include "ddp_alloc.h"
#include "ddp_launch.h"
#include "ddp_sig.h"

static struct ddp_launch L;

static void setup(void)
{
	ddp_alloc_fini();
	REQUIRE(ddp_alloc_init(1024) == DDP_OK);
	ddp_alloc_insert(0x10000, 0x1000, DDP_ALLOC_PLAIN, 0, NULL); /* #1 */
	ddp_alloc_insert(0x20000, 0x1000, DDP_ALLOC_PLAIN, 0, NULL); /* #2 */
	ddp_alloc_insert(0x30000, 0x1000, DDP_ALLOC_PLAIN, 0, NULL); /* #3 */
}

TEST(typed_pointers_and_scalars)
{
	/* k(float const* x, float* y, long n, float a): n happens to equal an address */
	struct ddp_kparam_desc p[4] = {
		{ 0, 8, DDP_PT_POINTER, DDP_DT_F32, 1, 0 }, { 8, 8, DDP_PT_POINTER, DDP_DT_F32, 0, 0 },
		{ 16, 8, DDP_PT_SCALAR, DDP_DT_I64, 0, 0 }, { 24, 4, DDP_PT_SCALAR, DDP_DT_F32, 0, 0 },
	};
	struct ddp_kfunc k = { .name = "k", .nparams = 4, .params = p, .layout_known = 1, .types_known = 1 };
	uint64_t x = 0x10010, y = 0x20000, n = 0x30000;
	float a = 1;
	void *params[] = { &x, &y, &n, &a };
	struct ddp_launch_params lp = { params, NULL };
	setup();
	REQUIRE(ddp_launch_decode(&k, &lp, &L) == DDP_OK);
	REQUIRE(L.nargs == 2);
	CHECK(L.args[0].param == 0 && L.args[0].access == DDP_ACC_READ && L.args[0].alloc.id == 1 &&
	      L.args[0].value - L.args[0].alloc.base == 0x10);
	CHECK(L.args[1].param == 1 && L.args[1].access == DDP_ACC_WRITE && L.args[1].alloc.id == 2);
}

TEST(untyped_and_outside)
{
	/* extern "C" k(x, y, z): no types; z points outside every allocation */
	struct ddp_kparam_desc p[3] = { { 0, 8, 0, 0, 0, 0 }, { 8, 8, 0, 0, 0, 0 }, { 16, 8, 0, 0, 0, 0 } };
	struct ddp_kfunc k = { .name = "k", .nparams = 3, .params = p, .layout_known = 1 };
	uint64_t x = 0x30fff, y = 0x31000, z = 0;
	void *params[] = { &x, &y, &z };
	struct ddp_launch_params lp = { params, NULL };
	setup();
	REQUIRE(ddp_launch_decode(&k, &lp, &L) == DDP_OK);
	REQUIRE(L.nargs == 1);
	CHECK(L.args[0].alloc.id == 3 && L.args[0].access == DDP_ACC_UNKNOWN);
}

struct tl {
	uint64_t addr[4];
	int n[4];
	int count;
};

TEST(pointers_inside_struct)
{
	/* k(int flag, struct tl list, float lr): the struct starts at offset 8 */
	struct ddp_kparam_desc p[3] = {
		{ 0, 4, DDP_PT_SCALAR, DDP_DT_I32, 0, 0 },
		{ 8, sizeof(struct tl), DDP_PT_STRUCT, 0, 0, 0 },
		{ 8 + sizeof(struct tl), 4, DDP_PT_SCALAR, DDP_DT_F32, 0, 0 },
	};
	struct ddp_kfunc k = { .name = "k", .nparams = 3, .params = p, .layout_known = 1, .types_known = 1 };
	struct tl list = { { 0x20008, 0x99999999, 0x10000, 0x30ff8 }, { 1, 2, 3, 4 }, 3 };
	int flag = 0x20000; /* a 4-byte scalar is never a pointer */
	float lr = 0;
	void *params[] = { &flag, &list, &lr };
	struct ddp_launch_params lp = { params, NULL };
	setup();
	REQUIRE(ddp_launch_decode(&k, &lp, &L) == DDP_OK);
	REQUIRE(L.nargs == 3);
	CHECK(L.args[0].in_struct && L.args[0].param == 1 && L.args[0].word == 0 && L.args[0].alloc.id == 2);
	CHECK(L.args[1].word == 2 && L.args[1].alloc.id == 1);
	CHECK(L.args[2].word == 3 && L.args[2].alloc.id == 3);
}

TEST(extra_buffer)
{
	struct ddp_kparam_desc p[2] = { { 0, 8, DDP_PT_POINTER, DDP_DT_F32, 0, 0 },
					{ 8, 4, DDP_PT_SCALAR, DDP_DT_I32, 0, 0 } };
	struct ddp_kfunc k = { .name = "k", .nparams = 2, .params = p, .layout_known = 1, .types_known = 1 };
	struct { uint64_t x; int n; int pad; } buf = { 0x20010, 5, 0 };
	size_t size = 12;
	void *extra[] = { (void *)1, &buf, (void *)2, &size, (void *)0 };
	struct ddp_launch_params lp = { NULL, extra };
	setup();
	REQUIRE(ddp_launch_decode(&k, &lp, &L) == DDP_OK);
	CHECK(L.nargs == 1 && L.args[0].alloc.id == 2 && L.args[0].access == DDP_ACC_WRITE);
	CHECK(*(const int *)ddp_launch_param_ptr(&k, &lp, 1) == 5);
	size = 8; /* smaller than the layout */
	CHECK(ddp_launch_decode(&k, &lp, &L) == DDP_ERR_INVALID && L.nargs == 0);
	CHECK(ddp_launch_param_ptr(&k, &lp, 1) == NULL);
	void *no_buf[] = { (void *)2, &size, (void *)0 };
	lp.extra = no_buf;
	CHECK(ddp_launch_decode(&k, &lp, &L) == DDP_ERR_INVALID);
	void *junk[] = { (void *)77, &size, (void *)0 };
	lp.extra = junk;
	CHECK(ddp_launch_decode(&k, &lp, &L) == DDP_ERR_INVALID);
}

TEST(inconsistent_and_unknown)
{
	struct ddp_kparam_desc p[1] = { { 0, 8, 0, 0, 0, 0 } };
	struct ddp_kfunc k = { .name = "k", .nparams = 1, .params = p, .layout_known = 1 };
	struct ddp_launch_params none = { NULL, NULL };
	setup();
	CHECK(ddp_launch_decode(&k, &none, &L) == DDP_ERR_INVALID);
	void *params[] = { NULL };
	struct ddp_launch_params nullp = { params, NULL };
	CHECK(ddp_launch_decode(&k, &nullp, &L) == DDP_ERR_INVALID);
	k.layout_known = 0;
	CHECK(ddp_launch_decode(&k, &none, &L) == DDP_ERR_UNSUPPORTED);
	struct ddp_kfunc k0 = { .name = "k0", .nparams = 0, .layout_known = 1 };
	CHECK(ddp_launch_decode(&k0, &none, &L) == DDP_OK && L.nargs == 0);
	ddp_alloc_fini();
}

int main(int argc, char **argv) { return check_main(argc, argv); }
