/* SPDX-License-Identifier: Apache-2.0 */
/*
 * json.c - validating JSON scanner (RFC 8259) for hot paths. It never
 * builds a tree: callers walk objects and arrays, skip what they do not
 * need and decode the few strings they keep. gx_json_skip is iterative
 * (a bit stack, no recursion), and strings are scanned 16 bytes at a time
 * (SSE2; 8 with portable word tricks elsewhere).
 *
 * Not done here: UTF-8 validation inside strings (Go's decoder replaces bad
 * bytes; our encoder gx_buf_add_json_str does when writing them back),
 * number conversion (callers strtod the span they skipped).
 *
 * Why one file: the scanner, its 16-byte string path and its number
 * grammar are one hot loop.
 */
#include "json.h"

#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* Deepest nesting gx_json_skip can track, whatever max_depth says. */
#define JSON_STACK_LEVELS 1024

void
gx_json_init(struct gx_json *j, const char *p, size_t len, int max_depth, struct gx_why *why)
{
    j->p = p;
    j->len = len;
    j->pos = 0;
    j->max_depth = max_depth > JSON_STACK_LEVELS ? JSON_STACK_LEVELS : max_depth;
    j->why = why;
    j->depth = 0;
    j->first = false;
}

/* Record "offset N: expected X" and return GX_EPARSE. */
static enum gx_err
json_expected(struct gx_json *j, size_t at, const char *what)
{
    if (at >= j->len) {
        gx_why_set(j->why, "offset %zu: expected %s, found end of input", at, what);
    } else {
        gx_why_set(j->why, "offset %zu: expected %s", at, what);
    }
    return GX_EPARSE;
}

/* Record the depth error and return GX_ETOOBIG. */
static enum gx_err
json_too_deep(struct gx_json *j)
{
    gx_why_set(j->why, "JSON nested deeper than %d", j->max_depth);
    return GX_ETOOBIG;
}

/* Advance over JSON whitespace. */
static inline const unsigned char *
json_ws_at(const unsigned char *p, const unsigned char *end)
{
    /* Compact JSON (what Go and Prometheus send) has no whitespace at all. */
    while (p < end && *p <= ' ' && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
        p++;
    }
    return p;
}

/* Advance the cursor over JSON whitespace. */
static inline void
json_ws(struct gx_json *j)
{
    const unsigned char *base = (const unsigned char *)j->p;

    if (j->pos < j->len && base[j->pos] > ' ') {
        return;
    }
    j->pos = (size_t)(json_ws_at(base + j->pos, base + j->len) - base);
}

char
gx_json_peek(struct gx_json *j)
{
    json_ws(j);
    if (j->pos >= j->len) {
        return '\0';
    }
    return j->p[j->pos];
}

/* Value of a hex digit, or -1. */
static inline int
json_hex(unsigned char c)
{
    if (c >= '0' && c <= '9') {
        return c - '0';
    }
    if (c >= 'a' && c <= 'f') {
        return c - 'a' + 10;
    }
    if (c >= 'A' && c <= 'F') {
        return c - 'A' + 10;
    }
    return -1;
}

#if defined(__SSE2__)
/* The first '"', '\\' or control byte at or after @p, or @end. */
static inline __attribute__((always_inline)) const unsigned char *
json_find_special(const unsigned char *p, const unsigned char *end)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1f);

    while (end - p >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
        int mask = _mm_movemask_epi8(m);
        if (mask != 0) {
            return p + __builtin_ctz((unsigned)mask);
        }
        p += 16;
    }
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20) {
        p++;
    }
    return p;
}
#else
/* True when some byte of @w is '"', '\\' or below 0x20 (exact: no false positives). */
static inline bool
json_word_special(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t q = w ^ (ones * '"');
    uint64_t b = w ^ (ones * '\\');
    uint64_t t = ((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w);

    return (t & highs) != 0;
}

/* The first '"', '\\' or control byte at or after @p, or @end. */
static inline const unsigned char *
json_find_special(const unsigned char *p, const unsigned char *end)
{
    uint64_t w;

    while (end - p >= 8) {
        memcpy(&w, p, 8);
        if (json_word_special(w)) {
            break;
        }
        p += 8;
    }
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20) {
        p++;
    }
    return p;
}
#endif

/*
 * Where a pointer-based scanner failed: the byte it stopped at and what it
 * expected there (json_fail turns it into the "offset N: expected X" reason).
 */
struct json_err {
    const unsigned char *at;
    const char *what;
};

/* Record the failure of a pointer-based scanner in @j (cursor included). */
static enum gx_err
json_fail(struct gx_json *j, const struct json_err *e)
{
    j->pos = (size_t)(e->at - (const unsigned char *)j->p);
    return json_expected(j, j->pos, e->what);
}

/*
 * Scan the rest of a string whose opening quote is just before @p; return
 * the byte after the closing quote, or NULL with @e filled on a raw control
 * character, a bad escape or no closing quote. *esc is set when a '\\'
 * occurred (left alone otherwise).
 */
static inline __attribute__((always_inline)) const unsigned char *
json_str_end(const unsigned char *p, const unsigned char *end, bool *esc, struct json_err *e)
{
    for (;;) {
        p = json_find_special(p, end);
        if (p >= end) {
            e->at = p;
            e->what = "'\"' to end the string";
            return NULL;
        }
        if (*p == '"') {
            return p + 1;
        }
        if (*p < 0x20) {
            e->at = p;
            e->what = "an escaped control character in a string";
            return NULL;
        }
        /* backslash */
        *esc = true;
        if (end - p < 2) {
            e->at = p + 1;
            e->what = "an escape character";
            return NULL;
        }
        switch (p[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            p += 2;
            break;
        case 'u':
            if (end - p < 6 || json_hex(p[2]) < 0 || json_hex(p[3]) < 0 || json_hex(p[4]) < 0 ||
                json_hex(p[5]) < 0) {
                e->at = p;
                e->what = "four hex digits after \\u";
                return NULL;
            }
            p += 6;
            break;
        default:
            e->at = p;
            e->what = "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)";
            return NULL;
        }
    }
}

/*
 * Scan the string whose opening quote is at the cursor; leave the cursor
 * after the closing quote. *has_esc tells whether a '\\' occurred.
 * GX_EPARSE on a raw control character, a bad escape or no closing quote.
 */
static enum gx_err
json_scan_string(struct gx_json *j, bool *has_esc)
{
    const unsigned char *base = (const unsigned char *)j->p, *q;
    struct json_err e;
    bool esc = false;

    q = json_str_end(base + j->pos + 1, base + j->len, &esc, &e);
    if (q == NULL) {
        return json_expected(j, (size_t)(e.at - base), e.what);
    }
    j->pos = (size_t)(q - base);
    if (has_esc != NULL) {
        *has_esc = esc;
    }
    return GX_OK;
}

/* Advance over ASCII digits. */
static inline const unsigned char *
json_digits(const unsigned char *p, const unsigned char *end)
{
    while (p < end && *p >= '0' && *p <= '9') {
        p++;
    }
    return p;
}

/* Scan a number at @p (strict grammar: no leading zeros, no '+', no bare '.'). */
static const unsigned char *
json_num_end(const unsigned char *p, const unsigned char *end, struct json_err *e)
{
    if (p < end && *p == '-') {
        p++;
    }
    if (p < end && *p == '0') {
        p++;
    } else if (p < end && *p >= '1' && *p <= '9') {
        p = json_digits(p + 1, end);
    } else {
        e->at = p;
        e->what = "a digit";
        return NULL;
    }
    if (p < end && *p == '.') {
        p++;
        if (p >= end || *p < '0' || *p > '9') {
            e->at = p;
            e->what = "a digit after '.'";
            return NULL;
        }
        p = json_digits(p, end);
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < end && (*p == '+' || *p == '-')) {
            p++;
        }
        if (p >= end || *p < '0' || *p > '9') {
            e->at = p;
            e->what = "a digit in the exponent";
            return NULL;
        }
        p = json_digits(p, end);
    }
    return p;
}

/* Scan the literal @lit (of @n bytes) that must start at @p. */
static inline const unsigned char *
json_lit_end(const unsigned char *p, const unsigned char *end, const char *lit, size_t n,
             struct json_err *e)
{
    if ((size_t)(end - p) < n || memcmp(p, lit, n) != 0) {
        e->at = p;
        e->what = lit;
        return NULL;
    }
    return p + n;
}

/*
 * The byte at @p after any whitespace (the compact JSON we get has none, so
 * the common case is one compare), or 0 at the end; *pp moves with it.
 */
static inline __attribute__((always_inline)) unsigned char
json_tok(const unsigned char **pp, const unsigned char *end)
{
    const unsigned char *p = *pp;

    if (p<end && * p> ' ') {
        return *p;
    }
    p = json_ws_at(p, end);
    *pp = p;
    return p < end ? *p : 0;
}

/*
 * Skip one value at @p with an explicit stack of container kinds (one byte
 * per level: 1 = object), @room levels deep at most. Returns the byte after
 * the value, or NULL with @e filled (e->what NULL: too deep).
 */
static const unsigned char *
json_skip_at(const unsigned char *p, const unsigned char *end, int room, struct json_err *e)
{
    unsigned char is_obj[JSON_STACK_LEVELS];
    bool esc = false;
    int d = 0;
    unsigned char c;

value:
    switch (json_tok(&p, end)) {
    case '"':
        p = json_str_end(p + 1, end, &esc, e);
        if (p == NULL) {
            return NULL;
        }
        goto after;
    case '{':
        if (d >= room) {
            goto too_deep;
        }
        is_obj[d++] = 1;
        p++;
        if (json_tok(&p, end) == '}') {
            p++;
            d--;
            goto after;
        }
        goto key;
    case '[':
        if (d >= room) {
            goto too_deep;
        }
        is_obj[d++] = 0;
        p++;
        if (json_tok(&p, end) == ']') {
            p++;
            d--;
            goto after;
        }
        goto value;
    case 't':
        p = json_lit_end(p, end, "true", 4, e);
        break;
    case 'f':
        p = json_lit_end(p, end, "false", 5, e);
        break;
    case 'n':
        p = json_lit_end(p, end, "null", 4, e);
        break;
    case '-':
    case '0':
    case '1':
    case '2':
    case '3':
    case '4':
    case '5':
    case '6':
    case '7':
    case '8':
    case '9':
        p = json_num_end(p, end, e);
        break;
    default:
        e->at = p;
        e->what = "a value";
        return NULL;
    }
    if (p == NULL) {
        return NULL;
    }

after:
    if (d == 0) {
        return p;
    }
    c = json_tok(&p, end);
    if (c == ',') {
        p++;
        if (is_obj[d - 1]) {
            goto key;
        }
        goto value;
    }
    if (c == (is_obj[d - 1] ? '}' : ']')) {
        p++;
        d--;
        goto after;
    }
    e->at = p;
    e->what = is_obj[d - 1] ? "',' or '}'" : "',' or ']'";
    return NULL;

key:
    if (json_tok(&p, end) != '"') {
        e->at = p;
        e->what = "a string key";
        return NULL;
    }
    p = json_str_end(p + 1, end, &esc, e);
    if (p == NULL) {
        return NULL;
    }
    if (json_tok(&p, end) != ':') {
        e->at = p;
        e->what = "':'";
        return NULL;
    }
    p++;
    goto value;

too_deep:
    e->at = p;
    e->what = NULL;
    return NULL;
}

/* Skip a value; nesting counts on top of the containers already entered. */
enum gx_err
gx_json_skip(struct gx_json *j)
{
    const unsigned char *base = (const unsigned char *)j->p, *q;
    struct json_err e;

    q = json_skip_at(base + j->pos, base + j->len, j->max_depth - j->depth, &e);
    if (q == NULL) {
        if (e.what == NULL) {
            j->pos = (size_t)(e.at - base);
            return json_too_deep(j);
        }
        return json_fail(j, &e);
    }
    j->pos = (size_t)(q - base);
    return GX_OK;
}

/* Enter a container opened by @open at the cursor. */
static enum gx_err
json_enter(struct gx_json *j, char open, const char *what)
{
    if (gx_json_peek(j) != open) {
        return json_expected(j, j->pos, what);
    }
    if (j->depth >= j->max_depth) {
        return json_too_deep(j);
    }
    j->pos++;
    j->depth++;
    j->first = true;
    return GX_OK;
}

enum gx_err
gx_json_enter_object(struct gx_json *j)
{
    return json_enter(j, '{', "'{'");
}

enum gx_err
gx_json_enter_array(struct gx_json *j)
{
    return json_enter(j, '[', "'['");
}

/*
 * Consume the separator before the next member/element, or the closing
 * @close. Returns 1 when an item follows, 0 at the end, or an error code.
 */
static int
json_next(struct gx_json *j, char close, const char *what, enum gx_err *rc)
{
    char c = gx_json_peek(j);

    if (c == close && j->pos < j->len) {
        j->pos++;
        j->depth--;
        j->first = false;
        return 0;
    }
    if (j->first) {
        j->first = false;
        return 1;
    }
    if (c != ',' || j->pos >= j->len) {
        *rc = json_expected(j, j->pos, what);
        return -1;
    }
    j->pos++;
    return 1;
}

bool
gx_json_next_member(struct gx_json *j, const char **key, size_t *klen, enum gx_err *rc)
{
    enum gx_err err = GX_OK;
    size_t start, end;
    int r;

    r = json_next(j, '}', "',' or '}'", &err);
    if (r <= 0) {
        goto out;
    }
    if (gx_json_peek(j) != '"') {
        err = json_expected(j, j->pos, "a string key");
        goto out;
    }
    start = j->pos;
    if ((err = json_scan_string(j, NULL)) != GX_OK) {
        goto out;
    }
    end = j->pos - 1;
    if (gx_json_peek(j) != ':') {
        err = json_expected(j, j->pos, "':'");
        goto out;
    }
    j->pos++;
    (void)gx_json_peek(j);
    *key = j->p + start + 1;
    *klen = end - start - 1;
    if (rc != NULL) {
        *rc = GX_OK;
    }
    return true;
out:
    if (rc != NULL) {
        *rc = err;
    }
    return false;
}

bool
gx_json_next_element(struct gx_json *j, enum gx_err *rc)
{
    enum gx_err err = GX_OK;
    int r = json_next(j, ']', "',' or ']'", &err);

    if (r == 1 && gx_json_peek(j) == ']') {
        /* "[1,]": a trailing comma. */
        err = json_expected(j, j->pos, "a value");
        r = -1;
    }
    if (rc != NULL) {
        *rc = err;
    }
    return r == 1;
}

bool
gx_json_next_string(struct gx_json *j, const char **raw, size_t *rawlen, bool *has_esc,
                    enum gx_err *rc)
{
    const unsigned char *base = (const unsigned char *)j->p, *end = base + j->len;
    const unsigned char *p = base + j->pos, *q;
    struct json_err e;
    bool esc = false;

    /* The common case inline: ',' (none after '[') and a string. */
    if (!j->first) {
        if (json_tok(&p, end) != ',') {
            goto slow;
        }
        p++;
    }
    if (json_tok(&p, end) != '"') {
        goto slow;
    }
    q = json_str_end(p + 1, end, &esc, &e);
    if (q == NULL) {
        *rc = json_fail(j, &e);
        return false;
    }
    j->first = false;
    j->pos = (size_t)(q - base);
    *raw = (const char *)p + 1;
    *rawlen = (size_t)(q - p) - 2;
    *has_esc = esc;
    *rc = GX_OK;
    return true;

slow:
    /* The cursor has not moved: let the general functions sort it out. */
    if (!gx_json_next_element(j, rc)) {
        return false;
    }
    if (gx_json_peek(j) != '"') {
        *rc = GX_EINVAL;
        return false;
    }
    *rc = gx_json_string_raw(j, raw, rawlen, has_esc);
    return *rc == GX_OK;
}

bool
gx_json_take_null(struct gx_json *j)
{
    if (gx_json_peek(j) != 'n' || j->len - j->pos < 4 || memcmp(j->p + j->pos, "null", 4) != 0) {
        return false;
    }
    j->pos += 4;
    return true;
}

/* Append code point @cp to @dst as UTF-8; returns bytes written. */
static size_t
json_put_utf8(char *dst, uint32_t cp)
{
    unsigned char *d = (unsigned char *)dst;

    if (cp < 0x80) {
        d[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (unsigned char)(0xc0 | (cp >> 6));
        d[1] = (unsigned char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (unsigned char)(0xe0 | (cp >> 12));
        d[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
        d[2] = (unsigned char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (unsigned char)(0xf0 | (cp >> 18));
    d[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
    d[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
    d[3] = (unsigned char)(0x80 | (cp & 0x3f));
    return 4;
}

/* Code unit of the \u escape (four hex digits) at @s (@n bytes available), or -1. */
static long
json_u4(const unsigned char *s, size_t n)
{
    long v = 0;

    if (n < 6 || s[0] != '\\' || s[1] != 'u') {
        return -1;
    }
    for (int i = 2; i < 6; i++) {
        int h = json_hex(s[i]);
        if (h < 0) {
            return -1;
        }
        v = v * 16 + h;
    }
    return v;
}

/*
 * Decode the raw string body @s/@n (no quotes) into @dst, which has room for
 * @n bytes: decoding never grows a JSON string. Malformed escapes (only
 * possible for input that was not scanned) are copied literally.
 */
static size_t
json_unescape(const char *s, size_t n, char *dst)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0, o = 0;

    while (i < n) {
        const unsigned char *bs = memchr(p + i, '\\', n - i);
        size_t run = bs == NULL ? n - i : (size_t)(bs - (p + i));
        long cp, lo;

        memcpy(dst + o, p + i, run);
        o += run;
        i += run;
        if (i >= n) {
            break;
        }
        if (i + 1 >= n) {
            dst[o++] = '\\';
            break;
        }
        switch (p[i + 1]) {
        case 'b':
            dst[o++] = '\b';
            break;
        case 'f':
            dst[o++] = '\f';
            break;
        case 'n':
            dst[o++] = '\n';
            break;
        case 'r':
            dst[o++] = '\r';
            break;
        case 't':
            dst[o++] = '\t';
            break;
        case 'u':
            cp = json_u4(p + i, n - i);
            if (cp < 0) {
                dst[o++] = '\\';
                i++;
                continue;
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
                lo = json_u4(p + i + 6, n - i - 6);
                if (lo >= 0xdc00 && lo <= 0xdfff) {
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                    i += 6;
                } else {
                    cp = 0xfffd;
                }
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
                cp = 0xfffd;
            }
            o += json_put_utf8(dst + o, (uint32_t)cp);
            i += 6;
            continue;
        default: /* '"', '\\', '/' and anything unknown: the character itself */
            dst[o++] = (char)p[i + 1];
            break;
        }
        i += 2;
    }
    return o;
}

enum gx_err
gx_json_string_raw(struct gx_json *j, const char **raw, size_t *rawlen, bool *has_esc)
{
    size_t start;
    bool esc = false;
    enum gx_err rc;

    if (gx_json_peek(j) != '"') {
        return json_expected(j, j->pos, "a string");
    }
    start = j->pos;
    if ((rc = json_scan_string(j, &esc)) != GX_OK) {
        return rc;
    }
    *raw = j->p + start + 1;
    *rawlen = j->pos - start - 2;
    *has_esc = esc;
    return GX_OK;
}

size_t
gx_json_unescape(const char *raw, size_t rawlen, char *dst)
{
    size_t n = json_unescape(raw, rawlen, dst);

    dst[n] = '\0';
    return n;
}

enum gx_err
gx_json_string(struct gx_json *j, struct gx_arena *a, const char **out, size_t *outlen)
{
    const char *raw;
    size_t n;
    bool esc;
    enum gx_err rc;
    char *s;

    if ((rc = gx_json_string_raw(j, &raw, &n, &esc)) != GX_OK) {
        return rc;
    }
    if (!esc) {
        s = gx_arena_strndup(a, raw, n);
    } else {
        s = gx_arena_alloc(a, n + 1);
        if (s != NULL) {
            n = gx_json_unescape(raw, n, s);
        }
    }
    if (s == NULL) {
        gx_why_set(j->why, "out of memory decoding a string");
        return GX_ENOMEM;
    }
    *out = s;
    if (outlen != NULL) {
        *outlen = n;
    }
    return GX_OK;
}

/* ASCII lower case, locale-free. */
static inline unsigned char
json_lower(unsigned char c)
{
    return c >= 'A' && c <= 'Z' ? (unsigned char)(c + 32) : c;
}

bool
gx_json_key_is(const char *key, size_t klen, const char *name)
{
    char tmp[512];
    size_t n = strlen(name);

    if (memchr(key, '\\', klen) != NULL) {
        if (klen > sizeof(tmp)) {
            return false;
        }
        klen = json_unescape(key, klen, tmp);
        key = tmp;
    }
    if (klen != n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (json_lower((unsigned char)key[i]) != json_lower((unsigned char)name[i])) {
            return false;
        }
    }
    return true;
}

size_t
gx_json_mark_nul_escapes(char *text, size_t len)
{
    bool in_string = false;
    size_t n = 0;

    for (size_t i = 0; i < len; i++) {
        if (!in_string) {
            in_string = text[i] == '"';
        } else if (text[i] == '"') {
            in_string = false;
        } else if (text[i] == '\\' && i + 1 < len) {
            if (text[i + 1] == 'u' && i + 5 < len && memcmp(text + i + 2, "0000", 4) == 0) {
                memcpy(text + i + 2, "FFFF", 4);
                n++;
            }
            i++; /* the escaped character */
        }
    }
    return n;
}
