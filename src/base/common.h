/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.h - error codes, attributes, clocks and the "why" buffer shared by
 * every module. No allocation happens here.
 */
#ifndef GX_COMMON_H
#define GX_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GX_WUR __attribute__((warn_unused_result))
#define GX_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#define GX_UNUSED __attribute__((unused))
#define GX_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

/** Result of every fallible call: 0 or a negative code. */
enum gx_err {
    GX_OK = 0,
    GX_ENOMEM = -1,
    GX_EINVAL = -2,
    GX_EPARSE = -3,
    GX_ETOOBIG = -4,
    GX_ENOTFOUND = -5,
    GX_ECONFLICT = -6,
    GX_ETIMEDOUT = -7,
    GX_EUPSTREAM = -8,
    GX_EIO = -9,
};

/** Short lowercase text for @err; never NULL. */
const char *gx_strerror(enum gx_err err);

/**
 * A fixed buffer a parser fills with the reason it failed ("key 'x': must be
 * a number"); it becomes an HTTP 400 body or a rejected-reload log line.
 */
struct gx_why {
    char text[256];
};

/** Format a reason into @why (may be NULL: then nothing happens). */
void gx_why_set(struct gx_why *why, const char *fmt, ...) GX_PRINTF(2, 3);

/** Prefix the existing reason in @why with "prefix: ". */
void gx_why_prefix(struct gx_why *why, const char *fmt, ...) GX_PRINTF(2, 3);

/**
 * A wrong command line: print "gpu-extender: MESSAGE" and "see @help"
 * (e.g. "gpu-extender --help") on stderr. Returns 2, the exit status of a
 * usage error, for `return gx_usage_error(...)`.
 */
int gx_usage_error(const char *help, const char *fmt, ...) GX_PRINTF(2, 3);

/** Monotonic milliseconds, for intervals and timeouts. */
int64_t gx_mono_ms(void);

/** Monotonic microseconds, for durations that are often under a millisecond. */
int64_t gx_mono_us(void);

/** Wall-clock milliseconds since the epoch, for sample ages. */
int64_t gx_wall_ms(void);

/** Duplicate @len bytes of @s as a NUL-terminated heap string; NULL on ENOMEM. */
char *gx_strndup(const char *s, size_t len);

/** Read a whole file or pipe ("-": stdin) of at most @cap bytes; you own *out (NUL-terminated). */
enum gx_err gx_read_file(const char *path, size_t cap, char **out, size_t *len) GX_WUR;

/**
 * Receives the unread part of a file window: consume a prefix (*@used
 * bytes) of @buf[0..len); @last when the file has ended.
 */
typedef enum gx_err (*gx_chunk_cb)(void *ctx, const char *buf, size_t len, bool last, size_t *used,
                                   struct gx_why *why);

/**
 * Read @path through a window of @window bytes, handing each fill to @cb
 * (which must consume something once the window is full). GX_ENOTFOUND,
 * GX_EIO, GX_ETOOBIG over @max_bytes or for a window @cb cannot consume,
 * or @cb's error; @why says where ("near byte N").
 */
enum gx_err gx_read_chunks(const char *path, size_t max_bytes, size_t window, gx_chunk_cb cb,
                           void *ctx, struct gx_why *why) GX_WUR;

/** What identifies one version of a file: a kubelet ConfigMap swap changes the inode. */
struct gx_stamp {
    int64_t mtime;
    int64_t size;
    uint64_t ino;
};

/**
 * True when @path exists and its stamp differs from @st, which is then
 * updated (a missing file is "unchanged": the last good copy stays).
 */
bool gx_stamp_changed(const char *path, struct gx_stamp *st);

/** A key and its value: labels, annotations, resources, series labels. */
struct gx_kv {
    const char *key;
    const char *value;
};

/** Next value of the xorshift64 generator in *@state (seeded when 0). */
uint64_t gx_rand_next(uint64_t *state);

/** @base_ms with +-@pct % of jitter drawn from *@rng (retries of many clients spread out). */
int64_t gx_jitter(int64_t base_ms, int pct, uint64_t *rng);

/** The backoff after @cur_ms: @start_ms when below it, else doubled, at most @max_ms. */
int64_t gx_backoff_next(int64_t cur_ms, int64_t start_ms, int64_t max_ms);

/** 64-bit FNV-1a of @len bytes. */
uint64_t gx_hash(const void *data, size_t len);

/**
 * A hash for tables in memory, eight bytes a step (FNV-1a's byte loop was
 * most of a 5,000-node snapshot build). Never persist it: it may change;
 * gx_hash is the one that names things outside the process.
 */
uint64_t gx_hash_mem(const void *data, size_t len);

#endif
