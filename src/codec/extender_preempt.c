/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender_preempt.c - the preempt verb's messages: ExtenderPreemptionArgs
 * (the Pod and one of NodeNameToVictims, with full victim Pods of which
 * only UID and priority are kept, or NodeNameToMetaVictims, with UIDs)
 * decoded with the gx_json scanner through ext_envelope, and
 * ExtenderPreemptionResult. No I/O.
 */
#include "extender.h"

#include "extender_int.h"
#include "json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
