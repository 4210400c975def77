/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger.h - who holds which GPU card: per node, per card, time-slice
 * tenants and exclusive holders. Pure bookkeeping (no I/O); the durable
 * copy lives in one Lease per node in the API server (io/leases), and
 * gx_ledger_node_encode/decode are that Lease annotation's codec. Defined
 * in ledger.c (bookkeeping), ledger_usage.c (what tenants add up to) and
 * ledger_codec.c (the codec).
 *
 * Invariants kept by every mutating call: a card never has more slices
 * than its slots, never an exclusive holder together with shared tenants,
 * and a pod UID appears on at most one node.
 */
#ifndef GX_LEDGER_H
#define GX_LEDGER_H

#include "buf.h"
#include "common.h"

enum gx_tenant_state { GX_TENANT_RESERVED, GX_TENANT_BOUND };

#define GX_UID_MAX 64

/** Card index of a shared tenant whose card the device plugin chooses. */
#define GX_CARD_ANY (-1)

struct gx_tenant {
    char uid[GX_UID_MAX]; /* pod UID */
    char pod[256];        /* "namespace/name" for humans */
    int card;             /* card index on the node, or GX_CARD_ANY */
    bool exclusive;       /* holds the whole card */
    int slices;           /* shared: slots held (for a milli tenant: the slot equivalent, for
                             readers that predate milli; never counted next to milli) */
    int milli;            /* shared: milli-GPU held, 0 = the share is @slices slots */
    int64_t cpu_milli;    /* the pod's CPU request, on its first tenant only (0 none) */
    int64_t host_mem_mib; /* the pod's memory request, MiB, on its first tenant only */
    int64_t memory_mib;   /* shared: declared reservation, 0 none */
    double util_pct;      /* shared: declared expectation, -1 none */
    enum gx_tenant_state state;
    int64_t since_ms; /* wall ms of reservation/bind */
    uint64_t gang;    /* the gang of a member (gx_podreq.gang), 0 none */
};

struct gx_ledger_node {
    char *node;
    struct gx_tenant *tenants;
    size_t n_tenants;
    size_t cap;
    char *resource_version;      /* of the Lease this came from, NULL if none */
    int64_t untracked_cpu_milli; /* requests of pods the ledger does not hold (not in Leases) */
    int64_t untracked_mem_mib;
    uint64_t version; /* ledger-wide counter value at this entry's last change */
};

struct gx_ledger;

/** New empty ledger; NULL on ENOMEM. */
struct gx_ledger *gx_ledger_new(void);

/** Free; NULL is a no-op. */
void gx_ledger_free(struct gx_ledger *l);

/** Ledger entry of @node or NULL. Borrowed until the next mutation. */
const struct gx_ledger_node *gx_ledger_node(const struct gx_ledger *l, const char *node);

/**
 * Change counter of @l: every mutation of a node entry (creation, add,
 * mark_bound, release, expire, set_node) sets that entry's version to the
 * next value of this counter, so an entry whose version is <= a value read
 * earlier has not changed since. 0 for NULL or a new ledger. Cannot fail.
 */
uint64_t gx_ledger_version(const struct gx_ledger *l);

/** Changes of @l that gx_ledger_changed_since remembers. */
#define GX_LEDGER_CHANGES 256

/**
 * Call @fn with the name of the entry of each change after version @since
 * (an entry changed twice comes twice) and return true; false, calling
 * nothing, when more than GX_LEDGER_CHANGES changes came since (the caller
 * must take every entry as changed). Lets a cache of every node find the few
 * that changed without looking each one up. Cannot fail.
 */
bool gx_ledger_changed_since(const struct gx_ledger *l, uint64_t since,
                             void (*fn)(void *arg, const char *node), void *arg);

/** Usage of one card: slices held, memory booked, tenant count, exclusive holder. */
struct gx_card_usage {
    int slices; /* slots of slice-sized tenants */
    int milli;  /* milli-GPU of milli-sized tenants */
    int64_t memory_mib;
    double util_pct; /* sum of declared expectations */
    int tenants;
    bool exclusive;
};

/** Fill @u for (@node, @card); all zero when unknown. Cannot fail. */
void gx_ledger_card_usage(const struct gx_ledger *l, const char *node, int card,
                          struct gx_card_usage *u);

/** Fill @u for @card of the entry @e (all zero when @e is NULL). Cannot fail. */
void gx_ledger_entry_card_usage(const struct gx_ledger_node *e, int card, struct gx_card_usage *u);

/** gx_ledger_entry_card_usage of cards 0..@n-1 into @u[0..n), in one pass over the tenants. */
void gx_ledger_entry_cards_usage(const struct gx_ledger_node *e, struct gx_card_usage *u, int n);

/** True when @card of entry @e holds a tenant of gang @gang (never for NULL @e or @gang 0). */
bool gx_ledger_entry_card_gang(const struct gx_ledger_node *e, int card, uint64_t gang);

/** Milli-GPU of one card. */
#define GX_CARD_MILLI 1000

/**
 * Milli-GPU in use on a card of @slots slots with usage @u: the milli
 * tenants plus the slice tenants' slots at 1000 / @slots each (rounded up
 * over their sum). Cannot fail.
 */
int gx_ledger_share_used(const struct gx_card_usage *u, int slots);

/** Milli-GPU tenant @t holds on a card of @slots slots (1000 when exclusive). Cannot fail. */
int gx_ledger_tenant_milli(const struct gx_tenant *t, int slots);

/**
 * Time slots in use on a card of @slots slots with usage @u, the figure
 * explain, GET /debug/cards and /metrics show: the slice tenants' slots
 * plus the milli tenants' share in slots (rounded up), at most @slots; all
 * of them under a whole-GPU holder. Cannot fail.
 */
int gx_ledger_slots_used(const struct gx_card_usage *u, int slots);

/**
 * The one admission rule for a shared tenant: true when @slices more slots
 * and @milli more milli-GPU fit a card of @slots slots next to @u (no
 * exclusive holder, at most 1000 milli in use). Without milli tenants this
 * is slices + @slices <= @slots. Cannot fail.
 */
bool gx_ledger_share_fits(const struct gx_card_usage *u, int slots, int slices, int milli);

/**
 * Record what pods the ledger does not hold (CPU-only pods) request on
 * @node: CPU milli and memory MiB, as a pod source that sees them reports
 * it. Not part of the Lease. A change counts as a mutation (version).
 * GX_EINVAL for negative amounts, GX_ENOMEM.
 */
enum gx_err gx_ledger_set_untracked(struct gx_ledger *l, const char *node, int64_t cpu_milli,
                                    int64_t mem_mib) GX_WUR;

/**
 * CPU (milli) and memory (MiB) requested on the node of entry @e: its
 * tenants' pods plus the untracked amounts (zero for NULL).
 */
void gx_ledger_entry_host(const struct gx_ledger_node *e, int64_t *cpu_milli, int64_t *mem_mib);

/** Find the tenants of pod @uid: returns its node entry (or NULL). */
const struct gx_ledger_node *gx_ledger_find_pod(const struct gx_ledger *l, const char *uid);

/**
 * Add tenants @t[0..n) (one per card, same uid) on @node. Checks the
 * invariants against @slots_per_card (slots of each card, n_cards entries):
 * GX_ECONFLICT if a card would exceed its slots or mix exclusive and
 * shared, or the uid is already on another node; GX_EINVAL for bad input.
 */
enum gx_err gx_ledger_add(struct gx_ledger *l, const char *node, const struct gx_tenant *t,
                          size_t n, const int *slots_per_card, size_t n_cards) GX_WUR;

/** Mark every tenant of @uid bound. GX_ENOTFOUND. */
enum gx_err gx_ledger_mark_bound(struct gx_ledger *l, const char *uid) GX_WUR;

/** Remove every tenant of @uid; returns how many were removed. */
size_t gx_ledger_release(struct gx_ledger *l, const char *uid);

/*
 * A booking's stamp is its tenants' since_ms: it names one bind attempt's
 * booking, so a release made for that attempt undoes it and nothing newer.
 */

/** Stamp for "whatever booking the pod holds" (a pod that is gone). */
#define GX_BOOKING_ANY INT64_C(-1)

/** The stamp of @uid's booking (its latest since_ms), GX_BOOKING_ANY when not held. */
int64_t gx_ledger_booking(const struct gx_ledger *l, const char *uid);

/**
 * Take @uid's booking over for a new bind attempt: give its tenants a new
 * stamp, @now_ms or later and later than the old one. Returns the new
 * stamp, GX_BOOKING_ANY when not held.
 */
int64_t gx_ledger_renew(struct gx_ledger *l, const char *uid, int64_t now_ms);

/**
 * gx_ledger_release() when @uid's booking still has stamp @booking (or
 * @booking is GX_BOOKING_ANY); 0 when it was renewed or rebooked since.
 */
size_t gx_ledger_release_booking(struct gx_ledger *l, const char *uid, int64_t booking);

/** Remove reservations older than @ttl_ms at @now_ms; returns how many. */
size_t gx_ledger_expire(struct gx_ledger *l, int64_t now_ms, int64_t ttl_ms);

/** Replace the whole entry of @node (e.g. from a Lease); tenants copied. */
enum gx_err gx_ledger_set_node(struct gx_ledger *l, const char *node, const struct gx_tenant *t,
                               size_t n, const char *resource_version) GX_WUR;

/**
 * A new ledger holding a copy of @l's entry of @node (no entry: none), for
 * deciding with bookings @l does not hold (a scratch ledger); NULL out of
 * memory. You own it: gx_ledger_free.
 */
struct gx_ledger *gx_ledger_scratch(const struct gx_ledger *l, const char *node);

/**
 * Sum of the shared tenants' slices and number of tenants. The slots a
 * card shows in use are gx_ledger_slots_used's (cards.h sums them for
 * /metrics).
 */
void gx_ledger_totals(const struct gx_ledger *l, int64_t *slices, int64_t *tenants);

/** Call @cb for every node entry (iteration order unspecified). */
void gx_ledger_each(const struct gx_ledger *l,
                    void (*cb)(void *ctx, const struct gx_ledger_node *n), void *ctx);

/** Encode a node's tenants as the JSON stored in the Lease annotation. */
enum gx_err gx_ledger_node_encode(const struct gx_ledger_node *n, struct gx_buf *out) GX_WUR;

/**
 * Decode that JSON into a heap array of tenants (*t, *n; you own *t).
 * GX_EPARSE with @why on malformed input.
 */
enum gx_err gx_ledger_node_decode(const char *json, size_t len, struct gx_tenant **t, size_t *n,
                                  struct gx_why *why) GX_WUR;

#endif
