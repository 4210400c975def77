/* SPDX-License-Identifier: Apache-2.0 */
/*
 * expo.c - line-oriented parser of the Prometheus text exposition format.
 *
 * One pass over the text; each sample line is split into its name, labels,
 * value and optional timestamp. Label keys and values are unescaped into one
 * scratch buffer sized to the longest line seen so far (allocated once per
 * parse and grown when a longer line comes, freed before return), so the
 * parse does no per-line allocation. Comment (# HELP, # TYPE, other #) and
 * blank lines are skipped; CRLF line ends and a missing final newline are
 * accepted. Metadata is not validated against samples: only the samples
 * matter to the extender.
 *
 * Leniency: dcgm-exporter <= 4.5.3-4.8.2 renders label values through a Go
 * text/template without escaping, so a value may contain a bare '"' or '\'.
 * A '"' therefore closes a value only when the next non-blank character is
 * ',' or '}', and an unknown escape sequence is kept literally.
 * Not done: hex floats and '_' digit separators (Go ParseFloat accepts them,
 * no exporter writes them), duplicate-label detection.
 */
#include "expo.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Parser state for one line: input cursor and the scratch write cursor. */
struct line {
    const char *p;   /* next input byte */
    const char *end; /* end of the line (excluding '\r\n') */
    char *out;       /* next free scratch byte */
};

static bool
is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static bool
is_alpha_(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool
is_digit(char c)
{
    return c >= '0' && c <= '9';
}

static void
skip_blanks(struct line *l)
{
    while (l->p < l->end && is_blank(*l->p)) {
        l->p++;
    }
}

/* Copy a bare metric name ([A-Za-z_:][A-Za-z0-9_:]*) into scratch; returns it. */
static const char *
read_metric_name(struct line *l)
{
    const char *start = l->p;
    char *dst = l->out;
    size_t n;

    while (l->p < l->end && (is_alpha_(*l->p) || is_digit(*l->p) || *l->p == ':')) {
        l->p++;
    }
    n = (size_t)(l->p - start);
    memcpy(dst, start, n);
    dst[n] = '\0';
    l->out += n + 1;
    return dst;
}

/* Copy a bare label name ([A-Za-z_][A-Za-z0-9_]*) into scratch; returns it. */
static const char *
read_label_name(struct line *l)
{
    const char *start = l->p;
    char *dst = l->out;
    size_t n;

    while (l->p < l->end && (is_alpha_(*l->p) || is_digit(*l->p))) {
        l->p++;
    }
    n = (size_t)(l->p - start);
    memcpy(dst, start, n);
    dst[n] = '\0';
    l->out += n + 1;
    return dst;
}

/*
 * True when the '"' at @q closes a lenient label value: the next non-blank
 * character is ',' or '}'.
 */
static bool
quote_closes(const char *q, const char *end)
{
    q++;
    while (q < end && is_blank(*q)) {
        q++;
    }
    return q < end && (*q == ',' || *q == '}');
}

/*
 * Read a quoted string whose opening '"' is at l->p, unescaping into
 * scratch. @lenient applies the dcgm-exporter closing rule (see file header).
 * Returns NULL with *reason set on error.
 */
static const char *
read_quoted(struct line *l, bool lenient, const char **reason)
{
    char *dst = l->out, *w = l->out;

    l->p++; /* opening quote */
    for (;;) {
        char c;

        if (l->p >= l->end) {
            *reason = "unterminated quoted string";
            return NULL;
        }
        c = *l->p;
        if (c == '"') {
            if (!lenient || quote_closes(l->p, l->end)) {
                l->p++;
                break;
            }
            *w++ = c;
            l->p++;
        } else if (c == '\\') {
            if (l->p + 1 >= l->end) {
                *reason = "unterminated quoted string";
                return NULL;
            }
            c = l->p[1];
            if (c == '\\' || c == '"') {
                *w++ = c;
            } else if (c == 'n') {
                *w++ = '\n';
            } else {
                /* Unknown escape: an unescaping exporter wrote a bare '\'. */
                *w++ = '\\';
                *w++ = c;
            }
            l->p += 2;
        } else if (c == '\0') {
            *reason = "NUL byte in quoted string";
            return NULL;
        } else {
            *w++ = c;
            l->p++;
        }
    }
    *w++ = '\0';
    l->out = w;
    return dst;
}

/* Case-insensitive compare of @n bytes at @s with the lowercase word @w. */
static bool
word_eq(const char *s, size_t n, const char *w)
{
    size_t i;

    if (strlen(w) != n) {
        return false;
    }
    for (i = 0; i < n; i++) {
        char c = s[i];
        if (c >= 'A' && c <= 'Z') {
            c = (char)(c - 'A' + 'a');
        }
        if (c != w[i]) {
            return false;
        }
    }
    return true;
}

/*
 * True when @t[0..n) is a float in Go ParseFloat decimal syntax: [+-]digits
 * [.digits][(e|E)[+-]digits], or [+-]Inf/Infinity, or NaN (any case).
 */
static bool
value_syntax_ok(const char *t, size_t n)
{
    size_t i = 0, digits = 0;

    if (i < n && (t[i] == '+' || t[i] == '-')) {
        i++;
    }
    if (word_eq(t + i, n - i, "inf") || word_eq(t + i, n - i, "infinity")) {
        return true;
    }
    if (i == 0 && word_eq(t, n, "nan")) {
        return true;
    }
    while (i < n && is_digit(t[i])) {
        i++;
        digits++;
    }
    if (i < n && t[i] == '.') {
        i++;
        while (i < n && is_digit(t[i])) {
            i++;
            digits++;
        }
    }
    if (digits == 0) {
        return false;
    }
    if (i < n && (t[i] == 'e' || t[i] == 'E')) {
        size_t exp_digits = 0;

        i++;
        if (i < n && (t[i] == '+' || t[i] == '-')) {
            i++;
        }
        while (i < n && is_digit(t[i])) {
            i++;
            exp_digits++;
        }
        if (exp_digits == 0) {
            return false;
        }
    }
    return i == n;
}

/* Parse @t[0..n) as a decimal int64 with optional sign; false on bad syntax or overflow. */
static bool
parse_i64(const char *t, size_t n, int64_t *out)
{
    size_t i = 0;
    bool neg = false;
    uint64_t v = 0, limit;

    if (i < n && (t[i] == '+' || t[i] == '-')) {
        neg = t[i] == '-';
        i++;
    }
    if (i == n) {
        return false;
    }
    limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; i < n; i++) {
        unsigned d;
        if (!is_digit(t[i])) {
            return false;
        }
        d = (unsigned)(t[i] - '0');
        if (v > (limit - d) / 10) {
            return false;
        }
        v = v * 10 + d;
    }
    if (neg) {
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        *out = (int64_t)v;
    }
    return true;
}

/*
 * Parse the label set; l->p is just past '{'. Sets *name when the first item
 * is a bare quoted string (the UTF-8 form {"metric.name", ...}). Returns an
 * error reason or NULL.
 */
static const char *
parse_labels(struct line *l, const char **name, struct gx_kv *labels, size_t *n_labels)
{
    const char *reason = NULL;
    size_t n = 0;

    for (;;) {
        const char *key, *value;
        bool quoted_key;

        skip_blanks(l);
        if (l->p >= l->end) {
            return "unterminated label set";
        }
        if (*l->p == '}') {
            l->p++;
            break;
        }
        quoted_key = *l->p == '"';
        if (quoted_key) {
            key = read_quoted(l, false, &reason);
            if (key == NULL) {
                return reason;
            }
        } else if (is_alpha_(*l->p)) {
            key = read_label_name(l);
        } else {
            return "invalid label name";
        }
        skip_blanks(l);
        if (l->p >= l->end) {
            return "unterminated label set";
        }
        if (quoted_key && *name == NULL && n == 0 && (*l->p == ',' || *l->p == '}')) {
            *name = key;
        } else {
            if (*l->p != '=') {
                return "expected '=' after label name";
            }
            l->p++;
            skip_blanks(l);
            if (l->p >= l->end || *l->p != '"') {
                return "expected '\"' to open label value";
            }
            value = read_quoted(l, true, &reason);
            if (value == NULL) {
                return reason;
            }
            if (n == GX_EXPO_MAX_LABELS) {
                return "too many labels";
            }
            labels[n].key = key;
            labels[n].value = value;
            n++;
            skip_blanks(l);
        }
        if (l->p >= l->end) {
            return "unterminated label set";
        }
        if (*l->p == ',') {
            l->p++;
        } else if (*l->p == '}') {
            l->p++;
            break;
        } else {
            return "expected ',' or '}' after label";
        }
    }
    *n_labels = n;
    return NULL;
}

/*
 * Parse one non-blank, non-comment line into @s (strings in @scratch, which
 * holds at least 2 * line length + 16 bytes). Returns an error reason or NULL.
 */
static const char *
parse_line(const char *p, const char *end, char *scratch, struct gx_kv *labels, struct gx_series *s)
{
    struct line l = {.p = p, .end = end, .out = scratch};
    const char *name = NULL, *tok;
    size_t n_labels = 0, tlen;
    double value;
    int64_t ts = 0;
    char *vbuf, *endp;

    if (is_alpha_(*l.p) || *l.p == ':') {
        name = read_metric_name(&l);
        if (l.p < l.end && !is_blank(*l.p) && *l.p != '{') {
            return "invalid character in metric name";
        }
        skip_blanks(&l);
    } else if (*l.p != '{') {
        return "invalid metric name";
    }
    if (l.p < l.end && *l.p == '{') {
        const char *reason;

        l.p++;
        reason = parse_labels(&l, &name, labels, &n_labels);
        if (reason != NULL) {
            return reason;
        }
    }
    if (name == NULL || name[0] == '\0') {
        return "missing metric name";
    }

    skip_blanks(&l);
    tok = l.p;
    while (l.p < l.end && !is_blank(*l.p)) {
        l.p++;
    }
    tlen = (size_t)(l.p - tok);
    if (tlen == 0) {
        return "missing value";
    }
    if (!value_syntax_ok(tok, tlen)) {
        return "invalid value";
    }
    vbuf = l.out;
    memcpy(vbuf, tok, tlen);
    vbuf[tlen] = '\0';
    errno = 0;
    value = strtod(vbuf, &endp);
    if (endp != vbuf + tlen) {
        return "invalid value";
    }
    if (errno == ERANGE && isinf(value)) {
        return "value out of range";
    }

    skip_blanks(&l);
    if (l.p < l.end) {
        tok = l.p;
        while (l.p < l.end && !is_blank(*l.p)) {
            l.p++;
        }
        if (!parse_i64(tok, (size_t)(l.p - tok), &ts)) {
            return "invalid timestamp";
        }
        skip_blanks(&l);
        if (l.p < l.end) {
            return "unexpected text after timestamp";
        }
    }

    s->name = name;
    s->labels = labels;
    s->n_labels = n_labels;
    s->value = value;
    s->ts_ms = ts;
    return NULL;
}

/*
 * Parse the exposition text line by line and hand each sample to @cb.
 * Fails with GX_EPARSE ("line N: reason" in @why), GX_ENOMEM, or the first
 * non-OK code returned by @cb (then @why is left to the callback).
 */
enum gx_err
gx_expo_parse(const char *text, size_t len, gx_series_cb cb, void *ctx, struct gx_why *why)
{
    struct gx_kv labels[GX_EXPO_MAX_LABELS];
    const char *p = text, *end = text + len;
    char *scratch = NULL;
    size_t cap = 0, lineno = 0;
    enum gx_err rc = GX_OK;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl != NULL ? nl : end;
        const char *next = nl != NULL ? nl + 1 : end;
        struct gx_series s;
        const char *reason;
        size_t need;

        lineno++;
        if (le > p && le[-1] == '\r') {
            le--;
        }
        while (p < le && is_blank(*p)) {
            p++;
        }
        if (p == le || *p == '#') {
            p = next;
            continue;
        }
        /* Unescaped strings never outgrow their source; 2x leaves room for NULs. */
        if ((size_t)(le - p) > (SIZE_MAX - 16) / 2) {
            gx_why_set(why, "line %zu: line too long", lineno);
            rc = GX_ETOOBIG;
            goto out;
        }
        need = 2 * (size_t)(le - p) + 16;
        if (scratch == NULL || need > cap) {
            size_t ncap = cap * 2 > need ? cap * 2 : need;
            free(scratch);
            scratch = malloc(ncap);
            if (scratch == NULL) {
                rc = GX_ENOMEM;
                goto out;
            }
            cap = ncap;
        }
        reason = parse_line(p, le, scratch, labels, &s);
        if (reason != NULL) {
            gx_why_set(why, "line %zu: %s", lineno, reason);
            rc = GX_EPARSE;
            goto out;
        }
        rc = cb(ctx, &s);
        if (rc != GX_OK) {
            goto out;
        }
        p = next;
    }
out:
    free(scratch);
    return rc;
}
