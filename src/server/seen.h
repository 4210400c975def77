/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seen.h - what filter learned about a pod, so that bind (which gets only
 * names) can act on it without reading the pod back. A direct-mapped cache
 * keyed by pod UID; entries expire. The clock is passed in.
 */
#ifndef GX_SEEN_H
#define GX_SEEN_H

#include "kobj.h"
#include "ledger.h"
#include "podreq.h"

struct gx_seen_pod {
    char uid[GX_UID_MAX];
    char pod[256]; /* "namespace/name" */
    struct gx_podreq req;
    int64_t seen_ms;
};

struct gx_seen;

/** New empty cache; NULL on ENOMEM. */
struct gx_seen *gx_seen_new(void);

/** Free; NULL is a no-op. */
void gx_seen_free(struct gx_seen *s);

/** Remember the request of @pod at @now_ms (pods without a usable UID are skipped). */
void gx_seen_put(struct gx_seen *s, const struct gx_pod *pod, const struct gx_podreq *req,
                 int64_t now_ms);

/** What filter learned about pod @uid, or NULL (never seen, evicted or expired at @now_ms). */
const struct gx_seen_pod *gx_seen_get(const struct gx_seen *s, const char *uid, int64_t now_ms);

#endif
