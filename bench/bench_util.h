/* SPDX-License-Identifier: Apache-2.0 */
/*
 * bench_util.h - what the benchmark timers share: a monotonic clock, the
 * median of the runs, command-line options and reading an input file.
 */
#ifndef GX_BENCH_UTIL_H
#define GX_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common.h"

/* Monotonic time in milliseconds, sub-millisecond resolution. */
static inline double
now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static inline int
cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Median of @n values (sorts them). */
static inline double
median(double *v, size_t n)
{
    qsort(v, n, sizeof(*v), cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The value of option @name ("--runs 20"), or NULL. */
static inline const char *
opt(int argc, char **argv, const char *name)
{
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], name) == 0) {
            return argv[i + 1];
        }
    }
    return NULL;
}

/* File @path (at most @cap bytes) into a heap string, or NULL with a message from @prog. */
static inline char *
slurp(const char *prog, const char *path, size_t cap, size_t *len)
{
    char *text = NULL;

    if (gx_read_file(path, cap, &text, len) != GX_OK) {
        fprintf(stderr, "%s: cannot read %s\n", prog, path);
        return NULL;
    }
    return text;
}

#endif
