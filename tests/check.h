/* SPDX-License-Identifier: MIT
 *
 * check.h - a tiny unit-test harness for tests/unit and cpudev.
 *
 * Usage:
 *     TEST(parse_empty) { CHECK(parse("") == DDP_ERR_INVALID); }
 *     ...
 *     int main(int argc, char **argv) { return check_main(argc, argv); }
 *
 * Each TEST registers itself (constructor) and prints one line when run:
 *     ok - parse_empty
 *     not ok - parse_empty: file.c:12: CHECK(x) failed
 *     skip - gpu_only: no GPU on this machine
 * tests/run_tests.sh counts these lines.  A test continues after a failed
 * CHECK (so one run shows every failure); REQUIRE stops the test.  SKIP(reason)
 * ends the test as skipped.  argv[1], when given, runs only tests whose name
 * contains it.
 */
#ifndef DDP_TEST_CHECK_H
#define DDP_TEST_CHECK_H

#include <math.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct check_test {
	const char *name;
	void (*fn)(void);
	struct check_test *next;
};

extern struct check_test *check_tests_;
extern int check_failed_;
extern jmp_buf check_jmp_;
extern const char *check_skip_;

#define TEST(name) \
	static void test_##name(void); \
	static struct check_test check_reg_##name = { #name, test_##name, 0 }; \
	__attribute__((constructor)) static void check_register_##name(void) \
	{ \
		struct check_test **p = &check_tests_; \
		while (*p) p = &(*p)->next; \
		*p = &check_reg_##name; \
	} \
	static void test_##name(void)

#define CHECK_FAIL_(...) do { \
	printf("# %s:%d: ", __FILE__, __LINE__); \
	printf(__VA_ARGS__); printf("\n"); fflush(stdout); \
	check_failed_ = 1; \
} while (0)

#define CHECK(cond) do { if (!(cond)) CHECK_FAIL_("CHECK(%s) failed", #cond); } while (0)
#define REQUIRE(cond) do { \
	if (!(cond)) { CHECK_FAIL_("REQUIRE(%s) failed", #cond); longjmp(check_jmp_, 1); } \
} while (0)
#define CHECK_EQ_INT(a, b) do { \
	long long a_ = (long long)(a), b_ = (long long)(b); \
	if (a_ != b_) CHECK_FAIL_("%s == %lld, expected %s == %lld", #a, a_, #b, b_); \
} while (0)
#define CHECK_EQ_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (!a_ || !b_ || strcmp(a_, b_) != 0) \
		CHECK_FAIL_("%s == \"%s\", expected \"%s\"", #a, a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
} while (0)
#define CHECK_NEAR(a, b, tol) do { \
	double a_ = (a), b_ = (b); \
	if (!(fabs(a_ - b_) <= (tol))) CHECK_FAIL_("%s == %g, expected %g +- %g", #a, a_, b_, (double)(tol)); \
} while (0)
#define SKIP(reason) do { check_skip_ = (reason); longjmp(check_jmp_, 2); } while (0)

#ifdef CHECK_MAIN
struct check_test *check_tests_;
int check_failed_;
jmp_buf check_jmp_;
const char *check_skip_;

static int check_main(int argc, char **argv)
{
	volatile int failed = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (struct check_test *volatile t = check_tests_; t; t = t->next) {
		if (argc > 1 && !strstr(t->name, argv[1]))
			continue;
		check_failed_ = 0;
		check_skip_ = NULL;
		int j = setjmp(check_jmp_);
		if (j == 0)
			t->fn();
		if (j == 2)
			printf("skip - %s: %s\n", t->name, check_skip_);
		else if (check_failed_)
			printf("not ok - %s\n", t->name), failed++;
		else
			printf("ok - %s\n", t->name);
	}
	return failed ? 1 : 0;
}
#endif

#endif /* DDP_TEST_CHECK_H */
