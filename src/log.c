/* SPDX-License-Identifier: Apache-2.0 */
/* log.c - leveled key=value lines on stderr. */
#include "gx/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static enum gx_log_level min_level = GX_LOG_INFO;

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

void
gx_log(enum gx_log_level level, const char *msg, const char *kvfmt, ...)
{
    char line[2048], ts[32], qmsg[512];
    struct timespec now;
    struct tm tm;
    size_t o;
    int n;

    if (!gx_log_enabled(level)) {
        return;
    }
    (void)clock_gettime(CLOCK_REALTIME, &now);
    (void)gmtime_r(&now.tv_sec, &tm);
    (void)strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%S", &tm);
    n = snprintf(line, sizeof(line), "ts=%s.%03ldZ level=%s msg=%s", ts, now.tv_nsec / 1000000L,
                 level_names[level], gx_log_quote(qmsg, sizeof(qmsg), msg));
    o = n < 0 ? 0 : (size_t)n;
    if (kvfmt != NULL && o + 2 < sizeof(line)) {
        va_list ap;
        line[o++] = ' ';
        va_start(ap, kvfmt);
        n = vsnprintf(line + o, sizeof(line) - o, kvfmt, ap);
        va_end(ap);
        o += n < 0 ? 0 : (size_t)n;
    }
    if (o >= sizeof(line) - 1) {
        o = sizeof(line) - 2;
    }
    line[o++] = '\n';
    line[o] = '\0';
    (void)fputs(line, stderr);
}
