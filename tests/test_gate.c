/* SPDX-License-Identifier: Apache-2.0 */
/* test_gate.c - the limit on jobs at once: who starts, who waits, who is shed. */
#include <criterion/criterion.h>
#include <event2/event.h>
#include <string.h>

#include "gate.h"

struct job {
    struct gx_gate_job j;
    struct gx_gate *g;
    int started, shed;
    bool leave_at_start; /* ends inside its own start, as a bind that cannot begin does */
};

static void
on_start(void *ctx)
{
    struct job *jb = ctx;

    jb->started++;
    if (jb->leave_at_start) {
        gx_gate_leave(jb->g, &jb->j);
    }
}

static void
on_shed(void *ctx)
{
    ((struct job *)ctx)->shed++;
}

static void
job_init(struct job *jb, struct gx_gate *g, int64_t start_by_ms)
{
    memset(jb, 0, sizeof(*jb));
    jb->g = g;
    jb->j = (struct gx_gate_job){
        .start_by_ms = start_by_ms, .start = on_start, .shed = on_shed, .ctx = jb};
}

static struct event_base *base;
static struct gx_gate g;

static void
setup(void)
{
    base = event_base_new();
    cr_assert_eq(gx_gate_init(&g, base), GX_OK);
}

static void
teardown(void)
{
    gx_gate_release(&g);
    event_base_free(base);
}

TestSuite(gate, .init = setup, .fini = teardown);

/* Run what is due now (timers at 0 ms fire in one non-blocking pass). */
static void
run_due(void)
{
    cr_assert_geq(event_base_loop(base, EVLOOP_NONBLOCK), 0);
}

Test(gate, starts_up_to_the_cap_and_queues_the_rest)
{
    struct job jb[3];
    int64_t later = gx_mono_ms() + 60000;

    for (int i = 0; i < 3; i++) {
        job_init(&jb[i], &g, later);
        gx_gate_enter(&g, &jb[i].j, 2);
    }
    cr_assert_eq(jb[0].started + jb[1].started, 2);
    cr_assert_eq(jb[2].started, 0, "the third waits");
    cr_assert_eq(g.running, 2);
    cr_assert_eq(g.n_waiting, 1);

    gx_gate_leave(&g, &jb[0].j);
    cr_assert_eq(jb[2].started, 0, "started from the event loop, not inside leave");
    run_due();
    cr_assert_eq(jb[2].started, 1);
    cr_assert_eq(jb[2].shed, 0);
    cr_assert_eq(g.running, 2);
    cr_assert_eq(g.n_waiting, 0);

    gx_gate_leave(&g, &jb[0].j); /* twice: nothing changes */
    cr_assert_eq(g.running, 2);
    gx_gate_leave(&g, &jb[1].j);
    gx_gate_leave(&g, &jb[2].j);
    cr_assert_eq(g.running, 0);
}

Test(gate, a_job_waiting_past_its_start_by_is_shed_never_started)
{
    struct job busy, late, later;
    int64_t now = gx_mono_ms();

    job_init(&busy, &g, now + 60000);
    job_init(&late, &g, now + 20);
    job_init(&later, &g, now + 60000);
    gx_gate_enter(&g, &busy.j, 1);
    gx_gate_enter(&g, &late.j, 1);
    gx_gate_enter(&g, &later.j, 1);
    cr_assert_eq(busy.started, 1);

    /* the gate's own timer sheds @late at its start-by while @busy still runs */
    cr_assert_geq(event_base_loop(base, EVLOOP_ONCE), 0);
    cr_assert_eq(late.shed, 1);
    cr_assert_eq(late.started, 0);
    cr_assert_eq(later.shed + later.started, 0, "the next keeps waiting");
    cr_assert_eq(g.n_waiting, 1);

    gx_gate_leave(&g, &busy.j);
    run_due();
    cr_assert_eq(later.started, 1);
    gx_gate_leave(&g, &later.j);
}

Test(gate, a_job_ending_inside_its_start_frees_its_place)
{
    struct job quick, next;
    int64_t later = gx_mono_ms() + 60000;

    job_init(&quick, &g, later);
    quick.leave_at_start = true;
    job_init(&next, &g, later);
    gx_gate_enter(&g, &quick.j, 1);
    cr_assert_eq(g.running, 0);
    gx_gate_enter(&g, &next.j, 1);
    cr_assert_eq(next.started, 1, "a free place and nobody waiting: at once");
    gx_gate_leave(&g, &next.j);
}

Test(gate, a_waiting_job_freed_leaves_the_queue)
{
    struct job busy, gone;
    int64_t later = gx_mono_ms() + 60000;

    job_init(&busy, &g, later);
    job_init(&gone, &g, later);
    gx_gate_enter(&g, &busy.j, 1);
    gx_gate_enter(&g, &gone.j, 1);
    gx_gate_leave(&g, &gone.j);
    cr_assert_eq(g.n_waiting, 0);
    gx_gate_leave(&g, &busy.j);
    run_due();
    cr_assert_eq(gone.started + gone.shed, 0, "a job that left is never called back");
}

Test(gate, a_smaller_cap_holds_from_the_next_entry)
{
    struct job jb[3];
    int64_t later = gx_mono_ms() + 60000;

    for (int i = 0; i < 3; i++) {
        job_init(&jb[i], &g, later);
    }
    gx_gate_enter(&g, &jb[0].j, 4);
    gx_gate_enter(&g, &jb[1].j, 4);
    gx_gate_enter(&g, &jb[2].j, 2); /* reloaded: two at once */
    cr_assert_eq(jb[2].started, 0);
    gx_gate_leave(&g, &jb[0].j);
    run_due();
    cr_assert_eq(jb[2].started, 1);
    gx_gate_leave(&g, &jb[1].j);
    gx_gate_leave(&g, &jb[2].j);
}

static void
enter_all(struct job *jb, size_t n, size_t ceiling)
{
    int64_t later = gx_mono_ms() + 60000;

    for (size_t i = 0; i < n; i++) {
        job_init(&jb[i], &g, later);
        gx_gate_enter(&g, &jb[i].j, ceiling);
    }
}

static size_t
started(const struct job *jb, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++) {
        k += (size_t)jb[i].started;
    }
    return k;
}

/* A second of feedback: @late of @n jobs late, then the second ends. */
static void
second_of(int n, int late)
{
    g.period_ms = gx_mono_ms() - 1000 + 1; /* ends at the last call below */
    for (int i = 0; i < n; i++) {
        if (i == n - 1) {
            g.period_ms -= 1;
        }
        gx_gate_feedback(&g, i < late);
    }
}

Test(gate, a_second_with_a_quarter_late_halves_the_window_and_others_reopen_it)
{
    struct job jb[40];

    enter_all(jb, 20, 16);
    cr_assert_eq(started(jb, 20), 16, "opens at the ceiling");
    second_of(40, 9);
    cr_assert_float_eq(g.window, 16.0, 1e-9, "9 late of 40: a healthy burst's stragglers");
    second_of(16, 16);
    cr_assert_float_eq(g.window, 8.0, 1e-9, "all late: halved");
    for (size_t i = 0; i < 16; i++) {
        gx_gate_leave(&g, &jb[i].j);
    }
    run_due();
    cr_assert_eq(started(jb, 20), 20, "the four waiting fit in the halved window");
    cr_assert_eq(g.running, 4);
    enter_all(jb + 20, 8, 16);
    cr_assert_eq(started(jb + 20, 8), 4, "eight at once, no more");

    second_of(8, 0);
    cr_assert_float_eq(g.window, 9.0, 0.1, "one place more per window of jobs in time");
    second_of(1000, 0);
    cr_assert_float_eq(g.window, 16.0, 1e-9, "never past the ceiling");
    for (int i = 0; i < 5; i++) {
        second_of(4, 4);
    }
    cr_assert_float_eq(g.window, (double)GX_GATE_MIN, 1e-9, "never below the floor");
    second_of(3, 3);
    cr_assert_float_eq(g.window, (double)GX_GATE_MIN, 1e-9);
    for (size_t i = 16; i < 28; i++) {
        gx_gate_leave(&g, &jb[i].j);
    }
}

/* A paced job: started once nobody waits to enter, or at its start-by. */
static void
pace(struct job *jb, int64_t start_by_ms, bool now)
{
    job_init(jb, &g, start_by_ms);
    cr_assert_eq(gx_gate_pace(&g, &jb->j), now);
}

Test(gate, a_paced_job_starts_at_once_when_nobody_waits)
{
    struct job busy, paced;

    job_init(&busy, &g, gx_mono_ms() + 60000);
    gx_gate_enter(&g, &busy.j, 1);
    pace(&paced, gx_mono_ms() + 60000, true);
    cr_assert_eq(paced.started, 1, "a running job alone does not hold it");
    cr_assert_eq(g.running, 1, "a paced job takes no place");
    gx_gate_leave(&g, &busy.j);
}

/* One job running under a cap of one and one waiting behind it, both to start by @start_by_ms. */
static void
busy_and_waiting(struct job *busy, struct job *waiting, int64_t start_by_ms)
{
    job_init(busy, &g, start_by_ms);
    job_init(waiting, &g, start_by_ms);
    gx_gate_enter(&g, &busy->j, 1);
    gx_gate_enter(&g, &waiting->j, 1);
}

Test(gate, a_paced_job_waits_until_the_waiting_job_starts)
{
    struct job busy, waiting, first, second;
    int64_t later = gx_mono_ms() + 60000;

    busy_and_waiting(&busy, &waiting, later);
    pace(&first, later, false);
    pace(&second, later, false);
    run_due();
    cr_assert_eq(first.started + second.started, 0, "a job still waits");
    cr_assert_eq(g.n_paced, 2);

    gx_gate_leave(&g, &busy.j);
    run_due();
    cr_assert_eq(waiting.started, 1);
    cr_assert_eq(first.started + second.started, 2, "both go once nobody waits");
    cr_assert_eq(g.n_paced, 0);
    gx_gate_leave(&g, &waiting.j);
}

Test(gate, a_paced_job_starts_at_its_start_by_while_a_job_still_waits)
{
    struct job busy, waiting, paced;
    int64_t now = gx_mono_ms();

    busy_and_waiting(&busy, &waiting, now + 60000);
    pace(&paced, now + 20, false);
    cr_assert_geq(event_base_loop(base, EVLOOP_ONCE), 0);
    cr_assert_eq(paced.started, 1);
    cr_assert_eq(paced.shed, 0, "paced jobs are never shed");
    cr_assert_eq(waiting.started + waiting.shed, 0, "the waiting job keeps its place in line");
    gx_gate_leave(&g, &busy.j);
    run_due();
    cr_assert_eq(waiting.started, 1);
    gx_gate_leave(&g, &waiting.j);
}

Test(gate, a_paced_job_that_left_never_starts_and_the_waiting_one_leaving_frees_the_rest)
{
    struct job busy, waiting, gone, kept;
    int64_t later = gx_mono_ms() + 60000;

    busy_and_waiting(&busy, &waiting, later);
    pace(&gone, later, false);
    pace(&kept, later, false);
    gx_gate_leave(&g, &gone.j);
    cr_assert_eq(g.n_paced, 1);
    gx_gate_leave(&g, &waiting.j); /* freed while waiting: nobody waits now */
    cr_assert_eq(kept.started, 0, "started from the event loop, not inside leave");
    run_due();
    cr_assert_eq(kept.started, 1);
    cr_assert_eq(gone.started, 0);
    gx_gate_leave(&g, &busy.j);
}

Test(gate, a_later_entry_does_not_put_off_a_start_due_now)
{
    struct job busy, waiting, next;
    int64_t now = gx_mono_ms();

    busy_and_waiting(&busy, &waiting, now + 60000);
    job_init(&next, &g, now + 60000);
    gx_gate_leave(&g, &busy.j); /* @waiting may start now */
    gx_gate_enter(&g, &next.j, 1);
    run_due();
    cr_assert_eq(waiting.started, 1, "not put off until a start-by");
    cr_assert_eq(next.started, 0);
    gx_gate_leave(&g, &waiting.j);
    run_due();
    cr_assert_eq(next.started, 1);
    gx_gate_leave(&g, &next.j);
}
