/* SPDX-License-Identifier: Apache-2.0 */
/*
 * where.c - label requirements and where keys (where.h).
 *
 * A where key is the pod's node selection in one line: terms joined by
 * '|', each the sorted requirements of one term joined by ';', each
 * requirement "key op v1,v2" with sorted values. Label keys and values
 * cannot hold ' ', ',', ';' or '|' (the API server validates them), so the
 * text parses back without escapes.
 */
#include "where.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds of a rule a key holds: a pod with more is counted as "any node". */
#define MAX_TERMS 8
#define MAX_EXPRS 16
#define MAX_VALUES 16

static const char *const op_text[] = {
    [GX_SEL_IN] = "in",         [GX_SEL_NOT_IN] = "notin",
    [GX_SEL_EXISTS] = "exists", [GX_SEL_DOES_NOT_EXIST] = "!exists",
    [GX_SEL_GT] = "gt",         [GX_SEL_LT] = "lt"};

static bool
has_value(const struct gx_sel_expr *x, const char *v)
{
    for (size_t i = 0; i < x->n_values; i++) {
        if (strcmp(x->values[i], v) == 0) {
            return true;
        }
    }
    return false;
}

/* @s as a whole decimal integer (Gt and Lt compare those). */
static bool
parse_int(const char *s, long long *out)
{
    char *end;

    errno = 0;
    *out = strtoll(s, &end, 10);
    return s[0] != '\0' && *end == '\0' && errno == 0;
}

bool
gx_sel_expr_matches(const struct gx_sel_expr *x, const char *v)
{
    long long have, want;

    switch (x->op) {
    case GX_SEL_IN:
        return v != NULL && has_value(x, v);
    case GX_SEL_NOT_IN:
        return v == NULL || !has_value(x, v);
    case GX_SEL_EXISTS:
        return v != NULL;
    case GX_SEL_DOES_NOT_EXIST:
        return v == NULL;
    case GX_SEL_GT:
    case GX_SEL_LT:
        if (v == NULL || x->n_values != 1 || !parse_int(v, &have) ||
            !parse_int(x->values[0], &want)) {
            return false;
        }
        return x->op == GX_SEL_GT ? have > want : have < want;
    case GX_SEL_INVALID:
        break;
    }
    return false;
}

/* ---- writing a key ---- */

static int
cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int
cmp_text(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* One requirement as text into @out; false when it does not fit or cannot be kept. */
static bool
expr_text(const struct gx_sel_expr *x, char out[GX_WHERE_KEY_MAX])
{
    const char *v[MAX_VALUES];
    size_t len;

    if (x->op == GX_SEL_INVALID || x->n_values > MAX_VALUES) {
        return false;
    }
    if (x->n_values > 0) { /* Exists has none, and no array either */
        memcpy(v, x->values, x->n_values * sizeof(*v));
        qsort(v, x->n_values, sizeof(*v), cmp_str);
    }
    len = (size_t)snprintf(out, GX_WHERE_KEY_MAX, "%s %s ", x->key, op_text[x->op]);
    for (size_t i = 0; i < x->n_values && len < GX_WHERE_KEY_MAX; i++) {
        if (i > 0 && strcmp(v[i], v[i - 1]) == 0) {
            continue; /* "In [A, A]" is "In [A]" */
        }
        len += (size_t)snprintf(out + len, GX_WHERE_KEY_MAX - len, "%s%s", i ? "," : "", v[i]);
    }
    return len < GX_WHERE_KEY_MAX;
}

/* Sorted, distinct texts @t[0..n) joined by @sep into @out (@cap bytes). */
static bool
join(char (*t)[GX_WHERE_KEY_MAX], size_t n, char sep, char *out, size_t cap)
{
    size_t len = 0;

    qsort(t, n, GX_WHERE_KEY_MAX, cmp_text);
    out[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && strcmp(t[i], t[i - 1]) == 0) {
            continue;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? (char[2]){sep, 0} : "", t[i]);
        if (len >= cap) {
            return false;
        }
    }
    return true;
}

/* Term @term (NULL: none) with the node selector of @w folded in, as text into @out. */
static bool
term_text(const struct gx_where *w, const struct gx_sel_term *term, char out[GX_WHERE_KEY_MAX])
{
    char ex[MAX_EXPRS][GX_WHERE_KEY_MAX];
    size_t n = 0, terms = term != NULL ? term->n_exprs : 0;

    if (w->n_selector + terms > MAX_EXPRS) {
        return false;
    }
    for (size_t i = 0; i < w->n_selector; i++) {
        const char *v = w->selector[i].value;
        struct gx_sel_expr x = {w->selector[i].key, GX_SEL_IN, &v, 1};
        if (!expr_text(&x, ex[n++])) {
            return false;
        }
    }
    for (size_t i = 0; i < terms; i++) {
        if (!expr_text(&term->exprs[i], ex[n++])) {
            return false;
        }
    }
    return join(ex, n, ';', out, GX_WHERE_KEY_MAX);
}

bool
gx_where_key(const struct gx_where *w, char *buf, size_t n)
{
    char terms[MAX_TERMS][GX_WHERE_KEY_MAX];
    size_t nt = w->n_terms;
    bool ok = true;

    /* a term with no label requirement (matchFields only) admits any kind of node */
    for (size_t i = 0; i < w->n_terms; i++) {
        nt = w->terms[i].n_exprs == 0 ? 0 : nt;
    }
    if (nt > MAX_TERMS) {
        ok = false;
    } else if (nt == 0) {
        ok = term_text(w, NULL, terms[0]) && snprintf(buf, n, "%s", terms[0]) < (int)n;
    } else {
        for (size_t i = 0; i < nt && ok; i++) {
            ok = term_text(w, &w->terms[i], terms[i]);
        }
        ok = ok && join(terms, nt, '|', buf, n);
    }
    if (!ok && n > 0) {
        buf[0] = '\0';
    }
    return ok;
}

/* ---- reading a key ---- */

/* True when requirement text @s (NUL-terminated, changed in place) is met by @node. */
static bool
expr_allows(const struct gx_config *cfg, char *s, const struct gx_node *node)
{
    const char *v[MAX_VALUES];
    struct gx_sel_expr x = {.key = s, .op = GX_SEL_INVALID, .values = v};
    char *op = strchr(s, ' '), *vals;

    if (op == NULL || (vals = strchr(op + 1, ' ')) == NULL) {
        return true; /* not a key this file wrote: bars nothing */
    }
    *op++ = '\0';
    *vals++ = '\0';
    for (size_t k = 0; k < GX_ARRAY_LEN(op_text); k++) {
        if (strcmp(op, op_text[k]) == 0) {
            x.op = (enum gx_sel_op)k;
        }
    }
    for (char *p = vals; *p != '\0' && x.n_values < MAX_VALUES;) {
        char *comma = strchr(p, ',');
        v[x.n_values++] = p;
        if (comma == NULL) {
            break;
        }
        *comma = '\0';
        p = comma + 1;
    }
    if (!gx_snapshot_label_kept(cfg, x.key)) {
        return true;
    }
    return gx_sel_expr_matches(&x, gx_node_label(node, x.key));
}

bool
gx_where_key_allows(const struct gx_config *cfg, const char *key, const struct gx_node *node)
{
    char copy[GX_WHERE_KEY_MAX], *term, *next_term;

    if (key == NULL || key[0] == '\0' ||
        (size_t)snprintf(copy, sizeof(copy), "%s", key) >= sizeof(copy)) {
        return true;
    }
    for (term = copy; term != NULL; term = next_term) {
        bool all = true;
        char *expr, *next_expr;
        if ((next_term = strchr(term, '|')) != NULL) {
            *next_term++ = '\0';
        }
        for (expr = term; expr != NULL && all; expr = next_expr) {
            if ((next_expr = strchr(expr, ';')) != NULL) {
                *next_expr++ = '\0';
            }
            all = expr_allows(cfg, expr, node);
        }
        if (all) {
            return true;
        }
    }
    return false;
}
