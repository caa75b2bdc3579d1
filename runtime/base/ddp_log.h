/* SPDX-License-Identifier: MIT
 *
 * ddp_log.h - levelled, subsystem-masked logging for libddp and its tools.
 *
 * A line looks like
 *     [rank 3] libddp WARN alloc.c:88 message
 * and is written with a single write(2) to stderr (no stdio, no malloc), so
 * lines from many threads and ranks never tear.  Level and subsystem are
 * tested before anything is formatted: a disabled DDP_TRACE costs one load and
 * one compare.
 *
 * Settings (read by ddp_log_init, never in a constructor or in dlsym):
 *   DDP_LOG=error|warn|info|debug|trace         (default warn)
 *   DDP_LOG_SUBSYS=hook,alloc,kreg,grad,coll,rdzv,launch,shard,sim,all
 *                                               (default all; '^' prefix negates)
 *   DDP_LOG_RANK_PREFIX=1|0                     (default 1; ddprun sets 0 because it
 *                                               prefixes every output line itself)
 *
 * Contract: any thread may log at any time, also before ddp_log_init (the
 * defaults apply).  ddp_log_init is called once, from one thread, before the
 * program does real work.  The last WARN/ERROR line is kept for reports.
 */
#ifndef DDP_LOG_H
#define DDP_LOG_H

#include <stdarg.h>
#include <string.h>
#include "ddp_err.h"

enum ddp_log_level {
	DDP_LOG_NONE = 0,
	DDP_LOG_ERROR,
	DDP_LOG_WARN,
	DDP_LOG_INFO,
	DDP_LOG_DEBUG,
	DDP_LOG_TRACE,
};

/* Subsystem bits for DDP_LOG_SUBSYS. */
enum ddp_log_subsys {
	DDP_SUB_HOOK = 1u << 0,
	DDP_SUB_ALLOC = 1u << 1,
	DDP_SUB_KREG = 1u << 2,
	DDP_SUB_GRAD = 1u << 3,
	DDP_SUB_COLL = 1u << 4,
	DDP_SUB_RDZV = 1u << 5,
	DDP_SUB_LAUNCH = 1u << 6,
	DDP_SUB_SHARD = 1u << 7,
	DDP_SUB_SIM = 1u << 8,
	DDP_SUB_INIT = 1u << 9,
	DDP_SUB_ALL = 0xffffffffu,
};

extern int ddp_log_level_;     /* current level; read by the macros */
extern unsigned ddp_log_mask_; /* enabled subsystems                */

/* Parses DDP_LOG and DDP_LOG_SUBSYS.  prog is the name printed in each line
 * ("libddp", "ddprun", ...); it must outlive the process (a literal).
 * Returns DDP_ERR_INVALID, after printing one line naming the variable and the
 * accepted values, when a setting is malformed; the defaults then stay. */
ddp_result ddp_log_init(const char *prog);

/* Sets the rank printed as "[rank k] " (k < 0: no prefix). */
void ddp_log_set_rank(int rank);

/* Parses a level name; returns DDP_ERR_INVALID for an unknown one. */
ddp_result ddp_log_parse_level(const char *s, int *level /* OUT */);

/* Formats and writes one line; use the macros instead. */
void ddp_log_emit(int level, unsigned subsys, const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

/* The last WARN or ERROR line (without newline); "" when none. */
const char *ddp_log_last_warning(void);

#define DDP_LOG_ON(lvl, sub) ((lvl) <= ddp_log_level_ && ((unsigned)(sub)&ddp_log_mask_))

#define DDP_LOG_AT(lvl, sub, ...) \
	do { \
		if (DDP_LOG_ON(lvl, sub)) \
			ddp_log_emit((lvl), (sub), __FILE__, __LINE__, __VA_ARGS__); \
	} while (0)

#define DDP_ERROR(...) DDP_LOG_AT(DDP_LOG_ERROR, DDP_SUB_ALL, __VA_ARGS__)
#define DDP_WARN(...) DDP_LOG_AT(DDP_LOG_WARN, DDP_SUB_ALL, __VA_ARGS__)
#define DDP_INFO(sub, ...) DDP_LOG_AT(DDP_LOG_INFO, DDP_SUB_##sub, __VA_ARGS__)
#define DDP_DEBUG(sub, ...) DDP_LOG_AT(DDP_LOG_DEBUG, DDP_SUB_##sub, __VA_ARGS__)
#define DDP_TRACE(sub, ...) DDP_LOG_AT(DDP_LOG_TRACE, DDP_SUB_##sub, __VA_ARGS__)

/* Warn only the first time this line is reached (per process). */
#define DDP_WARN_ONCE(...) \
	do { \
		static int ddp_once_; \
		if (!__atomic_exchange_n(&ddp_once_, 1, __ATOMIC_RELAXED)) \
			DDP_WARN(__VA_ARGS__); \
	} while (0)

#endif /* DDP_LOG_H */
