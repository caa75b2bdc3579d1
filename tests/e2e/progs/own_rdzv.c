/* SPDX-License-Identifier: MIT
 *
 * own_rdzv.c - an LD_PRELOAD shim that makes any program DDP-aware the
 * way torch.distributed's env:// init does: before main, rank 0 listens on
 * MASTER_ADDR:MASTER_PORT and every rank connects to it (a TCPStore's
 * rendezvous), then the program runs on (tests/e2e/launcher/own_rdzv.sh).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

__attribute__((constructor)) static void own_rdzv(void)
{
	const char *p = getenv("MASTER_PORT"), *a = getenv("MASTER_ADDR"), *r = getenv("RANK");
	struct sockaddr_in sa;
	int ls = -1, fd;

	if (!p || !a || !r || getpid() != getpgrp())
		return;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)atoi(p));
	inet_pton(AF_INET, a, &sa.sin_addr);
	if (!strcmp(r, "0")) {
		int one = 1;
		ls = socket(AF_INET, SOCK_STREAM, 0);
		setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
		if (bind(ls, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(ls, 16) != 0) {
			perror("own-rdzv: bind");
			exit(1);
		}
	}
	for (int i = 0; i < 1500; i++) { /* 30 s: rank 0 may start late */
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(20000);
	}
	if (fd < 0) {
		fprintf(stderr, "own-rdzv: cannot reach MASTER_PORT\n");
		exit(1);
	}
	fprintf(stderr, "own-rdzv: rank %s met the others\n", r);
	/* the listener and the connection stay open until exit */
}
