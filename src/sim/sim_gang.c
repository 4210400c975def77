/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_gang.c - gangs in the trace replay (sim.h, sim_int.h): the --gangs
 * spec, which arrivals form a gang, and placing one all or nothing. Each
 * member goes through the pod-by-pod cycle (gx_sim_place: the scheduler's
 * filters and scores, the extender's answer, bind's booking in the
 * ledger); a member that fits nowhere rolls back every member before it
 * (gx_sim_unplace), as kube-scheduler's group cycle drops what it assumed.
 * No placement rule lives here.
 */
#include "sim_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ledger.h"

/* The class after ':'; false for an unknown one. */
static bool
parse_class(const char *s, enum gx_sim_gang_pods *out)
{
    static const struct {
        const char *name;
        enum gx_sim_gang_pods pods;
    } names[] = {
        {"whole", GX_SIM_GANG_WHOLE}, {"multi", GX_SIM_GANG_MULTI}, {"gpu", GX_SIM_GANG_GPU}};

    for (size_t i = 0; i < GX_ARRAY_LEN(names); i++) {
        if (strcmp(s, names[i].name) == 0) {
            *out = names[i].pods;
            return true;
        }
    }
    return false;
}

/* The sizes before ':' (or the end) into @g; false for anything but 2..GX_SIM_GANG_MAX. */
static bool
parse_sizes(const char *s, const char **end, struct gx_sim_gangs *g)
{
    g->n_sizes = 0;
    for (;;) {
        char *e = NULL;
        long v = strtol(s, &e, 10);

        if (*s < '0' || *s > '9' || v < 2 || v > GX_SIM_GANG_MAX ||
            g->n_sizes == GX_SIM_GANG_SIZES) {
            return false;
        }
        g->sizes[g->n_sizes++] = (int)v;
        if (*e != ',') {
            *end = e;
            return true;
        }
        s = e + 1;
    }
}

enum gx_err
gx_sim_gangs_parse(const char *spec, struct gx_sim_gangs *out, struct gx_why *why)
{
    struct gx_sim_gangs g = {.pods = GX_SIM_GANG_WHOLE};
    const char *rest = NULL;

    if (!parse_sizes(spec, &rest, &g)) {
        gx_why_set(why,
                   "gang sizes must be integers from 2 to %d, at most %d of them, comma-separated: "
                   "'%.64s'",
                   GX_SIM_GANG_MAX, GX_SIM_GANG_SIZES, spec);
        return GX_EINVAL;
    }
    if (*rest != '\0' && (*rest != ':' || !parse_class(rest + 1, &g.pods))) {
        gx_why_set(why, "gang pods must be ':whole', ':multi' or ':gpu' after the sizes: '%.64s'",
                   spec);
        return GX_EINVAL;
    }
    *out = g;
    return GX_OK;
}

bool
gx_sim_gang_member(const struct gx_sim_gangs *g, const struct gx_trace_pod *p)
{
    switch (g->pods) {
    case GX_SIM_GANG_MULTI:
        return p->num_gpu >= 2;
    case GX_SIM_GANG_GPU:
        return p->num_gpu >= 1;
    case GX_SIM_GANG_WHOLE:
    default:
        return p->num_gpu >= 1 && !gx_sim_is_share(p);
    }
}

bool
gx_sim_place_gang(struct gx_sim_state *r, const struct gx_trace_pod *const *p, size_t n,
                  struct gx_sim_placed *at)
{
    size_t k = 0;

    while (k < n && gx_sim_place(r, p[k], &at[k])) {
        k++;
    }
    if (k == n) {
        return true;
    }
    for (size_t i = 0; i < n; i++) {
        if (i < k) {
            gx_sim_unplace(r, p[i], &at[i]);
        } else {
            at[i].booked = false; /* never placed: nothing of it to look for */
        }
        at[i].node = -1;
    }
    return false;
}

/* Members the cluster still holds: the ledger's bookings, the sim's placement without one. */
static size_t
held(const struct gx_sim_state *r, const struct gx_sim_placed *at, size_t n)
{
    size_t h = 0;
    char uid[32];

    for (size_t i = 0; i < n; i++) {
        (void)snprintf(uid, sizeof(uid), "u%llu", (unsigned long long)at[i].uid);
        h += at[i].booked ? gx_ledger_find_pod(r->ledger, uid) != NULL : at[i].node >= 0;
    }
    return h;
}

/* The next gang's size. */
static void
draw_size(struct gx_sim_gang_run *g)
{
    g->n = 0;
    g->want = (size_t)g->spec->sizes[gx_sim_rng_below(&g->rng, g->spec->n_sizes)];
}

void
gx_sim_gang_start(struct gx_sim_gang_run *g, const struct gx_sim_gangs *spec, uint64_t seed)
{
    memset(g, 0, sizeof(*g));
    g->spec = spec;
    g->rng = seed ^ UINT64_C(0x6A09E667F3BCC908); /* not the scheduler's stream */
    if (spec->n_sizes > 0) {
        draw_size(g);
    }
}

/* Schedule the gang formed so far and count its outcome. */
static void
attempt(struct gx_sim_state *r, struct gx_sim_gang_run *g, struct gx_sim_result *out)
{
    size_t h;

    memset(g->at, 0, sizeof(g->at));
    out->gangs++;
    if (gx_sim_place_gang(r, g->members, g->n, g->at)) {
        out->gangs_placed++;
    } else {
        out->gangs_failed++;
        out->failed += g->n;
    }
    h = held(r, g->at, g->n);
    out->gangs_partial += h != 0 && h != g->n;
    draw_size(g);
}

bool
gx_sim_gang_arrive(struct gx_sim_state *r, struct gx_sim_gang_run *g, const struct gx_trace_pod *p,
                   struct gx_sim_result *out)
{
    if (g->spec->n_sizes == 0 || !gx_sim_gang_member(g->spec, p)) {
        return false;
    }
    g->members[g->n++] = p;
    if (g->n == g->want) {
        attempt(r, g, out);
    }
    return true;
}

void
gx_sim_gang_flush(struct gx_sim_state *r, struct gx_sim_gang_run *g, struct gx_sim_result *out)
{
    if (g->n > 0) {
        attempt(r, g, out);
    }
}
