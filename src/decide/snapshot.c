/* SPDX-License-Identifier: Apache-2.0 */
/*
 * snapshot.c - builds the immutable cluster picture: every node (the labels
 * decisions read, copied and sorted), its GPU facts derived from GPU Feature
 * Discovery labels and allocatable resources, and one card per physical GPU
 * filled from the metric store. Everything lives in the snapshot's arena, so
 * a snapshot is freed in one call and never shares memory with its inputs.
 *
 * Memory: a node carries about 100 labels (mostly NFD cpu-cpuid flags) that
 * no decision reads; copying them all cost 46 MiB at 5,000 nodes. Only the
 * keys below, GFD's GPU and CUDA labels (pods pin themselves by those) and
 * those of cfg->label_rules are kept, and label strings that repeat across
 * nodes are stored once per snapshot. No I/O.
 */
#include "snapshot.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "quantity.h"

/* Upper bound on cards per node: label values are peer data, and no node has more. */
#define SNAPSHOT_MAX_CARDS 256

#define LABEL_PRODUCT "nvidia.com/gpu.product"
#define LABEL_COUNT "nvidia.com/gpu.count"
#define LABEL_MEMORY "nvidia.com/gpu.memory"
#define LABEL_REPLICAS "nvidia.com/gpu.replicas"
#define LABEL_SHARING "nvidia.com/gpu.sharing-strategy"
#define LABEL_MEMORY_NUMA "feature.node.kubernetes.io/memory-numa"

/* Labels the derivation itself reads; cfg->label_rules add theirs. */
static const char *const own_labels[] = {
    LABEL_PRODUCT, LABEL_COUNT, LABEL_MEMORY, LABEL_REPLICAS, LABEL_SHARING, LABEL_MEMORY_NUMA,
};

/*
 * Labels pods pin themselves by (node affinity, nodeSelector): the GPU's
 * product, family, memory and the like (GFD) and the instance type. The fgd
 * model asks them of every node for its typical pods (where.h).
 */
static const char *const where_prefixes[] = {"nvidia.com/gpu.", "nvidia.com/cuda.",
                                             "node.kubernetes.io/instance-type"};

/* Build-time state: the arena and the map of strings already stored in it. */
struct build {
    const struct gx_config *cfg;
    struct gx_arena *a;
    struct gx_interner strings; /* label strings repeat across nodes */
    struct gx_strmap kept;      /* label key -> KEY_KEPT or KEY_DROPPED, asked once a build */
};

static char key_kept, key_dropped; /* the values of build.kept, by address */

static int
kv_cmp(const void *a, const void *b)
{
    const struct gx_kv *x = a, *y = b;

    return strcmp(x->key, y->key);
}

/* A decision reads label @key: one of own_labels, a GFD label, or a label rule's key. */
bool
gx_snapshot_label_kept(const struct gx_config *cfg, const char *key)
{
    for (size_t i = 0; i < GX_ARRAY_LEN(own_labels); i++) {
        if (strcmp(own_labels[i], key) == 0) {
            return true;
        }
    }
    for (size_t i = 0; i < GX_ARRAY_LEN(where_prefixes); i++) {
        if (strncmp(key, where_prefixes[i], strlen(where_prefixes[i])) == 0) {
            return true;
        }
    }
    for (size_t i = 0; i < cfg->n_label_rules; i++) {
        if (cfg->label_rules[i].label != NULL && strcmp(cfg->label_rules[i].label, key) == 0) {
            return true;
        }
    }
    return false;
}

/*
 * The snapshot's copy of @s: one shared copy per distinct string (label keys
 * and values repeat across nodes). NULL on ENOMEM; if only the map cannot
 * grow, the string is copied unshared.
 */
static const char *
shared_str(struct build *b, const char *s)
{
    return gx_intern(&b->strings, s, strlen(s));
}

/* A label value as a non-negative decimal integer; false when absent or malformed. */
static bool
parse_count(const char *s, int64_t *out)
{
    int64_t n = 0;

    if (s == NULL || s[0] == '\0') {
        return false;
    }
    for (const char *p = s; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return false;
        }
        if (n > (INT64_MAX - (*p - '0')) / 10) {
            return false;
        }
        n = n * 10 + (*p - '0');
    }
    *out = n;
    return true;
}

/* Allocatable quantity of @res on @ni; false when absent or not a valid quantity. */
static bool
allocatable(const struct gx_node_info *ni, const char *res, int64_t *out)
{
    const char *q;

    if (res == NULL) {
        return false;
    }
    for (size_t i = 0; i < ni->n_allocatable; i++) {
        if (ni->allocatable[i].key != NULL && strcmp(ni->allocatable[i].key, res) == 0) {
            q = ni->allocatable[i].value;
            return q != NULL && gx_quantity_parse(q, out) == GX_OK;
        }
    }
    return false;
}

/*
 * NUMA node of a card from its PCI bus id ("00000000:81:00.0" or "81:00.0").
 * Heuristic: on the two-socket servers that carry the memory-numa label, the
 * firmware gives the second socket's root complexes buses 0x80 and above, so
 * bus >= 0x80 is NUMA node 1 and below is node 0. -1 when the id is unusable.
 */
static int
numa_of_bus(const char *pci)
{
    const char *p, *c1, *c2;
    int bus = 0, digits = 0;

    if (pci == NULL) {
        return -1;
    }
    c1 = strchr(pci, ':');
    if (c1 == NULL) {
        return -1;
    }
    c2 = strchr(c1 + 1, ':');
    p = c2 != NULL ? c1 + 1 : pci; /* with a domain, the bus follows the first ':' */
    for (; *p != ':' && *p != '\0'; p++) {
        int d;
        if (*p >= '0' && *p <= '9') {
            d = *p - '0';
        } else if (*p >= 'a' && *p <= 'f') {
            d = *p - 'a' + 10;
        } else if (*p >= 'A' && *p <= 'F') {
            d = *p - 'A' + 10;
        } else {
            return -1;
        }
        bus = bus * 16 + d;
        if (++digits > 2) {
            return -1;
        }
    }
    if (digits == 0) {
        return -1;
    }
    return bus >= 0x80 ? 1 : 0;
}

/* Copy the metric store's view of one card into @card (strings into the arena). */
static enum gx_err
fill_card(struct gx_arena *a, struct gx_card *card, const struct gx_mcard *mc, bool numa_node)
{
    if (mc->uuid != NULL && (card->uuid = gx_arena_strdup(a, mc->uuid)) == NULL) {
        return GX_ENOMEM;
    }
    if (mc->pod != NULL && (card->pod = gx_arena_strdup(a, mc->pod)) == NULL) {
        return GX_ENOMEM;
    }
    card->numa = numa_node ? numa_of_bus(mc->pci_bus_id) : -1;
    for (int k = 0; k < GX_SIG_COUNT; k++) {
        card->v[k] = mc->v[k].value;
        card->at_ms[k] = mc->v[k].at_ms;
    }
    return GX_OK;
}

/* Order for index-less cards: by UUID, cards without one last. */
static int
mcard_uuid_cmp(const void *a, const void *b)
{
    const struct gx_mcard *x = *(const struct gx_mcard *const *)a;
    const struct gx_mcard *y = *(const struct gx_mcard *const *)b;

    if (x->uuid == NULL || y->uuid == NULL) {
        return (x->uuid == NULL) - (y->uuid == NULL);
    }
    return strcmp(x->uuid, y->uuid);
}

/*
 * Build node->cards: index i takes the store's card reporting gpu == i;
 * store cards without an index fill the remaining slots in UUID order.
 */
static enum gx_err
build_cards(struct gx_arena *a, struct gx_node *node, const struct gx_mstore *ms)
{
    const struct gx_mcard *mcards = NULL, **loose = NULL;
    size_t n_m = 0, n_loose = 0, next = 0;
    bool *taken = NULL, numa_node;
    const char *numa_label;
    enum gx_err rc = GX_OK;

    node->n_cards = (size_t)node->gpu_count;
    if (node->n_cards == 0) {
        return GX_OK;
    }
    node->cards = gx_arena_alloc(a, node->n_cards * sizeof(*node->cards));
    if (node->cards == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < node->n_cards; i++) {
        struct gx_card *c = &node->cards[i];
        c->index = (int)i;
        c->numa = -1;
        for (int k = 0; k < GX_SIG_COUNT; k++) {
            c->v[k] = NAN;
            c->at_ms[k] = 0;
        }
    }
    if (ms != NULL) {
        mcards = gx_mstore_cards(ms, node->name, &n_m);
    }
    if (n_m == 0) {
        return GX_OK;
    }
    numa_label = gx_node_label(node, LABEL_MEMORY_NUMA);
    numa_node = numa_label != NULL && strcmp(numa_label, "true") == 0;

    taken = calloc(node->n_cards, sizeof(*taken));
    loose = calloc(n_m, sizeof(const struct gx_mcard *));
    if (taken == NULL || loose == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    for (size_t j = 0; j < n_m; j++) {
        const struct gx_mcard *mc = &mcards[j];
        if (mc->gpu < 0) {
            loose[n_loose++] = mc;
        } else if ((size_t)mc->gpu < node->n_cards && !taken[mc->gpu]) {
            taken[mc->gpu] = true;
            rc = fill_card(a, &node->cards[mc->gpu], mc, numa_node);
            if (rc != GX_OK) {
                goto out;
            }
        }
    }
    qsort(loose, n_loose, sizeof(const struct gx_mcard *), mcard_uuid_cmp);
    for (size_t j = 0; j < n_loose; j++) {
        while (next < node->n_cards && taken[next]) {
            next++;
        }
        if (next == node->n_cards) {
            break;
        }
        taken[next] = true;
        rc = fill_card(a, &node->cards[next], loose[j], numa_node);
        if (rc != GX_OK) {
            goto out;
        }
    }
out:
    free(loose);
    free(taken);
    return rc;
}

/*
 * gx_snapshot_label_kept for @key, remembered for the build: nodes repeat
 * the same few dozen keys, and asking the rules for every label of 5,000
 * nodes was most of a rebuild.
 */
static bool
label_kept(struct build *b, const char *key)
{
    size_t len = strlen(key);
    const char *v = gx_strmap_get(&b->kept, key, len);
    enum gx_err rc;
    bool kept;

    if (v != NULL) {
        return v == &key_kept;
    }
    kept = gx_snapshot_label_kept(b->cfg, key);
    /* the key lives in the node store as long as the build; no memory: the next node asks again */
    rc = gx_strmap_put(&b->kept, key, len, kept ? &key_kept : &key_dropped);
    (void)rc;
    return kept;
}

/* True when @kv[0..n) is sorted by key (the node store sorts them). */
static bool
labels_sorted(const struct gx_kv *kv, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        if (strcmp(kv[i - 1].key, kv[i].key) > 0) {
            return false;
        }
    }
    return true;
}

/* Copy the labels of @ni that decisions read into @node, sorted by key. GX_ENOMEM. */
static enum gx_err
copy_labels(struct build *b, const struct gx_node_info *ni, struct gx_node *node)
{
    size_t kept = 0;

    for (size_t i = 0; i < ni->n_labels; i++) {
        kept += ni->labels[i].key != NULL && label_kept(b, ni->labels[i].key);
    }
    if (kept == 0) {
        return GX_OK;
    }
    node->labels = gx_arena_alloc(b->a, kept * sizeof(*node->labels));
    if (node->labels == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < ni->n_labels; i++) {
        const char *k = ni->labels[i].key, *lv = ni->labels[i].value;
        struct gx_kv *kv = &node->labels[node->n_labels];

        if (k == NULL || !label_kept(b, k)) {
            continue;
        }
        kv->key = shared_str(b, k);
        kv->value = shared_str(b, lv != NULL ? lv : "");
        if (kv->key == NULL || kv->value == NULL) {
            return GX_ENOMEM;
        }
        node->n_labels++;
    }
    if (!labels_sorted(node->labels, node->n_labels)) {
        qsort(node->labels, node->n_labels, sizeof(*node->labels), kv_cmp);
    }
    return GX_OK;
}

/* Allocatable CPU (milli) and memory (MiB) of @ni, -1 when absent or not a quantity. */
static void
node_host(const struct gx_node_info *ni, struct gx_node *node)
{
    int64_t v;

    node->alloc_cpu_milli = -1;
    node->alloc_mem_mib = -1;
    for (size_t i = 0; i < ni->n_allocatable; i++) {
        const char *k = ni->allocatable[i].key, *q = ni->allocatable[i].value;
        if (k == NULL || q == NULL) {
            continue;
        }
        if (strcmp(k, "cpu") == 0 && gx_quantity_parse_milli(q, &v) == GX_OK) {
            node->alloc_cpu_milli = v;
        } else if (strcmp(k, "memory") == 0 && gx_quantity_parse_mib(q, &v) == GX_OK) {
            node->alloc_mem_mib = v;
        }
    }
}

/* Fill @node from @ni: the labels decisions read and the GPU facts derived from them. */
static enum gx_err
build_node(struct build *b, const struct gx_node_info *ni, const struct gx_mstore *ms,
           struct gx_node *node)
{
    const struct gx_config *cfg = b->cfg;
    const char *v;
    int64_t n, q_gpu = 0, q_shared = 0, replicas = 1, count = 0;
    bool has_gpu, has_shared;
    enum gx_err rc;

    node->name = gx_arena_strdup(b->a, ni->name != NULL ? ni->name : "");
    if (node->name == NULL) {
        return GX_ENOMEM;
    }
    if ((rc = copy_labels(b, ni, node)) != GX_OK) {
        return rc;
    }

    v = gx_node_label(node, LABEL_PRODUCT);
    node->product = v != NULL ? v : "";
    if (parse_count(gx_node_label(node, LABEL_REPLICAS), &n) && n > 1) {
        replicas = n > INT32_MAX ? INT32_MAX : n;
    }
    node->replicas = (int)replicas;
    if (parse_count(gx_node_label(node, LABEL_MEMORY), &n)) {
        node->gpu_memory_mib = n;
    }

    v = gx_node_label(node, LABEL_SHARING);
    /* Replicas without a strategy label: a device plugin older than the label. */
    if ((v != NULL && strcmp(v, "time-slicing") == 0) || (v == NULL && replicas > 1)) {
        node->sharing = GX_SHARING_TIME_SLICING;
    } else if (v != NULL && strcmp(v, "mps") == 0) {
        node->sharing = GX_SHARING_MPS;
    } else {
        node->sharing = GX_SHARING_NONE;
    }

    has_gpu = allocatable(ni, cfg->res_gpu, &q_gpu);
    has_shared = allocatable(ni, cfg->res_shared, &q_shared);
    if (!has_gpu) {
        q_gpu = 0;
    }
    if (!has_shared) {
        q_shared = 0;
    }
    node->alloc_gpu = has_gpu || has_shared ? q_gpu + q_shared : -1;
    node_host(ni, node);

    /* Physical cards: a time-sliced node advertises cards x replicas. */
    if (parse_count(gx_node_label(node, LABEL_COUNT), &n) && n > 0) {
        count = n;
    } else if (node->alloc_gpu > 0) {
        count = node->alloc_gpu / replicas;
    }
    node->gpu_count = (int)(count > SNAPSHOT_MAX_CARDS ? SNAPSHOT_MAX_CARDS : count);

    node->ready = ni->ready;
    node->unschedulable = ni->unschedulable;
    return build_cards(b->a, node, ms);
}

/*
 * Build a snapshot of @nodes and the store @ms. GX_ENOMEM; *out untouched
 * on error. nodes_ms, metrics_ms and generation are left 0 for the caller.
 */
enum gx_err
gx_snapshot_build(const struct gx_config *cfg, const struct gx_node_info *nodes, size_t n_nodes,
                  const struct gx_mstore *ms, int64_t now_ms, struct gx_snapshot **out)
{
    struct gx_snapshot *snap = NULL;
    struct build b = {.cfg = cfg};
    enum gx_err rc = GX_OK;

    snap = calloc(1, sizeof(*snap));
    if (snap == NULL) {
        return GX_ENOMEM;
    }
    gx_arena_init(&snap->arena, 0);
    b.a = &snap->arena;
    gx_intern_init(&b.strings, b.a, 0);
    gx_strmap_init(&b.kept);
    snap->built_ms = now_ms;
    if (n_nodes > 0) {
        snap->nodes = gx_arena_alloc(&snap->arena, n_nodes * sizeof(*snap->nodes));
        if (snap->nodes == NULL) {
            rc = GX_ENOMEM;
            goto out;
        }
    }
    for (size_t i = 0; i < n_nodes; i++) {
        struct gx_node *node = &snap->nodes[i];

        rc = build_node(&b, &nodes[i], ms, node);
        if (rc != GX_OK) {
            goto out;
        }
        snap->n_nodes++;
    }
    if ((rc = gx_snapshot_index(snap)) != GX_OK) {
        goto out;
    }
    *out = snap;
    snap = NULL;
out:
    gx_intern_release(&b.strings);
    gx_strmap_release(&b.kept);
    gx_snapshot_free(snap);
    return rc;
}

/* Free a snapshot; NULL is a no-op. */
void
gx_snapshot_free(struct gx_snapshot *snap)
{
    if (snap == NULL) {
        return;
    }
    gx_nameidx_release(&snap->names);
    gx_arena_release(&snap->arena);
    free(snap);
}

enum gx_err
gx_snapshot_index(struct gx_snapshot *snap)
{
    enum gx_err rc;

    gx_nameidx_release(&snap->names);
    if ((rc = gx_nameidx_init(&snap->names, snap->n_nodes)) != GX_OK) {
        return rc;
    }
    for (size_t i = 0; i < snap->n_nodes; i++) {
        const char *name = snap->nodes[i].name;
        if ((rc = gx_nameidx_add(&snap->names, name, strlen(name))) != GX_OK) {
            return rc;
        }
    }
    return GX_OK;
}

/* The node named @name (@len bytes), or NULL. */
const struct gx_node *
gx_snapshot_find(const struct gx_snapshot *snap, const char *name, size_t len)
{
    uint32_t pos;

    if (snap == NULL || name == NULL) {
        return NULL;
    }
    pos = gx_nameidx_find(&snap->names, name, len);
    return pos != GX_NAMEIDX_NONE ? &snap->nodes[pos] : NULL;
}

void
gx_snapshot_find_all(const struct gx_snapshot *snap, const struct gx_ext_node *names, size_t n,
                     const struct gx_node **out)
{
    enum { BATCH = 32 };
    struct gx_nameidx_probe p[BATCH];
    uint32_t pos[BATCH];

    if (snap == NULL) {
        for (size_t i = 0; i < n; i++) {
            out[i] = NULL;
        }
        return;
    }
    for (size_t at = 0; at < n; at += BATCH) {
        size_t k = n - at < BATCH ? n - at : BATCH;
        for (size_t i = 0; i < k; i++) {
            p[i].name = names[at + i].name != NULL ? names[at + i].name : "";
            p[i].len = names[at + i].name != NULL ? names[at + i].name_len : 0;
        }
        gx_nameidx_find_many(&snap->names, p, k, pos);
        for (size_t i = 0; i < k; i++) {
            out[at + i] = pos[i] != GX_NAMEIDX_NONE ? &snap->nodes[pos[i]] : NULL;
        }
    }
}

enum gx_err
gx_snapshot_mark_claimed(struct gx_snapshot *snap, gx_snapshot_claim_fn claim_of, void *ctx)
{
    for (size_t i = 0; i < snap->n_nodes; i++) {
        struct gx_node *node = &snap->nodes[i];

        for (size_t c = 0; c < node->n_cards; c++) {
            struct gx_card *card = &node->cards[c];
            const char *claim = card->uuid != NULL ? claim_of(ctx, node->name, card->uuid) : NULL;

            if (claim != NULL && (card->claim = gx_arena_strdup(&snap->arena, claim)) == NULL) {
                return GX_ENOMEM;
            }
        }
    }
    return GX_OK;
}

/* Value of label @key on @node, or NULL (labels are sorted by key). */
const char *
gx_node_label(const struct gx_node *node, const char *key)
{
    struct gx_kv probe = {.key = key, .value = NULL};
    const struct gx_kv *hit;

    if (node == NULL || node->n_labels == 0 || key == NULL) {
        return NULL;
    }
    hit = bsearch(&probe, node->labels, node->n_labels, sizeof(*node->labels), kv_cmp);
    return hit != NULL ? hit->value : NULL;
}

/* True when signal @sig of @card is known and at most max_age_s old at @now_ms. */
bool
gx_card_fresh(const struct gx_config *cfg, const struct gx_card *card, enum gx_signal sig,
              int64_t now_ms)
{
    int64_t at;

    if ((unsigned)sig >= GX_SIG_COUNT) {
        return false;
    }
    at = card->at_ms[sig];
    if (at == 0 || isnan(card->v[sig])) {
        return false;
    }
    return now_ms - at <= (int64_t)cfg->max_age_s[sig] * 1000;
}
