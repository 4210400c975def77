/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - leveled key=value lines on stderr, rate-limited per message.
 *
 * A client can make the extender log at will (every refused request is a
 * warn line), so every message text gets at most GX_LOG_BURST lines per
 * GX_LOG_WINDOW_MS; the rest are counted, and when the window is over one
 * line says how many were suppressed. Debug lines are not limited (debug
 * is asked for). The exact numbers of events stay in /metrics.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

/* Slots of the per-message table (message texts are string literals: a few hundred at most). */
#define LOG_SLOTS 512

struct log_slot {
    const char *msg; /* NULL: free */
    int64_t window_start_ms;
    uint32_t lines;      /* written in this window */
    uint64_t suppressed; /* not written in this window */
};

static enum gx_log_level min_level = GX_LOG_INFO;
static struct log_slot slots[LOG_SLOTS];
static uint64_t suppressed_total;
static int64_t (*clock_fn)(void) = gx_mono_ms;
static FILE *sink;

static const char *const level_names[] = {"debug", "info", "warn", "error"};

void
gx_log_set_level(enum gx_log_level level)
{
    min_level = level;
}

bool
gx_log_level_parse(const char *s, enum gx_log_level *out)
{
    for (size_t i = 0; i < GX_ARRAY_LEN(level_names); i++) {
        if (strcmp(s, level_names[i]) == 0) {
            *out = (enum gx_log_level)i;
            return true;
        }
    }
    return false;
}

bool
gx_log_enabled(enum gx_log_level level)
{
    return level >= min_level;
}

const char *
gx_log_quote(char *out, size_t n, const char *s)
{
    size_t o = 0;

    if (n < 3) {
        if (n > 0) {
            out[0] = '\0';
        }
        return out;
    }
    out[o++] = '"';
    for (; s != NULL && *s != '\0' && o + 3 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c < 0x20) {
            out[o++] = ' ';
        } else {
            out[o++] = (char)c;
        }
    }
    out[o++] = '"';
    out[o] = '\0';
    return out;
}

const char *
gx_log_quote_pod(char *out, size_t n, const char *ns, const char *name)
{
    char both[600];

    (void)snprintf(both, sizeof(both), "%s/%s", ns != NULL ? ns : "", name != NULL ? name : "");
    return gx_log_quote(out, n, both);
}

void
gx_log_set_clock(int64_t (*now_ms)(void))
{
    clock_fn = now_ms != NULL ? now_ms : gx_mono_ms;
}

void
gx_log_set_sink(FILE *f)
{
    sink = f;
}

uint64_t
gx_log_suppressed_total(void)
{
    return suppressed_total;
}

static void log_write(enum gx_log_level level, const char *msg, const char *kvfmt, va_list ap);

static void
log_line(enum gx_log_level level, const char *msg, const char *kvfmt, ...)
{
    va_list ap;

    va_start(ap, kvfmt);
    log_write(level, msg, kvfmt, ap);
    va_end(ap);
}

/* Say how many lines of @s were suppressed in its window that just ended. */
static void
slot_flush(struct log_slot *s)
{
    char q[512];

    if (s->suppressed > 0) {
        log_line(GX_LOG_WARN, "similar log lines suppressed", "suppressed=%llu of=%s window_s=%d",
                 (unsigned long long)s->suppressed, gx_log_quote(q, sizeof(q), s->msg),
                 GX_LOG_WINDOW_MS / 1000);
    }
    s->suppressed = 0;
    s->lines = 0;
}

/*
 * The slot of @msg: found by the literal's address (the same text at two
 * call sites gets two slots, which is harmless). NULL only when the table
 * is full, and then the line is written unlimited.
 */
static struct log_slot *
slot_of(const char *msg)
{
    size_t i = ((uintptr_t)msg >> 3) % LOG_SLOTS;

    for (size_t probe = 0; probe < LOG_SLOTS; probe++, i = (i + 1) % LOG_SLOTS) {
        if (slots[i].msg == msg) {
            return &slots[i];
        }
        if (slots[i].msg == NULL) {
            slots[i].msg = msg;
            slots[i].window_start_ms = clock_fn();
            return &slots[i];
        }
    }
    return NULL;
}

/* True when a line of @msg may be written now; counts it otherwise. */
static bool
rate_allow(const char *msg)
{
    struct log_slot *s = slot_of(msg);
    int64_t now = clock_fn();

    if (s == NULL) {
        return true;
    }
    if (now - s->window_start_ms >= GX_LOG_WINDOW_MS) {
        slot_flush(s);
        s->window_start_ms = now;
    }
    if (s->lines < GX_LOG_BURST) {
        s->lines++;
        return true;
    }
    s->suppressed++;
    suppressed_total++;
    return false;
}

void
gx_log_tick(void)
{
    int64_t now = clock_fn();

    for (size_t i = 0; i < LOG_SLOTS; i++) {
        if (slots[i].msg != NULL && slots[i].suppressed > 0 &&
            now - slots[i].window_start_ms >= GX_LOG_WINDOW_MS) {
            slot_flush(&slots[i]);
            slots[i].window_start_ms = now;
        }
    }
}

void
gx_log(enum gx_log_level level, const char *msg, const char *kvfmt, ...)
{
    va_list ap;

    if (!gx_log_enabled(level)) {
        return;
    }
    if (level > GX_LOG_DEBUG && !rate_allow(msg)) {
        return;
    }
    va_start(ap, kvfmt);
    log_write(level, msg, kvfmt, ap);
    va_end(ap);
}

void
gx_log_always(enum gx_log_level level, const char *msg, const char *kvfmt, ...)
{
    va_list ap;

    if (!gx_log_enabled(level)) {
        return;
    }
    va_start(ap, kvfmt);
    log_write(level, msg, kvfmt, ap);
    va_end(ap);
}

static void
log_write(enum gx_log_level level, const char *msg, const char *kvfmt, va_list ap)
{
    char line[2048], ts[32], qmsg[512];
    struct timespec now;
    struct tm tm;
    size_t o;
    int n;

    (void)clock_gettime(CLOCK_REALTIME, &now);
    (void)gmtime_r(&now.tv_sec, &tm);
    (void)strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    n = snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s msg=%s", ts, now.tv_nsec / 1000000L,
                 level_names[level], gx_log_quote(qmsg, sizeof(qmsg), msg));
    o = n < 0 ? 0 : (size_t)n;
    if (kvfmt != NULL && o + 2 < sizeof(line)) {
        line[o++] = ' ';
        n = vsnprintf(line + o, sizeof(line) - o, kvfmt, ap);
        o += n < 0 ? 0 : (size_t)n;
    }
    if (o >= sizeof(line) - 1) {
        o = sizeof(line) - 2;
    }
    line[o++] = '\n';
    line[o] = '\0';
    (void)fputs(line, sink != NULL ? sink : stderr);
}
