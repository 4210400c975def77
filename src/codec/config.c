/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c - a config's life: gx_config_parse() turns JSON text into an
 * immutable struct gx_config (syntax with a line and column, then the key
 * walk of config_read.c, then the cross-key checks of config_check.c),
 * gx_config_default() gives one with every default, gx_config_free()
 * releases one.
 *
 * The rest of the module, one job per file: the key table
 * (config_keys.c), one row's storage (config_field.c), the reader
 * (config_read.c), the cross-key checks (config_check.c), reading the file
 * (config_load.c), the reload comparison (config_reload.c) and the share
 * rules read from a config (config_share.c). The parser does no I/O.
 */
#include "config_int.h"

#include <cjson/cJSON.h>
#include <stdlib.h>

#include "json.h"

/* Free everything the config owns through its rows, then the config itself. */
void
gx_config_free(struct gx_config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    gx_config_release_rows(cfg, NULL);
    free(cfg->path);
    free(cfg->base_dir);
    free(cfg);
}

/* Allocate a zeroed config carrying every default; NULL on ENOMEM. */
static struct gx_config *
config_new_defaults(const char *base_dir)
{
    struct gx_config *cfg = calloc(1, sizeof(*cfg));

    if (cfg == NULL) {
        return NULL;
    }
    cfg->base_dir = gx_config_dup_str(base_dir != NULL ? base_dir : ".");
    if (cfg->base_dir == NULL || gx_config_apply_defaults(cfg, NULL) != GX_OK) {
        gx_config_free(cfg);
        return NULL;
    }
    return cfg;
}

/* A config with every default and base_dir "."; fails only with GX_ENOMEM. */
enum gx_err
gx_config_default(struct gx_config **out)
{
    struct gx_config *cfg = config_new_defaults(NULL);

    if (cfg == NULL) {
        return GX_ENOMEM;
    }
    *out = cfg;
    return GX_OK;
}

/* Describe where cJSON stopped as "line L column C". */
static void
why_json_position(struct gx_why *why, const char *text, size_t len, const char *at)
{
    size_t off = at != NULL && at >= text && at <= text + len ? (size_t)(at - text) : len;
    size_t line = 1, col = 1;

    for (size_t i = 0; i < off; i++) {
        if (text[i] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    gx_why_set(why, "not valid JSON at line %zu column %zu", line, col);
}

/*
 * Parse @len bytes: JSON syntax first (GX_EPARSE with a line and column),
 * then the table walk and the cross-key checks (GX_EINVAL naming the key).
 */
enum gx_err
gx_config_parse(const char *text, size_t len, const char *base_dir, struct gx_config **out,
                struct gx_why *why)
{
    struct gx_config *cfg = NULL;
    cJSON *root = NULL;
    const char *end = NULL;
    bool nul_marked = false;
    char *marked = NULL;
    enum gx_err rc;

    if (text == NULL) {
        gx_why_set(why, "config: no text");
        return GX_EINVAL;
    }
    /* cJSON would cut a string at \u0000; mark those on a copy so the key is named. */
    if ((marked = gx_strndup(text, len)) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    nul_marked = gx_json_mark_nul_escapes(marked, len) > 0;
    root = cJSON_ParseWithLengthOpts(marked, len, &end, 0);
    if (end != NULL) {
        end = text + (end - marked); /* positions are reported in the caller's text */
    }
    if (root == NULL) {
        why_json_position(why, text, len, end);
        rc = GX_EPARSE;
        goto out;
    }
    /* cJSON stops after the first value; anything but whitespace after it is an error. */
    while (end != NULL && end < text + len &&
           (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r')) {
        end++;
    }
    if (end == NULL || end != text + len) {
        why_json_position(why, text, len, end);
        rc = GX_EPARSE;
        goto out;
    }
    if (!cJSON_IsObject(root)) {
        gx_why_set(why, "config: must be a JSON object");
        rc = GX_EPARSE;
        goto out;
    }
    cfg = config_new_defaults(base_dir);
    if (cfg == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    if ((rc = gx_config_read(root, cfg, nul_marked, why)) != GX_OK) {
        goto out;
    }
    if ((rc = gx_config_check(cfg, why)) != GX_OK) {
        goto out;
    }
    cfg->hash = gx_hash(text, len);
    *out = cfg;
    cfg = NULL;
    rc = GX_OK;
out:
    if (rc == GX_ENOMEM) {
        gx_why_set(why, "config: out of memory");
    }
    gx_config_free(cfg);
    cJSON_Delete(root);
    free(marked);
    return rc;
}
