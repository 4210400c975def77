/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_watch_event.c - a watch stream from the API server. Input layout:
 * byte 0 = flags (bits 0-3: number k of chunk sizes, bit 4: a small line
 * cap), bytes 1..k = chunk sizes - 1, the rest = the stream. The stream is
 * split into lines once in one piece and once in the fuzzer-chosen chunks;
 * both must give the same lines and the same result. Every line of the
 * one-piece run is decoded as an event of every kind (Node, Pod, Lease,
 * ResourceSlice, ResourceClaim, PodDisruptionBudget).
 */
#include "fuzz_util.h"

#include "arena.h"
#include "lines.h"

#define FZ_MAX_LINES 65536

struct run {
    uint64_t hash[FZ_MAX_LINES];
    size_t len[FZ_MAX_LINES];
    size_t n;
    bool decode;
};

/* Read every string of a PodDisruptionBudget. */
static void
touch_pdb(const struct gx_pdb *p)
{
    fz_touch_str(p->name);
    fz_touch_str(p->namespace);
    fz_touch_str(p->uid);
    fz_touch_str(p->resource_version);
    fz_touch_kv(p->match_labels, p->n_match_labels);
    for (size_t i = 0; i < p->n_exprs; i++) {
        fz_touch_str(p->exprs[i].key);
        for (size_t k = 0; k < p->exprs[i].n_values; k++)
            fz_touch_str(p->exprs[i].values[k]);
    }
    for (size_t i = 0; i < p->n_disrupted; i++)
        fz_touch_str(p->disrupted[i]);
}

/* Read every string of the Lease, ResourceSlice, ResourceClaim and PDB kinds. */
static void
touch_other(const struct gx_watch_event *ev, enum gx_kind kind)
{
    switch (kind) {
    case GX_KIND_LEASE:
        fz_touch_str(ev->obj.lease.name);
        fz_touch_kv(ev->obj.lease.annotations, ev->obj.lease.n_annotations);
        break;
    case GX_KIND_RESOURCE_SLICE:
        fz_touch_str(ev->obj.slice.driver);
        fz_touch_str(ev->obj.slice.pool);
        fz_touch_str(ev->obj.slice.node_name);
        for (size_t i = 0; i < ev->obj.slice.n_devices; i++) {
            fz_touch_str(ev->obj.slice.devices[i].name);
            if (ev->obj.slice.devices[i].uuid != NULL)
                fz_touch_str(ev->obj.slice.devices[i].uuid);
        }
        break;
    case GX_KIND_RESOURCE_CLAIM:
        fz_touch_str(ev->obj.claim.namespace);
        for (size_t i = 0; i < ev->obj.claim.n_results; i++) {
            fz_touch_str(ev->obj.claim.results[i].driver);
            fz_touch_str(ev->obj.claim.results[i].pool);
            fz_touch_str(ev->obj.claim.results[i].device);
        }
        for (size_t i = 0; i < ev->obj.claim.n_reserved_for; i++)
            fz_touch_str(ev->obj.claim.reserved_for[i]);
        break;
    case GX_KIND_PDB:
        touch_pdb(&ev->obj.pdb);
        break;
    case GX_KIND_NODE:
    case GX_KIND_POD:
        break;
    }
}

/* Read the fields every event type promises. */
static void
touch_event(const struct gx_watch_event *ev, enum gx_kind kind)
{
    fz_touch_str(ev->resource_version);
    switch (ev->type) {
    case GX_WATCH_ERROR:
        fz_touch_str(ev->message);
        break;
    case GX_WATCH_BOOKMARK:
        break;
    case GX_WATCH_ADDED:
    case GX_WATCH_MODIFIED:
    case GX_WATCH_DELETED:
        if (kind == GX_KIND_NODE)
            fz_touch_node(&ev->obj.node);
        else if (kind == GX_KIND_POD)
            fz_touch_pod(&ev->obj.pod);
        else
            touch_other(ev, kind);
        break;
    default:
        FZ_CHECK(0, "unknown event type %d", (int)ev->type);
    }
}

/* Decode @line as an event of @kind. */
static void
decode(const char *line, size_t len, enum gx_kind kind)
{
    struct gx_arena a;
    struct gx_watch_event ev;
    struct gx_why why = {{0}};

    gx_arena_init(&a, 0);
    if (gx_kobj_decode_event(line, len, kind, fz_config()->max_json_depth, &a, &ev, &why) == GX_OK)
        touch_event(&ev, kind);
    else
        FZ_CHECK(why.text[0] != '\0', "event decode failed without a reason");
    gx_arena_release(&a);
}

/* Record one line (and decode it in the reference run). */
static enum gx_err
line_cb(void *ctx, const char *line, size_t len)
{
    struct run *r = ctx;

    FZ_CHECK(len > 0, "empty line delivered");
    FZ_CHECK(memchr(line, '\n', len) == NULL, "line contains a newline");
    if (r->n < FZ_MAX_LINES) {
        r->hash[r->n] = gx_hash(line, len);
        r->len[r->n] = len;
        r->n++;
    }
    if (r->decode) {
        for (int kind = GX_KIND_NODE; kind <= GX_KIND_PDB; kind++)
            decode(line, len, (enum gx_kind)kind);
    }
    return GX_OK;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct run whole, split;
    struct gx_lines l;
    size_t k, max_line, pos = 0, i = 0;
    const uint8_t *sizes;
    const char *stream;
    enum gx_err rc_whole, rc_split = GX_OK;

    if (size < 1)
        return 0;
    k = data[0] & 0x0f;
    max_line = (data[0] & 0x10) ? 64 : (1u << 20);
    if (size < 1 + k)
        return 0;
    sizes = data + 1;
    stream = (const char *)data + 1 + k;
    size -= 1 + k;

    whole.n = 0;
    whole.decode = true;
    gx_lines_init(&l, max_line);
    rc_whole = gx_lines_feed(&l, stream, size, line_cb, &whole);
    gx_lines_release(&l);

    split.n = 0;
    split.decode = false;
    gx_lines_init(&l, max_line);
    while (pos < size && rc_split == GX_OK) {
        size_t n = k ? (size_t)sizes[i++ % k] + 1 : size;

        if (n > size - pos)
            n = size - pos;
        rc_split = gx_lines_feed(&l, stream + pos, n, line_cb, &split);
        pos += n;
    }
    gx_lines_reset(&l);
    FZ_CHECK(l.pending.len == 0, "reset left %zu bytes", l.pending.len);
    gx_lines_release(&l);

    FZ_CHECK(rc_whole == rc_split, "one piece: %s, chunks: %s", gx_strerror(rc_whole),
             gx_strerror(rc_split));
    FZ_CHECK(whole.n == split.n, "one piece: %zu lines, chunks: %zu", whole.n, split.n);
    for (size_t j = 0; j < whole.n; j++)
        FZ_CHECK(whole.hash[j] == split.hash[j] && whole.len[j] == split.len[j], "line %zu differs",
                 j);
    return 0;
}
