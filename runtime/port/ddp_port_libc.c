/* SPDX-License-Identifier: MIT
 *
 * ddp_port_libc.c - the plain-libc filling of ddp_libc_ (ddp_port.h), for
 * every program that is not libddp.so: ddprun, the CPU device, the tools and
 * the tests.
 *
 * libddp.so defines ddp_libc_ itself (interpose/hook_libc.c, resolved with
 * dlvsym(RTLD_NEXT)), so the linker never takes this member from the
 * archive there: this file must define nothing else.  It is the one runtime
 * object allowed to name libc functions that libddp.so exports
 * (tests/arch/check_layers.sh knows it).
 *
 * Contract: constant data; the pre-2.33 __fxstat family is left NULL (the
 * ddp_sys_* helpers use the plain functions).
 */
#include <dlfcn.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "ddp_port.h"

struct ddp_libc ddp_libc_ = {
	.open64 = open64,
	.openat64 = openat64,
	.read = read,
	.pread64 = pread64,
	.readv = readv,
	.preadv64 = preadv64,
	.preadv64v2 = preadv64v2,
	.lseek64 = lseek64,
	.close = close,
	.dup = dup,
	.dup2 = dup2,
	.dup3 = dup3,
	.fcntl = fcntl,
	.close_range = close_range,
	.closefrom = closefrom,
	.mmap64 = mmap64,
	.munmap = munmap,
	.mprotect = mprotect,
	.madvise = madvise,
	.msync = msync,
	.copy_file_range = copy_file_range,
	.sendfile64 = sendfile64,
	.splice = splice,
	.fopen64 = fopen64,
	.fdopen = fdopen,
	.freopen64 = freopen64,
	.fstat64 = fstat64,
	.fstatat64 = fstatat64,
	.fxstat64 = NULL,
	.fxstatat64 = NULL,
	.statx = statx,
	.rename = rename,
	.renameat = renameat,
	.renameat2 = renameat2,
	.unlink = unlink,
	.unlinkat = unlinkat,
	.remove = remove,
	.access = access,
	.connect = connect,
	.bind = bind,
	.link = link,
	.linkat = linkat,
	.truncate64 = truncate64,
	.mkdir = mkdir,
	.mkdirat = mkdirat,
	.rmdir = rmdir,
	.symlink = symlink,
	.symlinkat = symlinkat,
	.readlink = readlink,
	.readlinkat = readlinkat,
	.chdir = chdir,
	.mkostemps = mkostemps,
	.dlsym = dlsym,
};
