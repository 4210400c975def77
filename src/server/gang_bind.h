/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gang_bind.h - the shell of the gang barrier (gang.h, struct
 * gx_gang_barrier): the binds of the members one replica planned in a
 * group's cycle wait after their reservations until every member's
 * reservation landed, then all send their Bindings; when one fails before
 * its Binding, all fail (their reservations released), and kube-scheduler
 * tries the gang again whole. A group has one open barrier at a time,
 * whose members gang.h's gx_barrier_plan names; it gives up after half a
 * bind deadline; a failed one stays a bind deadline more (gang.h says
 * why). It is freed after that when no member's bind is left in it.
 */
#ifndef GX_GANG_BIND_H
#define GX_GANG_BIND_H

#include <sys/queue.h>

#include "gang.h"
#include "service.h"

struct gx_gang_bind;

/** Called when a waiting member may go on (@ok) or must fail (!@ok). */
typedef void (*gx_gang_go_cb)(void *ctx, bool ok);

/** One member's bind at its barrier; zeroed: none. Lives in the bind. */
struct gx_gang_waiter {
    struct gx_gang_bind *gb; /* NULL: not a member this replica planned */
    LIST_ENTRY(gx_gang_waiter) link;
    bool waiting;
    gx_gang_go_cb go;
    void *ctx;
};

/**
 * The bind of pod @uid arrived: join the barrier that waits for it, else
 * its group's open one, else a new one, when a filter here planned it as a
 * gang member (gx_gang_group_key); a pod alone binds alone. @go(@ctx, ok)
 * is called only while the member waits. False: its gang already failed,
 * the bind fails now, before any write.
 */
bool gx_gang_bind_join(struct gx_app *app, const char *uid, struct gx_gang_waiter *w,
                       gx_gang_go_cb go, void *ctx) GX_WUR;

/**
 * @w's reservation landed. GX_BARRIER_GO: go on now (also for a bind in no
 * barrier); GX_BARRIER_OPEN: wait for the call of its go; GX_BARRIER_FAILED:
 * fail now, another member already failed.
 */
enum gx_barrier_state gx_gang_bind_reserved(struct gx_gang_waiter *w);

/** @w failed before its Binding: every member waiting fails (when the barrier was open). */
void gx_gang_bind_failed(struct gx_gang_waiter *w);

/** @w's bind ends: out of its barrier. A no-op for a bind in none. */
void gx_gang_bind_leave(struct gx_gang_waiter *w);

/** Free every barrier (shutdown, after every bind was cancelled). */
void gx_gang_binds_free(struct gx_app *app);

#endif
