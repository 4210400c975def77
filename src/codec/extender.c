/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender.c - the kube-scheduler extender wire codec (extender/v1 types).
 *
 * Decoding walks ExtenderArgs with the gx_json scanner: the Pod span goes to
 * gx_kobj_decode_pod, and in full Nodes mode each NodeList item is only
 * scanned for metadata.name while its byte span is kept, so the filter
 * reply can echo kept nodes verbatim without ever building a tree of
 * thousands of Node objects. ExtenderArgs and ExtenderPreemptionArgs share
 * one envelope walk (ext_envelope: a Pod and exactly one of two members).
 * Keys match case-insensitively and the last duplicate wins, as with Go's
 * encoding/json; unknown keys are skipped.
 *
 * Encoding writes the exact PascalCase keys. kube-scheduler passes the
 * Error text of filter and bind results to fmt.Errorf as a format string,
 * so every '%' in text we author (reasons, errors) is written as
 * " percent"; node names are copied as given (Kubernetes names cannot hold
 * '%', and the scheduler must find them in its input set).
 * No I/O.
 *
 * Why one file: every extender/v1 message both ways (filter, prioritize,
 * bind, preempt), on one scanner and one escaping rule for the text the
 * scheduler shows users.
 */
#include "extender.h"

#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Written for '%' in reasons and errors. */
#define EXT_PERCENT " percent"
/* Reason used when a verdict rejects a node without giving one. */
#define EXT_DEFAULT_REASON "rejected by gpu-extender"

/* A growable list of nodes while decoding (copied into the arena at the end). */
struct ext_vec {
    struct gx_ext_node *v;
    size_t n, cap;
};

/* Append @node; GX_ENOMEM. */
static enum gx_err
ext_vec_push(struct ext_vec *vec, const struct gx_ext_node *node)
{
    if (vec->n == vec->cap) {
        size_t ncap = vec->cap ? vec->cap * 2 : 64;
        struct gx_ext_node *nv;
        if (ncap > SIZE_MAX / sizeof(*nv)) {
            return GX_ENOMEM;
        }
        nv = realloc(vec->v, ncap * sizeof(*nv));
        if (nv == NULL) {
            return GX_ENOMEM;
        }
        vec->v = nv;
        vec->cap = ncap;
    }
    vec->v[vec->n++] = *node;
    return GX_OK;
}

/* Record an out-of-memory reason and return GX_ENOMEM. */
static enum gx_err
ext_nomem(struct gx_why *why)
{
    gx_why_set(why, "out of memory decoding the request");
    return GX_ENOMEM;
}

/*
 * The value at the cursor has the wrong type and the caller has already put
 * the reason in why: GX_EINVAL, unless the value is not even valid JSON
 * (then GX_EPARSE from the scanner, whose offset says more).
 */
static enum gx_err
ext_wrong_type(struct gx_json *j)
{
    enum gx_err rc = gx_json_skip(j);

    return rc != GX_OK ? rc : GX_EINVAL;
}

/*
 * Scan one NodeList item: keep its span and metadata.name. GX_EINVAL when it
 * is not an object or has no non-empty metadata.name string.
 */
static enum gx_err
ext_node_item(struct gx_json *j, struct gx_arena *a, size_t idx, struct gx_ext_node *out,
              struct gx_why *why)
{
    struct gx_ext_node node = {0};
    const char *key;
    size_t klen, start;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "Nodes.items[%zu] must be an object", idx);
        return ext_wrong_type(j);
    }
    start = j->pos;
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_member(j, &key, &klen, &rc)) {
        if (!gx_json_key_is(key, klen, "metadata")) {
            if ((rc = gx_json_skip(j)) != GX_OK) {
                return rc;
            }
            continue;
        }
        node.name = NULL;
        if (gx_json_take_null(j)) {
            continue;
        }
        if (gx_json_peek(j) != '{') {
            gx_why_set(why, "Nodes.items[%zu].metadata must be an object", idx);
            return ext_wrong_type(j);
        }
        if ((rc = gx_json_enter_object(j)) != GX_OK) {
            return rc;
        }
        while (gx_json_next_member(j, &key, &klen, &rc)) {
            if (!gx_json_key_is(key, klen, "name")) {
                if ((rc = gx_json_skip(j)) != GX_OK) {
                    return rc;
                }
                continue;
            }
            if (gx_json_peek(j) != '"') {
                gx_why_set(why, "Nodes.items[%zu].metadata.name must be a string", idx);
                return ext_wrong_type(j);
            }
            if ((rc = gx_json_string(j, a, &node.name, &node.name_len)) != GX_OK) {
                return rc;
            }
        }
        if (rc != GX_OK) {
            return rc;
        }
    }
    if (rc != GX_OK) {
        return rc;
    }
    if (node.name == NULL || node.name_len == 0) {
        gx_why_set(why, "Nodes.items[%zu] has no metadata.name", idx);
        return GX_EINVAL;
    }
    node.item_off = start;
    node.item_len = j->pos - start;
    *out = node;
    return GX_OK;
}

/* Decode a non-null "Nodes" (a NodeList) into @vec (emptied first). */
static enum gx_err
ext_nodes(struct gx_json *j, struct gx_arena *a, struct ext_vec *vec, struct gx_why *why)
{
    const char *key;
    size_t klen;
    enum gx_err rc = GX_OK;

    vec->n = 0;
    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "Nodes must be a NodeList object or null");
        return ext_wrong_type(j);
    }
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_member(j, &key, &klen, &rc)) {
        size_t idx = 0;
        if (!gx_json_key_is(key, klen, "items")) {
            if ((rc = gx_json_skip(j)) != GX_OK) {
                return rc;
            }
            continue;
        }
        vec->n = 0;
        if (gx_json_take_null(j)) {
            continue;
        }
        if (gx_json_peek(j) != '[') {
            gx_why_set(why, "Nodes.items must be an array");
            return ext_wrong_type(j);
        }
        if ((rc = gx_json_enter_array(j)) != GX_OK) {
            return rc;
        }
        while (gx_json_next_element(j, &rc)) {
            struct gx_ext_node node;
            if (idx >= GX_EXT_MAX_NODES) {
                gx_why_set(why, "Nodes.items holds more than %u nodes", GX_EXT_MAX_NODES);
                return GX_ETOOBIG;
            }
            if ((rc = ext_node_item(j, a, idx, &node, why)) != GX_OK) {
                return rc;
            }
            if (ext_vec_push(vec, &node) != GX_OK) {
                return ext_nomem(why);
            }
            idx++;
        }
        if (rc != GX_OK) {
            return rc;
        }
    }
    return rc;
}

/*
 * Decode a non-null "NodeNames" (array of non-empty strings) into
 * @out/@n_out, allocated from @a (@out NULL when the array is empty). Two
 * passes over the array: the first validates it and counts names and bytes,
 * the second fills one node array and one block of NUL-terminated names,
 * so thousands of names cost two allocations and one memcpy each.
 */
static enum gx_err
ext_node_names(struct gx_json *j, struct gx_arena *a, struct gx_ext_node **out, size_t *n_out,
               struct gx_why *why)
{
    struct gx_json start;
    struct gx_ext_node *nodes = NULL;
    const char *raw;
    size_t n = 0, total = 0, rawlen;
    bool esc;
    char *dst;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '[') {
        gx_why_set(why, "NodeNames must be an array of strings or null");
        return ext_wrong_type(j);
    }
    if ((rc = gx_json_enter_array(j)) != GX_OK) {
        return rc;
    }
    start = *j;
    while (gx_json_next_string(j, &raw, &rawlen, &esc, &rc)) {
        /* An escape decodes to at least one byte, so only "" is empty. */
        if (rawlen == 0) {
            gx_why_set(why, "NodeNames[%zu] is empty", n);
            return GX_EINVAL;
        }
        if (++n > GX_EXT_MAX_NODES) {
            gx_why_set(why, "NodeNames holds more than %u names", GX_EXT_MAX_NODES);
            return GX_ETOOBIG;
        }
        total += rawlen + 1;
    }
    if (rc == GX_EINVAL) {
        gx_why_set(why, "NodeNames[%zu] must be a string", n);
        return ext_wrong_type(j);
    }
    if (rc != GX_OK) {
        return rc;
    }
    if (n > 0) {
        if (n > SIZE_MAX / sizeof(*nodes)) {
            return ext_nomem(why);
        }
        nodes = gx_arena_alloc(a, n * sizeof(*nodes));
        dst = gx_arena_alloc(a, total);
        if (nodes == NULL || dst == NULL) {
            return ext_nomem(why);
        }
        /* Second pass over input the first one accepted: it cannot fail. */
        for (size_t i = 0; i < n && gx_json_next_string(&start, &raw, &rawlen, &esc, &rc); i++) {
            if (esc) {
                rawlen = gx_json_unescape(raw, rawlen, dst);
            } else {
                memcpy(dst, raw, rawlen);
                dst[rawlen] = '\0';
            }
            nodes[i].name = dst;
            nodes[i].name_len = rawlen;
            dst += rawlen + 1;
        }
    }
    *out = nodes;
    *n_out = n;
    return GX_OK;
}

/*
 * The "Pod" member's value: null (*@null), or an object whose byte span
 * (*@off, *@plen) goes to gx_kobj_decode_pod. Anything else is a type error.
 */
static enum gx_err
ext_pod_span(struct gx_json *j, bool *null, size_t *off, size_t *plen, struct gx_why *why)
{
    enum gx_err rc;

    *null = gx_json_take_null(j);
    if (*null) {
        return GX_OK;
    }
    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "Pod must be an object");
        return ext_wrong_type(j);
    }
    *off = j->pos;
    if ((rc = gx_json_skip(j)) != GX_OK) {
        return rc;
    }
    *plen = j->pos - *off;
    return GX_OK;
}

/*
 * Enter the top-level object of a request. A body that is valid JSON but
 * not an object is GX_EINVAL; anything else malformed is GX_EPARSE.
 */
static enum gx_err
ext_enter_top(struct gx_json *j, const char *what, struct gx_why *why)
{
    if (gx_json_peek(j) == '{') {
        return gx_json_enter_object(j);
    }
    gx_why_set(why, "%s must be a JSON object", what);
    return ext_wrong_type(j);
}

/* GX_EPARSE unless only whitespace follows the top-level value. */
static enum gx_err
ext_expect_end(struct gx_json *j, struct gx_why *why)
{
    if (gx_json_peek(j) != '\0' || j->pos != j->len) {
        gx_why_set(why, "offset %zu: unexpected data after the JSON object", j->pos);
        return GX_EPARSE;
    }
    return GX_OK;
}

/*
 * The shape ExtenderArgs and ExtenderPreemptionArgs share: a top-level
 * object with a required "Pod" and exactly one of two members non-null
 * (@names), each decoded by @member; other members are skipped, and of a
 * repeated key the last one wins.
 */
struct ext_envelope {
    const char *what;     /* "ExtenderArgs", for the type error */
    const char *names[2]; /* the two alternatives */
    /* Decode the non-null value of names[@which] at the cursor, replacing an earlier one. */
    enum gx_err (*member)(struct gx_json *j, void *ctx, int which, struct gx_why *why);
    void *ctx;
};

/*
 * Walk @body as @e says, then decode its Pod into @a and @pod; *which is
 * the member that is set.
 */
static enum gx_err
ext_envelope(const char *body, size_t len, int max_depth, const struct ext_envelope *e,
             struct gx_arena *a, struct gx_pod *pod, int *which, struct gx_why *why)
{
    struct gx_json j;
    const char *key;
    size_t klen, pod_off = 0, pod_len = 0;
    bool pod_seen = false, pod_null = false, set[2] = {false, false};
    enum gx_err rc;

    gx_json_init(&j, body, len, max_depth, why);
    if ((rc = ext_enter_top(&j, e->what, why)) != GX_OK) {
        return rc;
    }
    while (rc == GX_OK && gx_json_next_member(&j, &key, &klen, &rc)) {
        int m = gx_json_key_is(key, klen, e->names[0])   ? 0
                : gx_json_key_is(key, klen, e->names[1]) ? 1
                                                         : -1;

        if (gx_json_key_is(key, klen, "Pod")) {
            pod_seen = true;
            rc = ext_pod_span(&j, &pod_null, &pod_off, &pod_len, why);
        } else if (m >= 0) {
            set[m] = !gx_json_take_null(&j);
            rc = set[m] ? e->member(&j, e->ctx, m, why) : GX_OK;
        } else {
            rc = gx_json_skip(&j);
        }
    }
    if (rc != GX_OK || (rc = ext_expect_end(&j, why)) != GX_OK) {
        return rc;
    }
    if (!pod_seen || pod_null) {
        gx_why_set(why, "%s", pod_seen ? "Pod is null" : "Pod is missing");
        return GX_EINVAL;
    }
    if (set[0] == set[1]) {
        gx_why_set(why, "%s %s %s %s %s set; exactly one must be non-null",
                   set[0] ? "both" : "neither", e->names[0], set[0] ? "and" : "nor", e->names[1],
                   set[0] ? "are" : "is");
        return GX_EINVAL;
    }
    /* The Pod sits one level inside the request. */
    rc =
        gx_kobj_decode_pod(body + pod_off, pod_len, max_depth > 1 ? max_depth - 1 : 1, a, pod, why);
    if (rc != GX_OK) {
        gx_why_prefix(why, "Pod");
        return rc;
    }
    *which = set[0] ? 0 : 1;
    return GX_OK;
}

/* Copy @n elements of @size bytes at @src into *@dst in @a (NULL when n is 0). */
static enum gx_err
ext_to_arena(struct gx_arena *a, const void *src, size_t n, size_t size, void **dst,
             struct gx_why *why)
{
    *dst = NULL;
    if (n == 0) {
        return GX_OK;
    }
    if (n > SIZE_MAX / size || (*dst = gx_arena_alloc(a, n * size)) == NULL) {
        return ext_nomem(why);
    }
    memcpy(*dst, src, n * size);
    return GX_OK;
}

/* What an ExtenderArgs walk collects. */
struct ext_args_ctx {
    struct gx_arena *a;
    struct ext_vec items;      /* Nodes */
    struct gx_ext_node *names; /* NodeNames, in the arena */
    size_t n_names;
};

static enum gx_err
ext_args_member(struct gx_json *j, void *ctx, int which, struct gx_why *why)
{
    struct ext_args_ctx *c = ctx;

    return which == 0 ? ext_nodes(j, c->a, &c->items, why)
                      : ext_node_names(j, c->a, &c->names, &c->n_names, why);
}

enum gx_err
gx_ext_decode_args(const char *body, size_t len, int max_depth, struct gx_ext_args *out,
                   struct gx_why *why)
{
    struct gx_ext_args args;
    struct ext_args_ctx c = {&args.arena, {0}, NULL, 0};
    const struct ext_envelope e = {"ExtenderArgs", {"Nodes", "NodeNames"}, ext_args_member, &c};
    void *nodes = NULL;
    int which = 0;
    enum gx_err rc;

    memset(&args, 0, sizeof(args));
    gx_arena_init(&args.arena, 0);
    rc = ext_envelope(body, len, max_depth, &e, &args.arena, &args.pod, &which, why);
    if (rc == GX_OK && which == 0) {
        rc = ext_to_arena(&args.arena, c.items.v, c.items.n, sizeof(*args.nodes), &nodes, why);
        args.nodes = nodes;
        args.n_nodes = c.items.n;
    } else if (rc == GX_OK) {
        args.nodes = c.names;
        args.n_nodes = c.n_names;
    }
    args.mode = which == 0 ? GX_ARGS_NODES : GX_ARGS_NAMES;
    free(c.items.v);
    if (rc != GX_OK) {
        gx_arena_release(&args.arena);
        return rc;
    }
    *out = args;
    return GX_OK;
}

void
gx_ext_args_release(struct gx_ext_args *args)
{
    if (args == NULL) {
        return;
    }
    gx_arena_release(&args->arena);
    args->nodes = NULL;
    args->n_nodes = 0;
}

/* Append text we author as a JSON string, each '%' written as " percent". */
static enum gx_err
ext_add_text(struct gx_buf *b, const char *s)
{
    size_t n, pct = 0, o = 0;
    enum gx_err rc;
    char *tmp;

    if (s == NULL) {
        s = "";
    }
    n = strlen(s);
    for (const char *q = memchr(s, '%', n); q != NULL;
         q = memchr(q + 1, '%', n - (size_t)(q + 1 - s))) {
        pct++;
    }
    if (pct == 0) {
        return gx_buf_add_json_str(b, s, n);
    }
    tmp = malloc(n + pct * (sizeof(EXT_PERCENT) - 2) + 1);
    if (tmp == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            memcpy(tmp + o, EXT_PERCENT, sizeof(EXT_PERCENT) - 1);
            o += sizeof(EXT_PERCENT) - 1;
        } else {
            tmp[o++] = s[i];
        }
    }
    rc = gx_buf_add_json_str(b, tmp, o);
    free(tmp);
    return rc;
}

/* Undo a failed encode: drop what was appended after @mark. */
static void
ext_truncate(struct gx_buf *b, size_t mark)
{
    if (b->data != NULL && b->len > mark) {
        b->len = mark;
        b->data[mark] = '\0';
    }
}

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
        if (v[i].keep || v[i].unresolvable != unresolvable) {
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
        } else if (args->mode == GX_ARGS_NODES) {
            n += args->nodes[i].item_len + 1;
        } else {
            n += args->nodes[i].name_len + 3;
        }
    }
    return n;
}

enum gx_err
gx_ext_encode_filter(struct gx_buf *out, const char *body, const struct gx_ext_args *args,
                     const struct gx_ext_filter_verdict *v)
{
    size_t mark = out->len;
    bool first = true;
    enum gx_err rc = GX_OK;

    if (args->n_nodes > 0 && (v == NULL || (args->mode == GX_ARGS_NODES && body == NULL))) {
        return GX_EINVAL;
    }
    /* Best effort: a reply larger than the cap fails below with GX_ETOOBIG anyway. */
    if (args->n_nodes > 0 && gx_buf_reserve(out, ext_filter_size(args, v)) == GX_ENOMEM) {
        return GX_ENOMEM;
    }
    if (args->mode == GX_ARGS_NODES) {
        if ((rc = gx_buf_adds(out, "{\"Nodes\":{\"metadata\":{},\"items\":[")) != GX_OK) {
            goto out;
        }
        for (size_t i = 0; i < args->n_nodes; i++) {
            if (!v[i].keep) {
                continue;
            }
            if ((!first && (rc = gx_buf_add(out, ",", 1)) != GX_OK) ||
                (rc = gx_buf_add_utf8(out, body + args->nodes[i].item_off,
                                      args->nodes[i].item_len)) != GX_OK) {
                goto out;
            }
            first = false;
        }
        rc = gx_buf_adds(out, "]},\"NodeNames\":null");
    } else {
        if ((rc = gx_buf_adds(out, "{\"Nodes\":null,\"NodeNames\":[")) != GX_OK) {
            goto out;
        }
        for (size_t i = 0; i < args->n_nodes; i++) {
            if (!v[i].keep) {
                continue;
            }
            if ((!first && (rc = gx_buf_add(out, ",", 1)) != GX_OK) ||
                (rc = gx_buf_add_json_str(out, args->nodes[i].name, args->nodes[i].name_len)) !=
                    GX_OK) {
                goto out;
            }
            first = false;
        }
        rc = gx_buf_add(out, "]", 1);
    }
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
gx_ext_encode_filter_error(struct gx_buf *out, const char *msg)
{
    size_t mark = out->len;
    enum gx_err rc;

    /* An empty Error would read as "no node fits": always say something. */
    if (msg == NULL || msg[0] == '\0') {
        msg = "internal error";
    }
    if ((rc = gx_buf_adds(out, "{\"Nodes\":null,\"NodeNames\":null,\"FailedNodes\":{},"
                               "\"FailedAndUnresolvableNodes\":{},\"Error\":")) != GX_OK ||
        (rc = ext_add_text(out, msg)) != GX_OK || (rc = gx_buf_add(out, "}", 1)) != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}

enum gx_err
gx_ext_encode_prioritize(struct gx_buf *out, const struct gx_ext_args *args, const int *scores)
{
    size_t mark = out->len;
    enum gx_err rc;

    if (args->n_nodes > 0 && scores == NULL) {
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
        if ((rc = i ? gx_buf_add(out, ",{\"Host\":", 9) : gx_buf_add(out, "{\"Host\":", 8)) !=
                GX_OK ||
            (rc = gx_buf_add_json_str(out, args->nodes[i].name, args->nodes[i].name_len)) !=
                GX_OK ||
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

/* Field table of ExtenderBindingArgs. */
static const char *const ext_bind_fields[] = {"PodName", "PodNamespace", "PodUID", "Node"};

enum gx_err
gx_ext_decode_bind(const char *body, size_t len, int max_depth, struct gx_ext_bind_args *out,
                   struct gx_why *why)
{
    struct gx_ext_bind_args b;
    const char *val[GX_ARRAY_LEN(ext_bind_fields)] = {NULL};
    bool seen[GX_ARRAY_LEN(ext_bind_fields)] = {false};
    struct gx_json j;
    const char *key;
    size_t klen, i;
    enum gx_err rc = GX_OK;

    memset(&b, 0, sizeof(b));
    gx_arena_init(&b.arena, 1024);
    gx_json_init(&j, body, len, max_depth, why);
    if ((rc = ext_enter_top(&j, "ExtenderBindingArgs", why)) != GX_OK) {
        goto out;
    }
    while (gx_json_next_member(&j, &key, &klen, &rc)) {
        for (i = 0; i < GX_ARRAY_LEN(ext_bind_fields); i++) {
            if (gx_json_key_is(key, klen, ext_bind_fields[i])) {
                break;
            }
        }
        if (i == GX_ARRAY_LEN(ext_bind_fields)) {
            if ((rc = gx_json_skip(&j)) != GX_OK) {
                goto out;
            }
            continue;
        }
        seen[i] = true;
        val[i] = NULL;
        if (gx_json_take_null(&j)) {
            continue;
        }
        if (gx_json_peek(&j) != '"') {
            gx_why_set(why, "%s must be a string", ext_bind_fields[i]);
            rc = ext_wrong_type(&j);
            goto out;
        }
        if ((rc = gx_json_string(&j, &b.arena, &val[i], NULL)) != GX_OK) {
            goto out;
        }
    }
    if (rc != GX_OK || (rc = ext_expect_end(&j, why)) != GX_OK) {
        goto out;
    }
    for (i = 0; i < GX_ARRAY_LEN(ext_bind_fields); i++) {
        if (!seen[i]) {
            gx_why_set(why, "%s is missing", ext_bind_fields[i]);
            rc = GX_EINVAL;
            goto out;
        }
        if (val[i] == NULL || val[i][0] == '\0') {
            gx_why_set(why, "%s must be a non-empty string", ext_bind_fields[i]);
            rc = GX_EINVAL;
            goto out;
        }
    }
    b.pod_name = val[0];
    b.pod_namespace = val[1];
    b.pod_uid = val[2];
    b.node = val[3];
    *out = b;
out:
    if (rc != GX_OK) {
        gx_arena_release(&b.arena);
    }
    return rc;
}

void
gx_ext_bind_args_release(struct gx_ext_bind_args *args)
{
    if (args == NULL) {
        return;
    }
    gx_arena_release(&args->arena);
    args->pod_name = args->pod_namespace = args->pod_uid = args->node = NULL;
}

enum gx_err
gx_ext_encode_bind_result(struct gx_buf *out, const char *error)
{
    size_t mark = out->len;
    enum gx_err rc;

    if ((rc = gx_buf_adds(out, "{\"Error\":")) != GX_OK ||
        (rc = ext_add_text(out, error)) != GX_OK || (rc = gx_buf_add(out, "}", 1)) != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}

enum gx_err
gx_ext_encode_http_error(struct gx_buf *out, int status, const char *msg)
{
    size_t mark = out->len;
    enum gx_err rc;

    if ((rc = gx_buf_adds(out, "{\"error\":")) != GX_OK || (rc = ext_add_text(out, msg)) != GX_OK ||
        (rc = gx_buf_addf(out, ",\"status\":%d}", status)) != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}

/* ---- preempt ---- */

/* A JSON integer at the cursor into @out; GX_EINVAL naming @what otherwise. */
static enum gx_err
ext_int64(struct gx_json *j, const char *what, int64_t *out, struct gx_why *why)
{
    char tmp[32], *end = NULL;
    char c = gx_json_peek(j);
    size_t start = j->pos, n;
    long long v;
    enum gx_err rc;

    if (c != '-' && (c < '0' || c > '9')) {
        gx_why_set(why, "%s must be an integer", what);
        return ext_wrong_type(j);
    }
    if ((rc = gx_json_skip(j)) != GX_OK) {
        return rc;
    }
    n = j->pos - start;
    if (n >= sizeof(tmp)) {
        gx_why_set(why, "%s is out of range", what);
        return GX_EINVAL;
    }
    memcpy(tmp, j->p + start, n);
    tmp[n] = '\0';
    errno = 0;
    v = strtoll(tmp, &end, 10);
    if (end == tmp || *end != '\0' || errno != 0) {
        gx_why_set(why, "%s must be an integer", what);
        return GX_EINVAL;
    }
    *out = (int64_t)v;
    return GX_OK;
}

/* A growable list of victims while decoding (copied into the arena at the end). */
struct ext_pods {
    struct gx_ext_victim *v;
    size_t n, cap;
};

static enum gx_err
ext_pods_push(struct ext_pods *p, const struct gx_ext_victim *v)
{
    if (p->n == p->cap) {
        size_t cap = p->cap ? p->cap * 2 : 16;
        struct gx_ext_victim *nv = realloc(p->v, cap * sizeof(*nv));
        if (nv == NULL) {
            return GX_ENOMEM;
        }
        p->v = nv;
        p->cap = cap;
    }
    p->v[p->n++] = *v;
    return GX_OK;
}

/* One MetaPod {"UID":"..."} at the cursor. */
static enum gx_err
ext_meta_pod(struct gx_json *j, struct gx_arena *a, const char *node, size_t idx,
             struct gx_ext_victim *out, struct gx_why *why)
{
    const char *key;
    size_t klen;
    bool seen = false;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "NodeNameToMetaVictims[%s].Pods[%zu] must be an object", node, idx);
        return ext_wrong_type(j);
    }
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    memset(out, 0, sizeof(*out));
    while (gx_json_next_member(j, &key, &klen, &rc)) {
        if (!gx_json_key_is(key, klen, "UID")) {
            if ((rc = gx_json_skip(j)) != GX_OK) {
                return rc;
            }
            continue;
        }
        if (gx_json_peek(j) != '"') {
            gx_why_set(why, "NodeNameToMetaVictims[%s].Pods[%zu].UID must be a string", node, idx);
            return ext_wrong_type(j);
        }
        if ((rc = gx_json_string(j, a, &out->uid, NULL)) != GX_OK) {
            return rc;
        }
        seen = true;
    }
    if (rc == GX_OK && !seen) {
        gx_why_set(why, "NodeNameToMetaVictims[%s].Pods[%zu] has no UID", node, idx);
        rc = GX_EINVAL;
    }
    return rc;
}

/* One full victim Pod at the cursor: only its UID and priority are kept. */
static enum gx_err
ext_full_pod(struct gx_json *j, struct gx_arena *a, int depth, const char *node, size_t idx,
             struct gx_ext_victim *out, struct gx_why *why)
{
    struct gx_pod pod;
    size_t start;
    enum gx_err rc;

    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "NodeNameToVictims[%s].Pods[%zu] must be an object", node, idx);
        return ext_wrong_type(j);
    }
    start = j->pos;
    if ((rc = gx_json_skip(j)) != GX_OK) {
        return rc;
    }
    rc = gx_kobj_decode_pod(j->p + start, j->pos - start, depth, a, &pod, why);
    if (rc != GX_OK) {
        gx_why_prefix(why, "NodeNameToVictims[%s].Pods[%zu]", node, idx);
        return rc;
    }
    out->uid = pod.uid;
    out->has_priority = pod.has_priority;
    out->priority = pod.priority;
    return GX_OK;
}

/* The Victims or MetaVictims of node @nv->node at the cursor (null: none). */
static enum gx_err
ext_node_victims(struct gx_json *j, struct gx_arena *a, bool meta, int depth,
                 struct gx_ext_node_victims *nv, struct gx_why *why)
{
    const char *map = meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
    struct ext_pods pods = {0};
    const char *key;
    size_t klen;
    enum gx_err rc = GX_OK;

    if (gx_json_take_null(j)) {
        return GX_OK;
    }
    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "%s[%s] must be an object or null", map, nv->node);
        return ext_wrong_type(j);
    }
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (rc == GX_OK && gx_json_next_member(j, &key, &klen, &rc)) {
        if (gx_json_key_is(key, klen, "NumPDBViolations")) {
            char what[320];
            (void)snprintf(what, sizeof(what), "%s[%s].NumPDBViolations", map, nv->node);
            if (!gx_json_take_null(j)) {
                rc = ext_int64(j, what, &nv->pdb, why);
            }
            continue;
        }
        if (!gx_json_key_is(key, klen, "Pods")) {
            rc = gx_json_skip(j);
            continue;
        }
        pods.n = 0;
        if (gx_json_take_null(j)) {
            continue;
        }
        if (gx_json_peek(j) != '[') {
            gx_why_set(why, "%s[%s].Pods must be an array or null", map, nv->node);
            rc = ext_wrong_type(j);
            break;
        }
        if ((rc = gx_json_enter_array(j)) != GX_OK) {
            break;
        }
        for (size_t i = 0; rc == GX_OK && gx_json_next_element(j, &rc); i++) {
            struct gx_ext_victim v = {0};
            if (gx_json_take_null(j)) {
                continue; /* a nil *MetaPod names nobody */
            }
            if (pods.n == GX_EXT_MAX_VICTIMS) {
                gx_why_set(why, "%s[%s].Pods holds more than %u pods", map, nv->node,
                           GX_EXT_MAX_VICTIMS);
                rc = GX_ETOOBIG;
                break;
            }
            rc = meta ? ext_meta_pod(j, a, nv->node, i, &v, why)
                      : ext_full_pod(j, a, depth, nv->node, i, &v, why);
            if (rc == GX_OK && ext_pods_push(&pods, &v) != GX_OK) {
                rc = ext_nomem(why);
            }
        }
    }
    if (rc == GX_OK && pods.n > 0) {
        nv->pods = gx_arena_alloc(a, pods.n * sizeof(*nv->pods));
        if (nv->pods == NULL) {
            rc = ext_nomem(why);
        } else {
            memcpy(nv->pods, pods.v, pods.n * sizeof(*nv->pods));
            nv->n_pods = pods.n;
        }
    }
    free(pods.v);
    return rc;
}

/* A node-name -> victims map at the cursor into @out (a heap array; you free it). */
static enum gx_err
ext_victims_map(struct gx_json *j, struct gx_arena *a, bool meta, int depth,
                struct gx_ext_node_victims **out, size_t *n_out, struct gx_why *why)
{
    const char *map = meta ? "NodeNameToMetaVictims" : "NodeNameToVictims";
    struct gx_ext_node_victims *v = NULL;
    size_t n = 0, cap = 0, klen;
    const char *key;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "%s must be an object or null", map);
        return ext_wrong_type(j);
    }
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (rc == GX_OK && gx_json_next_member(j, &key, &klen, &rc)) {
        struct gx_ext_node_victims nv = {0};
        char *name;

        if (klen == 0) {
            gx_why_set(why, "%s has an empty node name", map);
            rc = GX_EINVAL;
            break;
        }
        if (n == GX_EXT_MAX_PREEMPT_NODES) {
            gx_why_set(why, "%s holds more than %u nodes", map, GX_EXT_MAX_PREEMPT_NODES);
            rc = GX_ETOOBIG;
            break;
        }
        if ((name = gx_arena_alloc(a, klen + 1)) == NULL) {
            rc = ext_nomem(why);
            break;
        }
        (void)gx_json_unescape(key, klen, name);
        nv.node = name;
        if ((rc = ext_node_victims(j, a, meta, depth, &nv, why)) != GX_OK) {
            break;
        }
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 8;
            struct gx_ext_node_victims *nn = realloc(v, ncap * sizeof(*nn));
            if (nn == NULL) {
                rc = ext_nomem(why);
                break;
            }
            v = nn;
            cap = ncap;
        }
        v[n++] = nv;
    }
    if (rc != GX_OK) {
        free(v);
        return rc;
    }
    *out = v;
    *n_out = n;
    return GX_OK;
}

/* What an ExtenderPreemptionArgs walk collects: the two maps, heap arrays. */
struct ext_preempt_ctx {
    struct gx_arena *a;
    int depth;
    struct gx_ext_node_victims *v[2]; /* NodeNameToVictims, NodeNameToMetaVictims */
    size_t n[2];
};

static enum gx_err
ext_preempt_member(struct gx_json *j, void *ctx, int which, struct gx_why *why)
{
    struct ext_preempt_ctx *c = ctx;

    free(c->v[which]);
    c->v[which] = NULL;
    c->n[which] = 0;
    return ext_victims_map(j, c->a, which == 1, c->depth, &c->v[which], &c->n[which], why);
}

enum gx_err
gx_ext_decode_preempt(const char *body, size_t len, int max_depth, struct gx_ext_preempt_args *out,
                      struct gx_why *why)
{
    struct gx_ext_preempt_args args;
    /* a victim Pod sits four levels in: args, map, Victims, Pods */
    struct ext_preempt_ctx c = {
        &args.arena, max_depth > 4 ? max_depth - 4 : 1, {NULL, NULL}, {0, 0}};
    const struct ext_envelope e = {"ExtenderPreemptionArgs",
                                   {"NodeNameToVictims", "NodeNameToMetaVictims"},
                                   ext_preempt_member,
                                   &c};
    void *nodes = NULL;
    int which = 0;
    enum gx_err rc;

    memset(&args, 0, sizeof(args));
    gx_arena_init(&args.arena, 0);
    rc = ext_envelope(body, len, max_depth, &e, &args.arena, &args.pod, &which, why);
    if (rc == GX_OK) {
        rc = ext_to_arena(&args.arena, c.v[which], c.n[which], sizeof(*args.nodes), &nodes, why);
        args.meta = which == 1;
        args.nodes = nodes;
        args.n_nodes = c.n[which];
    }
    free(c.v[0]);
    free(c.v[1]);
    if (rc != GX_OK) {
        gx_arena_release(&args.arena);
        return rc;
    }
    *out = args;
    return GX_OK;
}

void
gx_ext_preempt_args_release(struct gx_ext_preempt_args *args)
{
    if (args == NULL) {
        return;
    }
    gx_arena_release(&args->arena);
    args->nodes = NULL;
    args->n_nodes = 0;
}

enum gx_err
gx_ext_encode_preempt(struct gx_buf *out, const struct gx_ext_meta_victims *v, size_t n)
{
    size_t mark = out->len;
    enum gx_err rc = gx_buf_addf(out, "{\"NodeNameToMetaVictims\":{");

    for (size_t i = 0; i < n && rc == GX_OK; i++) {
        if (i > 0) {
            rc = gx_buf_add(out, ",", 1);
        }
        if (rc == GX_OK) {
            rc = gx_buf_add_json_str(out, v[i].node, strlen(v[i].node));
        }
        if (rc == GX_OK) {
            rc = gx_buf_addf(out, ":{\"Pods\":[");
        }
        for (size_t k = 0; k < v[i].n_uids && rc == GX_OK; k++) {
            rc = gx_buf_addf(out, "%s{\"UID\":", k > 0 ? "," : "");
            if (rc == GX_OK) {
                rc = gx_buf_add_json_str(out, v[i].uids[k], strlen(v[i].uids[k]));
            }
            if (rc == GX_OK) {
                rc = gx_buf_add(out, "}", 1);
            }
        }
        if (rc == GX_OK) {
            rc = gx_buf_addf(out, "],\"NumPDBViolations\":%lld}", (long long)v[i].pdb);
        }
    }
    if (rc == GX_OK) {
        rc = gx_buf_add(out, "}}", 2);
    }
    if (rc != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}
