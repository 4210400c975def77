/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender_args.c - ExtenderArgs decoded with the gx_json scanner: the Pod
 * goes to gx_kobj_decode_pod (ext_envelope), and of the nodes only what
 * the reply needs is kept. NodeNames (nodeCacheCapable) are decoded in two
 * passes into one block; in full Nodes mode each NodeList item is only
 * scanned for metadata.name while its byte span is kept, so the filter
 * reply can echo kept nodes verbatim without ever building a tree of
 * thousands of Node objects. No I/O.
 */
#include "extender.h"

#include "extender_int.h"
#include "json.h"

#include <stdlib.h>
#include <string.h>

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
 * @out/@n_out, allocated from @a (@out NULL when the array is empty). One
 * scan keeps each name's raw span in @vec; then one node array and one
 * block of NUL-terminated names are filled from the spans, so thousands of
 * names cost two allocations and one memcpy each.
 */
static enum gx_err
ext_node_names(struct gx_json *j, struct gx_arena *a, struct ext_vec *vec, struct gx_ext_node **out,
               size_t *n_out, bool *escaped, struct gx_why *why)
{
    struct gx_ext_node *nodes = NULL;
    const char *raw;
    size_t total = 0, rawlen;
    bool esc, any_esc = false;
    char *dst;
    enum gx_err rc = GX_OK;

    vec->n = 0;
    if (gx_json_peek(j) != '[') {
        gx_why_set(why, "NodeNames must be an array of strings or null");
        return ext_wrong_type(j);
    }
    if ((rc = gx_json_enter_array(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_string(j, &raw, &rawlen, &esc, &rc)) {
        /* the raw span for now: the quoted name as it came, for the reply to echo */
        struct gx_ext_node node = {raw, rawlen, (size_t)(raw - j->p) - 1, rawlen + 2};
        /* An escape decodes to at least one byte, so only "" is empty. */
        if (rawlen == 0) {
            gx_why_set(why, "NodeNames[%zu] is empty", vec->n);
            return GX_EINVAL;
        }
        if (vec->n >= GX_EXT_MAX_NODES) {
            gx_why_set(why, "NodeNames holds more than %u names", GX_EXT_MAX_NODES);
            return GX_ETOOBIG;
        }
        if (ext_vec_push(vec, &node) != GX_OK) {
            return ext_nomem(why);
        }
        total += rawlen + 1;
        any_esc |= esc;
    }
    if (rc == GX_EINVAL) {
        gx_why_set(why, "NodeNames[%zu] must be a string", vec->n);
        return ext_wrong_type(j);
    }
    if (rc != GX_OK) {
        return rc;
    }
    if (vec->n > 0) {
        if (vec->n > SIZE_MAX / sizeof(*nodes)) {
            return ext_nomem(why);
        }
        nodes = gx_arena_alloc(a, vec->n * sizeof(*nodes));
        dst = gx_arena_alloc(a, total);
        if (nodes == NULL || dst == NULL) {
            return ext_nomem(why);
        }
        for (size_t i = 0; i < vec->n; i++) {
            nodes[i] = vec->v[i];
            if (any_esc && memchr(nodes[i].name, '\\', nodes[i].name_len) != NULL) {
                nodes[i].name_len = gx_json_unescape(nodes[i].name, nodes[i].name_len, dst);
            } else {
                memcpy(dst, nodes[i].name, nodes[i].name_len);
                dst[nodes[i].name_len] = '\0';
            }
            nodes[i].name = dst;
            dst += nodes[i].name_len + 1;
        }
    }
    *out = nodes;
    *n_out = vec->n;
    *escaped = any_esc;
    return GX_OK;
}

/* What an ExtenderArgs walk collects. */
struct ext_args_ctx {
    struct gx_arena *a;
    struct ext_vec items;      /* Nodes */
    struct ext_vec spans;      /* NodeNames' raw spans while decoding */
    struct gx_ext_node *names; /* NodeNames, in the arena */
    size_t n_names;
    bool escaped;
};

static enum gx_err
ext_args_member(struct gx_json *j, void *ctx, int which, struct gx_why *why)
{
    struct ext_args_ctx *c = ctx;

    return which == 0
               ? ext_nodes(j, c->a, &c->items, why)
               : ext_node_names(j, c->a, &c->spans, &c->names, &c->n_names, &c->escaped, why);
}

enum gx_err
gx_ext_decode_args(const char *body, size_t len, int max_depth, struct gx_ext_args *out,
                   struct gx_why *why)
{
    struct gx_ext_args args;
    struct ext_args_ctx c = {&args.arena, {0}, {0}, NULL, 0, false};
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
        args.escaped = c.escaped;
    }
    args.mode = which == 0 ? GX_ARGS_NODES : GX_ARGS_NAMES;
    free(c.items.v);
    free(c.spans.v);
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
