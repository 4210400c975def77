/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_expo.c - a dcgm-exporter /metrics page: the text exposition parser
 * on its own, then the same page loaded into a metric store (twice, as two
 * file sources, then replaced by an empty page) and joined with three GPU
 * nodes into a snapshot, as the file source does.
 */
#include "fuzz_util.h"

#include "dcgm.h"
#include "expo.h"
#include "snapshot.h"

/* Labels sorted by key, as the node decoder leaves them. */
static struct gx_kv fz_labels_a[] = {
    {"kubernetes.io/hostname", "gpu-node-a"}, {"nvidia.com/gpu.count", "2"},
    {"nvidia.com/gpu.memory", "24564"},       {"nvidia.com/gpu.product", "NVIDIA-GeForce-RTX-4090"},
    {"nvidia.com/gpu.replicas", "1"},
};
static struct gx_kv fz_labels_b[] = {
    {"nvidia.com/gpu.count", "8"},
    {"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
};
static struct gx_kv fz_labels_c[] = {
    {"nvidia.com/gpu.count", "2"},
    {"nvidia.com/gpu.replicas", "4"},
    {"nvidia.com/gpu.sharing-strategy", "time-slicing"},
};
static struct gx_kv fz_alloc_2[] = {{"nvidia.com/gpu", "2"}};
static struct gx_kv fz_alloc_8[] = {{"nvidia.com/gpu", "8"}};

static const struct gx_node_info fz_nodes[] = {
    {.name = "gpu-node-a",
     .labels = fz_labels_a,
     .n_labels = GX_ARRAY_LEN(fz_labels_a),
     .allocatable = fz_alloc_2,
     .n_allocatable = 1,
     .ready = true},
    {.name = "gpu-node-b",
     .labels = fz_labels_b,
     .n_labels = GX_ARRAY_LEN(fz_labels_b),
     .allocatable = fz_alloc_8,
     .n_allocatable = 1,
     .ready = true},
    {.name = "gpu-node-c",
     .labels = fz_labels_c,
     .n_labels = GX_ARRAY_LEN(fz_labels_c),
     .allocatable = fz_alloc_8,
     .n_allocatable = 1,
     .ready = true},
};

/* Check one parsed sample. */
static enum gx_err
series_cb(void *ctx, const struct gx_series *s)
{
    size_t *count = ctx;

    FZ_CHECK(s->name != NULL && s->name[0] != '\0', "sample without a metric name");
    FZ_CHECK(s->n_labels <= GX_EXPO_MAX_LABELS, "%zu labels", s->n_labels);
    fz_touch_str(s->name);
    fz_touch_kv(s->labels, s->n_labels);
    (*count)++;
    return GX_OK;
}

/* Read every card of every snapshot node. */
static void
touch_snapshot(const struct gx_snapshot *snap)
{
    for (size_t i = 0; i < snap->n_nodes; i++) {
        const struct gx_node *n = &snap->nodes[i];

        FZ_CHECK(gx_snapshot_find(snap, n->name, strlen(n->name)) == n, "find %s", n->name);
        FZ_CHECK(n->n_cards == (size_t)(n->gpu_count > 0 ? n->gpu_count : 0),
                 "%s: %zu cards for gpu_count %d", n->name, n->n_cards, n->gpu_count);
        for (size_t k = 0; k < n->n_cards; k++) {
            fz_touch_str(n->cards[k].uuid);
            fz_touch_str(n->cards[k].pod);
        }
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct gx_config *cfg = fz_config();
    const char *text = (const char *)data;
    struct gx_mstore *ms;
    struct gx_snapshot *snap = NULL;
    struct gx_why why = {{0}};
    size_t count = 0;
    enum gx_err parsed, rc;

    parsed = gx_expo_parse(text, size, series_cb, &count, &why);
    if (parsed != GX_OK)
        FZ_CHECK(why.text[0] != '\0', "parse failed without a reason");

    ms = gx_mstore_new();
    FZ_CHECK(ms != NULL, "out of memory");
    why.text[0] = '\0';
    rc = gx_mstore_load_page(ms, cfg, 0, text, size, 1000, &why);
    FZ_CHECK((rc == GX_OK) == (parsed == GX_OK) || rc == GX_ENOMEM,
             "parse gave %s but load_page %s", gx_strerror(parsed), gx_strerror(rc));
    if (rc == GX_OK) {
        rc = gx_mstore_load_page(ms, cfg, 1, text, size, 2000, &why);
        FZ_CHECK(rc == GX_OK, "second load: %s", gx_strerror(rc));
        rc = gx_snapshot_build(cfg, fz_nodes, GX_ARRAY_LEN(fz_nodes), ms, 3000, &snap);
        FZ_CHECK(rc == GX_OK, "snapshot_build: %s", gx_strerror(rc));
        touch_snapshot(snap);
        gx_snapshot_free(snap);
        rc = gx_mstore_load_page(ms, cfg, 0, "", 0, 4000, &why);
        FZ_CHECK(rc == GX_OK, "empty page: %s", gx_strerror(rc));
    }
    gx_mstore_free(ms);
    return 0;
}
