/* SPDX-License-Identifier: Apache-2.0 */
/* common.c - error strings, clocks, small string and file helpers. */
#include "common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

const char *
gx_strerror(enum gx_err err)
{
    switch (err) {
    case GX_OK:
        return "ok";
    case GX_ENOMEM:
        return "out of memory";
    case GX_EINVAL:
        return "invalid argument";
    case GX_EPARSE:
        return "parse error";
    case GX_ETOOBIG:
        return "too big";
    case GX_ENOTFOUND:
        return "not found";
    case GX_ECONFLICT:
        return "conflict";
    case GX_ETIMEDOUT:
        return "timed out";
    case GX_EUPSTREAM:
        return "upstream error";
    case GX_EIO:
        return "i/o error";
    }
    return "unknown error";
}

void
gx_why_set(struct gx_why *why, const char *fmt, ...)
{
    va_list ap;

    if (why == NULL) {
        return;
    }
    va_start(ap, fmt);
    (void)vsnprintf(why->text, sizeof(why->text), fmt, ap);
    va_end(ap);
}

int
gx_usage_error(const char *help, const char *fmt, ...)
{
    va_list ap;

    (void)fputs("gpu-extender: ", stderr);
    va_start(ap, fmt);
    (void)vfprintf(stderr, fmt, ap);
    va_end(ap);
    (void)fprintf(stderr, "\nsee %s\n", help);
    return 2;
}

void
gx_why_prefix(struct gx_why *why, const char *fmt, ...)
{
    char prefix[128], old[sizeof(why->text)];
    size_t n, rest;
    va_list ap;

    if (why == NULL) {
        return;
    }
    va_start(ap, fmt);
    (void)vsnprintf(prefix, sizeof(prefix), fmt, ap);
    va_end(ap);
    memcpy(old, why->text, sizeof(old));
    n = strlen(prefix);
    if (n + 2 >= sizeof(why->text)) {
        n = sizeof(why->text) - 3;
    }
    memcpy(why->text, prefix, n);
    memcpy(why->text + n, ": ", 2);
    rest = sizeof(why->text) - n - 3;
    old[rest < sizeof(old) ? rest : sizeof(old) - 1] = '\0';
    memcpy(why->text + n + 2, old, strlen(old) + 1);
}

static int64_t
clock_ms(clockid_t id)
{
    struct timespec ts;

    (void)clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t
gx_mono_ms(void)
{
    return clock_ms(CLOCK_MONOTONIC);
}

int64_t
gx_mono_us(void)
{
    struct timespec ts;

    (void)clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
gx_wall_ms(void)
{
    return clock_ms(CLOCK_REALTIME);
}

char *
gx_strndup(const char *s, size_t len)
{
    char *p = malloc(len + 1);

    if (p == NULL) {
        return NULL;
    }
    memcpy(p, s, len);
    p[len] = '\0';
    return p;
}

uint64_t
gx_rand_next(uint64_t *state)
{
    uint64_t x = *state != 0 ? *state : 0x9e3779b97f4a7c15ULL;

    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *state = x;
    return x;
}

int64_t
gx_jitter(int64_t base_ms, int pct, uint64_t *rng)
{
    int64_t span = base_ms * 2 * pct / 100;
    uint64_t x = gx_rand_next(rng);

    if (span <= 0) {
        return base_ms;
    }
    return base_ms - span / 2 + (int64_t)(x % (uint64_t)(span + 1));
}

int64_t
gx_backoff_next(int64_t cur_ms, int64_t start_ms, int64_t max_ms)
{
    if (cur_ms < start_ms) {
        return start_ms;
    }
    return cur_ms >= max_ms / 2 ? max_ms : cur_ms * 2;
}

/* Fill @buf from @have up to @window with @f; GX_EIO on a read error. */
static enum gx_err
fill(FILE *f, char *buf, size_t window, size_t *have, size_t *got)
{
    *got = fread(buf + *have, 1, window - *have, f);
    *have += *got;
    return *got == 0 && ferror(f) ? GX_EIO : GX_OK;
}

enum gx_err
gx_read_chunks(const char *path, size_t max_bytes, size_t window, gx_chunk_cb cb, void *ctx,
               struct gx_why *why)
{
    FILE *f = fopen(path, "rb");
    char *buf = malloc(window);
    size_t have = 0, total = 0, got = 0, used = 0;
    enum gx_err rc = GX_OK;

    if (f == NULL || buf == NULL) {
        rc = f == NULL ? GX_ENOTFOUND : GX_ENOMEM;
        gx_why_set(why, "%s", f == NULL ? "cannot open the file" : "out of memory");
    }
    while (rc == GX_OK) {
        if ((rc = fill(f, buf, window, &have, &got)) != GX_OK) {
            gx_why_set(why, "read error");
            break;
        }
        total += got;
        if (total > max_bytes) {
            rc = GX_ETOOBIG;
            gx_why_set(why, "larger than %zu bytes", max_bytes);
            break;
        }
        if ((rc = cb(ctx, buf, have, got == 0, &used, why)) != GX_OK) {
            gx_why_prefix(why, "near byte %zu", total - have);
            break;
        }
        if (got == 0) {
            break;
        }
        if (used == 0 && have == window) {
            rc = GX_ETOOBIG;
            gx_why_set(why, "a line longer than %zu bytes near byte %zu", window, total - have);
            break;
        }
        memmove(buf, buf + used, have - used);
        have -= used;
    }
    if (f != NULL) {
        (void)fclose(f);
    }
    free(buf);
    return rc;
}

bool
gx_stamp_changed(const char *path, struct gx_stamp *st)
{
    struct stat s;

    if (stat(path, &s) != 0) {
        return false;
    }
    if ((int64_t)s.st_mtime == st->mtime && (int64_t)s.st_size == st->size &&
        (uint64_t)s.st_ino == st->ino) {
        return false;
    }
    st->mtime = (int64_t)s.st_mtime;
    st->size = (int64_t)s.st_size;
    st->ino = (uint64_t)s.st_ino;
    return true;
}

/* Read @f to its end, at most @cap bytes: a pipe's size is known only at its end. */
static enum gx_err
read_stream(FILE *f, size_t cap, char **out, size_t *len)
{
    size_t n = 0, size = 0;
    char *data = NULL;

    for (;;) {
        if (n == size) {
            size_t want = size == 0 ? 65536 : size * 2;
            char *p = realloc(data, want + 1); /* full and not past the cap: n == size <= cap */
            if (p == NULL) {
                free(data);
                return GX_ENOMEM;
            }
            data = p;
            size = want;
        }
        n += fread(data + n, 1, size - n, f);
        if (n > cap) {
            free(data);
            return GX_ETOOBIG;
        }
        if (feof(f) || ferror(f)) {
            break;
        }
    }
    if (ferror(f)) {
        free(data);
        return GX_EIO;
    }
    data[n] = '\0';
    *out = data;
    *len = n;
    return GX_OK;
}

enum gx_err
gx_read_file(const char *path, size_t cap, char **out, size_t *len)
{
    FILE *f = NULL;
    char *data = NULL;
    struct stat st;
    size_t n;
    enum gx_err rc = GX_EIO;

    f = fopen(strcmp(path, "-") == 0 ? "/dev/stdin" : path, "rb"); /* "-": stdin, as tools do */
    if (f == NULL) {
        return errno == ENOENT ? GX_ENOTFOUND : GX_EIO;
    }
    if (fstat(fileno(f), &st) != 0) {
        goto out;
    }
    if (!S_ISREG(st.st_mode)) {
        rc = read_stream(f, cap, out, len); /* a pipe, /dev/stdin: no size to trust */
        goto out;
    }
    if ((uint64_t)st.st_size > cap) {
        rc = GX_ETOOBIG;
        goto out;
    }
    data = malloc((size_t)st.st_size + 1);
    if (data == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    n = fread(data, 1, (size_t)st.st_size, f);
    if (n != (size_t)st.st_size || ferror(f)) {
        goto out;
    }
    data[n] = '\0';
    *out = data;
    *len = n;
    data = NULL;
    rc = GX_OK;
out:
    free(data);
    (void)fclose(f);
    return rc;
}

uint64_t
gx_hash(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 1099511628211ULL;
    }
    return h;
}

uint64_t
gx_hash_mem(const void *data, size_t len)
{
    const unsigned char *s = data;
    const uint64_t k = 0x9e3779b97f4a7c15ULL;
    uint64_t h = len * k, w = 0;
    size_t i = 0;

    for (; i + 8 <= len; i += 8) {
        memcpy(&w, s + i, 8);
        h = (h ^ w) * k;
        h ^= h >> 29;
    }
    if (i < len && len >= 8) {
        memcpy(&w, s + len - 8, 8); /* the tail, overlapping: no byte-wise copy to stall on */
        h = (h ^ w) * k;
    } else if (i < len) {
        for (w = 0; i < len; i++) {
            w = w << 8 | s[i];
        }
        h = (h ^ w) * k;
    }
    h ^= h >> 32;
    h *= 0xd6e8feb86659fd93ULL;
    return h ^ (h >> 32);
}
