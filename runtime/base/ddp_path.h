/* SPDX-License-Identifier: MIT
 *
 * ddp_path.h - what libddp's write policy (runtime/write) and ddprun's
 * start-up notice (launcher/notice.c) must agree on about folders: whether
 * a path is a folder or inside it, and the folders that stay shared by every
 * rank (never redirected: docs/write-safety.md).
 *
 * Contract: pure functions of their arguments; abs and dir are absolute and
 * normalised (no "//", "." or ".."); a trailing '/' of dir is ignored.
 */
#ifndef DDP_PATH_H
#define DDP_PATH_H

#include <stddef.h>
#include <string.h>

/* The folders every rank shares: devices, the kernel's views, run state. */
#define DDP_SHARED_FOLDERS \
	{ \
		"/dev", "/proc", "/sys", "/run" \
	}
#define DDP_SHARED_FOLDERS_TEXT "/dev, /proc, /sys, /run"

/* Whether abs is dir or inside it ("/" holds everything). */
static inline int ddp_path_under(const char *abs, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (n == 0 || strncmp(abs, dir, n) != 0)
		return 0;
	return abs[n] == '\0' || abs[n] == '/' || n == 1;
}

/* Whether abs is inside one of DDP_SHARED_FOLDERS. */
static inline int ddp_path_in_shared_folder(const char *abs)
{
	static const char *const shared[] = DDP_SHARED_FOLDERS;

	for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++)
		if (ddp_path_under(abs, shared[i]))
			return 1;
	return 0;
}

#endif /* DDP_PATH_H */
