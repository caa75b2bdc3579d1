/* SPDX-License-Identifier: MIT
 *
 * ddp_log.c - implementation of ddp_log.h and ddp_strerror.
 *
 * Contract: ddp_log_emit formats into a stack buffer and issues one write(2);
 * it never allocates and is safe from any thread and from inside hooks.  The
 * last-warning buffer is written under a spin flag; a reader may see an older
 * line but never a torn one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <strings.h>
#include "ddp_log.h"
#include "ddp_port.h"

int ddp_log_level_ = DDP_LOG_WARN;
unsigned ddp_log_mask_ = DDP_SUB_ALL;

static const char *log_prog = "libddp";
static int log_rank = -1;
static int log_rank_prefix = 1; /* DDP_LOG_RANK_PREFIX */
static char last_warning[512];
static int last_warning_lock;

static const char *const level_names[] = {
	[DDP_LOG_NONE] = "none", [DDP_LOG_ERROR] = "error", [DDP_LOG_WARN] = "warn",
	[DDP_LOG_INFO] = "info", [DDP_LOG_DEBUG] = "debug", [DDP_LOG_TRACE] = "trace",
};

static const struct {
	const char *name;
	unsigned bit;
} subsys_names[] = {
	{ "hook", DDP_SUB_HOOK },     { "alloc", DDP_SUB_ALLOC }, { "kreg", DDP_SUB_KREG },
	{ "grad", DDP_SUB_GRAD },     { "coll", DDP_SUB_COLL },   { "rdzv", DDP_SUB_RDZV },
	{ "launch", DDP_SUB_LAUNCH }, { "shard", DDP_SUB_SHARD }, { "sim", DDP_SUB_SIM },
	{ "init", DDP_SUB_INIT },     { "all", DDP_SUB_ALL },
};

const char *ddp_strerror(ddp_result rc)
{
	switch (rc) {
	case DDP_OK: return "success";
	case DDP_ERR_SYS: return "system call failed";
	case DDP_ERR_CUDA: return "CUDA driver error";
	case DDP_ERR_NCCL: return "NCCL error";
	case DDP_ERR_INVALID: return "invalid input";
	case DDP_ERR_INTERNAL: return "internal error";
	case DDP_ERR_REMOTE: return "remote failure";
	case DDP_ERR_TIMEOUT: return "timed out";
	case DDP_ERR_NOMEM: return "out of memory";
	case DDP_ERR_UNSUPPORTED: return "unsupported";
	}
	return "unknown error";
}

ddp_result ddp_log_parse_level(const char *s, int *level)
{
	for (int i = 0; i < (int)(sizeof level_names / sizeof level_names[0]); i++) {
		if (strcasecmp(s, level_names[i]) == 0) {
			*level = i;
			return DDP_OK;
		}
	}
	return DDP_ERR_INVALID;
}

static ddp_result parse_subsys(const char *s, unsigned *mask)
{
	int negate = 0;
	unsigned m = 0;
	char buf[256];

	if (*s == '^') {
		negate = 1;
		s++;
	}
	if (strlen(s) >= sizeof buf)
		return DDP_ERR_INVALID;
	strcpy(buf, s);
	for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i, n = sizeof subsys_names / sizeof subsys_names[0];
		for (i = 0; i < n; i++)
			if (strcasecmp(tok, subsys_names[i].name) == 0)
				break;
		if (i == n)
			return DDP_ERR_INVALID;
		m |= subsys_names[i].bit;
	}
	*mask = negate ? ~m : m;
	return DDP_OK;
}

ddp_result ddp_log_init(const char *prog)
{
	ddp_result rc = DDP_OK;
	const char *v;

	if (prog)
		log_prog = prog;
	v = getenv("DDP_LOG");
	if (v && *v) {
		int lvl;
		if (ddp_log_parse_level(v, &lvl) != DDP_OK) {
			DDP_ERROR("DDP_LOG='%s' is not a log level; use one of "
				  "error, warn, info, debug, trace",
				  v);
			rc = DDP_ERR_INVALID;
		} else {
			ddp_log_level_ = lvl;
		}
	}
	v = getenv("DDP_LOG_RANK_PREFIX");
	if (v && *v) {
		if (strcmp(v, "0") == 0 || strcasecmp(v, "off") == 0) {
			log_rank_prefix = 0;
		} else if (strcmp(v, "1") == 0 || strcasecmp(v, "on") == 0) {
			log_rank_prefix = 1;
		} else {
			DDP_ERROR("DDP_LOG_RANK_PREFIX='%s' is not a boolean; use 1/on or 0/off", v);
			rc = DDP_ERR_INVALID;
		}
	}
	v = getenv("DDP_LOG_SUBSYS");
	if (v && *v) {
		unsigned m;
		if (parse_subsys(v, &m) != DDP_OK) {
			DDP_ERROR("DDP_LOG_SUBSYS='%s' is not a subsystem list; use a "
				  "comma-separated list of hook, alloc, kreg, grad, coll, "
				  "rdzv, launch, shard, sim, init, all (prefix ^ to exclude)",
				  v);
			rc = DDP_ERR_INVALID;
		} else {
			ddp_log_mask_ = m;
		}
	}
	return rc;
}

void ddp_log_set_rank(int rank)
{
	log_rank = rank;
}

const char *ddp_log_last_warning(void)
{
	return last_warning;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s ? s + 1 : path;
}

void ddp_log_emit(int level, unsigned subsys, const char *file, int line, const char *fmt, ...)
{
	static const char *const tags[] = { "", "ERROR", "WARN", "INFO", "DEBUG", "TRACE" };
	/* room for two PATH_MAX paths and the reason after them: a message is
	 * not cut where a long path would hide why (no malloc here) */
	char buf[10240];
	int n = 0;
	va_list ap;

	(void)subsys;
	if (level < DDP_LOG_ERROR || level > DDP_LOG_TRACE)
		level = DDP_LOG_ERROR;
	if (log_rank >= 0 && log_rank_prefix)
		n = snprintf(buf, sizeof buf, "[rank %d] ", log_rank);
	n += snprintf(buf + n, sizeof buf - n, "%s %s %s:%d ", log_prog, tags[level], base_name(file), line);
	if (n >= (int)sizeof buf)
		n = sizeof buf - 1;
	va_start(ap, fmt);
	int m = vsnprintf(buf + n, sizeof buf - n, fmt, ap);
	va_end(ap);
	n = (m < 0) ? n : (n + m >= (int)sizeof buf - 1 ? (int)sizeof buf - 2 : n + m);
	buf[n++] = '\n';
	if (level <= DDP_LOG_WARN && !__atomic_exchange_n(&last_warning_lock, 1, __ATOMIC_ACQUIRE)) {
		size_t len = (size_t)(n - 1) < sizeof last_warning - 1 ? (size_t)(n - 1)
								       : sizeof last_warning - 1;
		memcpy(last_warning, buf, len);
		last_warning[len] = '\0';
		__atomic_store_n(&last_warning_lock, 0, __ATOMIC_RELEASE);
	}
	for (char *p = buf; n > 0;) {
		ssize_t w = write(2, p, (size_t)n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		p += w;
		n -= (int)w;
	}
}

void ddp_log_breadcrumb(const char *file, int line, const char *expr, ddp_result rc)
{
	if (DDP_LOG_ON(DDP_LOG_DEBUG, DDP_SUB_ALL))
		ddp_log_emit(DDP_LOG_DEBUG, DDP_SUB_ALL, file, line, "%s -> %s", expr, ddp_strerror(rc));
}

ddp_result ddp_cu_result(int r, const char *what)
{
	const char *name = NULL;

	if (r == CUDA_SUCCESS)
		return DDP_OK;
	if (!ddp_driver_.getErrorName || ddp_driver_.getErrorName((CUresult)r, &name) != CUDA_SUCCESS)
		name = NULL;
	DDP_WARN("%s failed: %s (CUresult %d)", what, name ? name : "unknown error", r);
	return DDP_ERR_CUDA;
}
