/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender_bind.c - the bind verb's messages: ExtenderBindingArgs (four
 * non-empty strings) decoded with the gx_json scanner, and
 * ExtenderBindingResult. No I/O.
 */
#include "extender.h"

#include "extender_int.h"
#include "json.h"

#include <string.h>

/* Field table of ExtenderBindingArgs. */
static const char *const ext_bind_fields[] = {"PodName", "PodNamespace", "PodUID", "Node"};

enum gx_err
gx_ext_decode_bind(const char *body, size_t len, int max_depth, struct gx_ext_bind_args *out,
                   struct gx_why *why)
{
    struct gx_ext_bind_args b;
    const char *val[GX_ARRAY_LEN(ext_bind_fields)] = {NULL};
    bool seen[GX_ARRAY_LEN(ext_bind_fields)] = {false};
    struct gx_json j;
    const char *key;
    size_t klen, i;
    enum gx_err rc = GX_OK;

    memset(&b, 0, sizeof(b));
    gx_arena_init(&b.arena, 1024);
    gx_json_init(&j, body, len, max_depth, why);
    if ((rc = ext_enter_top(&j, "ExtenderBindingArgs", why)) != GX_OK) {
        goto out;
    }
    while (gx_json_next_member(&j, &key, &klen, &rc)) {
        for (i = 0; i < GX_ARRAY_LEN(ext_bind_fields); i++) {
            if (gx_json_key_is(key, klen, ext_bind_fields[i])) {
                break;
            }
        }
        if (i == GX_ARRAY_LEN(ext_bind_fields)) {
            if ((rc = gx_json_skip(&j)) != GX_OK) {
                goto out;
            }
            continue;
        }
        seen[i] = true;
        val[i] = NULL;
        if (gx_json_take_null(&j)) {
            continue;
        }
        if (gx_json_peek(&j) != '"') {
            gx_why_set(why, "%s must be a string", ext_bind_fields[i]);
            rc = ext_wrong_type(&j);
            goto out;
        }
        if ((rc = gx_json_string(&j, &b.arena, &val[i], NULL)) != GX_OK) {
            goto out;
        }
    }
    if (rc != GX_OK || (rc = ext_expect_end(&j, why)) != GX_OK) {
        goto out;
    }
    for (i = 0; i < GX_ARRAY_LEN(ext_bind_fields); i++) {
        if (!seen[i]) {
            gx_why_set(why, "%s is missing", ext_bind_fields[i]);
            rc = GX_EINVAL;
            goto out;
        }
        if (val[i] == NULL || val[i][0] == '\0') {
            gx_why_set(why, "%s must be a non-empty string", ext_bind_fields[i]);
            rc = GX_EINVAL;
            goto out;
        }
    }
    b.pod_name = val[0];
    b.pod_namespace = val[1];
    b.pod_uid = val[2];
    b.node = val[3];
    *out = b;
out:
    if (rc != GX_OK) {
        gx_arena_release(&b.arena);
    }
    return rc;
}

void
gx_ext_bind_args_release(struct gx_ext_bind_args *args)
{
    if (args == NULL) {
        return;
    }
    gx_arena_release(&args->arena);
    args->pod_name = args->pod_namespace = args->pod_uid = args->node = NULL;
}

enum gx_err
gx_ext_encode_bind_result(struct gx_buf *out, const char *error)
{
    size_t mark = out->len;
    enum gx_err rc;

    if ((rc = gx_buf_adds(out, "{\"Error\":")) != GX_OK ||
        (rc = ext_add_text(out, error)) != GX_OK || (rc = gx_buf_add(out, "}", 1)) != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}
