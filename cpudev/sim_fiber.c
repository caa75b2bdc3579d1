/* SPDX-License-Identifier: MIT
 *
 * sim_fiber.c - fibers for the CPU device (see sim_fiber.h).
 *
 * Each fiber's stack is mmap'd (MAP_NORESERVE: only touched pages cost) with
 * one PROT_NONE guard page below it, so an overflow faults instead of
 * corrupting a neighbour.  makecontext/setcontext run once per fiber, to
 * enter fiber_main, which saves its loop head in f->idle and jumps back.  From
 * then on every switch is _setjmp/_longjmp: no sigprocmask, tens of ns.
 *
 * _FORTIFY_SOURCE must be off here: glibc's __longjmp_chk refuses jumps
 * "down" to another stack.  Fibers also confuse ASan, so the tests that use
 * them are not UNIT_TESTS.
 *
 * Contract: per-OS-thread state only (tls `cur`); a fiber never migrates.
 */
#undef _FORTIFY_SOURCE
#include "sim_fiber.h"

#include <setjmp.h>
/* Tell valgrind about fiber stacks, so memcheck follows the switches
 * instead of reporting every access as outside the thread's stack. */
#if defined(__has_include) && __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
#define SIM_STACK_REGISTER(lo, hi) VALGRIND_STACK_REGISTER(lo, hi)
#define SIM_STACK_DEREGISTER(id) VALGRIND_STACK_DEREGISTER(id)
#else
#define SIM_STACK_REGISTER(lo, hi) 0u
#define SIM_STACK_DEREGISTER(id) ((void)(id))
#endif
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

enum fiber_state { FIBER_IDLE, FIBER_BUSY };

struct sim_fiber {
	jmp_buf ctx;          /* where a suspended fiber continues          */
	jmp_buf idle;         /* fiber_main's start point (stack top)       */
	jmp_buf *caller;      /* the sim_fiber_resume that runs us          */
	sim_fiber_fn fn;      /* current function and its argument           */
	void *arg;
	int state;            /* enum fiber_state                            */
	int finished;         /* set when fn returned or sim_fiber_exit ran  */
	void *map;            /* mmap'd region: guard page + stack           */
	size_t map_len;
	unsigned vg_stack;    /* valgrind's id of the stack (0 without it)   */
};

static __thread struct sim_fiber *cur;

static void fiber_main(void)
{
	/* First entry (from sim_fiber_create): record the start point, return. */
	if (_setjmp(cur->idle) == 0)
		_longjmp(*cur->caller, 1);
	/* Reached by _longjmp(idle) from sim_fiber_resume on an idle fiber. */
	cur->fn(cur->arg);
	cur->finished = 1;
	_longjmp(*cur->caller, 1);
}

struct sim_fiber *sim_fiber_create(size_t stack_bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (stack_bytes + page - 1) / page * page + page;
	struct sim_fiber *volatile f = calloc(1, sizeof(*f));
	ucontext_t uc;
	jmp_buf here;
	struct sim_fiber *prev = cur;

	if (!f)
		return NULL;
	f->map = mmap(NULL, len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (f->map == MAP_FAILED)
		goto out_free;
	f->map_len = len;
	if (mprotect(f->map, page, PROT_NONE) != 0)
		goto out_unmap;
	if (getcontext(&uc) != 0)
		goto out_unmap;
	uc.uc_stack.ss_sp = (char *)f->map + page;
	uc.uc_stack.ss_size = len - page;
	f->vg_stack = SIM_STACK_REGISTER((char *)f->map + page, (char *)f->map + len);
	uc.uc_link = NULL;
	makecontext(&uc, fiber_main, 0);
	cur = f;
	f->caller = &here;
	if (_setjmp(here) == 0)
		setcontext(&uc);
	cur = prev;
	f->state = FIBER_IDLE;
	return f;

out_unmap:
	munmap(f->map, len);
out_free:
	free(f);
	return NULL;
}

void sim_fiber_destroy(struct sim_fiber *f)
{
	if (!f)
		return;
	SIM_STACK_DEREGISTER(f->vg_stack);
	munmap(f->map, f->map_len);
	free(f);
}

void sim_fiber_start(struct sim_fiber *f, sim_fiber_fn fn, void *arg)
{
	f->fn = fn;
	f->arg = arg;
	f->state = FIBER_IDLE;
}

int sim_fiber_resume(struct sim_fiber *f)
{
	jmp_buf here;
	struct sim_fiber *const prev = cur;

	f->caller = &here;
	f->finished = 0;
	cur = f;
	if (_setjmp(here) == 0) {
		if (f->state == FIBER_IDLE) {
			f->state = FIBER_BUSY;
			_longjmp(f->idle, 1);
		}
		_longjmp(f->ctx, 1);
	}
	cur = prev;
	if (f->finished)
		f->state = FIBER_IDLE;
	return f->finished;
}

void sim_fiber_yield(void)
{
	struct sim_fiber *f = cur;

	if (_setjmp(f->ctx) == 0)
		_longjmp(*f->caller, 1);
}

void sim_fiber_exit(void)
{
	cur->finished = 1;
	_longjmp(*cur->caller, 1);
}

struct sim_fiber *sim_fiber_current(void)
{
	return cur;
}
