/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_config.c - the config document (a ConfigMap an operator edits, read
 * again on every reload): parse and validate it, then use the result as a
 * reload would (restart-key comparison with the defaults, card slots).
 */
#include "fuzz_util.h"

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct gx_config *def = fz_config();
    struct gx_config *cfg = NULL;
    struct gx_why why = {{0}};
    char changed[512];
    enum gx_err rc;

    rc = gx_config_parse((const char *)data, size, "/nonexistent-base", &cfg, &why);
    if (rc != GX_OK) {
        FZ_CHECK(rc == GX_EPARSE || rc == GX_EINVAL || rc == GX_ENOMEM || rc == GX_ETOOBIG,
                 "unexpected error %s", gx_strerror(rc));
        FZ_CHECK(why.text[0] != '\0', "rejected without a reason");
        FZ_CHECK(cfg == NULL, "out-param written on failure");
        return 0;
    }
    FZ_CHECK(cfg->max_json_depth >= 8 && cfg->max_json_depth <= 512, "max_json_depth %d",
             cfg->max_json_depth);
    FZ_CHECK(cfg->url_prefix != NULL, "no url_prefix");
    fz_touch_str(cfg->url_prefix);
    fz_touch_str(cfg->listen_address);
    for (size_t i = 0; i < cfg->n_label_rules; i++) {
        fz_touch_str(cfg->label_rules[i].label);
        for (size_t k = 0; k < cfg->label_rules[i].n_values; k++)
            fz_touch_str(cfg->label_rules[i].values[k]);
    }
    for (size_t i = 0; i < cfg->n_product_slots; i++) {
        int slots = gx_config_card_slots(cfg, cfg->product_slots[i].product, 1);

        FZ_CHECK(slots >= 1, "product %s has %d slots", cfg->product_slots[i].product, slots);
    }
    FZ_CHECK(gx_config_card_slots(cfg, "unknown", 1) >= 1, "default slots < 1");
    FZ_CHECK(gx_config_card_slots(cfg, "", 8) >= 1, "slots for 8 replicas < 1");
    changed[0] = '\0';
    (void)gx_config_restart_keys_changed(def, cfg, changed, sizeof(changed));
    FZ_CHECK(memchr(changed, '\0', sizeof(changed)) != NULL, "restart keys not terminated");
    FZ_CHECK(!gx_config_restart_keys_changed(cfg, cfg, changed, sizeof(changed)),
             "a config differs from itself: %s", changed);
    gx_config_free(cfg);
    return 0;
}
