/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gx_test.h - shared test helpers. Criterion forks each test, so a leak in
 * the child would go unnoticed: under ASan builds every suite's .fini runs
 * LeakSanitizer and aborts on a leak, which fails the test.
 */
#ifndef GX_TEST_H
#define GX_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

#ifdef GX_SANITIZE
#include <sanitizer/lsan_interface.h>
static void
gx_leak_check(void)
{
    if (__lsan_do_recoverable_leak_check() != 0)
        abort();
}
#else
static void
gx_leak_check(void)
{
}
#endif

/** Declare a suite whose tests fail on any leak under ASan. */
#define GX_SUITE(name) TestSuite(name, .fini = gx_leak_check)

/** Read tests/fixtures/@name into a heap string (aborts the test on error). */
static inline char *
gx_fixture(const char *name, size_t *len)
{
    char path[1024];
    char *data = NULL;
    size_t n = 0;

    (void)snprintf(path, sizeof(path), "%s/%s", GX_FIXTURES, name);
    cr_assert_eq(gx_read_file(path, 64u << 20, &data, &n), GX_OK, "fixture %s", path);
    if (len != NULL)
        *len = n;
    return data;
}

/** Lines written to @f so far that contain @needle (a captured log); @f stays at its end. */
static inline int
gx_test_lines_with(FILE *f, const char *needle)
{
    char line[4096];
    int n = 0;

    (void)fflush(f);
    rewind(f);
    while (fgets(line, sizeof(line), f) != NULL) {
        n += strstr(line, needle) != NULL;
    }
    (void)fseek(f, 0, SEEK_END);
    return n;
}

#endif
