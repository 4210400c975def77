/* SPDX-License-Identifier: Apache-2.0 */
/*
 * elect.h - which replica answers kube-scheduler: one Lease names a leader
 * by the URL the other replicas reach it at, and they forward their calls
 * to it (server/forward.c), so every decision sees every bind in flight
 * whatever the Service in front does. The rule on what one replica observed
 * of that Lease, time passed in. No clocks are compared across machines: a
 * leader is gone once its Lease has not changed for a lease period of this
 * replica's own time (client-go's leader election judges the same way).
 * Leadership is not what keeps a card from being booked twice (the ledger's
 * compare-and-swap is): two replicas that both answer for a moment are the
 * active-active case, slower, never wrong.
 */
#ifndef GX_ELECT_H
#define GX_ELECT_H

#include <stdbool.h>
#include <stdint.h>

#define GX_ELECT_ID_MAX 512

enum gx_elect_act {
    GX_ELECT_FOLLOW, /* another replica leads: nothing to write */
    GX_ELECT_RENEW,  /* this replica leads: write the Lease again */
    GX_ELECT_TAKE    /* nobody leads (no Lease, or it went quiet): try to take it */
};

struct gx_elect {
    char holder[GX_ELECT_ID_MAX]; /* as last observed; "" none */
    char rv[64];                  /* resourceVersion last observed; "" no Lease */
    int64_t changed_ms;           /* when this replica saw the Lease change */
    int64_t written_ms;           /* when this replica's own write last landed, 0 never */
};

void gx_elect_init(struct gx_elect *e);

/**
 * The Lease as read now: @rv "" when there is none, @holder "" when it
 * names nobody. Returns what replica @self does about it.
 */
enum gx_elect_act gx_elect_observe(struct gx_elect *e, const char *self, const char *rv,
                                   const char *holder, int64_t now_ms, int64_t lease_ms);

/** @self's write of the Lease landed, leaving it at @rv. */
void gx_elect_written(struct gx_elect *e, const char *self, const char *rv, int64_t now_ms);

/** True while @self holds the Lease and wrote it within the last lease period. */
bool gx_elect_leading(const struct gx_elect *e, const char *self, int64_t now_ms, int64_t lease_ms);

/**
 * The leader @self forwards to: NULL when @self leads, when nobody does,
 * or when the leader's Lease went quiet (then every replica answers
 * itself until one takes the Lease).
 */
const char *gx_elect_leader(const struct gx_elect *e, const char *self, int64_t now_ms,
                            int64_t lease_ms);

#endif
