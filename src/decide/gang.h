/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gang.h - tentative bookings of gang members, as pure decisions on a
 * store of entries: one entry per member whose filter the extender
 * answered with a single node, holding the cards the bind planner would
 * book for it there (gx_admit_reserve on a scratch ledger). The time is
 * the caller's monotonic clock, passed in as @now_ms: no clock, no I/O, no
 * logging here. The server's shell (server/gang_filter.c) keeps the store,
 * reads the clock, logs and counts.
 *
 * Why: kube-scheduler (GenericWorkload, KEP-4671) filters every member of
 * a PodGroup in one cycle, assuming earlier members only in its own
 * snapshot, and binds them all after the cycle. Without entries the
 * extender admits two members onto the last share of one card and one
 * bind fails: a partially bound gang. With them, member k is decided with
 * the entries of members 1..k-1 booked, and its filter keeps one node only,
 * so kube-scheduler binds it exactly where its entry is (no prioritize
 * follows a single feasible node).
 *
 * The rules:
 * - a member's filter while it already holds an entry, or after a pause of
 *   GX_GANG_PASS_GAP_MS since the group's last entry, means kube-scheduler
 *   started a new pass over the group (a retry, the preemption re-run):
 *   every entry of the group goes (gx_gang_begin);
 * - an entry expires @ttl_ms after it was made (rollback is never
 *   announced); the store knows its pod as a member of the group that long
 *   even when a new pass drops the entry (gx_gang_group_key);
 * - entries count as taken cards for every pod but their own, outsiders
 *   included: binds come 5-15 ms after the cycle, and an outsider filtered
 *   in between must not take the gang's cards (gx_gang_verdict);
 * - the member's bind to the entry's node books exactly its cards
 *   (gx_gang_planned, gx_admit_reserve_as), and the entry goes when the
 *   pod's own booking is written (gx_gang_drop); an entry whose pod the
 *   ledger already books (a failed bind's booking not yet released) holds
 *   no cards but still makes its pod a member of the pass.
 *
 * Thread: the caller's; a store is not shared between threads.
 */
#ifndef GX_GANG_H
#define GX_GANG_H

#include "kobj.h"
#include "ledger.h"
#include "score.h"
#include "vcache.h"

/** Entries one store keeps (members of all groups); a full store records no more. */
#define GX_GANG_MAX 512
/** Bytes of a group key, "namespace/podGroupName" and its NUL. */
#define GX_GANG_KEY_MAX 512

/*
 * A pause this long (ms) since a group's last entry starts a new pass: the
 * members of one pass are filtered a few ms apart, retries come after
 * kube-scheduler's backoff (1 s and more).
 */
#define GX_GANG_PASS_GAP_MS 500

struct gx_gang;

/** An empty store, or NULL out of memory. You own it: gx_gang_free. */
struct gx_gang *gx_gang_new(void);

/** Free @g and every entry in it. NULL is a no-op. */
void gx_gang_free(struct gx_gang *g);

/**
 * The group key of @pod, "namespace/podGroupName", into @key (@cap bytes):
 * true for a gang member (spec.schedulingGroup set); false, @key empty,
 * for any other pod or a key that does not fit.
 */
bool gx_gang_key(const struct gx_pod *pod, char *key, size_t cap);

/**
 * A filter of member @uid of group @key begins at @now_ms: drop expired
 * entries, and when @uid holds an entry every entry of @key (a new pass
 * over the group). Returns how many entries of @key went. NULL @g: 0.
 */
size_t gx_gang_begin(struct gx_gang *g, const char *key, const char *uid, int64_t now_ms);

/** True when the store holds some entry (gx_gang_verdict can decide anything). NULL @g: false. */
bool gx_gang_any(const struct gx_gang *g);

/** Entries held at @now_ms (expired ones not counted). NULL @g: 0. */
size_t gx_gang_count(const struct gx_gang *g, int64_t now_ms);

/** What gx_gang_verdict decided. */
enum gx_gang_outcome {
    GX_GANG_NONE,    /* no entry of another pod on the node: the verdict untouched */
    GX_GANG_DECIDED, /* the verdict was decided with the entries booked */
    GX_GANG_TURNED   /* so decided, a rejection the node would not give without them */
};

/**
 * When entries of pods other than @pod sit on node @node, decide @pod
 * (@req) there with them booked on a scratch copy of @ctx's ledger entry
 * of the node, into @v. Entries found expired at @now_ms, or whose pod the
 * ledger books already, are dropped on the way. A node the snapshot does
 * not have, or no memory for the scratch ledger: GX_GANG_NONE.
 */
enum gx_gang_outcome gx_gang_verdict(struct gx_gang *g, const struct gx_decide_ctx *ctx,
                                     const struct gx_pod *pod, const struct gx_podreq *req,
                                     const char *node, int64_t now_ms, struct gx_vshort *v);

/**
 * Keep one node of @n verdicts: @prefer when it is kept (the node the pod
 * already holds a booking on; @n: none), else the kept one with the
 * highest score, the first in order on a tie; every other kept node is
 * rejected with GX_REASON_GANG_PINNED. Returns its index, @n when no node
 * is kept.
 */
size_t gx_gang_pin(struct gx_vshort *v, size_t n, size_t prefer);

/**
 * Record the entry of member @pod (@req) of group @key on @node at @now_ms,
 * expiring @ttl_ms later: the cards gx_admit_reserve books for it there
 * with the other entries of the node booked. A pod whose booking @ctx's
 * ledger already holds on @node records nothing (its booking is real).
 * GX_ECONFLICT (reason in @why) when it does not fit there; GX_ETOOBIG
 * when the store is full; GX_ENOMEM. Nothing is recorded on failure.
 */
enum gx_err gx_gang_put(struct gx_gang *g, const struct gx_decide_ctx *ctx, const char *key,
                        const struct gx_pod *pod, const struct gx_podreq *req, const char *node,
                        int64_t ttl_ms, int64_t now_ms, struct gx_why *why) GX_WUR;

/**
 * The tenants of pod @uid's live entry on @node into @t (GX_MAX_PICK of
 * them at most): how many, 0 when it holds none there (none, expired, or
 * on another node). NULL @g: 0.
 */
size_t gx_gang_planned(const struct gx_gang *g, const char *uid, const char *node, int64_t now_ms,
                       struct gx_tenant *t);

/** Drop pod @uid's entry: true when it had one. NULL @g: false. */
bool gx_gang_drop(struct gx_gang *g, const char *uid);

/**
 * The live entries at @now_ms of the group of pod @uid's live entry (the
 * members this replica planned in the group's cycle), its key into @key
 * (@cap bytes). 0, @key empty, when @uid holds none. NULL @g: 0.
 */
size_t gx_gang_group_of(const struct gx_gang *g, const char *uid, int64_t now_ms, char *key,
                        size_t cap);

/**
 * The group of pod @uid into @key (@cap bytes) when a filter here planned
 * it as a member within the entries' time to live, even if a new pass or a
 * failed barrier dropped its entry since; false (and @key empty) if none.
 */
bool gx_gang_group_key(const struct gx_gang *g, const char *uid, int64_t now_ms, char *key,
                       size_t cap);

/*
 * The binds of one gang planned here wait before their Bindings until the
 * reservation of every member landed (server/gang_bind.c). Each member's
 * own Lease write decides its cards, so when two replicas (two schedulers,
 * each calling its own) planned two gangs onto one card, the member that
 * loses fails its whole gang before any Binding: never a partial gang.
 */
enum gx_barrier_state {
    GX_BARRIER_OPEN,  /* reservations still to land */
    GX_BARRIER_GO,    /* every member's landed: the Bindings go */
    GX_BARRIER_FAILED /* a member failed before its Binding: every member's bind fails */
};

struct gx_barrier_member {
    char uid[GX_UID_MAX];
    bool arrived; /* its bind arrived */
};

struct gx_gang_barrier {
    size_t expected; /* members it waits for: n */
    size_t reserved; /* their reservations landed so far */
    enum gx_barrier_state state;
    struct gx_barrier_member *m; /* its members (gx_barrier_release frees them) */
    size_t n, cap;
};

/*
 * kube-scheduler binds each member on its own, and counts members it still
 * assumes when it retries a gang: right after a barrier failed every
 * member's bind, it may schedule one member alone, or hold it at its gang
 * gate while it plans the others in a new pass. So a barrier knows its
 * members by pod UID, and a group has one open barrier at a time:
 * - a new barrier waits for every pod of the group's live entries, the
 *   members of the group's barrier that failed just before, and the pod
 *   whose bind made it (gx_barrier_plan); with fewer than two the pod binds
 *   alone;
 * - a member's bind joins the group's open barrier (planned in it or not);
 * - a failed barrier stays a bind deadline and fails the binds of its
 *   members still to come that were not planned again since.
 */

/**
 * The members of a new barrier of group @key, made by pod @uid's bind:
 * the pods of @g's live entries of @key at @now_ms, @failed's members
 * (NULL: none) and @uid, each once.
 */
enum gx_err gx_barrier_plan(struct gx_gang_barrier *b, const struct gx_gang *g, const char *key,
                            const char *uid, const struct gx_gang_barrier *failed,
                            int64_t now_ms) GX_WUR;

/** Make pod @uid a member of @b (once; @b then waits for it too). */
enum gx_err gx_barrier_add(struct gx_gang_barrier *b, const char *uid) GX_WUR;

/** Pod @uid's bind arrived at @b: a member now (if it was not), arrived. */
enum gx_err gx_barrier_arrive(struct gx_gang_barrier *b, const char *uid) GX_WUR;

/** True when pod @uid is a member of @b. */
bool gx_barrier_member(const struct gx_gang_barrier *b, const char *uid);

/** True when @b waits for the bind of pod @uid (a member not arrived yet). */
bool gx_barrier_expects(const struct gx_gang_barrier *b, const char *uid);

/** Members of @b whose binds have not arrived. */
size_t gx_barrier_absent(const struct gx_gang_barrier *b);

/** A member's reservation landed: the state after it. */
enum gx_barrier_state gx_barrier_reserved(struct gx_gang_barrier *b);

/** A member failed before its Binding: true when that failed an open barrier. */
bool gx_barrier_fail(struct gx_gang_barrier *b);

/** Drop the entries of @b's members (its gang failed: the retry plans afresh): how many. */
size_t gx_gang_drop_members(struct gx_gang *g, const struct gx_gang_barrier *b);

/** Free @b's members. */
void gx_barrier_release(struct gx_gang_barrier *b);

#endif
