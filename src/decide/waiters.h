/* SPDX-License-Identifier: Apache-2.0 */
/*
 * waiters.h - pods the filter refused everywhere for want of capacity the
 * ledger holds (no time slot, no GPU memory, too few free cards, quota).
 * kube-scheduler requeues such a pod only on a cluster event, and a Lease
 * write is none: when the ledger frees capacity, the server pokes the
 * waiters (an annotation on the pod is an update kube-scheduler requeues
 * it for). Pure: time is passed in; a bounded set, the oldest dropped first.
 */
#ifndef GX_WAITERS_H
#define GX_WAITERS_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "ledger.h"

struct gx_waiter {
    char uid[GX_UID_MAX];
    char ns[254];
    char name[254];
    int64_t since_ms; /* the latest refusal */
};

struct gx_waiters;

/** A set of at most @cap waiters; NULL on ENOMEM. */
struct gx_waiters *gx_waiters_new(size_t cap);

/** Free; NULL is a no-op. */
void gx_waiters_free(struct gx_waiters *w);

/**
 * Note pod @uid (@ns/@name) refused at @now_ms (again: its time moves on).
 * Names too long for a Kubernetes object are ignored; a full set drops its
 * oldest waiter.
 */
void gx_waiters_add(struct gx_waiters *w, const char *uid, const char *ns, const char *name,
                    int64_t now_ms);

/** Forget @uid (bound, or gone). */
void gx_waiters_del(struct gx_waiters *w, const char *uid);

/**
 * Move up to @max waiters refused within @ttl_ms before @now_ms into @out,
 * oldest first, and forget them (a pod refused again is noted again);
 * older ones are dropped. Returns the count.
 */
size_t gx_waiters_take(struct gx_waiters *w, int64_t now_ms, int64_t ttl_ms, struct gx_waiter *out,
                       size_t max);

/** Waiters held now. */
size_t gx_waiters_count(const struct gx_waiters *w);

#endif
