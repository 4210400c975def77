/* SPDX-License-Identifier: Apache-2.0 */
/*
 * prom.c - parser of Prometheus /api/v1/query responses into gx_series
 * callbacks. It walks the body with the gx_json scanner (no tree): labels of
 * one series are decoded into a scratch buffer that is reused for the next
 * series, so a 40,000-series body costs one pass and no per-series malloc.
 *
 * Key order is never assumed: when "data" comes before "status", or
 * "result" before "resultType", the span is remembered (validated) and
 * parsed once the deciding key has been seen. Series that carry no float
 * sample (native histograms, an empty matrix row) are skipped. The callback
 * may already have been called for earlier series when a later one turns
 * out malformed: callers collect into a pending table and drop it on error.
 * No I/O.
 */
#include "prom.h"

#include "buf.h"
#include "json.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Most labels a series may carry (dcgm-exporter series have about 17). */
#define PROM_MAX_LABELS 64
/* Most decoded label bytes of one series. */
#define PROM_MAX_LABEL_BYTES (1u << 20)

enum prom_rtype { PROM_RT_NONE, PROM_RT_VECTOR, PROM_RT_MATRIX, PROM_RT_OTHER };

struct prom_parse {
    gx_series_cb cb;
    void *ctx;
    struct gx_why *why;
    struct gx_buf scratch; /* decoded label strings of the current series */
    struct gx_arena esc;   /* strings that had escapes (rare), and envelope strings */
    size_t koff[PROM_MAX_LABELS], voff[PROM_MAX_LABELS];
    struct gx_kv kv[PROM_MAX_LABELS];
    size_t index; /* of the current series, for messages */
};

/* One sample: the time and the value. */
struct prom_sample {
    int64_t ts_ms;
    double value;
};

/*
 * Append the JSON string @q/@qlen (quotes included, already validated),
 * decoded and NUL-terminated, to the scratch buffer; *off is where it starts.
 */
static enum gx_err
prom_put(struct prom_parse *pp, const char *q, size_t qlen, size_t *off)
{
    const char *s = q + 1;
    size_t n = qlen - 2;
    enum gx_err rc;

    if (memchr(s, '\\', n) != NULL) {
        struct gx_json sub;
        gx_json_init(&sub, q, qlen, 1, pp->why);
        if ((rc = gx_json_string(&sub, &pp->esc, &s, &n)) != GX_OK) {
            return rc;
        }
    }
    *off = pp->scratch.len;
    if ((rc = gx_buf_add(&pp->scratch, s, n)) != GX_OK ||
        (rc = gx_buf_add(&pp->scratch, "", 1)) != GX_OK) {
        gx_why_set(pp->why, "result[%zu]: labels larger than %u bytes", pp->index,
                   PROM_MAX_LABEL_BYTES);
        return rc;
    }
    return GX_OK;
}

/* Append the string value at the cursor to the scratch buffer (see prom_put). */
static enum gx_err
prom_take_str(struct prom_parse *pp, struct gx_json *j, size_t *off, const char *what)
{
    size_t start;
    enum gx_err rc;

    if (gx_json_peek(j) != '"') {
        gx_why_set(pp->why, "result[%zu]: %s must be a string", pp->index, what);
        return GX_EPARSE;
    }
    start = j->pos;
    if ((rc = gx_json_skip(j)) != GX_OK) {
        return rc;
    }
    return prom_put(pp, j->p + start, j->pos - start, off);
}

/* Decode the "metric" object into the scratch buffer; *name_off is __name__ or SIZE_MAX. */
static enum gx_err
prom_metric(struct prom_parse *pp, struct gx_json *j, size_t *n_labels, size_t *name_off)
{
    const char *key;
    size_t klen, koff, voff, n = 0;
    bool is_name;
    enum gx_err rc = GX_OK;

    *name_off = SIZE_MAX;
    if (gx_json_peek(j) != '{') {
        gx_why_set(pp->why, "result[%zu]: metric must be an object", pp->index);
        return GX_EPARSE;
    }
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_member(j, &key, &klen, &rc)) {
        /* The raw key sits between quotes in the body: decode it from there. */
        if ((rc = prom_put(pp, key - 1, klen + 2, &koff)) != GX_OK) {
            return rc;
        }
        is_name = pp->scratch.len - koff == sizeof("__name__") &&
                  memcmp(pp->scratch.data + koff, "__name__", sizeof("__name__")) == 0;
        if ((rc = prom_take_str(pp, j, &voff, "label value")) != GX_OK) {
            return rc;
        }
        if (is_name) {
            *name_off = voff;
            continue;
        }
        if (n == PROM_MAX_LABELS) {
            gx_why_set(pp->why, "result[%zu]: series has more than %d labels", pp->index,
                       PROM_MAX_LABELS);
            return GX_ETOOBIG;
        }
        pp->koff[n] = koff;
        pp->voff[n] = voff;
        n++;
    }
    if (rc != GX_OK) {
        return rc;
    }
    *n_labels = n;
    return GX_OK;
}

/* Parse [<unix seconds>, "<value>"]. */
static enum gx_err
prom_sample(struct prom_parse *pp, struct gx_json *j, struct prom_sample *out)
{
    char num[64];
    size_t start, n;
    const char *s;
    char *end;
    double ts, v;
    char c;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '[') {
        goto bad;
    }
    if ((rc = gx_json_enter_array(j)) != GX_OK) {
        return rc;
    }
    if (!gx_json_next_element(j, &rc)) {
        goto bad;
    }
    c = gx_json_peek(j);
    if (c != '-' && (c < '0' || c > '9')) {
        goto bad;
    }
    start = j->pos;
    if ((rc = gx_json_skip(j)) != GX_OK) {
        return rc;
    }
    n = j->pos - start;
    if (n >= sizeof(num)) {
        goto bad;
    }
    memcpy(num, j->p + start, n);
    num[n] = '\0';
    ts = strtod(num, NULL);
    if (!isfinite(ts) || fabs(ts) > 9.0e12) {
        goto bad;
    }
    if (!gx_json_next_element(j, &rc)) {
        goto bad;
    }
    if (gx_json_peek(j) != '"') {
        goto bad;
    }
    start = j->pos;
    if ((rc = gx_json_skip(j)) != GX_OK) {
        return rc;
    }
    s = j->p + start + 1;
    n = j->pos - start - 2;
    /* Values are plain numbers or NaN/+Inf/-Inf: an escape or a long string is malformed. */
    if (n == 0 || n >= sizeof(num) || memchr(s, '\\', n) != NULL) {
        goto bad;
    }
    memcpy(num, s, n);
    num[n] = '\0';
    if (num[0] == ' ' || num[0] == '\t' || num[0] == '\n') {
        goto bad;
    }
    v = strtod(num, &end);
    if (*end != '\0') {
        goto bad;
    }
    if (gx_json_next_element(j, &rc)) {
        goto bad;
    }
    if (rc != GX_OK) {
        return rc;
    }
    out->ts_ms = llround(ts * 1000.0);
    out->value = v;
    return GX_OK;
bad:
    if (rc != GX_OK) {
        return rc;
    }
    gx_why_set(pp->why, "result[%zu]: sample must be [<unix time>, \"<value>\"]", pp->index);
    return GX_EPARSE;
}

/* Parse "values": [[ts,"v"],...] keeping the newest point; *have is false when empty. */
static enum gx_err
prom_values(struct prom_parse *pp, struct gx_json *j, struct prom_sample *out, bool *have)
{
    struct prom_sample s, best = {0, 0.0};
    bool any = false;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '[') {
        gx_why_set(pp->why, "result[%zu]: values must be an array", pp->index);
        return GX_EPARSE;
    }
    if ((rc = gx_json_enter_array(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_element(j, &rc)) {
        if ((rc = prom_sample(pp, j, &s)) != GX_OK) {
            return rc;
        }
        if (!any || s.ts_ms >= best.ts_ms) {
            best = s;
        }
        any = true;
    }
    if (rc != GX_OK) {
        return rc;
    }
    *out = best;
    *have = any;
    return GX_OK;
}

/* Parse one element of "result" and hand it to the callback. */
static enum gx_err
prom_series(struct prom_parse *pp, struct gx_json *j, enum prom_rtype rt)
{
    const char *key;
    size_t klen, n_labels = 0, name_off = SIZE_MAX;
    struct prom_sample sample = {0, 0.0};
    bool have = false;
    struct gx_series s;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '{') {
        gx_why_set(pp->why, "result[%zu]: must be an object", pp->index);
        return GX_EPARSE;
    }
    gx_buf_reset(&pp->scratch);
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_member(j, &key, &klen, &rc)) {
        if (gx_json_key_is(key, klen, "metric")) {
            gx_buf_reset(&pp->scratch);
            rc = prom_metric(pp, j, &n_labels, &name_off);
        } else if (rt == PROM_RT_VECTOR && gx_json_key_is(key, klen, "value")) {
            rc = prom_sample(pp, j, &sample);
            have = rc == GX_OK;
        } else if (rt == PROM_RT_MATRIX && gx_json_key_is(key, klen, "values")) {
            rc = prom_values(pp, j, &sample, &have);
        } else {
            rc = gx_json_skip(j);
        }
        if (rc != GX_OK) {
            return rc;
        }
    }
    if (rc != GX_OK) {
        return rc;
    }
    if (have) {
        /* The scratch buffer may have moved while growing: resolve offsets now. */
        for (size_t i = 0; i < n_labels; i++) {
            pp->kv[i].key = pp->scratch.data + pp->koff[i];
            pp->kv[i].value = pp->scratch.data + pp->voff[i];
        }
        s.name = name_off == SIZE_MAX ? "" : pp->scratch.data + name_off;
        s.labels = pp->kv;
        s.n_labels = n_labels;
        s.value = sample.value;
        s.ts_ms = sample.ts_ms;
        if ((rc = pp->cb(pp->ctx, &s)) != GX_OK) {
            return rc;
        }
    }
    pp->index++;
    return GX_OK;
}

/* Parse the "result" array at the cursor. */
static enum gx_err
prom_result(struct prom_parse *pp, struct gx_json *j, enum prom_rtype rt)
{
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '[') {
        gx_why_set(pp->why, "data.result must be an array");
        return GX_EPARSE;
    }
    if ((rc = gx_json_enter_array(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_element(j, &rc)) {
        if ((rc = prom_series(pp, j, rt)) != GX_OK) {
            return rc;
        }
    }
    return rc;
}

/* Decode the string at the cursor into the arena; @what names it in errors. */
static enum gx_err
prom_envelope_str(struct prom_parse *pp, struct gx_json *j, const char **out, const char *what)
{
    if (gx_json_peek(j) != '"') {
        gx_why_set(pp->why, "%s must be a string", what);
        return GX_EPARSE;
    }
    return gx_json_string(j, &pp->esc, out, NULL);
}

/* Parse the "data" object at the cursor. */
static enum gx_err
prom_data(struct prom_parse *pp, struct gx_json *j)
{
    const char *key, *rtype = NULL;
    size_t klen, res_off = 0, res_len = 0;
    int res_depth = 0;
    enum prom_rtype rt = PROM_RT_NONE;
    bool done = false, seen = false;
    enum gx_err rc = GX_OK;

    if (gx_json_peek(j) != '{') {
        gx_why_set(pp->why, "data must be an object");
        return GX_EPARSE;
    }
    if ((rc = gx_json_enter_object(j)) != GX_OK) {
        return rc;
    }
    while (gx_json_next_member(j, &key, &klen, &rc)) {
        if (gx_json_key_is(key, klen, "resultType")) {
            if ((rc = prom_envelope_str(pp, j, &rtype, "data.resultType")) != GX_OK) {
                return rc;
            }
            rt = strcmp(rtype, "vector") == 0   ? PROM_RT_VECTOR
                 : strcmp(rtype, "matrix") == 0 ? PROM_RT_MATRIX
                                                : PROM_RT_OTHER;
        } else if (gx_json_key_is(key, klen, "result")) {
            seen = true;
            if (rt == PROM_RT_VECTOR || rt == PROM_RT_MATRIX) {
                if ((rc = prom_result(pp, j, rt)) != GX_OK) {
                    return rc;
                }
                done = true;
            } else {
                (void)gx_json_peek(j);
                res_depth = j->depth;
                res_off = j->pos;
                if ((rc = gx_json_skip(j)) != GX_OK) {
                    return rc;
                }
                res_len = j->pos - res_off;
            }
        } else if ((rc = gx_json_skip(j)) != GX_OK) {
            return rc;
        }
    }
    if (rc != GX_OK) {
        return rc;
    }
    if (rt == PROM_RT_NONE) {
        gx_why_set(pp->why, "data.resultType is missing");
        return GX_EPARSE;
    }
    if (rt == PROM_RT_OTHER) {
        gx_why_set(pp->why, "unsupported resultType \"%.64s\"", rtype);
        return GX_EPARSE;
    }
    if (!seen) {
        gx_why_set(pp->why, "data.result is missing");
        return GX_EPARSE;
    }
    if (!done) {
        struct gx_json sub;
        gx_json_init(&sub, j->p + res_off, res_len, j->max_depth - res_depth, pp->why);
        return prom_result(pp, &sub, rt);
    }
    return GX_OK;
}

enum gx_err
gx_prom_parse_query(const char *body, size_t len, int max_depth, gx_series_cb cb, void *ctx,
                    struct gx_why *why)
{
    struct prom_parse pp = {.cb = cb, .ctx = ctx, .why = why};
    struct gx_json j;
    const char *key, *status = NULL, *etype = NULL, *etext = NULL;
    size_t klen, data_off = 0, data_len = 0;
    bool data_seen = false, data_done = false;
    enum gx_err rc = GX_OK;

    gx_buf_init(&pp.scratch, PROM_MAX_LABEL_BYTES);
    gx_arena_init(&pp.esc, 4096);
    gx_json_init(&j, body, len, max_depth, why);
    if (gx_json_peek(&j) != '{') {
        gx_why_set(why, "response is not a JSON object");
        rc = GX_EPARSE;
        goto out;
    }
    if ((rc = gx_json_enter_object(&j)) != GX_OK) {
        goto out;
    }
    while (gx_json_next_member(&j, &key, &klen, &rc)) {
        if (gx_json_key_is(key, klen, "status")) {
            rc = prom_envelope_str(&pp, &j, &status, "status");
        } else if (gx_json_key_is(key, klen, "errorType")) {
            rc = prom_envelope_str(&pp, &j, &etype, "errorType");
        } else if (gx_json_key_is(key, klen, "error")) {
            rc = prom_envelope_str(&pp, &j, &etext, "error");
        } else if (gx_json_key_is(key, klen, "data")) {
            data_seen = !gx_json_take_null(&j);
            if (!data_seen) {
                rc = GX_OK;
            } else if (status != NULL && strcmp(status, "success") == 0) {
                rc = prom_data(&pp, &j);
                data_done = rc == GX_OK;
            } else {
                /* Status not known yet: keep the span, parse it after the loop. */
                (void)gx_json_peek(&j);
                data_off = j.pos;
                rc = gx_json_skip(&j);
                data_len = j.pos - data_off;
                data_done = false;
            }
        } else {
            rc = gx_json_skip(&j);
        }
        if (rc != GX_OK) {
            goto out;
        }
    }
    if (rc != GX_OK) {
        goto out;
    }
    if (gx_json_peek(&j) != '\0' || j.pos != len) {
        gx_why_set(why, "offset %zu: unexpected data after the response", j.pos);
        rc = GX_EPARSE;
        goto out;
    }
    if (status == NULL) {
        gx_why_set(why, "status is missing");
        rc = GX_EPARSE;
    } else if (strcmp(status, "error") == 0) {
        gx_why_set(why, "%.64s: %.180s", etype != NULL ? etype : "error",
                   etext != NULL ? etext : "(no error text)");
        rc = GX_EUPSTREAM;
    } else if (strcmp(status, "success") != 0) {
        gx_why_set(why, "unknown status \"%.64s\"", status);
        rc = GX_EPARSE;
    } else if (!data_seen) {
        gx_why_set(why, "data is missing");
        rc = GX_EPARSE;
    } else if (!data_done) {
        struct gx_json sub;
        gx_json_init(&sub, body + data_off, data_len, max_depth - 1, why);
        rc = prom_data(&pp, &sub);
    }
out:
    gx_arena_release(&pp.esc);
    gx_buf_release(&pp.scratch);
    return rc;
}
