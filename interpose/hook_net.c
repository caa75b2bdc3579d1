/* SPDX-License-Identifier: MIT
 *
 * hook_net.c - where a data-parallel program's own rendezvous shows:
 * connect().  torch.distributed (env:// init, torchrun's idiom: gloo, NCCL,
 * any backend), Accelerate and Lightning start by connecting every rank to
 * a TCPStore on MASTER_ADDR:MASTER_PORT, before their first gradient.
 * Under ddprun (and torchrun) MASTER_PORT is the program's: libddp's own
 * store is elsewhere (DDP_STORE_PORT, or MASTER_PORT+1 under torchrun), so
 * a connection to MASTER_PORT from a rank means the program synchronises
 * itself: gradient synchronisation steps aside for good
 * (ddp_sync_program_rendezvous), with one line, as torchrun would leave it
 * alone.  Where MASTER_PORT is libddp's own store (mpirun, PMI, srun with
 * MASTER_PORT exported: ddp_rank.c), nothing is concluded.
 *
 * And a unix socket's file path, on ranks whose writes are redirected
 * (runtime/write: libc overlay): bind() makes the socket file where the
 * rank's other writes go, so a socket in a folder the rank made (Python
 * multiprocessing's /tmp/pymp-*, which PyTorch's DataLoader workers use) is
 * found; connect() looks the path up where they are.  A mapped path longer
 * than sun_path is reached through /proc/self/fd/N of its folder.  Abstract
 * and unnamed sockets are untouched.
 *
 * Contract: any thread; the files stage runs first (settings, rank); the
 * check is a parse of the address, no allocation, errno preserved; the
 * call itself always goes to the real connect or bind.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>
#include "hook.h"
#include "hook_file.h"
#include "ddp_port.h"
#include "ddp_rank.h"
#include "ddp_sync.h"

/* MASTER_PORT when it is the program's own (not libddp's store), else 0. */
static int program_port(void)
{
	const char *v = getenv("MASTER_PORT");
	char *end;
	if (!v || !*v)
		return 0;
	long p = strtol(v, &end, 10);
	if (*end || p <= 0 || p > 65535 || p == ddp_rank_get()->master_port)
		return 0;
	return (int)p;
}

static void seen(const struct sockaddr *addr, socklen_t len)
{
	int port = 0;
	if (!addr)
		return;
	if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in))
		port = ntohs(((const struct sockaddr_in *)(const void *)addr)->sin_port);
	else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6))
		port = ntohs(((const struct sockaddr_in6 *)(const void *)addr)->sin6_port);
	if (!port || port != program_port())
		return;
	char why[160];
	snprintf(why, sizeof why,
		 "it connected to MASTER_PORT %d: its own rendezvous, as torch.distributed's TCPStore makes", port);
	ddp_sync_program_rendezvous(why);
}

/* A unix socket address whose path the rank's write redirection maps:
 * 1 with *out, *olen (and *dirfd >= 0 to close after the call when the path
 * goes through /proc/self/fd); 0 when addr stays as it is; -1 with errno
 * when the path cannot be mapped (the call fails as an open would). */
static int unix_mapped(const struct sockaddr *addr, socklen_t len, int create, struct sockaddr_un *out,
		       socklen_t *olen, int *dirfd)
{
	const struct sockaddr_un *un = (const struct sockaddr_un *)(const void *)addr;
	size_t off = offsetof(struct sockaddr_un, sun_path), n;
	char path[sizeof un->sun_path + 1], buf[PATH_MAX];
	const char *p;

	*dirfd = -1;
	if (!addr || addr->sa_family != AF_UNIX || len <= (socklen_t)off || !un->sun_path[0])
		return 0; /* unnamed or abstract */
	n = strnlen(un->sun_path, (size_t)len - off < sizeof un->sun_path ? (size_t)len - off : sizeof un->sun_path);
	memcpy(path, un->sun_path, n);
	path[n] = '\0';
	hook_file_init();
	if (!hook_file_ready())
		return 0;
	/* bind makes a file: an open that creates it, never a copy-up */
	p = create ? hook_write_map_open(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, buf, sizeof buf)
		   : hook_write_map_lookup(AT_FDCWD, path, buf, sizeof buf);
	if (!p)
		return -1;
	if (p == path || !strcmp(p, path))
		return 0;
	memset(out, 0, sizeof *out);
	out->sun_family = AF_UNIX;
	if (strlen(p) < sizeof out->sun_path) {
		memcpy(out->sun_path, p, strlen(p) + 1);
	} else {
		const char *slash = strrchr(p, '/');
		char dir[PATH_MAX];
		if (!slash || (size_t)(slash - p) >= sizeof dir) {
			errno = ENAMETOOLONG;
			return -1;
		}
		memcpy(dir, p, (size_t)(slash - p));
		dir[slash - p ? slash - p : 1] = '\0';
		if (slash == p)
			dir[0] = '/';
		*dirfd = (int)syscall(SYS_openat, AT_FDCWD, dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (*dirfd < 0)
			return -1;
		if ((size_t)snprintf(out->sun_path, sizeof out->sun_path, "/proc/self/fd/%d/%s", *dirfd, slash + 1) >=
		    sizeof out->sun_path) {
			close(*dirfd);
			*dirfd = -1;
			errno = ENAMETOOLONG;
			return -1;
		}
	}
	*olen = (socklen_t)(off + strlen(out->sun_path) + 1);
	return 1;
}

/* The real call (bind or connect) on addr, or on its mapped unix path. */
static int sock_call(int (*real)(int, const struct sockaddr *, socklen_t), long nr, int fd,
		     const struct sockaddr *addr, socklen_t len, int create)
{
	struct sockaddr_un un;
	socklen_t ulen = 0;
	int dirfd, m = unix_mapped(addr, len, create, &un, &ulen, &dirfd), rc;
	if (m < 0)
		return -1;
	if (m > 0) {
		addr = (const struct sockaddr *)(const void *)&un;
		len = ulen;
	}
	rc = real ? real(fd, addr, len) : (int)syscall(nr, fd, addr, len);
	if (dirfd >= 0) {
		int e = errno;
		close(dirfd);
		errno = e;
	}
	return rc;
}

DDP_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved = errno;
	hook_file_init();
	if (hook_file_ready())
		seen(addr, len);
	errno = saved;
	if (!ddp_libc_.connect)
		hook_libc_resolve();
	return sock_call(ddp_libc_.connect, SYS_connect, fd, addr, len, 0);
}

DDP_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
	if (!ddp_libc_.bind)
		hook_libc_resolve();
	return sock_call(ddp_libc_.bind, SYS_bind, fd, addr, len, 1);
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_NET
#include "hook_libc_gen.h"
