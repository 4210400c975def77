/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender_filter.c - the replies to filter and prioritize:
 * ExtenderFilterResult (kept nodes as names, or in full Nodes mode their
 * items echoed byte-for-byte from the request; rejected ones with their
 * reasons) and HostPriorityList. Each reply is reserved once and written
 * without formatting; a failed encode leaves the buffer as it was. No I/O.
 */
#include "extender.h"

#include "extender_int.h"

#include <string.h>

/* Reason used when a verdict rejects a node without giving one. */
#define EXT_DEFAULT_REASON "rejected by gpu-extender"

/*
 * Append the map of rejected nodes whose unresolvable flag is @unresolvable.
 * Verdicts usually share a handful of reason strings, so a reason equal (by
 * pointer) to the previous one is copied from its first encoding in @b.
 */
static enum gx_err
ext_failed_map(struct gx_buf *b, const struct gx_ext_args *args,
               const struct gx_ext_filter_verdict *v, bool unresolvable)
{
    const char *last = NULL;
    size_t last_off = 0, last_len = 0;
    bool first = true;
    enum gx_err rc;

    if ((rc = gx_buf_add(b, "{", 1)) != GX_OK) {
        return rc;
    }
    for (size_t i = 0; i < args->n_nodes; i++) {
        const char *reason;
        if (v[i].keep || v[i].unlisted || v[i].unresolvable != unresolvable) {
            continue;
        }
        reason = v[i].reason != NULL && v[i].reason[0] != '\0' ? v[i].reason : EXT_DEFAULT_REASON;
        if ((!first && (rc = gx_buf_add(b, ",", 1)) != GX_OK) ||
            (rc = gx_buf_add_json_str(b, args->nodes[i].name, args->nodes[i].name_len)) != GX_OK ||
            (rc = gx_buf_add(b, ":", 1)) != GX_OK) {
            return rc;
        }
        first = false;
        if (reason == last) {
            /* Reserved first, so the source cannot move under gx_buf_add. */
            if ((rc = gx_buf_reserve(b, last_len)) != GX_OK ||
                (rc = gx_buf_add(b, b->data + last_off, last_len)) != GX_OK) {
                return rc;
            }
            continue;
        }
        last_off = b->len;
        if ((rc = ext_add_text(b, reason)) != GX_OK) {
            return rc;
        }
        last = reason;
        last_len = b->len - last_off;
    }
    return gx_buf_add(b, "}", 1);
}

/*
 * True when node @i is echoed from @body as it came: a Nodes item always
 * (as before), a name only without escapes. An escape may be one a strict
 * reader refuses (a lone surrogate, \u0000): such a name is encoded again
 * from its decoded text.
 */
static bool
ext_echoes(const char *body, const struct gx_ext_args *args, size_t i)
{
    const struct gx_ext_node *n = &args->nodes[i];

    return args->mode == GX_ARGS_NODES || !args->escaped ||
           memchr(body + n->item_off, '\\', n->item_len) == NULL;
}

/* Append node @i's name: echoed when ext_echoes, else encoded from the decoded name. */
static enum gx_err
ext_add_name(struct gx_buf *b, const char *body, const struct gx_ext_args *args, size_t i)
{
    const struct gx_ext_node *n = &args->nodes[i];

    if (args->mode == GX_ARGS_NAMES && ext_echoes(body, args, i)) {
        return gx_buf_add_utf8(b, body + n->item_off, n->item_len);
    }
    return gx_buf_add_json_str(b, n->name, n->name_len);
}

/*
 * Append the kept nodes' items (Nodes mode) or quoted names, each as it
 * came in the request: a run of kept nodes that were neighbours there is
 * one copy of the bytes between them, separators included.
 */
static enum gx_err
ext_kept_items(struct gx_buf *b, const char *body, const struct gx_ext_args *args,
               const struct gx_ext_filter_verdict *v)
{
    bool first = true;
    enum gx_err rc;

    for (size_t i = 0; i < args->n_nodes; i++) {
        size_t j = i, from, to;
        if (!v[i].keep) {
            continue;
        }
        if (!first && (rc = gx_buf_add(b, ",", 1)) != GX_OK) {
            return rc;
        }
        first = false;
        if (!ext_echoes(body, args, i)) {
            if ((rc = ext_add_name(b, body, args, i)) != GX_OK) {
                return rc;
            }
            continue;
        }
        while (j + 1 < args->n_nodes && v[j + 1].keep && ext_echoes(body, args, j + 1) &&
               args->nodes[j + 1].item_off > args->nodes[j].item_off) {
            j++;
        }
        from = args->nodes[i].item_off;
        to = args->nodes[j].item_off + args->nodes[j].item_len;
        if ((rc = gx_buf_add_utf8(b, body + from, to - from)) != GX_OK) {
            return rc;
        }
        i = j;
    }
    return GX_OK;
}

/*
 * A close upper bound of the filter reply for @args, so gx_ext_encode_filter
 * can reserve it once: kept items (Nodes mode) or names, and for each
 * rejected node its name and room for a typical reason. Escapes or long
 * reasons only make the buffer grow as usual.
 */
static size_t
ext_filter_size(const struct gx_ext_args *args, const struct gx_ext_filter_verdict *v)
{
    size_t n = 160;

    for (size_t i = 0; i < args->n_nodes; i++) {
        if (!v[i].keep) {
            n += args->nodes[i].name_len + 64;
        } else {
            n += args->nodes[i].item_len + 1;
        }
    }
    return n;
}

enum gx_err
gx_ext_encode_filter(struct gx_buf *out, const char *body, const struct gx_ext_args *args,
                     const struct gx_ext_filter_verdict *v)
{
    size_t mark = out->len;
    enum gx_err rc = GX_OK;

    if (args->n_nodes > 0 && (v == NULL || body == NULL)) {
        return GX_EINVAL;
    }
    /* Best effort: a reply larger than the cap fails below with GX_ETOOBIG anyway. */
    if (args->n_nodes > 0 && gx_buf_reserve(out, ext_filter_size(args, v)) == GX_ENOMEM) {
        return GX_ENOMEM;
    }
    if ((rc = gx_buf_adds(out, args->mode == GX_ARGS_NODES
                                   ? "{\"Nodes\":{\"metadata\":{},\"items\":["
                                   : "{\"Nodes\":null,\"NodeNames\":[")) != GX_OK ||
        (rc = ext_kept_items(out, body, args, v)) != GX_OK) {
        goto out;
    }
    rc = gx_buf_adds(out, args->mode == GX_ARGS_NODES ? "]},\"NodeNames\":null" : "]");
    if (rc != GX_OK || (rc = gx_buf_adds(out, ",\"FailedNodes\":")) != GX_OK ||
        (rc = ext_failed_map(out, args, v, false)) != GX_OK ||
        (rc = gx_buf_adds(out, ",\"FailedAndUnresolvableNodes\":")) != GX_OK ||
        (rc = ext_failed_map(out, args, v, true)) != GX_OK) {
        goto out;
    }
    rc = gx_buf_adds(out, ",\"Error\":\"\"}");
out:
    if (rc != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}

enum gx_err
gx_ext_encode_prioritize(struct gx_buf *out, const char *body, const struct gx_ext_args *args,
                         const int *scores)
{
    size_t mark = out->len;
    bool raw = args->mode == GX_ARGS_NAMES;
    enum gx_err rc;

    if (args->n_nodes > 0 && (scores == NULL || (raw && body == NULL))) {
        return GX_EINVAL;
    }
    /*
     * One reservation for the whole list, and the score (0..10) written as
     * text directly: formatting it with gx_buf_addf cost ~1,500 instructions
     * a node, which made prioritize twice the cost of filter.
     */
    {
        size_t want = 2;
        for (size_t i = 0; i < args->n_nodes; i++) {
            want += args->nodes[i].name_len + 24;
        }
        /* Best effort, as for filter: a list larger than the cap fails below anyway. */
        if (gx_buf_reserve(out, want) == GX_ENOMEM) {
            return GX_ENOMEM;
        }
    }
    if ((rc = gx_buf_add(out, "[", 1)) != GX_OK) {
        goto out;
    }
    for (size_t i = 0; i < args->n_nodes; i++) {
        static const char *const tail[11] = {",\"Score\":0}", ",\"Score\":1}", ",\"Score\":2}",
                                             ",\"Score\":3}", ",\"Score\":4}", ",\"Score\":5}",
                                             ",\"Score\":6}", ",\"Score\":7}", ",\"Score\":8}",
                                             ",\"Score\":9}", ",\"Score\":10}"};
        int s = scores[i] < 0 ? 0 : scores[i] > 10 ? 10 : scores[i];
        if (s == 0) {
            continue; /* a node missing from the list scores 0 (see extender.h) */
        }
        if ((rc = out->len > mark + 1 ? gx_buf_add(out, ",{\"Host\":", 9)
                                      : gx_buf_add(out, "{\"Host\":", 8)) != GX_OK ||
            (rc = ext_add_name(out, body, args, i)) != GX_OK ||
            (rc = gx_buf_add(out, tail[s], s == 10 ? 12 : 11)) != GX_OK) {
            goto out;
        }
    }
    rc = gx_buf_add(out, "]", 1);
out:
    if (rc != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}
