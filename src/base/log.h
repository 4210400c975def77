/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.h - one line per event on stderr:
 *   ts=2026-11-29T14:00:00.123Z level=info msg="message" key=value ...
 * Messages are lowercase, failure first. Never pass a token or a secret.
 * Not thread-safe by design: only the event-loop thread logs.
 */
#ifndef GX_LOG_H
#define GX_LOG_H

#include <stdio.h>

#include "common.h"

/* Lines one message text may write per window; the rest are counted. */
#define GX_LOG_BURST 10
/* The window of GX_LOG_BURST, milliseconds. */
#define GX_LOG_WINDOW_MS 10000

enum gx_log_level { GX_LOG_DEBUG, GX_LOG_INFO, GX_LOG_WARN, GX_LOG_ERROR };

/** Set the lowest level that is written. */
void gx_log_set_level(enum gx_log_level level);

/** Parse "debug" "info" "warn" "error"; false if unknown. */
bool gx_log_level_parse(const char *s, enum gx_log_level *out);

/** True when @level would be written (to skip building debug lines). */
bool gx_log_enabled(enum gx_log_level level);

/**
 * Write one line. @msg is quoted; @kvfmt (may be NULL) is appended verbatim
 * after formatting and should be "key=value key2=%s ..." text. Values that
 * may hold spaces must be quoted by the caller with gx_log_quote().
 */
void gx_log(enum gx_log_level level, const char *msg, const char *kvfmt, ...) GX_PRINTF(3, 4);

/**
 * gx_log without the rate limit, for lines an operator's own action causes
 * (a config reload): each one must be seen, and a client cannot cause them.
 */
void gx_log_always(enum gx_log_level level, const char *msg, const char *kvfmt, ...)
    GX_PRINTF(3, 4);

/**
 * Rate limit: info, warn and error lines of one @msg literal beyond
 * GX_LOG_BURST per GX_LOG_WINDOW_MS are not written; the first line of
 * that message after the window (or gx_log_tick) writes
 * "similar log lines suppressed suppressed=N of=\"msg\"". Call
 * gx_log_tick about once a second so the count appears even when the
 * message stops.
 */
void gx_log_tick(void);

/** Lines not written by the rate limit since start (for /metrics). */
uint64_t gx_log_suppressed_total(void);

/** Tests: the clock of the rate limit (NULL: gx_mono_ms). */
void gx_log_set_clock(int64_t (*now_ms)(void));

/** Tests: write lines to @f instead of stderr (NULL: stderr). */
void gx_log_set_sink(FILE *f);

/**
 * Quote @s for a log value into @out (size @n): wraps in double quotes and
 * escapes '"', '\\' and control bytes. Returns @out.
 */
const char *gx_log_quote(char *out, size_t n, const char *s);

/** "@ns/@name" quoted like gx_log_quote: pod names in log lines come from clients. */
const char *gx_log_quote_pod(char *out, size_t n, const char *ns, const char *name);

#define gx_debug(msg, ...) gx_log(GX_LOG_DEBUG, msg, __VA_ARGS__)
#define gx_info(msg, ...) gx_log(GX_LOG_INFO, msg, __VA_ARGS__)
#define gx_warn(msg, ...) gx_log(GX_LOG_WARN, msg, __VA_ARGS__)
#define gx_error(msg, ...) gx_log(GX_LOG_ERROR, msg, __VA_ARGS__)

#endif
