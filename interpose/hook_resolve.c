/* SPDX-License-Identifier: MIT
 *
 * hook_resolve.c - how programs and libraries reach the hooks by name:
 *   - the real driver: DDP_CUDA_LIB (libcuda.so.1) opened once at init, every
 *     row of hooks.def resolved to its real symbol (a missing one gets a typed
 *     stub returning CUDA_ERROR_NOT_FOUND);
 *   - `dlsym` override: a name matching cu[A-Z] that hooks.def lists, found
 *     by the real dlsym, is answered with its hook, unless the caller is
 *     libcuda itself.  The real dlsym is dlvsym(RTLD_NEXT, "dlsym",
 *     "GLIBC_2.34"), else "GLIBC_2.2.5".  On x86-64 an assembly entry jumps
 *     straight to the real dlsym for RTLD_NEXT and for every name it does
 *     not answer, so glibc sees the caller's own return address: "next"
 *     and RTLD_DEFAULT's scope (a RTLD_LOCAL library's own dependencies)
 *     keep their meaning.
 *   - binary search of the sorted name tables (hooks_sorted.h).
 *
 * Contract: dlsym does no allocation and no initialisation: one real dlsym,
 * a few compares, a binary search, and once per process (after libcuda is
 * loaded) a dl_iterate_phdr to learn libcuda's address range.  The real
 * pointers are written once, inside library init (pthread_once), before any
 * hook uses them.
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include "hook.h"
#include "hook_acct.h"
#include "hook_resolve.h"

uint8_t hook_real_found_[HOOK_COUNT];
void *hook_libcuda_;

typedef void *(*dlsym_fn)(void *, const char *);
void *ddp_real_dlsym_ptr_ HOOK_HIDDEN;

static dlsym_fn real_dlsym(void)
{
	void *p = __atomic_load_n(&ddp_real_dlsym_ptr_, __ATOMIC_ACQUIRE);
	if (!p) {
		p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
		if (!p)
			p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
		if (!p)
			p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); /* aarch64 */
		__atomic_store_n(&ddp_real_dlsym_ptr_, p, __ATOMIC_RELEASE);
	}
	return (dlsym_fn)p;
}

void *hook_real_dlsym(void *handle, const char *name)
{
	dlsym_fn f = real_dlsym();
	return f ? f(handle, name) : NULL;
}

int hook_find_name(const char *name)
{
	size_t lo = 0, hi = HOOK_COUNT;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(hook_info_[hook_by_name_[mid]].name, name);
		if (c == 0)
			return hook_by_name_[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int hook_find_base(const char *base, size_t *first, size_t *count)
{
	size_t lo = 0, hi = HOOK_COUNT;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(hook_info_[hook_by_base_[mid]].base, base) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t n = 0;
	while (lo + n < HOOK_COUNT && strcmp(hook_info_[hook_by_base_[lo + n]].base, base) == 0)
		n++;
	*first = lo;
	*count = n;
	return n ? 0 : -1;
}

/* ---- libcuda's address range, learnt once it is loaded */
static uintptr_t cuda_lo, cuda_hi;
static int cuda_range_known;

struct range_query {
	uintptr_t base;
	uintptr_t lo, hi;
	int found;
};

static int range_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct range_query *q = arg;
	(void)size;
	if (info->dlpi_addr != q->base)
		return 0;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	q->lo = lo;
	q->hi = hi;
	q->found = hi > lo;
	return 1;
}

/* Learns libcuda's range from handle h (a dlopen handle of it). */
static void learn_range(void *h)
{
	struct link_map *lm = NULL;
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm) != 0 || !lm)
		return;
	struct range_query q = { .base = (uintptr_t)lm->l_addr };
	dl_iterate_phdr(range_cb, &q);
	if (q.found) {
		cuda_lo = q.lo;
		cuda_hi = q.hi;
		__atomic_store_n(&cuda_range_known, 1, __ATOMIC_RELEASE);
	}
}

int hook_caller_is_libcuda(const void *caller)
{
	if (!__atomic_load_n(&cuda_range_known, __ATOMIC_ACQUIRE)) {
		void *h = __atomic_load_n(&hook_libcuda_, __ATOMIC_ACQUIRE);
		if (!h) {
			const char *lib = ddp_param_cuda_lib();
			h = dlopen(lib ? lib : "libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
			if (!h)
				return 0; /* not loaded: the caller cannot be libcuda */
			learn_range(h);
			dlclose(h);
		} else {
			learn_range(h);
		}
		if (!__atomic_load_n(&cuda_range_known, __ATOMIC_ACQUIRE))
			return 0;
	}
	return (uintptr_t)caller >= cuda_lo && (uintptr_t)caller < cuda_hi;
}

ddp_result hook_resolve_all(void)
{
	const char *lib = ddp_param_cuda_lib();
	void *h;

	if (!lib || !*lib)
		lib = "libcuda.so.1";
	hook_real_ = hook_missing_;
	h = dlopen(lib, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		h = dlopen(lib, RTLD_LAZY);
	if (!h) {
		DDP_ERROR("cannot load the CUDA driver %s: %s; set DDP_CUDA_LIB to its path", lib, dlerror());
		return DDP_ERR_SYS;
	}
	for (size_t i = 0; i < HOOK_COUNT; i++) {
		void *p = hook_real_dlsym(h, hook_info_[i].name);
		if (p && p != hook_info_[i].hook) {
			hook_real_.v[i] = p;
			hook_real_found_[i] = 1;
		}
	}
	learn_range(h);
	__atomic_store_n(&hook_libcuda_, h, __ATOMIC_RELEASE);
	return DDP_OK;
}

void *hook_driver_sym(const char *name)
{
	void *h = __atomic_load_n(&hook_libcuda_, __ATOMIC_ACQUIRE);
	return h ? hook_real_dlsym(h, name) : NULL;
}

/* ---- the dlsym override */

/* A name the override may answer with a hook: cu[A-Z]... listed in hooks.def. */
static int hooked_name(const char *name)
{
	return name && name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z' &&
	       hook_find_name(name) >= 0;
}

void *hook_dlsym_impl(void *handle, const char *name, const void *caller) HOOK_HIDDEN;
void *hook_dlsym_impl(void *handle, const char *name, const void *caller)
{
	void *r = hook_real_dlsym(handle, name);
	if (!r || !hooked_name(name) || hook_caller_is_libcuda(caller))
		return r;
	return hook_info_[hook_find_name(name)].hook;
}

#if defined(__x86_64__)
/* Where dlsym(handle, name) goes: NULL for hook_dlsym_impl (a hooked name,
 * other than through RTLD_NEXT), else the real dlsym, which the entry below
 * jumps to with the caller's return address intact.  glibc resolves
 * RTLD_NEXT and RTLD_DEFAULT relative to that caller (its object, and for
 * RTLD_DEFAULT its local scope: a library dlopen'ed RTLD_LOCAL sees its own
 * dependencies), so every name the override does not answer must reach the
 * real dlsym from the caller, not from libddp. */
void *hook_dlsym_route(void *handle, const char *name) HOOK_HIDDEN;
void *hook_dlsym_route(void *handle, const char *name)
{
	if (handle != RTLD_NEXT && hooked_name(name))
		return NULL;
	return (void *)real_dlsym(); /* NULL only without a real dlsym: impl answers NULL */
}

__asm__(".text\n"
	".globl dlsym\n"
	".type dlsym, @function\n"
	"dlsym:\n"
	"	pushq %rdi\n" /* keep the arguments; 16-byte aligned call */
	"	pushq %rsi\n"
	"	subq $8, %rsp\n"
	"	call hook_dlsym_route\n"
	"	addq $8, %rsp\n"
	"	popq %rsi\n"
	"	popq %rdi\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"
	"	jmp *%rax\n"         /* the real dlsym, as if called directly */
	"1:	movq (%rsp), %rdx\n" /* the caller's return address */
	"	jmp hook_dlsym_impl\n"
	".size dlsym, .-dlsym\n");
#else
DDP_EXPORT void *dlsym(void *handle, const char *name)
{
	return hook_dlsym_impl(handle, name, __builtin_return_address(0));
}
#endif
