/* SPDX-License-Identifier: Apache-2.0 */
/* waiters.c - pods waiting for capacity the ledger holds (see waiters.h). */
#include "waiters.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An array: a few hundred waiters at most, looked up by a linear scan. */
struct gx_waiters {
    struct gx_waiter *v;
    size_t n, cap;
};

struct gx_waiters *
gx_waiters_new(size_t cap)
{
    struct gx_waiters *w = calloc(1, sizeof(*w));

    if (w != NULL && cap > 0 && (w->v = calloc(cap, sizeof(*w->v))) == NULL) {
        free(w);
        return NULL;
    }
    if (w != NULL) {
        w->cap = cap;
    }
    return w;
}

void
gx_waiters_free(struct gx_waiters *w)
{
    if (w != NULL) {
        free(w->v);
        free(w);
    }
}

static size_t
find(const struct gx_waiters *w, const char *uid)
{
    size_t i;

    for (i = 0; i < w->n && strcmp(w->v[i].uid, uid) != 0; i++) {
    }
    return i;
}

static void
remove_at(struct gx_waiters *w, size_t i)
{
    memmove(&w->v[i], &w->v[i + 1], (w->n - i - 1) * sizeof(w->v[0]));
    w->n--;
}

void
gx_waiters_add(struct gx_waiters *w, const char *uid, const char *ns, const char *name,
               int64_t now_ms)
{
    struct gx_waiter *x;
    size_t i;

    if (w == NULL || w->cap == 0 || strlen(uid) >= sizeof(x->uid) || strlen(ns) >= sizeof(x->ns) ||
        strlen(name) >= sizeof(x->name) || uid[0] == '\0') {
        return;
    }
    i = find(w, uid);
    if (i < w->n) {
        remove_at(w, i); /* refused again: it moves to the back, the newest */
    } else if (w->n == w->cap) {
        remove_at(w, 0); /* the array is oldest first */
    }
    x = &w->v[w->n++];
    (void)snprintf(x->uid, sizeof(x->uid), "%s", uid);
    (void)snprintf(x->ns, sizeof(x->ns), "%s", ns);
    (void)snprintf(x->name, sizeof(x->name), "%s", name);
    x->since_ms = now_ms;
}

void
gx_waiters_del(struct gx_waiters *w, const char *uid)
{
    size_t i = w != NULL ? find(w, uid) : 0;

    if (w != NULL && i < w->n) {
        remove_at(w, i);
    }
}

size_t
gx_waiters_take(struct gx_waiters *w, int64_t now_ms, int64_t ttl_ms, struct gx_waiter *out,
                size_t max)
{
    size_t taken = 0, i = 0;

    if (w == NULL) {
        return 0;
    }
    while (i < w->n && (taken < max || now_ms - w->v[i].since_ms > ttl_ms)) {
        if (now_ms - w->v[i].since_ms <= ttl_ms) {
            out[taken++] = w->v[i];
        }
        remove_at(w, i);
    }
    return taken;
}

size_t
gx_waiters_count(const struct gx_waiters *w)
{
    return w != NULL ? w->n : 0;
}
