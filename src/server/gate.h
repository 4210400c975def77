/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate.h - a limit on jobs at once; the others wait in order of arrival,
 * and one still waiting when its start-by time passes is shed: never
 * started. The limit is a window between GX_GATE_MIN and a ceiling, halved
 * after a second in which at least a quarter of the jobs that ended ran
 * out of time, and grown by one per window's worth of jobs in time
 * (additive increase, multiplicative decrease, as TCP does for the same
 * reason). A few late jobs of a healthy burst do not close it. Binds go
 * through one (ledger.binds_in_flight is the ceiling). Unbounded, a burst
 * on a slow API server started every bind at once; each then timed out
 * halfway, its writes and their undoing added to the load that slowed
 * them. A fixed small limit shed binds of a healthy burst instead. A bind
 * shed early costs kube-scheduler one retry and the API server nothing.
 *
 * Other work can be paced by the gate: a paced job starts once no job
 * waits to enter, or at its start-by at the latest, and never counts
 * as running. Filter calls are paced by the binds' gate, so that
 * kube-scheduler, whose cycles are one at a time, schedules no faster
 * than the API server takes the binds, instead of having them shed.
 */
#ifndef GX_GATE_H
#define GX_GATE_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/queue.h>

#include "common.h"

enum gx_gate_state { GX_GATE_OUT, GX_GATE_WAITING, GX_GATE_RUNNING, GX_GATE_PACED };

struct gx_gate_job {
    TAILQ_ENTRY(gx_gate_job) link;
    int64_t start_by_ms; /* monotonic: shed when still waiting then (paced: started) */
    void (*start)(void *ctx);
    void (*shed)(void *ctx); /* unused for a paced job */
    void *ctx;
    enum gx_gate_state state;
};

TAILQ_HEAD(gx_gate_queue, gx_gate_job);

#define GX_GATE_MIN 4 /* the window never closes below this (or the ceiling) */

struct gx_gate {
    struct event *timer; /* the next start or shed */
    int64_t armed_ms;    /* monotonic: when it fires, while pending */
    struct gx_gate_queue waiting, paced;
    size_t running, n_waiting, n_paced;
    size_t ceiling;    /* the latest caller's */
    double window;     /* jobs that may run at once, GX_GATE_MIN..ceiling */
    int64_t period_ms; /* monotonic: the start of this second of feedback */
    unsigned n_ended, n_late;
};

/** Set up @g on @base. GX_ENOMEM. */
enum gx_err gx_gate_init(struct gx_gate *g, struct event_base *base) GX_WUR;

/** Free @g's timer; jobs still in it must have left. */
void gx_gate_release(struct gx_gate *g);

/**
 * Let @j in under a window of at most @ceiling jobs running (the latest
 * caller's @ceiling holds): started now when a place is free and nobody
 * waits, else queued.
 * Its callbacks run later from the event loop, never inside this call but
 * for a start now.
 */
void gx_gate_enter(struct gx_gate *g, struct gx_gate_job *j, size_t ceiling);

/**
 * Start @j once no job waits to enter, or at its start-by at the latest:
 * now when nothing waits and nothing paced is queued before it. A paced
 * job takes no place; it is done once started (or gx_gate_leave).
 */
bool gx_gate_pace(struct gx_gate *g, struct gx_gate_job *j) GX_WUR; /* true: started now */

/** A job that ran ended: @late, out of its time, or not (the window grows). */
void gx_gate_feedback(struct gx_gate *g, bool late);

/** @j is done (or freed while waiting): its place goes to the next. Harmless twice. */
void gx_gate_leave(struct gx_gate *g, struct gx_gate_job *j);

#endif
