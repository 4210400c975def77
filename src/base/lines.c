/* SPDX-License-Identifier: Apache-2.0 */
/* lines.c - newline splitting with a bounded carry-over buffer. */
#include "lines.h"

#include <string.h>

void
gx_lines_init(struct gx_lines *l, size_t max_line)
{
    gx_buf_init(&l->pending, max_line);
    l->max_line = max_line;
}

void
gx_lines_release(struct gx_lines *l)
{
    gx_buf_release(&l->pending);
}

void
gx_lines_reset(struct gx_lines *l)
{
    gx_buf_reset(&l->pending);
}

static enum gx_err
emit(const char *line, size_t len, gx_line_cb cb, void *ctx)
{
    if (len > 0 && line[len - 1] == '\r') {
        len--;
    }
    if (len == 0) {
        return GX_OK;
    }
    return cb(ctx, line, len);
}

enum gx_err
gx_lines_feed(struct gx_lines *l, const char *data, size_t len, gx_line_cb cb, void *ctx)
{
    const char *end = data + len;
    enum gx_err rc;

    while (data < end) {
        const char *nl = memchr(data, '\n', (size_t)(end - data));
        size_t n = nl ? (size_t)(nl - data) : (size_t)(end - data);

        if (nl == NULL) {
            /* No end in sight: carry the piece over to the next read. */
            if (gx_buf_add(&l->pending, data, n) != GX_OK) {
                return GX_ETOOBIG;
            }
            return GX_OK;
        }
        if (l->pending.len > 0) {
            if (gx_buf_add(&l->pending, data, n) != GX_OK) {
                return GX_ETOOBIG;
            }
            rc = emit(l->pending.data, l->pending.len, cb, ctx);
            gx_buf_reset(&l->pending);
        } else {
            rc = n > l->max_line ? GX_ETOOBIG : emit(data, n, cb, ctx);
        }
        if (rc != GX_OK) {
            return rc;
        }
        data = nl + 1;
    }
    return GX_OK;
}
