/* SPDX-License-Identifier: Apache-2.0 */
/*
 * lines.h - splits a byte stream into newline-terminated lines, as a watch
 * stream delivers events: one JSON object per line, split arbitrarily
 * across reads. A line longer than the cap is an error (memory stays
 * bounded). No I/O.
 */
#ifndef GX_LINES_H
#define GX_LINES_H

#include "buf.h"

struct gx_lines {
    struct gx_buf pending; /* the unfinished last line */
    size_t max_line;
};

/** Receives one complete line without its '\n' (and without a trailing '\r'). */
typedef enum gx_err (*gx_line_cb)(void *ctx, const char *line, size_t len);

/** Initialize with a cap of @max_line bytes per line. Cannot fail. */
void gx_lines_init(struct gx_lines *l, size_t max_line);

/** Free the pending buffer. */
void gx_lines_release(struct gx_lines *l);

/** Forget any unfinished line (after a reconnect). */
void gx_lines_reset(struct gx_lines *l);

/**
 * Feed @len bytes; @cb is called for every completed non-empty line. Stops
 * at the first callback error and returns it; GX_ETOOBIG when a line
 * exceeds the cap.
 */
enum gx_err gx_lines_feed(struct gx_lines *l, const char *data, size_t len, gx_line_cb cb,
                          void *ctx) GX_WUR;

#endif
