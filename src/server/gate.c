/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gate.c - a limit on jobs at once (see gate.h). One timer does every
 * start and shed after the first, so a job that ends inside its own start
 * never starts the next one from within it.
 */
#include "gate.h"

/* The timer at @at_ms, unless it is set for earlier already: a pump now must not move later. */
static void
arm(struct gx_gate *g, int64_t at_ms)
{
    int64_t in_ms = at_ms - gx_mono_ms();
    struct timeval tv = {0, 0};

    if (evtimer_pending(g->timer, NULL) && g->armed_ms <= at_ms) {
        return;
    }
    g->armed_ms = at_ms;

    if (in_ms > 0) {
        tv.tv_sec = (time_t)(in_ms / 1000);
        tv.tv_usec = (suseconds_t)(in_ms % 1000 * 1000);
    }
    (void)evtimer_add(g->timer, &tv);
}

static struct gx_gate_job *
take_head(struct gx_gate *g)
{
    struct gx_gate_job *j = TAILQ_FIRST(&g->waiting);

    TAILQ_REMOVE(&g->waiting, j, link);
    g->n_waiting--;
    j->state = GX_GATE_OUT;
    return j;
}

static size_t
cap(const struct gx_gate *g)
{
    return (size_t)g->window;
}

static void
start(struct gx_gate *g, struct gx_gate_job *j)
{
    j->state = GX_GATE_RUNNING;
    g->running++;
    j->start(j->ctx);
}

/* Start the paced jobs whose time came, or all of them once nobody waits. */
static void
start_paced(struct gx_gate *g)
{
    struct gx_gate_job *j;

    while ((j = TAILQ_FIRST(&g->paced)) != NULL &&
           (TAILQ_EMPTY(&g->waiting) || j->start_by_ms <= gx_mono_ms())) {
        TAILQ_REMOVE(&g->paced, j, link);
        g->n_paced--;
        j->state = GX_GATE_OUT;
        j->start(j->ctx);
    }
}

/* The timer for the earliest start-by of both queues, if any. */
static void
rearm(struct gx_gate *g)
{
    struct gx_gate_job *w = TAILQ_FIRST(&g->waiting), *p = TAILQ_FIRST(&g->paced);

    if (w != NULL && (p == NULL || w->start_by_ms <= p->start_by_ms)) {
        arm(g, w->start_by_ms);
    } else if (p != NULL) {
        arm(g, p->start_by_ms);
    }
}

/*
 * Shed every waiting job past its start-by, start the next while places
 * are free, then the paced jobs that may go.
 */
static void
pump(evutil_socket_t fd, short what, void *arg)
{
    struct gx_gate *g = arg;
    struct gx_gate_job *j;

    (void)fd;
    (void)what;
    while ((j = TAILQ_FIRST(&g->waiting)) != NULL && j->start_by_ms <= gx_mono_ms()) {
        j = take_head(g);
        j->shed(j->ctx);
    }
    while (g->running < cap(g) && !TAILQ_EMPTY(&g->waiting)) {
        start(g, take_head(g));
    }
    start_paced(g);
    rearm(g);
}

enum gx_err
gx_gate_init(struct gx_gate *g, struct event_base *base)
{
    TAILQ_INIT(&g->waiting);
    TAILQ_INIT(&g->paced);
    g->running = g->n_waiting = g->n_paced = 0;
    g->ceiling = GX_GATE_MIN;
    g->window = 0; /* opened wide by the first entry */
    g->period_ms = 0;
    g->n_ended = g->n_late = 0;
    g->timer = evtimer_new(base, pump, g);
    return g->timer != NULL ? GX_OK : GX_ENOMEM;
}

void
gx_gate_release(struct gx_gate *g)
{
    if (g->timer != NULL) {
        event_free(g->timer);
        g->timer = NULL;
    }
}

void
gx_gate_enter(struct gx_gate *g, struct gx_gate_job *j, size_t ceiling)
{
    g->ceiling = ceiling > 0 ? ceiling : 1;
    if (g->window == 0 || g->window > (double)g->ceiling) {
        g->window = (double)g->ceiling;
    }
    if (g->running < cap(g) && TAILQ_EMPTY(&g->waiting)) {
        start(g, j);
        return;
    }
    j->state = GX_GATE_WAITING;
    TAILQ_INSERT_TAIL(&g->waiting, j, link);
    g->n_waiting++;
    rearm(g);
}

bool
gx_gate_pace(struct gx_gate *g, struct gx_gate_job *j)
{
    if (TAILQ_EMPTY(&g->waiting) && TAILQ_EMPTY(&g->paced)) {
        j->state = GX_GATE_OUT;
        j->start(j->ctx);
        return true;
    }
    j->state = GX_GATE_PACED;
    TAILQ_INSERT_TAIL(&g->paced, j, link);
    g->n_paced++;
    rearm(g);
    return false;
}

void
gx_gate_feedback(struct gx_gate *g, bool late)
{
    int64_t now = gx_mono_ms();
    double least = g->ceiling < GX_GATE_MIN ? (double)g->ceiling : GX_GATE_MIN;

    if (g->window == 0) {
        return; /* nothing entered yet */
    }
    if (!late) {
        g->window += 1.0 / g->window;
        g->window = g->window < (double)g->ceiling ? g->window : (double)g->ceiling;
    }
    if (g->period_ms == 0) {
        g->period_ms = now;
    }
    g->n_ended++;
    g->n_late += late ? 1U : 0U;
    /* judged a second at a time: the jobs started together time out together */
    if (now - g->period_ms >= 1000) {
        if (g->n_late >= 4 && g->n_late * 4 >= g->n_ended) {
            g->window = g->window / 2 > least ? g->window / 2 : least;
        }
        g->period_ms = now;
        g->n_ended = g->n_late = 0;
    }
}

void
gx_gate_leave(struct gx_gate *g, struct gx_gate_job *j)
{
    if (j->state == GX_GATE_WAITING) {
        TAILQ_REMOVE(&g->waiting, j, link);
        g->n_waiting--;
        if (g->n_waiting == 0 && g->n_paced > 0) {
            arm(g, 0); /* the paced go, from the event loop */
        }
    } else if (j->state == GX_GATE_PACED) {
        TAILQ_REMOVE(&g->paced, j, link);
        g->n_paced--;
    } else if (j->state == GX_GATE_RUNNING) {
        g->running--;
        if (!TAILQ_EMPTY(&g->waiting)) {
            arm(g, 0); /* from the event loop: @j may be ending inside its own start */
        }
    }
    j->state = GX_GATE_OUT;
}
