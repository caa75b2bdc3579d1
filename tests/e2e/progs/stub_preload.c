/* SPDX-License-Identifier: MIT
 *
 * stub_preload.c - a shared library standing in for libddp.so in the
 * launcher tests (they copy ddprun next to it, as bin/ddprun + lib/libddp.so,
 * to test LD_PRELOAD without depending on the real library).  Like libddp,
 * it marks the rank's image on ddprun's status board when loaded
 * (runtime/job/ddp_status.c, ddp_status_mark_image), so ddprun does not
 * take its ranks for ones that ran without the library.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>
#include "ddp_status.h"

int ddp_test_stub_preload_marker;

__attribute__((constructor)) static void stub_mark(void)
{
	const char *fd = getenv(DDP_STATUS_FD_ENV), *lr = getenv("LOCAL_RANK");
	struct {
		int32_t pid;
		char comm[16];
	} m;
	if (!fd || !lr || getpid() != getpgrp() || getsid(0) == getpid())
		return;
	memset(&m, 0, sizeof m);
	m.pid = (int32_t)getpid();
	(void)prctl(PR_GET_NAME, m.comm);
	(void)pwrite(atoi(fd), &m, sizeof m,
		     (off_t)(atoi(lr) * DDP_STATUS_SLOT_BYTES + (long)offsetof(struct ddp_status_slot, image_pid)));
}
