/* SPDX-License-Identifier: MIT
 * test_log.c - unit tests of runtime/base/ddp_log.c (levels, subsystems, errors). */
#define CHECK_MAIN
#include "../check.h"
#include "ddp_log.h"

TEST(parse_levels)
{
	int l = -1;
	CHECK(ddp_log_parse_level("trace", &l) == DDP_OK && l == DDP_LOG_TRACE);
	CHECK(ddp_log_parse_level("WARN", &l) == DDP_OK && l == DDP_LOG_WARN);
	CHECK(ddp_log_parse_level("loud", &l) == DDP_ERR_INVALID);
}

TEST(bad_setting_is_rejected_and_defaults_stay)
{
	setenv("DDP_LOG", "verbose", 1);
	unsetenv("DDP_LOG_SUBSYS");
	ddp_log_level_ = DDP_LOG_WARN;
	CHECK(ddp_log_init("test") == DDP_ERR_INVALID);
	CHECK(ddp_log_level_ == DDP_LOG_WARN);
	CHECK(strstr(ddp_log_last_warning(), "DDP_LOG='verbose'") != NULL);
	setenv("DDP_LOG", "debug", 1);
	setenv("DDP_LOG_SUBSYS", "grad,coll", 1);
	CHECK(ddp_log_init("test") == DDP_OK);
	CHECK(DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_GRAD));
	CHECK(!DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_ALLOC));
	CHECK(!DDP_LOG_ON(DDP_LOG_TRACE, DDP_SUB_GRAD));
	setenv("DDP_LOG_SUBSYS", "^alloc", 1);
	CHECK(ddp_log_init("test") == DDP_OK);
	CHECK(!DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_ALLOC));
	CHECK(DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_HOOK));
	setenv("DDP_LOG_SUBSYS", "nosuch", 1);
	CHECK(ddp_log_init("test") == DDP_ERR_INVALID);
	unsetenv("DDP_LOG");
	unsetenv("DDP_LOG_SUBSYS");
}

TEST(rank_prefix_and_last_warning)
{
	ddp_log_set_rank(3);
	DDP_WARN("something %d", 42);
	CHECK(strncmp(ddp_log_last_warning(), "[rank 3] test WARN test_log.c:", 30) == 0);
	CHECK(strstr(ddp_log_last_warning(), "something 42") != NULL);
	ddp_log_set_rank(-1);
}

TEST(rank_prefix_can_be_turned_off)
{
	ddp_log_set_rank(2);
	setenv("DDP_LOG_RANK_PREFIX", "0", 1);
	CHECK(ddp_log_init("test") == DDP_OK);
	DDP_WARN("no prefix");
	CHECK(strncmp(ddp_log_last_warning(), "test WARN", 9) == 0);
	setenv("DDP_LOG_RANK_PREFIX", "maybe", 1);
	CHECK(ddp_log_init("test") == DDP_ERR_INVALID);
	setenv("DDP_LOG_RANK_PREFIX", "1", 1);
	CHECK(ddp_log_init("test") == DDP_OK);
	DDP_WARN("prefix again");
	CHECK(strncmp(ddp_log_last_warning(), "[rank 2] test WARN", 18) == 0);
	unsetenv("DDP_LOG_RANK_PREFIX");
	ddp_log_set_rank(-1);
}

int main(int argc, char **argv) { return check_main(argc, argv); }
