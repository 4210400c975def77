/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reply.c - HTTP answers (see reply.h). An answer whose body cannot be
 * built is sent empty rather than not at all: kube-scheduler waits for it.
 */
#include "reply.h"

#include <string.h>

#include "extender.h"
#include "log.h"

void
gx_reply_body(struct gx_metrics *m, struct gx_http_req *r, enum gx_verb verb, int status,
              const char *content_type, struct gx_buf *body)
{
    gx_metrics_request(m, verb, status, gx_http_elapsed_s(r));
    gx_http_respond(r, status, content_type, body);
}

void
gx_reply_json(struct gx_metrics *m, struct gx_http_req *r, enum gx_verb verb, int status,
              struct gx_buf *body)
{
    gx_reply_body(m, r, verb, status, "application/json", body);
}

void
gx_reply_jsontext(struct gx_metrics *m, struct gx_http_req *r, int status, const char *text)
{
    struct gx_buf b;

    gx_buf_init(&b, 1 << 20);
    if (gx_buf_adds(&b, text) != GX_OK) {
        gx_buf_reset(&b);
    }
    gx_reply_json(m, r, GX_VERB_OTHER, status, &b);
}

void
gx_reply_error(struct gx_metrics *m, struct gx_http_req *r, enum gx_verb verb, int status,
               const char *msg)
{
    struct gx_buf b;
    char q[300];

    gx_buf_init(&b, 4096);
    gx_warn("request rejected", "req=%llu status=%d method=%s path=%s peer=%s error=%s",
            (unsigned long long)gx_http_id(r), status, gx_http_method(r), gx_http_path(r),
            gx_http_peer(r), gx_log_quote(q, sizeof(q), msg));
    if (gx_ext_encode_http_error(&b, status, msg) != GX_OK) {
        gx_buf_reset(&b);
    }
    gx_reply_json(m, r, verb, status, &b);
}

void
gx_reply_bind(struct gx_metrics *m, struct gx_http_req *r, enum gx_bind_outcome o, const char *err)
{
    struct gx_buf out;

    m->binds[o]++;
    gx_buf_init(&out, 4096);
    if (gx_ext_encode_bind_result(&out, err) != GX_OK) {
        gx_buf_reset(&out);
    }
    gx_reply_json(m, r, GX_VERB_BIND, 200, &out);
}
