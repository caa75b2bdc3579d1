/* SPDX-License-Identifier: MIT
 *
 * hook_peer.c - the wrappers of hook_peer.def: a program's own NCCL or MPI
 * rendezvous (ncclCommInitRank*, ncclCommInitAll, MPI_Init*) means it
 * synchronises itself, so gradient synchronisation steps aside before its
 * first gradient, with one line (ddp_sync_program_rendezvous; hook_net.c
 * catches torch.distributed's TCPStore the same way).  The real function is
 * the next definition after libddp.so; none (a program that calls it
 * without the library) returns the row's failure value, logged once.
 *
 * Contract: any thread; the files stage runs first (settings, rank); no
 * allocation besides dlsym's; errno preserved up to the real call.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdio.h>
#include "hook.h"
#include "hook_file.h"
#include "hook_resolve.h"
#include "ddp_log.h"
#include "ddp_sync.h"

/* NCCL's ncclUniqueId: 128 bytes passed by value. */
typedef struct {
	char internal[128];
} ncclUniqueId_;

struct peer_find {
	const char *name;
	void *self_base; /* libddp.so's load address: never its own wrapper */
	void *found;
};

/* dl_iterate_phdr: name in a loaded object other than libddp.so, through a
 * no-load handle of it (its own scope first). */
static int peer_find_in(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct peer_find *f = arg;
	(void)size;
	if (!info->dlpi_name || !info->dlpi_name[0] || (void *)info->dlpi_addr == f->self_base)
		return 0;
	void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	void *p = hook_real_dlsym(h, f->name);
	Dl_info di;
	if (p && dladdr(p, &di) && di.dli_fbase != f->self_base)
		f->found = p;
	dlclose(h);
	return f->found != NULL;
}

/* The next definition of name after libddp.so, or NULL (logged once).  Not
 * only the global scope: a library a Python extension loaded privately
 * (RTLD_LOCAL: PyTorch's wheel links libnccl.so.2 from torch._C) is found
 * among the loaded objects. */
static void *peer_real(void **cache, const char *name, int *logged)
{
	void *p = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
	if (p)
		return p;
	p = hook_real_dlsym(RTLD_NEXT, name);
	if (!p) {
		Dl_info self;
		struct peer_find f = { name, NULL, NULL };
		if (dladdr((void *)peer_find_in, &self))
			f.self_base = self.dli_fbase;
		dl_iterate_phdr(peer_find_in, &f);
		p = f.found;
	}
	if (p)
		__atomic_store_n(cache, p, __ATOMIC_RELEASE);
	else if (!__atomic_exchange_n(logged, 1, __ATOMIC_RELAXED))
		DDP_ERROR("libddp: %s was called but no library after libddp.so defines it; the call fails", name);
	return p;
}

static void peer_seen(const char *name)
{
	char why[96];
	int saved = errno;
	hook_file_init();
	snprintf(why, sizeof why, "it called %s: its own rendezvous", name);
	ddp_sync_program_rendezvous(why);
	errno = saved;
}

#define PEER(ret, name, params, args, fail) \
	DDP_EXPORT ret name params; \
	ret name params \
	{ \
		static void *real_; \
		static int logged_; \
		peer_seen(#name); \
		ret(*fn_) params = (ret(*) params)peer_real(&real_, #name, &logged_); \
		return fn_ ? fn_ args : (ret)(fail); \
	}
#include "hook_peer.def"
#undef PEER
