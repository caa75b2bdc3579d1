/* SPDX-License-Identifier: MIT
 *
 * test_ip_edges.c - edge cases of the interposer's runtime pieces found in
 * review: input a program or a module image can hand to libddp that must
 * neither crash it nor make it grow without bound.
 *   - the signature reader on template arguments holding a '>' operator
 *     (c++filt prints _Z1fIXgtLi1ELi2EEEvi as "void f<((1)>(2))>(int)");
 *   - the kernel registry on launches of a NULL CUfunction;
 *   - the per-thread counters of threads that exit (a program making
 *     threads by the million must not keep 8 KB each).
 */
#include <pthread.h>
#define CHECK_MAIN
#include "check.h"
#include "ddp_kreg.h"
#include "ddp_sig.h"
#include "ddp_stats.h"

static struct ddp_sig sig;

/* The signature is copied to the heap so that a read before its first byte
 * is an error under ASan, and the name it reports is checked exactly. */
static ddp_result parse_heap(const char *s)
{
	char *h = strdup(s);
	ddp_result rc = ddp_sig_parse(h, &sig);
	free(h);
	return rc;
}

TEST(sig_template_argument_with_greater_than)
{
	REQUIRE(parse_heap("void f<((1)>(2))>(int)") == DDP_OK);
	CHECK_EQ_INT(sig.name_off, 5);
	CHECK_EQ_INT(sig.name_len, 1);
	CHECK_EQ_INT(sig.nparams, 1);
	CHECK(sig.params[0].ptype == DDP_PT_SCALAR && sig.params[0].dtype == DDP_DT_I32);

	REQUIRE(parse_heap("void k<2, 1>(S<((2)>(1))>*, float const*)") == DDP_OK);
	CHECK_EQ_INT(sig.name_off, 5);
	CHECK_EQ_INT(sig.name_len, 1);
	CHECK_EQ_INT(sig.nparams, 2);
	CHECK(sig.params[1].ptype == DDP_PT_POINTER && sig.params[1].is_const);
}

TEST(sig_unbalanced_template_is_no_template)
{
	/* c++filt: _Z1fIXrsLi8ELi2EEEvi -> "void f<(8)>>(2)>(int)": no '<'
	 * matches the last '>'; the name is then everything after the blank */
	REQUIRE(parse_heap("void f<(8)>>(2)>(int)") == DDP_OK);
	CHECK_EQ_INT(sig.name_off, 5);
	CHECK_EQ_INT(sig.name_len, 11);
	CHECK_EQ_INT(sig.nparams, 1);
	REQUIRE(parse_heap(">(int)") == DDP_OK);
	CHECK_EQ_INT(sig.name_off, 0);
	CHECK_EQ_INT(sig.name_len, 1);
	REQUIRE(parse_heap("a>>(float*)") == DDP_OK);
	CHECK_EQ_INT(sig.name_len, 3);
	CHECK(sig.params[0].ptype == DDP_PT_POINTER);
}

static size_t count_records(void)
{
	size_t n = 0;
	for (struct ddp_kfunc *k = ddp_kreg_first(); k; k = k->next)
		n++;
	return n;
}

TEST(kreg_discover_null_handle_builds_nothing)
{
	REQUIRE(ddp_kreg_init() == DDP_OK);
	size_t before = count_records();
	for (int i = 0; i < 3; i++)
		CHECK(ddp_kreg_discover(NULL) == NULL);
	CHECK_EQ_INT(count_records(), before);
	/* a real (unknown) handle is discovered once, then found */
	struct ddp_kfunc *k = ddp_kreg_discover((const void *)0x1234);
	REQUIRE(k != NULL);
	CHECK(ddp_kreg_discover((const void *)0x1234) == k);
	CHECK(ddp_kreg_lookup((const void *)0x1234) == k);
	CHECK_EQ_INT(count_records(), before + 1);
}

/* ---- counters of exited threads: a stand-in for hook_tls_.stats */
static __thread struct ddp_stats_thread *my_stats;
static int forgotten;
static pthread_key_t late_key;

static void forget(void)
{
	my_stats = NULL;
	__atomic_fetch_add(&forgotten, 1, __ATOMIC_RELAXED);
}

/* what hook_begin does on a thread's call */
static void hooked_call(unsigned id)
{
	if (!my_stats)
		my_stats = ddp_stats_thread_new();
	if (my_stats)
		ddp_stats_count(my_stats, id);
}

/* a destructor of the program's that runs after libddp's and makes a call */
static void late_destructor(void *p)
{
	(void)p;
	hooked_call(4);
}

static void *worker(void *arg)
{
	(void)arg;
	for (int i = 0; i < 5; i++)
		hooked_call(3);
	pthread_setspecific(late_key, (void *)1);
	return NULL;
}

TEST(stats_blocks_of_exited_threads_are_freed)
{
	REQUIRE(ddp_stats_init(forget) == DDP_OK);
	REQUIRE(pthread_key_create(&late_key, late_destructor) == 0);
	size_t before = ddp_stats_blocks();
	for (int t = 0; t < 20; t++) {
		pthread_t th;
		REQUIRE(pthread_create(&th, NULL, worker, NULL) == 0);
		pthread_join(th, NULL);
	}
	CHECK_EQ_INT(ddp_stats_blocks(), before);
	/* each thread's block went twice: after its work, after the late call */
	CHECK_EQ_INT(__atomic_load_n(&forgotten, __ATOMIC_RELAXED), 40);
	struct ddp_stats_thread *tot = calloc(1, sizeof *tot);
	REQUIRE(tot);
	ddp_stats_total(tot);
	CHECK_EQ_INT(tot->calls[3], 100);
	CHECK_EQ_INT(tot->calls[4], 20);
	free(tot);
}

int main(int argc, char **argv) { return check_main(argc, argv); }
