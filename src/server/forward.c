/* SPDX-License-Identifier: Apache-2.0 */
/* forward.c - scheduling calls answered by the leader replica (see forward.h). */
#include "forward.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "leader.h"
#include "log.h"
#include "reply.h"
#include "service.h"

/* A replica gone without a word (its pod deleted) must not hold the call for long. */
#define CONNECT_TIMEOUT_MS 500

struct forward_op {
    LIST_ENTRY(forward_op) link;
    struct gx_app *app;
    struct gx_http_req *r;
    enum gx_verb verb;
    gx_forward_local_cb local;
    struct gx_httpc_xfer *xfer;
};

static void
forward_done(void *ctx, const struct gx_httpc_result *res)
{
    struct forward_op *op = ctx;
    struct gx_app *app = op->app;
    char msg[400];

    LIST_REMOVE(op, link);
    if (res->rc == GX_OK && res->status > 0) {
        struct gx_buf b;

        gx_buf_init(&b, res->body_len + 1);
        if (gx_buf_add(&b, res->body, res->body_len) == GX_OK) {
            app->metrics.forwarded++;
            gx_reply_body(&app->metrics, op->r, op->verb, (int)res->status,
                          res->content_type != NULL ? res->content_type : "application/json", &b);
        } else {
            gx_buf_release(&b);
            gx_reply_error(&app->metrics, op->r, op->verb, 500, "out of memory");
        }
    } else if (res->kind == GX_UPERR_CONNECT || op->verb != GX_VERB_BIND) {
        gx_warn("leader replica unreachable, answering here", "verb=%s error=%s",
                gx_verb_name(op->verb), res->error ? res->error : gx_strerror(res->rc));
        app->metrics.forward_fallbacks++;
        op->local(app, op->r);
    } else {
        (void)snprintf(msg, sizeof(msg), "the leader replica did not answer the bind: %s",
                       res->error ? res->error : gx_strerror(res->rc));
        gx_reply_bind(&app->metrics, op->r, GX_BIND_ERROR, msg);
    }
    free(op);
}

bool
gx_forward(struct gx_app *app, struct gx_http_req *r, enum gx_verb verb, gx_forward_local_cb local)
{
    const char *leader = gx_leader_url(app);
    struct forward_op *op;
    struct gx_httpc_req req;
    struct gx_httpc_auth auth = {0};
    char url[1024];
    size_t len = 0;
    const char *body, *fmt = gx_http_query(r, "format");
    int w;

    if (leader == NULL || gx_http_header(r, GX_FORWARDED_HEADER) != NULL) {
        return false;
    }
    /* the only query any forwarded route reads (the debug explains' text form) */
    w = snprintf(url, sizeof(url), "%s%s%s", leader, gx_http_path(r),
                 fmt != NULL && strcmp(fmt, "text") == 0 ? "?format=text" : "");
    if (w <= 0 || (size_t)w >= sizeof(url) || (op = calloc(1, sizeof(*op))) == NULL) {
        return false;
    }
    auth.pinned_key = gx_leader_pin(app);
    body = gx_http_body(r, &len);
    req = (struct gx_httpc_req){.method = "POST",
                                .url = url,
                                .body = body != NULL ? body : "",
                                .body_len = len,
                                .content_type = "application/json",
                                .timeout_ms = app->cfg->bind_deadline_ms + 1000L,
                                .max_body = app->cfg->max_body_bytes,
                                .auth = &auth,
                                .connect_timeout_ms = CONNECT_TIMEOUT_MS,
                                .header = GX_FORWARDED_HEADER ": 1"};
    *op = (struct forward_op){.app = app, .r = r, .verb = verb, .local = local};
    /* listed first: a transfer that ends at once calls forward_done, which unlists it */
    LIST_INSERT_HEAD(&app->forwards, op, link);
    op->xfer = gx_httpc_start(app->sync.httpc, &req, forward_done, NULL, op);
    if (op->xfer == NULL) {
        LIST_REMOVE(op, link);
        free(op);
        return false;
    }
    return true;
}

void
gx_forward_cancel(struct gx_app *app)
{
    struct forward_op *op, *next;

    for (op = LIST_FIRST(&app->forwards); op != NULL; op = next) {
        next = LIST_NEXT(op, link);
        gx_httpc_cancel(op->xfer);
        free(op);
    }
    LIST_INIT(&app->forwards);
}
