/* SPDX-License-Identifier: Apache-2.0 */
/*
 * dcgm.c - dcgm-exporter series to card samples, and the metric store.
 *
 * The store maps a node name to a heap record holding that node's cards
 * (struct gx_mcard, public) and, in a parallel array, which source and which
 * replacement generation last set each value (private). A replacement of a
 * (source, signal) pair is opened by gx_mstore_begin and closed by
 * gx_mstore_commit, which forgets the pair's values that were not put again:
 * a series that vanished becomes unknown, never zero, and one source never
 * erases another's values. Does no I/O; not thread-safe (one owner).
 */
#include "gx/dcgm.h"

#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gx/arena.h"
#include "gx/expo.h"
#include "gx/strmap.h"

/* Replacements open at once; a page opens one per signal. */
#define MSTORE_MAX_OPEN 64

/* Who set a card's values: source index (-1 none) and replacement generation. */
struct mcard_meta {
    int source[GX_SIG_COUNT];
    uint64_t gen[GX_SIG_COUNT];
};

struct mnode {
    char *name;
    struct gx_mcard *cards;  /* n entries, cap allocated */
    struct mcard_meta *meta; /* parallel to cards */
    size_t n, cap;
};

struct open_rep {
    int source;
    enum gx_signal sig;
    uint64_t gen;
};

struct gx_mstore {
    struct gx_strmap by_name; /* node name -> struct mnode * (key owned by the mnode) */
    struct mnode **nodes;
    size_t n_nodes, cap_nodes;
    struct open_rep open[MSTORE_MAX_OPEN];
    size_t n_open;
    uint64_t gen;
};

/* Signal whose configured family name equals @name. Cannot fail. */
bool
gx_dcgm_signal_of(const struct gx_config *cfg, const char *name, enum gx_signal *out)
{
    for (int i = 0; i < GX_SIG_COUNT; i++) {
        if (cfg->metric_names[i] != NULL && strcmp(cfg->metric_names[i], name) == 0) {
            *out = (enum gx_signal)i;
            return true;
        }
    }
    return false;
}

/* Value of label @key, NULL when absent or empty (Prometheus: empty = absent). */
static const char *
label(const struct gx_series *s, const char *key)
{
    for (size_t i = 0; i < s->n_labels; i++) {
        if (strcmp(s->labels[i].key, key) == 0) {
            const char *v = s->labels[i].value;
            return v != NULL && v[0] != '\0' ? v : NULL;
        }
    }
    return NULL;
}

/*
 * Strip ":port" from @v (length *len): "10.0.0.5:9400" -> "10.0.0.5",
 * "[fd00::1]:9400" -> "fd00::1" (as Go's net.SplitHostPort). A bare IPv6
 * address ("fd00::1", several colons) or a value whose suffix is not a port
 * is left alone. Returns the start of the host part.
 */
static const char *
strip_port(const char *v, size_t *len)
{
    size_t n = *len, colon = n, colons = 0;

    if (n > 0 && v[0] == '[') {
        const char *close = memchr(v, ']', n);
        size_t hl;
        if (close == NULL) {
            return v;
        }
        hl = (size_t)(close - v) - 1;
        if (hl == 0) {
            return v;
        }
        *len = hl;
        return v + 1;
    }
    for (size_t i = 0; i < n; i++) {
        if (v[i] == ':') {
            colon = i;
            colons++;
        }
    }
    if (colons != 1 || colon == 0 || colon + 1 == n) {
        return v;
    }
    for (size_t i = colon + 1; i < n; i++) {
        if (v[i] < '0' || v[i] > '9') {
            return v;
        }
    }
    *len = colon;
    return v;
}

/* "gpu" label as a decimal index; -1 when absent or not a small non-negative integer. */
static int
gpu_index(const char *v)
{
    long n = 0;

    if (v == NULL || v[0] == '\0') {
        return -1;
    }
    for (const char *p = v; *p != '\0'; p++) {
        if (*p < '0' || *p > '9') {
            return -1;
        }
        n = n * 10 + (*p - '0');
        if (n > INT_MAX) {
            return -1;
        }
    }
    return (int)n;
}

/*
 * Map one series to a card sample. The node comes from the first configured
 * node label present; the workload pod from exported_pod, else pod (unless
 * that names the exporter itself, as it does when Prometheus scrapes with
 * honor_labels: false and the GPU is not allocated), else pod_name (-o).
 * False when the series names no node or no card.
 */
bool
gx_dcgm_map(const struct gx_config *cfg, enum gx_signal sig, const struct gx_series *s,
            int64_t default_at_ms, struct gx_card_sample *out)
{
    const char *node = NULL, *uuid, *pod;
    size_t node_len = 0;
    int gpu;

    for (size_t i = 0; i < cfg->n_node_labels && node == NULL; i++) {
        node = label(s, cfg->node_labels[i]);
    }
    if (node == NULL) {
        return false;
    }
    node_len = strlen(node);
    if (cfg->strip_port) {
        node = strip_port(node, &node_len);
    }
    if (node_len == 0) {
        return false;
    }

    uuid = label(s, "UUID");
    if (uuid == NULL) {
        uuid = label(s, "uuid");
    }
    gpu = gpu_index(label(s, "gpu"));
    if (uuid == NULL && gpu < 0) {
        return false;
    }

    pod = label(s, "exported_pod");
    if (pod == NULL) {
        const char *container = label(s, "container");

        pod = label(s, "pod");
        if (pod != NULL && container != NULL &&
            (strcmp(container, "nvidia-dcgm-exporter") == 0 ||
             strcmp(container, "dcgm-exporter") == 0)) {
            pod = NULL;
        }
    }
    if (pod == NULL) {
        pod = label(s, "pod_name");
    }

    out->node = node;
    out->node_len = node_len;
    out->uuid = uuid;
    out->gpu = gpu;
    out->sig = sig;
    out->value = s->value;
    out->at_ms = s->ts_ms != 0 ? s->ts_ms : default_at_ms;
    out->pod = pod;
    return true;
}

/* A new empty store; NULL on ENOMEM. */
struct gx_mstore *
gx_mstore_new(void)
{
    struct gx_mstore *ms = calloc(1, sizeof(*ms));

    if (ms == NULL) {
        return NULL;
    }
    gx_strmap_init(&ms->by_name);
    return ms;
}

static void
mcard_release(struct gx_mcard *c)
{
    free(c->uuid);
    free(c->pod);
    free(c->pci_bus_id);
}

/* Free a store and everything in it; NULL is a no-op. */
void
gx_mstore_free(struct gx_mstore *ms)
{
    if (ms == NULL) {
        return;
    }
    for (size_t i = 0; i < ms->n_nodes; i++) {
        struct mnode *mn = ms->nodes[i];
        for (size_t j = 0; j < mn->n; j++) {
            mcard_release(&mn->cards[j]);
        }
        free(mn->cards);
        free(mn->meta);
        free(mn->name);
        free(mn);
    }
    free(ms->nodes);
    gx_strmap_release(&ms->by_name);
    free(ms);
}

/*
 * Open (or reopen) the replacement of (@source, @sig). If MSTORE_MAX_OPEN
 * replacements are already open the call is ignored and later puts for @sig
 * fail with GX_EINVAL (unless another replacement of @sig is open).
 */
void
gx_mstore_begin(struct gx_mstore *ms, int source, enum gx_signal sig)
{
    struct open_rep *r = NULL;

    if ((unsigned)sig >= GX_SIG_COUNT) {
        return;
    }
    for (size_t i = 0; i < ms->n_open; i++) {
        if (ms->open[i].source == source && ms->open[i].sig == sig) {
            r = &ms->open[i];
            /* Keep the most recent begin last: put picks the last one per signal. */
            struct open_rep tmp = *r;
            memmove(r, r + 1, (ms->n_open - i - 1) * sizeof(*r));
            ms->open[ms->n_open - 1] = tmp;
            r = &ms->open[ms->n_open - 1];
            break;
        }
    }
    if (r == NULL) {
        if (ms->n_open == MSTORE_MAX_OPEN) {
            return;
        }
        r = &ms->open[ms->n_open++];
        r->source = source;
        r->sig = sig;
    }
    r->gen = ++ms->gen;
}

/* The node record for @name, created when absent; NULL on ENOMEM. */
static struct mnode *
node_get(struct gx_mstore *ms, const char *name, size_t len, bool create)
{
    struct mnode *mn = gx_strmap_get(&ms->by_name, name, len);

    if (mn != NULL || !create) {
        return mn;
    }
    if (ms->n_nodes == ms->cap_nodes) {
        size_t ncap = ms->cap_nodes ? ms->cap_nodes * 2 : 16;
        struct mnode **nn = realloc(ms->nodes, ncap * sizeof(struct mnode *));
        if (nn == NULL) {
            return NULL;
        }
        ms->nodes = nn;
        ms->cap_nodes = ncap;
    }
    mn = calloc(1, sizeof(*mn));
    if (mn == NULL) {
        return NULL;
    }
    mn->name = gx_strndup(name, len);
    if (mn->name == NULL || gx_strmap_put(&ms->by_name, mn->name, len, mn) != GX_OK) {
        free(mn->name);
        free(mn);
        return NULL;
    }
    ms->nodes[ms->n_nodes++] = mn;
    return mn;
}

/* Find the card of @s in @mn (uuid first, else gpu index); -1 when none. */
static ptrdiff_t
card_find(const struct mnode *mn, const struct gx_card_sample *s)
{
    if (s->uuid != NULL) {
        for (size_t i = 0; i < mn->n; i++) {
            if (mn->cards[i].uuid != NULL && strcmp(mn->cards[i].uuid, s->uuid) == 0) {
                return (ptrdiff_t)i;
            }
        }
        /* A card first seen without a UUID is adopted by index. */
        for (size_t i = 0; i < mn->n; i++) {
            if (mn->cards[i].uuid == NULL && s->gpu >= 0 && mn->cards[i].gpu == s->gpu) {
                return (ptrdiff_t)i;
            }
        }
        return -1;
    }
    for (size_t i = 0; i < mn->n; i++) {
        if (s->gpu >= 0 && mn->cards[i].gpu == s->gpu) {
            return (ptrdiff_t)i;
        }
    }
    return -1;
}

/* Append an empty card (all values unknown) to @mn; NULL on ENOMEM. */
static struct gx_mcard *
card_add(struct mnode *mn)
{
    struct gx_mcard *c;

    if (mn->n == mn->cap) {
        size_t ncap = mn->cap ? mn->cap * 2 : 8;
        struct gx_mcard *nc = realloc(mn->cards, ncap * sizeof(*nc));
        struct mcard_meta *nm;
        if (nc == NULL) {
            return NULL;
        }
        mn->cards = nc;
        nm = realloc(mn->meta, ncap * sizeof(*nm));
        if (nm == NULL) {
            return NULL;
        }
        mn->meta = nm;
        mn->cap = ncap;
    }
    c = &mn->cards[mn->n];
    memset(c, 0, sizeof(*c));
    c->gpu = -1;
    for (int k = 0; k < GX_SIG_COUNT; k++) {
        c->v[k].value = NAN;
        c->v[k].at_ms = 0;
        mn->meta[mn->n].source[k] = -1;
        mn->meta[mn->n].gen[k] = 0;
    }
    mn->n++;
    return c;
}

/* Replace *@dst with a copy of @src when they differ (NULL clears). GX_ENOMEM. */
static enum gx_err
set_str(char **dst, const char *src)
{
    char *copy;

    if (src == NULL) {
        free(*dst);
        *dst = NULL;
        return GX_OK;
    }
    if (*dst != NULL && strcmp(*dst, src) == 0) {
        return GX_OK;
    }
    copy = gx_strndup(src, strlen(src));
    if (copy == NULL) {
        return GX_ENOMEM;
    }
    free(*dst);
    *dst = copy;
    return GX_OK;
}

/*
 * Record @s (and the card's PCI bus id @pci, NULL = keep the known one) under
 * the latest open replacement of its signal. GX_EINVAL, GX_ENOMEM.
 */
static enum gx_err
mstore_put(struct gx_mstore *ms, const struct gx_card_sample *s, const char *pci)
{
    const struct open_rep *r = NULL;
    struct mnode *mn;
    struct gx_mcard *c;
    ptrdiff_t i;
    enum gx_err rc;

    if ((unsigned)s->sig >= GX_SIG_COUNT || s->node == NULL || s->node_len == 0) {
        return GX_EINVAL;
    }
    if (s->uuid == NULL && s->gpu < 0) {
        return GX_EINVAL;
    }
    for (size_t k = ms->n_open; k > 0; k--) {
        if (ms->open[k - 1].sig == s->sig) {
            r = &ms->open[k - 1];
            break;
        }
    }
    if (r == NULL) {
        return GX_EINVAL;
    }
    mn = node_get(ms, s->node, s->node_len, true);
    if (mn == NULL) {
        return GX_ENOMEM;
    }
    i = card_find(mn, s);
    if (i < 0) {
        c = card_add(mn);
        if (c == NULL) {
            return GX_ENOMEM;
        }
        i = (ptrdiff_t)(mn->n - 1);
    } else {
        c = &mn->cards[i];
    }
    if (s->uuid != NULL && (rc = set_str(&c->uuid, s->uuid)) != GX_OK) {
        return rc;
    }
    if ((rc = set_str(&c->pod, s->pod)) != GX_OK) {
        return rc;
    }
    if (pci != NULL && (rc = set_str(&c->pci_bus_id, pci)) != GX_OK) {
        return rc;
    }
    if (s->gpu >= 0) {
        c->gpu = s->gpu;
    }
    c->v[s->sig].value = s->value;
    c->v[s->sig].at_ms = s->at_ms;
    mn->meta[i].source[s->sig] = r->source;
    mn->meta[i].gen[s->sig] = r->gen;
    return GX_OK;
}

/* Record @s under the latest open replacement of its signal. GX_EINVAL, GX_ENOMEM. */
enum gx_err
gx_mstore_put(struct gx_mstore *ms, const struct gx_card_sample *s)
{
    return mstore_put(ms, s, NULL);
}

/* True when no value of @c is known any more. */
static bool
card_empty(const struct gx_mcard *c)
{
    for (int k = 0; k < GX_SIG_COUNT; k++) {
        if (c->v[k].at_ms != 0) {
            return false;
        }
    }
    return true;
}

/* Close every open replacement: forget what was not put again, drop empty cards. */
void
gx_mstore_commit(struct gx_mstore *ms)
{
    if (ms->n_open == 0) {
        return;
    }
    for (size_t ni = 0; ni < ms->n_nodes; ni++) {
        struct mnode *mn = ms->nodes[ni];
        size_t w = 0;

        for (size_t ci = 0; ci < mn->n; ci++) {
            struct gx_mcard *c = &mn->cards[ci];
            struct mcard_meta *m = &mn->meta[ci];

            for (size_t k = 0; k < ms->n_open; k++) {
                const struct open_rep *r = &ms->open[k];
                if (m->source[r->sig] == r->source && m->gen[r->sig] != r->gen) {
                    c->v[r->sig].value = NAN;
                    c->v[r->sig].at_ms = 0;
                    m->source[r->sig] = -1;
                    m->gen[r->sig] = 0;
                }
            }
            if (card_empty(c)) {
                mcard_release(c);
                continue;
            }
            if (w != ci) {
                mn->cards[w] = *c;
                mn->meta[w] = *m;
            }
            w++;
        }
        mn->n = w;
    }
    ms->n_open = 0;
}

/* Abandon the open replacements without forgetting anything (after a failed load). */
static void
mstore_abort(struct gx_mstore *ms)
{
    ms->n_open = 0;
}

/* Cards of @node, borrowed until the store changes; NULL with *n = 0 when none. */
const struct gx_mcard *
gx_mstore_cards(const struct gx_mstore *ms, const char *node, size_t *n)
{
    const struct mnode *mn = NULL;

    if (ms != NULL && node != NULL) {
        mn = gx_strmap_get(&ms->by_name, node, strlen(node));
    }
    if (mn == NULL || mn->n == 0) {
        *n = 0;
        return NULL;
    }
    *n = mn->n;
    return mn->cards;
}

/* One sample of a page with its card's PCI bus id (kept for the NUMA guess). */
struct page_sample {
    struct gx_card_sample cs;
    const char *pci; /* NULL when the series has no pci_bus_id */
};

/* Samples of one page, collected before the store is touched. */
struct page_ctx {
    const struct gx_config *cfg;
    int64_t now_ms;
    struct gx_arena arena; /* copies of the samples' strings */
    struct page_sample *samples;
    size_t n, cap;
};

/* Copy a string into the page arena (NULL stays NULL); false on ENOMEM. */
static bool
page_copy(struct page_ctx *pc, const char **s, size_t len)
{
    char *copy;

    if (*s == NULL) {
        return true;
    }
    copy = gx_arena_strndup(&pc->arena, *s, len);
    if (copy == NULL) {
        return false;
    }
    *s = copy;
    return true;
}

/* Series callback: keep the samples of configured families, skip the rest. */
static enum gx_err
page_series_cb(void *ctx, const struct gx_series *s)
{
    struct page_ctx *pc = ctx;
    struct gx_card_sample cs;
    const char *pci;
    enum gx_signal sig;

    if (!gx_dcgm_signal_of(pc->cfg, s->name, &sig)) {
        return GX_OK;
    }
    if (!gx_dcgm_map(pc->cfg, sig, s, pc->now_ms, &cs)) {
        return GX_OK;
    }
    if (pc->n == pc->cap) {
        size_t ncap = pc->cap ? pc->cap * 2 : 64;
        struct page_sample *ns = realloc(pc->samples, ncap * sizeof(*ns));
        if (ns == NULL) {
            return GX_ENOMEM;
        }
        pc->samples = ns;
        pc->cap = ncap;
    }
    pci = label(s, "pci_bus_id");
    if (!page_copy(pc, &cs.node, cs.node_len) ||
        (cs.uuid != NULL && !page_copy(pc, &cs.uuid, strlen(cs.uuid))) ||
        (cs.pod != NULL && !page_copy(pc, &cs.pod, strlen(cs.pod))) ||
        (pci != NULL && !page_copy(pc, &pci, strlen(pci)))) {
        return GX_ENOMEM;
    }
    pc->samples[pc->n].cs = cs;
    pc->samples[pc->n].pci = pci;
    pc->n++;
    return GX_OK;
}

/*
 * Parse a whole page, then replace every configured signal of @source with
 * its samples. A page that fails to parse changes nothing (GX_EPARSE, "line
 * N: reason" in @why). On GX_ENOMEM some values may be updated, none forgotten.
 */
enum gx_err
gx_mstore_load_page(struct gx_mstore *ms, const struct gx_config *cfg, int source, const char *text,
                    size_t len, int64_t now_ms, struct gx_why *why)
{
    struct page_ctx pc = {.cfg = cfg, .now_ms = now_ms};
    enum gx_err rc;

    gx_arena_init(&pc.arena, 0);
    rc = gx_expo_parse(text, len, page_series_cb, &pc, why);
    if (rc != GX_OK) {
        if (rc == GX_ENOMEM) {
            gx_why_set(why, "out of memory");
        }
        goto out;
    }
    /* Other callers' open replacements are closed by this commit too. */
    for (int k = 0; k < GX_SIG_COUNT; k++) {
        if (cfg->metric_names[k] != NULL) {
            gx_mstore_begin(ms, source, (enum gx_signal)k);
        }
    }
    for (size_t i = 0; i < pc.n; i++) {
        rc = mstore_put(ms, &pc.samples[i].cs, pc.samples[i].pci);
        if (rc != GX_OK) {
            gx_why_set(why, "storing samples: %s", gx_strerror(rc));
            mstore_abort(ms);
            goto out;
        }
    }
    gx_mstore_commit(ms);
out:
    free(pc.samples);
    gx_arena_release(&pc.arena);
    return rc;
}
