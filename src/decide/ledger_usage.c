/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger_usage.c - what the tenants of one node entry add up to: a card's
 * usage, the node's host requests, and the one admission rule of a share
 * (milli-GPU in use, what still fits). Pure arithmetic on the public
 * structs of ledger.h: no entry is looked up or changed here, so the
 * decisions (score_*.c) and the bookkeeping (ledger.c) read one rule.
 *
 * An exclusive tenant holds the whole card: its slices field is not counted
 * in gx_card_usage.slices (shared slots only).
 */
#include "ledger.h"

#include <string.h>

/* Count tenant @t in its card's usage @u. */
static void
usage_add(struct gx_card_usage *u, const struct gx_tenant *t)
{
    u->tenants++;
    if (t->exclusive) {
        u->exclusive = true;
        return;
    }
    if (t->milli > 0) {
        u->milli += t->milli;
    } else {
        u->slices += t->slices;
    }
    u->memory_mib += t->memory_mib;
    if (t->util_pct > 0) {
        u->util_pct += t->util_pct;
    }
}

void
gx_ledger_entry_card_usage(const struct gx_ledger_node *e, int card, struct gx_card_usage *u)
{
    memset(u, 0, sizeof(*u));
    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        if (e->tenants[i].card == card) {
            usage_add(u, &e->tenants[i]);
        }
    }
}

void
gx_ledger_entry_cards_usage(const struct gx_ledger_node *e, struct gx_card_usage *u, int n)
{
    memset(u, 0, (size_t)(n > 0 ? n : 0) * sizeof(*u));
    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        int card = e->tenants[i].card;

        if (card >= 0 && card < n) {
            usage_add(&u[card], &e->tenants[i]);
        }
    }
}

bool
gx_ledger_entry_card_gang(const struct gx_ledger_node *e, int card, uint64_t gang)
{
    for (size_t i = 0; e != NULL && gang != 0 && i < e->n_tenants; i++) {
        if (e->tenants[i].card == card && e->tenants[i].gang == gang) {
            return true;
        }
    }
    return false;
}

void
gx_ledger_entry_host(const struct gx_ledger_node *e, int64_t *cpu_milli, int64_t *mem_mib)
{
    int64_t c = e != NULL ? e->untracked_cpu_milli : 0, m = e != NULL ? e->untracked_mem_mib : 0;

    for (size_t i = 0; e != NULL && i < e->n_tenants; i++) {
        c += e->tenants[i].cpu_milli;
        m += e->tenants[i].host_mem_mib;
    }
    *cpu_milli = c;
    *mem_mib = m;
}

int
gx_ledger_share_used(const struct gx_card_usage *u, int slots)
{
    int64_t sliced;

    if (slots < 1) {
        slots = 1;
    }
    sliced = ((int64_t)u->slices * GX_CARD_MILLI + slots - 1) / slots;
    return (int)(sliced + u->milli);
}

int
gx_ledger_tenant_milli(const struct gx_tenant *t, int slots)
{
    struct gx_card_usage u = {0};

    usage_add(&u, t);
    return u.exclusive ? GX_CARD_MILLI : gx_ledger_share_used(&u, slots);
}

int
gx_ledger_slots_used(const struct gx_card_usage *u, int slots)
{
    int64_t used;

    if (slots < 1) {
        slots = 1;
    }
    if (u->exclusive) {
        return slots;
    }
    used = u->slices + ((int64_t)u->milli * slots + GX_CARD_MILLI - 1) / GX_CARD_MILLI;
    return used > slots ? slots : (int)used;
}

bool
gx_ledger_share_fits(const struct gx_card_usage *u, int slots, int slices, int milli)
{
    struct gx_card_usage after = *u;

    if (u->exclusive || slices < 0 || milli < 0) {
        return false;
    }
    after.slices += slices;
    after.milli += milli;
    return gx_ledger_share_used(&after, slots) <= GX_CARD_MILLI;
}
