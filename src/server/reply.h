/* SPDX-License-Identifier: Apache-2.0 */
/*
 * reply.h - the only way the extender answers an HTTP request: every answer
 * is counted in the metrics by verb and status, and every error is the JSON
 * {"error": "..."} with a log line.
 */
#ifndef GX_REPLY_H
#define GX_REPLY_H

#include "buf.h"
#include "http.h"
#include "metrics.h"

/** Answer @r with the JSON @body (taken). */
void gx_reply_json(struct gx_metrics *m, struct gx_http_req *r, enum gx_verb verb, int status,
                   struct gx_buf *body);

/** Answer @r with @body (taken) of @content_type. */
void gx_reply_body(struct gx_metrics *m, struct gx_http_req *r, enum gx_verb verb, int status,
                   const char *content_type, struct gx_buf *body);

/** Answer @r with the JSON text @text (copied). */
void gx_reply_jsontext(struct gx_metrics *m, struct gx_http_req *r, int status, const char *text);

/** Answer @r with {"error": @msg} and log it. */
void gx_reply_error(struct gx_metrics *m, struct gx_http_req *r, enum gx_verb verb, int status,
                    const char *msg);

/** Answer a bind with ExtenderBindingResult (@err "" on success), counting @o. */
void gx_reply_bind(struct gx_metrics *m, struct gx_http_req *r, enum gx_bind_outcome o,
                   const char *err);

#endif
