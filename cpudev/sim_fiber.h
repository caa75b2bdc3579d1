/* SPDX-License-Identifier: MIT
 *
 * sim_fiber.h - user-level fibers for the CPU device's block scheduler.
 *
 * A fiber is a stack (mmap'd, with a guard page below it) plus a saved
 * register set.  It is made once with makecontext; every later switch is a
 * _setjmp/_longjmp pair (no signal-mask syscall).  A fiber runs one function
 * at a time: sim_fiber_start gives it the function, sim_fiber_resume runs it
 * until it calls sim_fiber_yield or its function returns, and
 * sim_fiber_abandon drops whatever it was doing (after a trap) so it can be
 * started again.
 *
 * Contract: a fiber belongs to the OS thread that created it and is resumed
 * only there; no locks.  Not ASan-friendly (stack switching).
 */
#ifndef SIM_FIBER_H
#define SIM_FIBER_H

#include <stddef.h>

struct sim_fiber;
typedef void (*sim_fiber_fn)(void *arg);

/* Creates a fiber with a stack of stack_bytes (rounded up to pages) plus a
 * guard page; NULL (with errno) when memory is short. */
struct sim_fiber *sim_fiber_create(size_t stack_bytes);

/* Frees the stack; the fiber must not be running. */
void sim_fiber_destroy(struct sim_fiber *f);

/* Gives an idle (new, finished or abandoned) fiber its next function. */
void sim_fiber_start(struct sim_fiber *f, sim_fiber_fn fn, void *arg);

/* Runs f on the calling thread until it yields (returns 0) or its function
 * returns (returns 1; the fiber is idle again). */
int sim_fiber_resume(struct sim_fiber *f);

/* From inside a fiber: back to the sim_fiber_resume that ran it. */
void sim_fiber_yield(void);

/* From inside a fiber: stop the current function for good (its stack frames
 * are dropped, no destructors run) and return 1 from sim_fiber_resume. */
__attribute__((noreturn)) void sim_fiber_exit(void);

/* The fiber running on this OS thread, or NULL outside any fiber. */
struct sim_fiber *sim_fiber_current(void);

#endif /* SIM_FIBER_H */
