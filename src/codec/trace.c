/* SPDX-License-Identifier: Apache-2.0 */
/*
 * trace.c - openb CSV readers. A row is split on commas (the trace quotes
 * nothing; a quote is an error rather than a guess), each wanted column is
 * located by its header name and checked against a table of types and
 * ranges, so one loop reads both file kinds. Errors name file, line and
 * column. No I/O.
 */
#include "trace.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Columns a row may have; more is an error, not a silent truncation. */
#define TRACE_MAX_COLS 32
/* Rows accepted from one file. */
#define TRACE_MAX_ROWS 10000000

enum ctype { C_STR, C_I64 };

/* One wanted column: where it goes in the row struct and what it may hold. */
struct col {
    const char *name;
    enum ctype type;
    size_t off;
    size_t size; /* C_STR: buffer size; C_I64: 8 (int64_t) or 4 (int) */
    int64_t lo, hi;
    bool required;
};

#define NSTR(f, req)                                                                               \
    {                                                                                              \
#f, C_STR, offsetof(struct gx_trace_node, f), sizeof(((struct gx_trace_node *)0)->f), 0,   \
            0, req                                                                                 \
    }
#define NNUM(c, f, lo, hi)                                                                         \
    {                                                                                              \
        c, C_I64, offsetof(struct gx_trace_node, f), sizeof(((struct gx_trace_node *)0)->f), lo,   \
            hi, true                                                                               \
    }
#define PSTR(c, f, req)                                                                            \
    {                                                                                              \
        c, C_STR, offsetof(struct gx_trace_pod, f), sizeof(((struct gx_trace_pod *)0)->f), 0, 0,   \
            req                                                                                    \
    }
#define PNUM(c, f, lo, hi, req)                                                                    \
    {                                                                                              \
        c, C_I64, offsetof(struct gx_trace_pod, f), sizeof(((struct gx_trace_pod *)0)->f), lo, hi, \
            req                                                                                    \
    }

static const struct col node_cols[] = {
    {"sn", C_STR, offsetof(struct gx_trace_node, name), GX_TRACE_NAME_MAX, 0, 0, true},
    NNUM("cpu_milli", cpu_milli, 0, INT64_C(1) << 40),
    NNUM("memory_mib", memory_mib, 0, INT64_C(1) << 40),
    NNUM("gpu", gpus, 0, 16),
    NSTR(model, true),
};

static const struct col pod_cols[] = {
    PSTR("name", name, true),
    PNUM("cpu_milli", cpu_milli, 0, INT64_C(1) << 40, true),
    PNUM("memory_mib", memory_mib, 0, INT64_C(1) << 40, true),
    PNUM("num_gpu", num_gpu, 0, 16, true),
    PNUM("gpu_milli", gpu_milli, 0, 1000, true),
    PSTR("gpu_spec", gpu_spec, false),
    PNUM("creation_time", creation_s, 0, INT64_C(1) << 40, false),
    PNUM("deletion_time", deletion_s, 0, INT64_C(1) << 40, false),
};

/* A reader over @text: the current line, its number and its fields. */
struct reader {
    const char *p, *end, *file;
    size_t line;
    const char *f[TRACE_MAX_COLS];
    size_t flen[TRACE_MAX_COLS];
    size_t nf;
};

/* Next non-empty line split into fields. False at the end, or with *bad set on a malformed line. */
static bool
next_row(struct reader *r, struct gx_why *why, bool *bad)
{
    *bad = false;
    while (r->p < r->end) {
        const char *nl = memchr(r->p, '\n', (size_t)(r->end - r->p));
        const char *e = nl != NULL ? nl : r->end, *s = r->p;

        r->p = nl != NULL ? nl + 1 : r->end;
        r->line++;
        if (e > s && e[-1] == '\r') {
            e--;
        }
        if (e == s) {
            continue;
        }
        r->nf = 0;
        for (;;) {
            const char *c = memchr(s, ',', (size_t)(e - s));
            const char *fe = c != NULL ? c : e;
            if (r->nf == TRACE_MAX_COLS) {
                gx_why_set(why, "%.100s:%zu: more than %d columns", r->file, r->line,
                           TRACE_MAX_COLS);
                *bad = true;
                return false;
            }
            if (memchr(s, '"', (size_t)(fe - s)) != NULL) {
                gx_why_set(why, "%.100s:%zu: column %zu: quoted fields are not supported", r->file,
                           r->line, r->nf + 1);
                *bad = true;
                return false;
            }
            r->f[r->nf] = s;
            r->flen[r->nf++] = (size_t)(fe - s);
            if (c == NULL) {
                break;
            }
            s = c + 1;
        }
        return true;
    }
    return false;
}

/* Parse a plain decimal integer in [lo, hi] (leading '-' allowed when lo < 0). */
static bool
parse_i64(const char *s, size_t n, int64_t lo, int64_t hi, int64_t *out)
{
    int64_t v = 0;
    size_t i = 0;
    bool neg = n > 0 && s[0] == '-';

    if (neg) {
        i = 1;
    }
    if (i == n) {
        return false;
    }
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - 9) / 10) {
            return false;
        }
        v = v * 10 + (s[i] - '0');
    }
    v = neg ? -v : v;
    if (v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

/* Store field @s (@n bytes) into column @c of the row at @row. False with @why on a bad value. */
static bool
store(const struct reader *r, const struct col *c, const char *s, size_t n, void *row,
      struct gx_why *why)
{
    char *dst = (char *)row + c->off;
    int64_t v = 0;

    if (c->type == C_STR) {
        if (n >= c->size) {
            gx_why_set(why, "%.100s:%zu: column %s: longer than %zu bytes", r->file, r->line,
                       c->name, c->size - 1);
            return false;
        }
        memcpy(dst, s, n);
        dst[n] = '\0';
        return true;
    }
    if (!parse_i64(s, n, c->lo, c->hi, &v)) {
        gx_why_set(why, "%.100s:%zu: column %s: \"%.*s\" is not an integer from %lld to %lld",
                   r->file, r->line, c->name, (int)(n > 24 ? 24 : n), s, (long long)c->lo,
                   (long long)c->hi);
        return false;
    }
    if (c->size == sizeof(int)) {
        int iv = (int)v;
        memcpy(dst, &iv, sizeof(iv));
    } else {
        memcpy(dst, &v, sizeof(v));
    }
    return true;
}

/* Map each wanted column to its header position (-1 when absent and optional). */
static bool
map_header(const struct reader *r, const struct col *cols, size_t n_cols, int *pos,
           struct gx_why *why)
{
    for (size_t c = 0; c < n_cols; c++) {
        pos[c] = -1;
        for (size_t i = 0; i < r->nf; i++) {
            if (r->flen[i] == strlen(cols[c].name) &&
                memcmp(r->f[i], cols[c].name, r->flen[i]) == 0) {
                pos[c] = (int)i;
            }
        }
        if (pos[c] < 0 && cols[c].required) {
            gx_why_set(why, "%.100s:%zu: header has no column %s", r->file, r->line, cols[c].name);
            return false;
        }
    }
    return true;
}

static void
node_init(void *row)
{
    (void)row;
}

static void
pod_init(void *row)
{
    struct gx_trace_pod *p = row;

    p->creation_s = -1;
    p->deletion_s = -1;
}

/* A pod row that contradicts itself: a share with several GPUs, or GPUs with no share. */
static bool
pod_consistent(const struct gx_trace_pod *p)
{
    if (p->num_gpu == 0) {
        return true; /* CPU-only rows carry gpu_milli 0 */
    }
    if (p->gpu_milli < 1) {
        return false;
    }
    return p->num_gpu == 1 || p->gpu_milli == 1000;
}

static bool
pod_check(const struct reader *r, const void *row, struct gx_why *why)
{
    const struct gx_trace_pod *p = row;

    if (!pod_consistent(p)) {
        gx_why_set(why, "%.100s:%zu: column gpu_milli: %d does not fit num_gpu %d", r->file,
                   r->line, p->gpu_milli, p->num_gpu);
        return false;
    }
    return true;
}

static bool
node_check(const struct reader *r, const void *row, struct gx_why *why)
{
    (void)r;
    (void)row;
    (void)why;
    return true;
}

/*
 * Read every row of @text into a heap array of @rsize-byte rows, columns per
 * @cols; @init prepares each row (defaults for optional columns), @check
 * judges a whole row once its columns are read.
 */
static enum gx_err
parse_rows(const char *text, size_t len, const char *file, const struct col *cols, size_t n_cols,
           size_t rsize, void (*init)(void *row),
           bool (*check)(const struct reader *r, const void *row, struct gx_why *why), void **out,
           size_t *n_out, struct gx_why *why)
{
    struct reader r = {.p = text, .end = text + len, .file = file != NULL ? file : "-"};
    int pos[TRACE_MAX_COLS];
    char *rows = NULL;
    size_t n = 0, cap = 0;
    bool bad = false;

    if (!next_row(&r, why, &bad)) {
        if (!bad) {
            gx_why_set(why, "%.100s: empty file, no header", r.file);
        }
        return GX_EPARSE;
    }
    if (!map_header(&r, cols, n_cols, pos, why)) {
        return GX_EPARSE;
    }
    while (next_row(&r, why, &bad)) {
        char *row;
        if (n == cap) {
            size_t ncap = cap ? cap * 2 : 1024;
            char *nr = ncap <= TRACE_MAX_ROWS ? realloc(rows, ncap * rsize) : NULL;
            if (nr == NULL) {
                free(rows);
                return GX_ENOMEM;
            }
            rows = nr;
            cap = ncap;
        }
        row = rows + n * rsize;
        memset(row, 0, rsize);
        init(row);
        for (size_t c = 0; c < n_cols; c++) {
            if (pos[c] < 0) {
                continue;
            }
            if ((size_t)pos[c] >= r.nf) {
                gx_why_set(why, "%.100s:%zu: column %s: missing (row has %zu columns)", r.file,
                           r.line, cols[c].name, r.nf);
                free(rows);
                return GX_EPARSE;
            }
            if (!store(&r, &cols[c], r.f[pos[c]], r.flen[pos[c]], row, why)) {
                free(rows);
                return GX_EPARSE;
            }
        }
        if (!check(&r, row, why)) {
            free(rows);
            return GX_EPARSE;
        }
        n++;
    }
    if (bad) {
        free(rows);
        return GX_EPARSE;
    }
    *out = rows;
    *n_out = n;
    return GX_OK;
}

enum gx_err
gx_trace_parse_nodes(const char *text, size_t len, const char *file, struct gx_trace_node **out,
                     size_t *n, struct gx_why *why)
{
    void *rows = NULL;
    enum gx_err rc = parse_rows(text, len, file, node_cols, GX_ARRAY_LEN(node_cols),
                                sizeof(struct gx_trace_node), node_init, node_check, &rows, n, why);

    if (rc == GX_OK) {
        *out = rows;
    }
    return rc;
}

enum gx_err
gx_trace_parse_pods(const char *text, size_t len, const char *file, struct gx_trace_pod **out,
                    size_t *n, struct gx_why *why)
{
    void *rows = NULL;
    enum gx_err rc = parse_rows(text, len, file, pod_cols, GX_ARRAY_LEN(pod_cols),
                                sizeof(struct gx_trace_pod), pod_init, pod_check, &rows, n, why);

    if (rc == GX_OK) {
        *out = rows;
    }
    return rc;
}

int64_t
gx_trace_pod_milli(const struct gx_trace_pod *p)
{
    if (p->num_gpu == 1 && p->gpu_milli > 0 && p->gpu_milli < 1000) {
        return p->gpu_milli;
    }
    return (int64_t)p->num_gpu * 1000;
}

bool
gx_trace_spec_accepts(const char *spec, const char *model)
{
    size_t ml = strlen(model);
    const char *s = spec;

    if (spec[0] == '\0') {
        return true;
    }
    while (*s != '\0') {
        const char *bar = strchr(s, '|');
        size_t n = bar != NULL ? (size_t)(bar - s) : strlen(s);
        if (n == ml && memcmp(s, model, n) == 0) {
            return true;
        }
        s += n;
        if (*s == '|') {
            s++;
        }
    }
    return false;
}
