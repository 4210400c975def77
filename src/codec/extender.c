/* SPDX-License-Identifier: Apache-2.0 */
/*
 * extender.c - the kube-scheduler extender wire codec (extender/v1 types):
 * what its messages share. extender_int.h lists the files of the codec,
 * one per message pair, on top of this one.
 *
 * Decoding walks a request with the gx_json scanner, never building a tree
 * of it: ExtenderArgs and ExtenderPreemptionArgs share one envelope walk
 * (ext_envelope: a Pod and exactly one of two members), whose Pod span
 * goes to gx_kobj_decode_pod. Keys match case-insensitively and the last
 * duplicate wins, as with Go's encoding/json; unknown keys are skipped.
 *
 * Encoding writes the exact PascalCase keys. kube-scheduler passes the
 * Error text of filter and bind results to fmt.Errorf as a format string,
 * so every '%' in text we author (reasons, errors) is written as
 * " percent" (ext_add_text); node names are copied as given (Kubernetes
 * names cannot hold '%', and the scheduler must find them in its input
 * set). A failed encode leaves the buffer as it found it (ext_truncate).
 * No I/O.
 */
#include "extender.h"

#include "extender_int.h"
#include "json.h"

#include <stdlib.h>
#include <string.h>

/* Written for '%' in reasons and errors. */
#define EXT_PERCENT " percent"

/* ---- decoding ---- */

/*
 * The value at the cursor has the wrong type and the caller has already put
 * the reason in why: GX_EINVAL, unless the value is not even valid JSON
 * (then GX_EPARSE from the scanner, whose offset says more).
 */
enum gx_err
ext_wrong_type(struct gx_json *j)
{
    enum gx_err rc = gx_json_skip(j);

    return rc != GX_OK ? rc : GX_EINVAL;
}

/*
 * The "Pod" member's value: null (*@null), or an object whose byte span
 * (*@off, *@plen) goes to gx_kobj_decode_pod. Anything else is a type error.
 */
static enum gx_err
ext_pod_span(struct gx_json *j, bool *null, size_t *off, size_t *plen, struct gx_why *why)
{
    enum gx_err rc;

    *null = gx_json_take_null(j);
    if (*null) {
        return GX_OK;
    }
    if (gx_json_peek(j) != '{') {
        gx_why_set(why, "Pod must be an object");
        return ext_wrong_type(j);
    }
    *off = j->pos;
    if ((rc = gx_json_skip(j)) != GX_OK) {
        return rc;
    }
    *plen = j->pos - *off;
    return GX_OK;
}

/*
 * Enter the top-level object of a request. A body that is valid JSON but
 * not an object is GX_EINVAL; anything else malformed is GX_EPARSE.
 */
enum gx_err
ext_enter_top(struct gx_json *j, const char *what, struct gx_why *why)
{
    if (gx_json_peek(j) == '{') {
        return gx_json_enter_object(j);
    }
    gx_why_set(why, "%s must be a JSON object", what);
    return ext_wrong_type(j);
}

/* GX_EPARSE unless only whitespace follows the top-level value. */
enum gx_err
ext_expect_end(struct gx_json *j, struct gx_why *why)
{
    if (gx_json_peek(j) != '\0' || j->pos != j->len) {
        gx_why_set(why, "offset %zu: unexpected data after the JSON object", j->pos);
        return GX_EPARSE;
    }
    return GX_OK;
}

/*
 * Walk @body as @e says, then decode its Pod into @a and @pod; *which is
 * the member that is set.
 */
enum gx_err
ext_envelope(const char *body, size_t len, int max_depth, const struct ext_envelope *e,
             struct gx_arena *a, struct gx_pod *pod, int *which, struct gx_why *why)
{
    struct gx_json j;
    const char *key;
    size_t klen, pod_off = 0, pod_len = 0;
    bool pod_seen = false, pod_null = false, set[2] = {false, false};
    enum gx_err rc;

    gx_json_init(&j, body, len, max_depth, why);
    if ((rc = ext_enter_top(&j, e->what, why)) != GX_OK) {
        return rc;
    }
    while (rc == GX_OK && gx_json_next_member(&j, &key, &klen, &rc)) {
        int m = gx_json_key_is(key, klen, e->names[0])   ? 0
                : gx_json_key_is(key, klen, e->names[1]) ? 1
                                                         : -1;

        if (gx_json_key_is(key, klen, "Pod")) {
            pod_seen = true;
            rc = ext_pod_span(&j, &pod_null, &pod_off, &pod_len, why);
        } else if (m >= 0) {
            set[m] = !gx_json_take_null(&j);
            rc = set[m] ? e->member(&j, e->ctx, m, why) : GX_OK;
        } else {
            rc = gx_json_skip(&j);
        }
    }
    if (rc != GX_OK || (rc = ext_expect_end(&j, why)) != GX_OK) {
        return rc;
    }
    if (!pod_seen || pod_null) {
        gx_why_set(why, "%s", pod_seen ? "Pod is null" : "Pod is missing");
        return GX_EINVAL;
    }
    if (set[0] == set[1]) {
        gx_why_set(why, "%s %s %s %s %s set; exactly one must be non-null",
                   set[0] ? "both" : "neither", e->names[0], set[0] ? "and" : "nor", e->names[1],
                   set[0] ? "are" : "is");
        return GX_EINVAL;
    }
    /* The Pod sits one level inside the request. */
    rc =
        gx_kobj_decode_pod(body + pod_off, pod_len, max_depth > 1 ? max_depth - 1 : 1, a, pod, why);
    if (rc != GX_OK) {
        gx_why_prefix(why, "Pod");
        return rc;
    }
    *which = set[0] ? 0 : 1;
    return GX_OK;
}

/* Copy @n elements of @size bytes at @src into *@dst in @a (NULL when n is 0). */
enum gx_err
ext_to_arena(struct gx_arena *a, const void *src, size_t n, size_t size, void **dst,
             struct gx_why *why)
{
    *dst = NULL;
    if (n == 0) {
        return GX_OK;
    }
    if (n > SIZE_MAX / size || (*dst = gx_arena_alloc(a, n * size)) == NULL) {
        return ext_nomem(why);
    }
    memcpy(*dst, src, n * size);
    return GX_OK;
}

/* ---- encoding: the text we author ---- */

/* Append text we author as a JSON string, each '%' written as " percent". */
enum gx_err
ext_add_text(struct gx_buf *b, const char *s)
{
    size_t n, pct = 0, o = 0;
    enum gx_err rc;
    char *tmp;

    if (s == NULL) {
        s = "";
    }
    n = strlen(s);
    for (const char *q = memchr(s, '%', n); q != NULL;
         q = memchr(q + 1, '%', n - (size_t)(q + 1 - s))) {
        pct++;
    }
    if (pct == 0) {
        return gx_buf_add_json_str(b, s, n);
    }
    tmp = malloc(n + pct * (sizeof(EXT_PERCENT) - 2) + 1);
    if (tmp == NULL) {
        return GX_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%') {
            memcpy(tmp + o, EXT_PERCENT, sizeof(EXT_PERCENT) - 1);
            o += sizeof(EXT_PERCENT) - 1;
        } else {
            tmp[o++] = s[i];
        }
    }
    rc = gx_buf_add_json_str(b, tmp, o);
    free(tmp);
    return rc;
}

/* Undo a failed encode: drop what was appended after @mark. */
void
ext_truncate(struct gx_buf *b, size_t mark)
{
    if (b->data != NULL && b->len > mark) {
        b->len = mark;
        b->data[mark] = '\0';
    }
}

/* ---- the HTTP error body of every verb ---- */

enum gx_err
gx_ext_encode_http_error(struct gx_buf *out, int status, const char *msg)
{
    size_t mark = out->len;
    enum gx_err rc;

    if ((rc = gx_buf_adds(out, "{\"error\":")) != GX_OK || (rc = ext_add_text(out, msg)) != GX_OK ||
        (rc = gx_buf_addf(out, ",\"status\":%d}", status)) != GX_OK) {
        ext_truncate(out, mark);
    }
    return rc;
}
