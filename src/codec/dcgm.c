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
 *
 * Why one file: mapping series to cards and the store they land in share
 * one invariant, replacement per source and signal.
 */
#include "dcgm.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "expo.h"
#include "strmap.h"

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

/*
 * A page's samples are collected before the store is touched (a page that
 * fails to parse changes nothing). A 5,000-node page has 240,000 samples
 * of 40,000 cards, and every family repeats the card's strings, so the
 * strings are kept once per distinct card (node, UUID, index, pod, bus id)
 * and a sample is only its card's number, signal, value and time: about
 * 15 MiB at that size instead of 37 MiB with strings copied per sample.
 */
struct page_card {
    const char *node; /* NUL-terminated copies in the page arena */
    size_t node_len;
    const char *uuid, *pod, *pci; /* NULL when the series has none */
    int gpu;
};

struct page_sample {
    uint32_t card; /* index into page_ctx.cards */
    uint32_t sig;
    double value;
    int64_t at_ms;
};

struct page_ctx {
    const struct gx_config *cfg;
    int64_t now_ms;
    struct gx_arena arena;   /* card keys and strings */
    struct gx_strmap by_key; /* card key -> index + 1 */
    struct page_card *cards;
    size_t n_cards, cap_cards;
    struct page_sample *samples;
    size_t n, cap;
    char *key; /* scratch for building a card key */
    size_t key_cap;
};

/* Grow *@arr (elements of @size) so that index *@cap is valid; false on ENOMEM. */
static bool
page_grow(void **arr, size_t *cap, size_t size, size_t first)
{
    size_t ncap = *cap ? *cap * 2 : first;
    void *na;

    if (ncap > SIZE_MAX / size) {
        return false;
    }
    na = realloc(*arr, ncap * size);
    if (na == NULL) {
        return false;
    }
    *arr = na;
    *cap = ncap;
    return true;
}

/* Append @len bytes of @s and a separator to the key scratch at *@at. */
static void
key_put(char *key, size_t *at, const char *s, size_t len, char tag)
{
    key[(*at)++] = tag;
    if (s != NULL) {
        memcpy(key + *at, s, len);
        *at += len;
    }
    key[(*at)++] = '\0';
}

/*
 * The page card of sample @cs with bus id @pci: found by a key of every
 * field (so cards that differ in any field stay apart, exactly as samples
 * were before), created on first sight. Its index in *@idx; false on ENOMEM.
 */
static bool
page_card_of(struct page_ctx *pc, const struct gx_card_sample *cs, const char *pci, uint32_t *idx)
{
    size_t ul = cs->uuid ? strlen(cs->uuid) : 0, pl = cs->pod ? strlen(cs->pod) : 0;
    size_t bl = pci ? strlen(pci) : 0, need = cs->node_len + ul + pl + bl + 32, at = 0;
    char gpu[16];
    void *hit;
    struct page_card *c;
    char *copy;

    if (need > pc->key_cap) {
        char *nk = realloc(pc->key, need);
        if (nk == NULL) {
            return false;
        }
        pc->key = nk;
        pc->key_cap = need;
    }
    (void)snprintf(gpu, sizeof(gpu), "%d", cs->gpu);
    /* A tag byte per field tells an absent string from an empty one. */
    key_put(pc->key, &at, cs->node, cs->node_len, 'n');
    key_put(pc->key, &at, cs->uuid, ul, cs->uuid ? 'u' : '-');
    key_put(pc->key, &at, gpu, strlen(gpu), 'g');
    key_put(pc->key, &at, cs->pod, pl, cs->pod ? 'p' : '-');
    key_put(pc->key, &at, pci, bl, pci ? 'b' : '-');
    hit = gx_strmap_get(&pc->by_key, pc->key, at);
    if (hit != NULL) {
        *idx = (uint32_t)((uintptr_t)hit - 1);
        return true;
    }
    if (pc->n_cards >= UINT32_MAX ||
        (pc->n_cards == pc->cap_cards &&
         !page_grow((void **)&pc->cards, &pc->cap_cards, sizeof(*pc->cards), 64))) {
        return false;
    }
    copy = gx_arena_alloc(&pc->arena, at);
    if (copy == NULL) {
        return false;
    }
    memcpy(copy, pc->key, at);
    /* The fields are NUL-terminated inside the copied key: point into it. */
    c = &pc->cards[pc->n_cards];
    c->node = copy + 1;
    c->node_len = cs->node_len;
    at = 1 + cs->node_len + 1;
    c->uuid = cs->uuid ? copy + at + 1 : NULL;
    at += 1 + ul + 1;
    at += 1 + strlen(gpu) + 1;
    c->pod = cs->pod ? copy + at + 1 : NULL;
    at += 1 + pl + 1;
    c->pci = pci ? copy + at + 1 : NULL;
    at += 1 + bl + 1;
    c->gpu = cs->gpu;
    if (gx_strmap_put(&pc->by_key, copy, at, (void *)(uintptr_t)(pc->n_cards + 1)) != GX_OK) {
        return false;
    }
    *idx = (uint32_t)pc->n_cards++;
    return true;
}

/* Series callback: keep the samples of configured families, skip the rest. */
static enum gx_err
page_series_cb(void *ctx, const struct gx_series *s)
{
    struct page_ctx *pc = ctx;
    struct gx_card_sample cs;
    struct page_sample *ps;
    uint32_t card;
    enum gx_signal sig;

    if (!gx_dcgm_signal_of(pc->cfg, s->name, &sig)) {
        return GX_OK;
    }
    if (!gx_dcgm_map(pc->cfg, sig, s, pc->now_ms, &cs)) {
        return GX_OK;
    }
    if (pc->n == pc->cap &&
        !page_grow((void **)&pc->samples, &pc->cap, sizeof(*pc->samples), 256)) {
        return GX_ENOMEM;
    }
    if (!page_card_of(pc, &cs, label(s, "pci_bus_id"), &card)) {
        return GX_ENOMEM;
    }
    ps = &pc->samples[pc->n++];
    ps->card = card;
    ps->sig = (uint32_t)sig;
    ps->value = cs.value;
    ps->at_ms = cs.at_ms;
    return GX_OK;
}

/*
 * Parse a whole page, then replace every configured signal of @source with
 * its samples. A page that fails to parse changes nothing (GX_EPARSE, "line
 * N: reason" in @why). On GX_ENOMEM some values may be updated, none forgotten.
 */
/* Move the samples collected in @pc into the store as one replacement per signal. */
static enum gx_err
page_apply(struct gx_mstore *ms, const struct gx_config *cfg, int source, const struct page_ctx *pc,
           struct gx_why *why)
{
    enum gx_err rc;

    /* Other callers' open replacements are closed by this commit too. */
    for (int k = 0; k < GX_SIG_COUNT; k++) {
        if (cfg->metric_names[k] != NULL) {
            gx_mstore_begin(ms, source, (enum gx_signal)k);
        }
    }
    for (size_t i = 0; i < pc->n; i++) {
        const struct page_sample *ps = &pc->samples[i];
        const struct page_card *c = &pc->cards[ps->card];
        struct gx_card_sample cs = {
            .node = c->node,
            .node_len = c->node_len,
            .uuid = c->uuid,
            .gpu = c->gpu,
            .sig = (enum gx_signal)ps->sig,
            .value = ps->value,
            .at_ms = ps->at_ms,
            .pod = c->pod,
        };

        rc = mstore_put(ms, &cs, c->pci);
        if (rc != GX_OK) {
            gx_why_set(why, "storing samples: %s", gx_strerror(rc));
            mstore_abort(ms);
            return rc;
        }
    }
    gx_mstore_commit(ms);
    return GX_OK;
}

static void
page_release(struct page_ctx *pc)
{
    free(pc->samples);
    free(pc->cards);
    free(pc->key);
    gx_strmap_release(&pc->by_key);
    gx_arena_release(&pc->arena);
}

enum gx_err
gx_mstore_load_page(struct gx_mstore *ms, const struct gx_config *cfg, int source, const char *text,
                    size_t len, int64_t now_ms, struct gx_why *why)
{
    struct page_ctx pc = {.cfg = cfg, .now_ms = now_ms};
    enum gx_err rc;

    gx_arena_init(&pc.arena, 0);
    gx_strmap_init(&pc.by_key);
    rc = gx_expo_parse(text, len, page_series_cb, &pc, why);
    if (rc == GX_ENOMEM) {
        gx_why_set(why, "out of memory");
    }
    if (rc == GX_OK) {
        rc = page_apply(ms, cfg, source, &pc, why);
    }
    page_release(&pc);
    return rc;
}

struct gx_page {
    struct page_ctx pc;
};

struct gx_page *
gx_page_new(const struct gx_config *cfg, int64_t now_ms)
{
    struct gx_page *pg = calloc(1, sizeof(*pg));

    if (pg == NULL) {
        return NULL;
    }
    pg->pc.cfg = cfg;
    pg->pc.now_ms = now_ms;
    gx_arena_init(&pg->pc.arena, 0);
    gx_strmap_init(&pg->pc.by_key);
    return pg;
}

enum gx_err
gx_page_feed(struct gx_page *pg, const char *buf, size_t len, bool last, size_t *used,
             struct gx_why *why)
{
    const char *end = last ? buf + len : NULL;

    if (!last) {
        for (size_t i = len; i > 0; i--) {
            if (buf[i - 1] == '\n') {
                end = buf + i;
                break;
            }
        }
    }
    *used = end != NULL ? (size_t)(end - buf) : 0;
    return *used > 0 ? gx_expo_parse(buf, *used, page_series_cb, &pg->pc, why) : GX_OK;
}

enum gx_err
gx_page_apply(struct gx_page *pg, struct gx_mstore *ms, int source, struct gx_why *why)
{
    return page_apply(ms, pg->pc.cfg, source, &pg->pc, why);
}

void
gx_page_free(struct gx_page *pg)
{
    if (pg == NULL) {
        return;
    }
    page_release(&pg->pc);
    free(pg);
}
