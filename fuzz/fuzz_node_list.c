/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_node_list.c - a NodeList (API server list response or the nodes
 * file): decode it, then build a snapshot from the nodes joined with a
 * small metric store, and look every node up again.
 */
#include "fuzz_util.h"

#include "arena.h"
#include "dcgm.h"
#include "snapshot.h"

/* Metrics for the fixture's nodes, including a card index past any node's count. */
static const char fz_page[] =
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"0\",UUID=\"GPU-a0\",Hostname=\"gpu-node-a\","
    "pci_bus_id=\"00000000:01:00.0\"} 97\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-a1\",Hostname=\"gpu-node-a\","
    "pci_bus_id=\"00000000:C1:00.0\"} 3\n"
    "DCGM_FI_DEV_FB_FREE{gpu=\"1\",UUID=\"GPU-a1\",Hostname=\"gpu-node-a\"} 20000\n"
    "DCGM_FI_DEV_XID_ERRORS{gpu=\"5\",UUID=\"GPU-b5\",Hostname=\"gpu-node-b\"} 13\n"
    "DCGM_FI_DEV_GPU_TEMP{gpu=\"900\",UUID=\"GPU-b900\",Hostname=\"gpu-node-b\"} 40\n"
    "DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",UUID=\"GPU-c1\",Hostname=\"gpu-node-c\","
    "exported_pod=\"train-0\"} 55\n";

static struct gx_mstore *fz_ms;

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
    struct gx_why why = {{0}};

    (void)argc;
    (void)argv;
    fz_ms = gx_mstore_new();
    if (fz_ms == NULL || gx_mstore_load_page(fz_ms, fz_config(), 0, fz_page, sizeof(fz_page) - 1,
                                             1000, &why) != GX_OK) {
        fprintf(stderr, "metric page: %s\n", why.text);
        abort();
    }
    return 0;
}

/* Read the snapshot back and check the invariants snapshot.h promises. */
static void
check_snapshot(const struct gx_snapshot *snap, const struct gx_node_info *nodes, size_t n)
{
    for (size_t i = 0; i < snap->n_nodes; i++) {
        const struct gx_node *node = &snap->nodes[i];

        FZ_CHECK(node->name != NULL, "node without a name");
        FZ_CHECK(node->replicas >= 1, "%s: replicas %d", node->name, node->replicas);
        FZ_CHECK(node->n_cards == (size_t)(node->gpu_count > 0 ? node->gpu_count : 0),
                 "%s: %zu cards for gpu_count %d", node->name, node->n_cards, node->gpu_count);
        FZ_CHECK(node->product != NULL, "%s: NULL product", node->name);
        fz_touch_str(node->product);
        fz_touch_kv(node->labels, node->n_labels);
        for (size_t k = 1; k < node->n_labels; k++) {
            FZ_CHECK(strcmp(node->labels[k - 1].key, node->labels[k].key) <= 0,
                     "%s: labels not sorted", node->name);
        }
        for (size_t k = 0; k < node->n_labels; k++)
            FZ_CHECK(gx_node_label(node, node->labels[k].key) != NULL, "label %s not found",
                     node->labels[k].key);
        for (size_t k = 0; k < node->n_cards; k++) {
            fz_touch_str(node->cards[k].uuid);
            fz_touch_str(node->cards[k].pod);
            for (int s = 0; s < GX_SIG_COUNT; s++)
                (void)gx_card_fresh(fz_config(), &node->cards[k], (enum gx_signal)s, 2000);
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (nodes[i].name != NULL)
            (void)gx_snapshot_find(snap, nodes[i].name, strlen(nodes[i].name));
    }
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct gx_config *cfg = fz_config();
    struct gx_arena a;
    struct gx_node_info *nodes = NULL;
    struct gx_snapshot *snap = NULL;
    const char *rv = NULL;
    struct gx_why why = {{0}};
    size_t n = 0;
    enum gx_err rc;

    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_node_list((const char *)data, size, cfg->max_json_depth, &a, &nodes, &n,
                                  &rv, &why);
    if (rc != GX_OK) {
        FZ_CHECK(why.text[0] != '\0', "rejected without a reason");
        gx_arena_release(&a);
        return 0;
    }
    fz_touch_str(rv);
    for (size_t i = 0; i < n; i++)
        fz_touch_node(&nodes[i]);
    rc = gx_snapshot_build(cfg, nodes, n, fz_ms, 2000, &snap);
    if (rc == GX_OK) {
        check_snapshot(snap, nodes, n);
        gx_snapshot_free(snap);
    } else {
        FZ_CHECK(rc == GX_ENOMEM, "snapshot_build: %s", gx_strerror(rc));
    }
    rc = gx_snapshot_build(cfg, nodes, n, NULL, 2000, &snap);
    if (rc == GX_OK)
        gx_snapshot_free(snap);
    gx_arena_release(&a);
    return 0;
}
