/* SPDX-License-Identifier: MIT
 *
 * report_run.h - the run as `ddprun report` shows it: step time and steps/s
 * per rank, skew between ranks, exposed communication per step, bandwidth
 * per collective size, the checks' overhead and their verdict
 * (report_run.c).  report.c feeds it every trace event and every
 * rank<k>.sync.json it reads; it prints a text section, a JSON object, or a
 * self-contained HTML page.
 *
 * Contract: single thread (a command of ddprun); every function takes the
 * object made by report_run_new; a NULL object is ignored (out of memory:
 * the section is left out, never wrong).
 */
#ifndef DDPRUN_REPORT_RUN_H
#define DDPRUN_REPORT_RUN_H

#include <stddef.h>
#include <jansson.h>

struct report_run;

/* ranks[0..nranks): the rank numbers, column order */
struct report_run *report_run_new(const int *ranks, size_t nranks);
void report_run_free(struct report_run *run);

/* One event of column r's trace (a step, a collective; others ignored). */
void report_run_event(struct report_run *run, size_t r, const json_t *ev);
/* Column r's rank<k>.sync.json, parsed. */
void report_run_sync(struct report_run *run, size_t r, const json_t *sync);
/* Column r has a summary: the rank exited normally. */
void report_run_exited(struct report_run *run, size_t r);

/* The text sections (stdout). */
void report_run_print(struct report_run *run);
/* The run as a JSON object (new reference; NULL out of memory). */
json_t *report_run_json(struct report_run *run);
/* A self-contained page (no network) with the run's numbers and two charts
 * per rank: step time and exposed communication per step.  0, or -1 with
 * one line printed. */
int report_run_html(struct report_run *run, const char *path, const char *title);

#endif
