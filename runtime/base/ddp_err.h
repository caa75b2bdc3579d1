/* SPDX-License-Identifier: MIT
 *
 * ddp_err.h - the one result type of ddprun and the check macros around it.
 *
 * Every function of runtime/, interpose/ and launcher/ that can fail returns a
 * ddp_result; outputs go through pointer parameters.  An error is reported
 * (WARN) once where it is born; each frame it crosses may add a DEBUG
 * breadcrumb through the CHECK macros, so a debug log reads as a backtrace.
 *
 * Contract: header only, no state.  The macros evaluate their argument once.
 * Control-flow macros are limited to the DDP_CHECK family (STYLE.md).
 */
#ifndef DDP_ERR_H
#define DDP_ERR_H

#include <errno.h>

typedef enum {
	DDP_OK = 0,
	DDP_ERR_SYS,         /* a system call failed; errno tells more          */
	DDP_ERR_CUDA,        /* the (real) CUDA driver returned an error         */
	DDP_ERR_NCCL,        /* NCCL returned an error                           */
	DDP_ERR_INVALID,     /* bad input: argument, file, setting, message      */
	DDP_ERR_INTERNAL,    /* a bug in ddprun                                   */
	DDP_ERR_REMOTE,      /* another rank or the store reported a failure     */
	DDP_ERR_TIMEOUT,     /* something did not happen in time                 */
	DDP_ERR_NOMEM,       /* allocation failed                                */
	DDP_ERR_UNSUPPORTED, /* valid input that ddprun does not handle       */
} ddp_result;

/* Returns a static string naming rc ("invalid input", ...). Never NULL. */
const char *ddp_strerror(ddp_result rc);

/* Breadcrumb hook: defined in ddp_log.c; logs at DEBUG when enabled. */
void ddp_log_breadcrumb(const char *file, int line, const char *expr, ddp_result rc);

/* Return rc from the current function when x fails. */
#define DDP_CHECK(x) \
	do { \
		ddp_result ddp_rc_ = (x); \
		if (ddp_rc_ != DDP_OK) { \
			ddp_log_breadcrumb(__FILE__, __LINE__, #x, ddp_rc_); \
			return ddp_rc_; \
		} \
	} while (0)

/* On failure store the result in rc and jump to label (cleanup path). */
#define DDP_CHECK_GOTO(x, rc, label) \
	do { \
		(rc) = (x); \
		if ((rc) != DDP_OK) { \
			ddp_log_breadcrumb(__FILE__, __LINE__, #x, (rc)); \
			goto label; \
		} \
	} while (0)

/* A driver result (CUresult r) of what: DDP_OK, or DDP_ERR_CUDA after one
 * WARN naming what and the driver's name for r (ddp_log.c).  The one check
 * for driver results in runtime/. */
ddp_result ddp_cu_result(int r, const char *what);
#define DDP_CUCHECK(call, what) DDP_CHECK(ddp_cu_result((int)(call), (what)))

/* The value of a system call (an expression returning -1 with errno on
 * error), made again while it fails with EINTR: n = DDP_EINTR_RETRY(read(fd,
 * b, 1)).  What a failure means is the caller's: the code base's EINTR loops
 * go on to short counts, EOF or a timeout, so no check macro fits them all
 * (DDP_SYSCHECK, which returned DDP_ERR_SYS, had no user and is gone). */
#define DDP_EINTR_RETRY(call) \
	__extension__({ \
		__typeof__(call) ddp_eintr_; \
		do \
			ddp_eintr_ = (call); \
		while (ddp_eintr_ == -1 && errno == EINTR); \
		ddp_eintr_; \
	})

#endif /* DDP_ERR_H */
