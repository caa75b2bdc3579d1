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
 * Contract: any thread; the files stage runs first (settings, rank); the
 * check is a parse of the address, no allocation, errno preserved; the
 * call itself always goes to the real connect.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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

DDP_EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	int saved = errno;
	hook_file_init();
	if (hook_file_ready())
		seen(addr, len);
	errno = saved;
	if (!ddp_libc_.connect)
		hook_libc_resolve();
	if (!ddp_libc_.connect)
		return (int)syscall(SYS_connect, fd, addr, len);
	return ddp_libc_.connect(fd, addr, len);
}

/* The exported functions of this file: hook_libc.def. */
#define HOOK_LIBC_AREA_NET
#include "hook_libc_gen.h"
