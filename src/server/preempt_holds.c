/* SPDX-License-Identifier: Apache-2.0 */
/*
 * preempt_holds.c - the shell of the preempt holds (preempt_holds.h):
 * keeps the store in the app, reads the clock once per call, logs and
 * counts what holds.c decides. No decision is made here.
 */
#include "preempt_holds.h"

#include "holds.h"
#include "log.h"

/* The time to live of a hold, from the current config. */
static int64_t
ttl_ms(const struct gx_app *app)
{
    return (int64_t)app->cfg->reservation_ttl_s * 1000;
}

void
gx_preempt_hold_put(struct gx_app *app, const struct gx_pod *pod, const struct gx_podreq *req,
                    const char *node, const struct gx_preempt_choice *c)
{
    char qn[300], qp[700];

    if (app->holds == NULL && (app->holds = gx_holds_new()) == NULL) {
        return;
    }
    if (gx_holds_put(app->holds, pod, req, node, c, ttl_ms(app), gx_mono_ms()) != GX_OK) {
        gx_warn("preempt holds full, not holding the freed share", "node=%s pod=%s",
                gx_log_quote(qn, sizeof(qn), node),
                gx_log_quote_pod(qp, sizeof(qp), pod->namespace, pod->name));
    }
}

void
gx_preempt_pod_event(struct gx_app *app, const struct gx_pod *pod, bool gone)
{
    struct gx_hold_info h;
    char qn[300], qp[700];

    if (!gx_holds_pod_event(app->holds, pod, gone, ttl_ms(app), gx_mono_ms(), &h)) {
        return;
    }
    app->metrics.preempt_holds_activated++;
    gx_info("preemption carried out, holding the freed GPU share for the preemptor",
            "node=%s pod=%s ttl_s=%d", gx_log_quote(qn, sizeof(qn), h.node),
            gx_log_quote_pod(qp, sizeof(qp), h.ns, h.name), app->cfg->reservation_ttl_s);
}

bool
gx_preempt_hold_verdict(struct gx_app *app, const struct gx_decide_ctx *ctx,
                        const struct gx_pod *pod, const struct gx_podreq *req, const char *node,
                        int64_t now_ms, struct gx_vshort *v)
{
    enum gx_hold_outcome o = gx_holds_verdict(app->holds, ctx, pod, req, node, now_ms, v);

    if (o == GX_HOLD_TURNED) {
        app->metrics.preempt_hold_rejections++;
    }
    return o != GX_HOLD_NONE;
}

bool
gx_preempt_under_way(const struct gx_app *app, const char *uid, const char *node)
{
    return gx_holds_under_way(app->holds, uid, node, gx_mono_ms());
}

void
gx_preempt_holds_free(struct gx_app *app)
{
    gx_holds_free(app->holds);
    app->holds = NULL;
}
