/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pdb.c - PodDisruptionBudget matching, violation count and store (see
 * pdb.h). Budgets are few (one per protected workload), so the store keeps
 * a plain array of pointers for the count, rebuilt after a change. The map
 * itself, its list and its events, is a gx_store.
 */
#include "pdb.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "where.h"

struct entry {
    struct gx_arena a;
    const char *key; /* "namespace/name" */
    struct gx_pdb pdb;
};

struct gx_pdbs {
    struct gx_store store; /* "namespace/name" -> struct entry */
    const struct gx_pdb **all;
    size_t n_all;
    bool dirty;
};

/* An invalid selector matches nothing: an unknown operator, In/NotIn without values. */
static bool
selector_valid(const struct gx_pdb *p)
{
    for (size_t i = 0; i < p->n_exprs; i++) {
        const struct gx_sel_expr *x = &p->exprs[i];
        bool wants_values = x->op == GX_SEL_IN || x->op == GX_SEL_NOT_IN;
        if (x->op == GX_SEL_INVALID || (wants_values && x->n_values == 0) ||
            (!wants_values && x->n_values > 0)) {
            return false;
        }
    }
    return true;
}

bool
gx_pdb_selects(const struct gx_pdb *p, const struct gx_pdb_pod *pod)
{
    if (p == NULL || pod == NULL || pod->n_labels == 0 || !p->has_selector ||
        (p->n_match_labels == 0 && p->n_exprs == 0) || !selector_valid(p) ||
        strcmp(p->namespace, pod->namespace) != 0) {
        return false;
    }
    for (size_t i = 0; i < p->n_match_labels; i++) {
        const char *v = gx_kv_get(pod->labels, pod->n_labels, p->match_labels[i].key);
        if (v == NULL || strcmp(v, p->match_labels[i].value) != 0) {
            return false;
        }
    }
    for (size_t i = 0; i < p->n_exprs; i++) {
        if (!gx_sel_expr_matches(&p->exprs[i],
                                 gx_kv_get(pod->labels, pod->n_labels, p->exprs[i].key))) {
            return false;
        }
    }
    return true;
}

static bool
disrupted(const struct gx_pdb *p, const char *name)
{
    for (size_t i = 0; i < p->n_disrupted; i++) {
        if (strcmp(p->disrupted[i], name) == 0) {
            return true;
        }
    }
    return false;
}

enum gx_err
gx_pdb_violations(const struct gx_pdb *const *pdbs, size_t n_pdbs, const struct gx_pdb_pod *pods,
                  size_t n, size_t *out)
{
    int64_t *left;
    size_t count = 0;

    *out = 0;
    if (n_pdbs == 0 || n == 0) {
        return GX_OK;
    }
    if ((left = calloc(n_pdbs, sizeof(*left))) == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < n_pdbs; i++) {
        left[i] = pdbs[i]->disruptions_allowed;
    }
    for (size_t k = 0; k < n; k++) {
        bool violates = false;
        for (size_t i = 0; i < n_pdbs && !violates; i++) {
            if (!gx_pdb_selects(pdbs[i], &pods[k]) || disrupted(pdbs[i], pods[k].name)) {
                continue;
            }
            violates = --left[i] < 0;
        }
        count += violates ? 1 : 0;
    }
    free(left);
    *out = count;
    return GX_OK;
}

/* ---- the store ---- */

static void
entry_free(void *v)
{
    struct entry *e = v;

    if (e != NULL) {
        gx_arena_release(&e->a);
        free(e);
    }
}

static const char *
dup_or_empty(struct gx_arena *a, const char *s)
{
    return gx_arena_strdup(a, s != NULL ? s : "");
}

/* Deep copy of the selector requirements of @src into @e. */
static bool
copy_exprs(struct entry *e, const struct gx_pdb *src)
{
    struct gx_pdb *p = &e->pdb;

    if (src->n_exprs == 0) {
        return true;
    }
    if ((p->exprs = gx_arena_alloc(&e->a, src->n_exprs * sizeof(*p->exprs))) == NULL) {
        return false;
    }
    for (size_t i = 0; i < src->n_exprs; i++) {
        const struct gx_sel_expr *x = &src->exprs[i];
        struct gx_sel_expr *y = &p->exprs[i];
        *y = *x;
        y->values = NULL;
        if ((y->key = dup_or_empty(&e->a, x->key)) == NULL ||
            (x->n_values > 0 &&
             (y->values = gx_arena_alloc(&e->a, x->n_values * sizeof(*y->values))) == NULL)) {
            return false;
        }
        for (size_t k = 0; k < x->n_values; k++) {
            if ((y->values[k] = dup_or_empty(&e->a, x->values[k])) == NULL) {
                return false;
            }
        }
    }
    p->n_exprs = src->n_exprs;
    return true;
}

/* Deep copy of what matching and counting read. */
static struct entry *
entry_copy(const struct gx_pdb *src)
{
    struct entry *e = calloc(1, sizeof(*e));
    struct gx_pdb *p;
    size_t nl, nn, klen;
    char *key;

    if (e == NULL) {
        return NULL;
    }
    gx_arena_init(&e->a, 1024); /* the default chunk (64 KiB) would dwarf a budget */
    p = &e->pdb;
    p->has_selector = src->has_selector;
    p->disruptions_allowed = src->disruptions_allowed;
    p->name = dup_or_empty(&e->a, src->name);
    p->namespace = dup_or_empty(&e->a, src->namespace);
    p->uid = p->resource_version = "";
    nl = src->n_match_labels;
    nn = src->n_disrupted;
    if (p->name == NULL || p->namespace == NULL || !copy_exprs(e, src) ||
        (nl > 0 &&
         (p->match_labels = gx_arena_alloc(&e->a, nl * sizeof(*p->match_labels))) == NULL) ||
        (nn > 0 && (p->disrupted = gx_arena_alloc(&e->a, nn * sizeof(*p->disrupted))) == NULL)) {
        goto fail;
    }
    for (size_t i = 0; i < nl; i++) {
        p->match_labels[i].key = dup_or_empty(&e->a, src->match_labels[i].key);
        p->match_labels[i].value = dup_or_empty(&e->a, src->match_labels[i].value);
        if (p->match_labels[i].key == NULL || p->match_labels[i].value == NULL) {
            goto fail;
        }
    }
    for (size_t i = 0; i < nn; i++) {
        if ((p->disrupted[i] = dup_or_empty(&e->a, src->disrupted[i])) == NULL) {
            goto fail;
        }
    }
    p->n_match_labels = nl;
    p->n_disrupted = nn;
    klen = strlen(p->namespace) + strlen(p->name) + 2;
    if ((key = gx_arena_alloc(&e->a, klen)) == NULL) {
        goto fail;
    }
    (void)snprintf(key, klen, "%s/%s", p->namespace, p->name);
    e->key = key;
    return e;
fail:
    entry_free(e);
    return NULL;
}

struct gx_pdbs *
gx_pdbs_new(void)
{
    struct gx_pdbs *s = calloc(1, sizeof(*s));

    if (s != NULL) {
        gx_store_init(&s->store, entry_free);
    }
    return s;
}

void
gx_pdbs_free(struct gx_pdbs *s)
{
    if (s == NULL) {
        return;
    }
    gx_store_release(&s->store);
    free(s->all);
    free(s);
}

/* Put @e into @st, replacing an entry of the same key; on ENOMEM @e is freed. */
static enum gx_err
store_put(struct gx_store *st, struct entry *e)
{
    enum gx_err rc = gx_store_put(st, e->key, e);

    if (rc != GX_OK) {
        entry_free(e);
    }
    return rc;
}

enum gx_err
gx_pdbs_set(struct gx_pdbs *s, const struct gx_pdb *items, size_t n)
{
    struct gx_store list;

    gx_store_init(&list, entry_free);
    for (size_t i = 0; i < n; i++) {
        struct entry *e = entry_copy(&items[i]);
        if (e == NULL || store_put(&list, e) != GX_OK) {
            gx_store_release(&list);
            return GX_ENOMEM;
        }
    }
    gx_store_replace(&s->store, &list);
    s->dirty = true;
    return GX_OK;
}

enum gx_err
gx_pdbs_put(struct gx_pdbs *s, const struct gx_pdb *p, bool deleted)
{
    struct entry *e;

    s->dirty = true;
    if (deleted) {
        char key[600];
        (void)snprintf(key, sizeof(key), "%s/%s", p->namespace ? p->namespace : "",
                       p->name ? p->name : "");
        (void)gx_store_del(&s->store, key);
        return GX_OK;
    }
    if ((e = entry_copy(p)) == NULL) {
        return GX_ENOMEM;
    }
    return store_put(&s->store, e);
}

void
gx_pdbs_absent(struct gx_pdbs *s)
{
    struct gx_store none;

    gx_store_init(&none, entry_free);
    gx_store_replace(&s->store, &none);
    s->dirty = true;
}

bool
gx_pdbs_synced(const struct gx_pdbs *s)
{
    return s != NULL && gx_store_synced(&s->store);
}

size_t
gx_pdbs_count(const struct gx_pdbs *s)
{
    return s != NULL ? gx_store_count(&s->store) : 0;
}

enum gx_err
gx_pdbs_violations(struct gx_pdbs *s, const struct gx_pdb_pod *pods, size_t n, size_t *out)
{
    *out = 0;
    if (s->dirty) {
        size_t pos = 0, k = 0, cap = gx_store_count(&s->store) + 1; /* never a zero-size calloc */
        const struct entry *e;
        const struct gx_pdb **all = calloc(cap, sizeof(struct gx_pdb *));

        if (all == NULL) {
            return GX_ENOMEM;
        }
        while ((e = gx_store_next(&s->store, &pos)) != NULL && k < cap) {
            all[k++] = &e->pdb;
        }
        free(s->all);
        s->all = all;
        s->n_all = k;
        s->dirty = false;
    }
    return gx_pdb_violations(s->all, s->n_all, pods, n, out);
}
