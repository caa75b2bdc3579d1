/* SPDX-License-Identifier: MIT
 *
 * ddp_trace.h - per-rank Chrome trace JSON (Perfetto and chrome://tracing
 * open it): DIR/rank<k>.trace.json with one complete ("X") event per hooked
 * call: ts and dur in microseconds, pid = rank, tid = thread, args with the
 * kernel name, grid/block, bytes, allocation size and address.
 *
 * Events are appended to a buffer owned by the calling thread (no lock, no
 * syscall); a full buffer, and every buffer once a second (a flusher
 * thread), is formatted and written as one self-contained chunk: the file
 * is valid JSON after every write, so a rank killed by any signal leaves a
 * trace that loads, up to its last second.  ddp_trace_close (exit) flushes
 * every thread's buffer and marks the trace complete
 * ("otherData":{"ddprun":"complete"}); a trace without the mark was cut.
 *
 * Contract: ddp_trace_open once at init; ddp_trace_event from any thread
 * (allocates that thread's buffer on its first event); ddp_trace_close once
 * at exit.  Strings given to an event must live until exit (hook names,
 * registry kernel names).
 */
#ifndef DDP_TRACE_H
#define DDP_TRACE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "ddp_err.h"

struct ddp_trace_ev {
	const char *name;   /* event name (hook or kernel)           */
	const char *cat;    /* category: "hook", "launch", "alloc"... */
	const char *kernel; /* kernel name or NULL                   */
	uint64_t ts_ns, dur_ns;
	uint64_t bytes;             /* bytes copied / allocated (0: none)    */
	uint64_t addr;              /* address (0: none)                     */
	uint32_t grid[3], block[3]; /* grid[0] == 0: none                  */
	int32_t result;             /* CUresult                              */
	uint64_t step;              /* optimizer step (0: none)               */
	uint32_t track;             /* 0: the recording thread's row; else one of
				  * DDP_TRACE_TRACK_* (its own named row)  */
};

/* Rows of the trace that are not threads: events with .track = one of these
 * appear on a row of that name (tid DDP_TRACE_TRACK_TID + track), whatever
 * thread records them; their ts may lie in the past (measured afterwards). */
#define DDP_TRACE_TRACK_COMM 1 /* "communication": collectives as they ran */
#define DDP_TRACE_TRACK_TID 900000

/* Opens DIR/rank<rank>.trace.json (DIR is created if missing). events_per_
 * thread sizes each thread's buffer. */
ddp_result ddp_trace_open(const char *dir, int rank, size_t events_per_thread);

int ddp_trace_enabled(void);

/* Records one event (copied). */
void ddp_trace_event(const struct ddp_trace_ev *ev);

/* A copy of s that lives until exit (the same pointer for equal strings;
 * "?" when the set of 4096 is full or memory ran out), for event strings
 * whose owner may free or move them (buffer labels).  Takes a lock. */
const char *ddp_trace_intern(const char *s);

/* Writes every thread's buffered events now (e.g. before _exit). */
void ddp_trace_flush(void);

/* In the child of a fork(): stops tracing and drops what the inherited
 * FILE holds, without a lock (pthread_atfork child handler; the file is the
 * parent's). */
void ddp_trace_fork_child(void);

/* Flushes every buffer, terminates the JSON and closes the file. */
void ddp_trace_close(void);

/* Writes s as a JSON string body (escaped, no quotes) to f. */
void ddp_json_escape(FILE *f, const char *s);

#endif /* DDP_TRACE_H */
