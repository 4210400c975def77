/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_share.c - the two sharing rules every decision reads from a
 * config: how many time slots one card of a product has
 * (gx_config_card_slots) and how much of a card a milli-GPU share books
 * (gx_config_share_milli). Filter, bind, explain and /metrics all call
 * these, so a card's size is decided in one place.
 *
 * Pure arithmetic on a parsed config; no parsing, no I/O.
 */
#include "config.h"

#include <math.h>
#include <string.h>

/* True if @product equals @name, or equals it once a "-SHARED" suffix is removed. */
static bool
product_matches(const char *product, const char *name)
{
    static const char suffix[] = "-SHARED";
    size_t pl = strlen(product), sl = sizeof(suffix) - 1;

    if (name == NULL) {
        return false;
    }
    if (strcmp(product, name) == 0) {
        return true;
    }
    return pl > sl && strcmp(product + pl - sl, suffix) == 0 && strlen(name) == pl - sl &&
           strncmp(product, name, pl - sl) == 0;
}

/*
 * The one rule for a card's time slots (filter, bind, explain, /metrics):
 * product entry (exact, else with GFD's "-SHARED" suffix removed), else
 * replicas > 1, else default_slots; times oversubscription, at least 1.
 */
int
gx_config_card_slots(const struct gx_config *cfg, const char *product, int replicas)
{
    int slots = cfg->default_slots;
    bool listed = false;
    double total;

    for (size_t i = 0; product != NULL && i < cfg->n_product_slots; i++) {
        if (cfg->product_slots[i].product != NULL &&
            strcmp(cfg->product_slots[i].product, product) == 0) {
            slots = cfg->product_slots[i].slots;
            listed = true;
            break;
        }
    }
    for (size_t i = 0; !listed && product != NULL && i < cfg->n_product_slots; i++) {
        if (product_matches(product, cfg->product_slots[i].product)) {
            slots = cfg->product_slots[i].slots;
            listed = true;
            break;
        }
    }
    if (!listed && replicas > 1) {
        slots = replicas;
    }
    /* A small epsilon keeps 5 x 1.2 from flooring to 5 through rounding. */
    total = floor((double)slots * cfg->oversubscription + 1e-9);
    if (total < 1) {
        return 1;
    }
    if (total > 1e6) {
        return 1000000;
    }
    return (int)total;
}

/* Oversubscription shrinks what a milli share books, as it multiplies slots. */
int
gx_config_share_milli(const struct gx_config *cfg, int milli)
{
    double booked = ceil((double)milli / cfg->oversubscription - 1e-9);

    if (booked < 1) {
        return 1;
    }
    return booked > 1000 ? 1000 : (int)booked;
}
