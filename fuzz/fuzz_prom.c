/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_prom.c - a Prometheus /api/v1/query response body: parse it, map
 * every series to a card sample as the poller does and feed the samples to
 * a metric store (begin/put/commit), then read the store back.
 */
#include "fuzz_util.h"

#include <math.h>

#include "arena.h"
#include "dcgm.h"
#include "prom.h"

#define FZ_MAX_SAMPLES 4096

struct collect {
    const struct gx_config *cfg;
    enum gx_signal sig;
    struct gx_arena arena;
    struct gx_card_sample s[FZ_MAX_SAMPLES];
    size_t n;
};

/* Check one series, map it and keep a copy of the sample. */
static enum gx_err
series_cb(void *ctx, const struct gx_series *s)
{
    struct collect *c = ctx;
    struct gx_card_sample smp;

    FZ_CHECK(s->name != NULL, "series without a name pointer");
    fz_touch_str(s->name);
    fz_touch_kv(s->labels, s->n_labels);
    if (!gx_dcgm_map(c->cfg, c->sig, s, 1000, &smp) || c->n == FZ_MAX_SAMPLES)
        return GX_OK;
    FZ_CHECK(smp.node != NULL && smp.node_len > 0, "mapped sample without a node");
    smp.node = gx_arena_strndup(&c->arena, smp.node, smp.node_len);
    smp.uuid = gx_arena_strdup(&c->arena, smp.uuid);
    smp.pod = gx_arena_strdup(&c->arena, smp.pod);
    FZ_CHECK(smp.node != NULL, "out of memory");
    c->s[c->n++] = smp;
    return GX_OK;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct collect c;
    struct gx_mstore *ms;
    struct gx_why why = {{0}};
    enum gx_err rc;

    c.cfg = fz_config();
    c.sig = (enum gx_signal)(size % GX_SIG_COUNT);
    c.n = 0;
    gx_arena_init(&c.arena, 0);
    rc = gx_prom_parse_query((const char *)data, size, c.cfg->max_json_depth, series_cb, &c, &why);
    if (rc != GX_OK) {
        FZ_CHECK(rc == GX_EPARSE || rc == GX_EUPSTREAM || rc == GX_ETOOBIG || rc == GX_ENOMEM,
                 "unexpected error %s", gx_strerror(rc));
        FZ_CHECK(why.text[0] != '\0', "parse failed without a reason");
    } else {
        ms = gx_mstore_new();
        FZ_CHECK(ms != NULL, "out of memory");
        gx_mstore_begin(ms, 0, c.sig);
        for (size_t i = 0; i < c.n; i++) {
            rc = gx_mstore_put(ms, &c.s[i]);
            FZ_CHECK(rc == GX_OK, "mstore_put: %s", gx_strerror(rc));
        }
        gx_mstore_commit(ms);
        for (size_t i = 0; i < c.n; i++) {
            size_t n = 0;
            const struct gx_mcard *cards = gx_mstore_cards(ms, c.s[i].node, &n);

            if (isnan(c.s[i].value) || strlen(c.s[i].node) != c.s[i].node_len)
                continue;
            FZ_CHECK(n > 0 && cards != NULL, "node %s of a stored sample has no cards",
                     c.s[i].node);
            for (size_t k = 0; k < n; k++) {
                fz_touch_str(cards[k].uuid);
                fz_touch_str(cards[k].pod);
            }
        }
        gx_mstore_free(ms);
    }
    gx_arena_release(&c.arena);
    return 0;
}
