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
 */
#include "gx/json.h"

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
static inline void
json_ws(struct gx_json *j)
{
    const char *p = j->p;
    size_t pos = j->pos, len = j->len;

    /* Compact JSON (what Go and Prometheus send) has no whitespace at all. */
    if (pos < len && (unsigned char)p[pos] > ' ') {
        return;
    }
    while (pos < len && (p[pos] == ' ' || p[pos] == '\n' || p[pos] == '\r' || p[pos] == '\t')) {
        pos++;
    }
    j->pos = pos;
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
/* Position of the first '"', '\\' or control byte at or after @pos, or @len. */
static inline size_t
json_find_special(const unsigned char *p, size_t pos, size_t len)
{
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i ctl = _mm_set1_epi8(0x1f);

    while (len - pos >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + pos));
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
        int mask = _mm_movemask_epi8(m);
        if (mask != 0) {
            return pos + (size_t)__builtin_ctz((unsigned)mask);
        }
        pos += 16;
    }
    while (pos < len && p[pos] != '"' && p[pos] != '\\' && p[pos] >= 0x20) {
        pos++;
    }
    return pos;
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

/* Position of the first '"', '\\' or control byte at or after @pos, or @len. */
static inline size_t
json_find_special(const unsigned char *p, size_t pos, size_t len)
{
    uint64_t w;

    while (len - pos >= 8) {
        memcpy(&w, p + pos, 8);
        if (json_word_special(w))
            break;
        pos += 8;
    }
    while (pos < len && p[pos] != '"' && p[pos] != '\\' && p[pos] >= 0x20)
        pos++;
    return pos;
}
#endif

/*
 * Scan the string whose opening quote is at the cursor; leave the cursor
 * after the closing quote. *has_esc tells whether a '\\' occurred.
 * GX_EPARSE on a raw control character, a bad escape or no closing quote.
 */
static enum gx_err
json_scan_string(struct gx_json *j, bool *has_esc)
{
    const unsigned char *p = (const unsigned char *)j->p;
    size_t len = j->len, pos = j->pos + 1;
    bool esc = false;

    for (;;) {
        pos = json_find_special(p, pos, len);
        if (pos >= len) {
            return json_expected(j, pos, "'\"' to end the string");
        }
        if (p[pos] == '"') {
            break;
        }
        if (p[pos] < 0x20) {
            return json_expected(j, pos, "an escaped control character in a string");
        }
        /* backslash */
        esc = true;
        if (pos + 1 >= len) {
            return json_expected(j, pos + 1, "an escape character");
        }
        switch (p[pos + 1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            pos += 2;
            break;
        case 'u':
            if (len - pos < 6 || json_hex(p[pos + 2]) < 0 || json_hex(p[pos + 3]) < 0 ||
                json_hex(p[pos + 4]) < 0 || json_hex(p[pos + 5]) < 0) {
                return json_expected(j, pos, "four hex digits after \\u");
            }
            pos += 6;
            break;
        default:
            return json_expected(j, pos, "a valid escape (\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\u)");
        }
    }
    j->pos = pos + 1;
    if (has_esc != NULL) {
        *has_esc = esc;
    }
    return GX_OK;
}

/* Scan a number at the cursor (strict grammar: no leading zeros, no '+', no bare '.'). */
static enum gx_err
json_scan_number(struct gx_json *j)
{
    const char *p = j->p;
    size_t len = j->len, pos = j->pos;

    if (pos < len && p[pos] == '-') {
        pos++;
    }
    if (pos < len && p[pos] == '0') {
        pos++;
    } else if (pos < len && p[pos] >= '1' && p[pos] <= '9') {
        while (pos < len && p[pos] >= '0' && p[pos] <= '9') {
            pos++;
        }
    } else {
        return json_expected(j, pos, "a digit");
    }
    if (pos < len && p[pos] == '.') {
        pos++;
        if (pos >= len || p[pos] < '0' || p[pos] > '9') {
            return json_expected(j, pos, "a digit after '.'");
        }
        while (pos < len && p[pos] >= '0' && p[pos] <= '9') {
            pos++;
        }
    }
    if (pos < len && (p[pos] == 'e' || p[pos] == 'E')) {
        pos++;
        if (pos < len && (p[pos] == '+' || p[pos] == '-')) {
            pos++;
        }
        if (pos >= len || p[pos] < '0' || p[pos] > '9') {
            return json_expected(j, pos, "a digit in the exponent");
        }
        while (pos < len && p[pos] >= '0' && p[pos] <= '9') {
            pos++;
        }
    }
    j->pos = pos;
    return GX_OK;
}

/* Scan one of true/false/null at the cursor. */
static enum gx_err
json_scan_literal(struct gx_json *j)
{
    static const char *const lits[] = {"true", "false", "null"};
    const char *at = j->p + j->pos;
    size_t left = j->len - j->pos;

    for (size_t i = 0; i < GX_ARRAY_LEN(lits); i++) {
        size_t n = strlen(lits[i]);
        if (at[0] == lits[i][0]) {
            if (left < n || memcmp(at, lits[i], n) != 0) {
                return json_expected(j, j->pos, lits[i]);
            }
            j->pos += n;
            return GX_OK;
        }
    }
    return json_expected(j, j->pos, "a value");
}

/* Skip the scalar starting with @c at the cursor. */
static enum gx_err
json_skip_scalar(struct gx_json *j, char c)
{
    if (c == '"') {
        return json_scan_string(j, NULL);
    }
    if (c == 't' || c == 'f' || c == 'n') {
        return json_scan_literal(j);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
        return json_scan_number(j);
    }
    return json_expected(j, j->pos, "a value");
}

/*
 * Skip a value with an explicit stack of container kinds (one byte per
 * level: 1 = object). Nesting counts on top of the containers already entered.
 */
enum gx_err
gx_json_skip(struct gx_json *j)
{
    unsigned char is_obj[JSON_STACK_LEVELS];
    int d = 0, room = j->max_depth - j->depth;
    enum gx_err rc;
    char c;

    c = gx_json_peek(j);
    if (c != '{' && c != '[') {
        return json_skip_scalar(j, c);
    }
value:
    c = gx_json_peek(j);
    if (c == '{') {
        if (d >= room) {
            return json_too_deep(j);
        }
        is_obj[d] = 1;
        d++;
        j->pos++;
        if (gx_json_peek(j) == '}') {
            j->pos++;
            d--;
            goto after;
        }
        goto key;
    }
    if (c == '[') {
        if (d >= room) {
            return json_too_deep(j);
        }
        is_obj[d] = 0;
        d++;
        j->pos++;
        if (gx_json_peek(j) == ']') {
            j->pos++;
            d--;
            goto after;
        }
        goto value;
    }
    if ((rc = json_skip_scalar(j, c)) != GX_OK) {
        return rc;
    }
    goto after;

key:
    if (gx_json_peek(j) != '"') {
        return json_expected(j, j->pos, "a string key");
    }
    if ((rc = json_scan_string(j, NULL)) != GX_OK) {
        return rc;
    }
    if (gx_json_peek(j) != ':') {
        return json_expected(j, j->pos, "':'");
    }
    j->pos++;
    goto value;

after:
    if (d == 0) {
        return GX_OK;
    }
    c = gx_json_peek(j);
    if (is_obj[d - 1]) {
        if (c == ',') {
            j->pos++;
            goto key;
        }
        if (c == '}') {
            j->pos++;
            d--;
            goto after;
        }
        return json_expected(j, j->pos, "',' or '}'");
    }
    if (c == ',') {
        j->pos++;
        goto value;
    }
    if (c == ']') {
        j->pos++;
        d--;
        goto after;
    }
    return json_expected(j, j->pos, "',' or ']'");
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
gx_json_string(struct gx_json *j, struct gx_arena *a, const char **out, size_t *outlen)
{
    size_t start, n;
    bool esc = false;
    enum gx_err rc;
    char *s;

    if (gx_json_peek(j) != '"') {
        return json_expected(j, j->pos, "a string");
    }
    start = j->pos;
    if ((rc = json_scan_string(j, &esc)) != GX_OK) {
        return rc;
    }
    n = j->pos - start - 2;
    if (!esc) {
        s = gx_arena_strndup(a, j->p + start + 1, n);
    } else {
        s = gx_arena_alloc(a, n + 1);
        if (s != NULL) {
            n = json_unescape(j->p + start + 1, n, s);
        }
    }
    if (s == NULL) {
        gx_why_set(j->why, "out of memory decoding a string");
        return GX_ENOMEM;
    }
    s[n] = '\0';
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
