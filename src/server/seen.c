/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seen.c - the filter-to-bind pod cache (see seen.h). A collision evicts the
 * older pod: its bind then reads the pod from the API server instead.
 */
#include "seen.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOTS 16384
#define TTL_MS (INT64_C(15) * 60 * 1000)

struct gx_seen {
    struct gx_seen_pod slot[SLOTS];
};

struct gx_seen *
gx_seen_new(void)
{
    return calloc(1, sizeof(struct gx_seen));
}

void
gx_seen_free(struct gx_seen *s)
{
    free(s);
}

static size_t
slot_of(const char *uid)
{
    return gx_hash(uid, strlen(uid)) % SLOTS;
}

void
gx_seen_put(struct gx_seen *s, const struct gx_pod *pod, const struct gx_podreq *req,
            int64_t now_ms)
{
    struct gx_seen_pod *e;

    if (s == NULL || pod->uid[0] == '\0' || strlen(pod->uid) >= GX_UID_MAX) {
        return;
    }
    e = &s->slot[slot_of(pod->uid)];
    (void)snprintf(e->uid, sizeof(e->uid), "%s", pod->uid);
    (void)snprintf(e->pod, sizeof(e->pod), "%s/%s", pod->namespace, pod->name);
    e->req = *req;
    e->seen_ms = now_ms;
}

const struct gx_seen_pod *
gx_seen_get(const struct gx_seen *s, const char *uid, int64_t now_ms)
{
    const struct gx_seen_pod *e;

    if (s == NULL || uid[0] == '\0') {
        return NULL;
    }
    e = &s->slot[slot_of(uid)];
    if (strcmp(e->uid, uid) != 0 || now_ms - e->seen_ms > TTL_MS) {
        return NULL;
    }
    return e;
}
