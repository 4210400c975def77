/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gang_filter.c - the shell of the gang members' tentative bookings
 * (gang_filter.h): keeps the store in the app, reads the clock once per
 * call, logs and counts what gang.c decides. No decision is made here.
 */
#include "gang_filter.h"

#include <stdlib.h>
#include <string.h>

#include "log.h"

/* The time to live of an entry, from the current config. */
static int64_t
ttl_ms(const struct gx_app *app)
{
    return (int64_t)app->cfg->gang_hold_ms;
}

void
gx_gang_call_begin(struct gx_app *app, const struct gx_pod *pod, const struct gx_podreq *req,
                   bool bad, bool filter, struct gx_gang_call *gc)
{
    size_t dropped;
    char qp[700];

    gc->now_ms = gx_mono_ms();
    gc->member =
        filter && !bad && req->kind != GX_REQ_NONE && gx_gang_key(pod, gc->key, sizeof(gc->key));
    if (gc->member) {
        dropped = gx_gang_begin(app->gang, gc->key, pod->uid, gc->now_ms);
        if (dropped > 0) {
            gx_debug("gang pass started again, its tentative bookings dropped",
                     "group=%s pod=%s dropped=%zu", gc->key,
                     gx_log_quote_pod(qp, sizeof(qp), pod->namespace, pod->name), dropped);
        }
    }
    gc->any = !bad && gx_gang_any(app->gang);
}

bool
gx_gang_node_verdict(struct gx_app *app, const struct gx_gang_call *gc,
                     const struct gx_decide_ctx *ctx, const struct gx_pod *pod,
                     const struct gx_podreq *req, const char *node, struct gx_vshort *v)
{
    enum gx_gang_outcome o;

    if (!gc->any) {
        return false;
    }
    o = gx_gang_verdict(app->gang, ctx, pod, req, node, gc->now_ms, v);
    if (o == GX_GANG_TURNED) {
        app->metrics.gang_rejections++;
    }
    return o != GX_GANG_NONE;
}

void
gx_gang_filter_pin(struct gx_app *app, const struct gx_gang_call *gc,
                   const struct gx_decide_ctx *ctx, const struct gx_pod *pod,
                   const struct gx_podreq *req, const struct gx_ext_node *nodes,
                   struct gx_vshort *v, size_t n, const char *held)
{
    struct gx_vshort *kept;
    struct gx_why why = {{0}};
    size_t at = n, prefer = n;
    enum gx_err rc;
    char qp[700], qn[300], qw[300];

    if (!gc->member) {
        return;
    }
    for (size_t i = 0; i < n; i++) {
        at = at == n && v[i].keep ? i : at;
        prefer = held != NULL && strcmp(nodes[i].name, held) == 0 ? i : prefer;
    }
    if (at == n) {
        return; /* fits nowhere: its rejections say why, and it books nothing */
    }
    if (app->gang == NULL && (app->gang = gx_gang_new()) == NULL) {
        return;
    }
    /* pin on a copy: a member whose entry cannot be recorded keeps every node it fits */
    if ((kept = malloc(n * sizeof(*kept))) == NULL) {
        return;
    }
    memcpy(kept, v, n * sizeof(*kept));
    at = gx_gang_pin(kept, n, prefer);
    rc = gx_gang_put(app->gang, ctx, gc->key, pod, req, nodes[at].name, ttl_ms(app), gc->now_ms,
                     &why);
    if (rc == GX_OK) {
        memcpy(v, kept, n * sizeof(*kept));
        app->metrics.gang_pins++;
        gx_debug("gang member placed, its cards booked for the group's cycle",
                 "group=%s pod=%s node=%s", gc->key,
                 gx_log_quote_pod(qp, sizeof(qp), pod->namespace, pod->name),
                 gx_log_quote(qn, sizeof(qn), nodes[at].name));
    } else {
        gx_warn("cannot book the gang member's cards, answering as for any pod",
                "group=%s pod=%s node=%s error=%s", gc->key,
                gx_log_quote_pod(qp, sizeof(qp), pod->namespace, pod->name),
                gx_log_quote(qn, sizeof(qn), nodes[at].name),
                gx_log_quote(qw, sizeof(qw), why.text[0] ? why.text : gx_strerror(rc)));
    }
    free(kept);
}

size_t
gx_gang_bind_plan(struct gx_app *app, const char *uid, const char *node, struct gx_tenant *t)
{
    return gx_gang_planned(app->gang, uid, node, gx_mono_ms(), t);
}

void
gx_gang_booked(struct gx_app *app, const char *uid)
{
    (void)gx_gang_drop(app->gang, uid);
}

size_t
gx_gang_held(const struct gx_app *app)
{
    return gx_gang_count(app->gang, gx_mono_ms());
}

void
gx_gang_store_free(struct gx_app *app)
{
    gx_gang_free(app->gang);
    app->gang = NULL;
}
