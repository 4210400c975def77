/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_arena.c - the bump allocator: alignment, chunk growth, big blocks,
 * string copies, and one release for everything (leaks fail under ASan).
 */
#include "gx_test.h"

#include "arena.h"

#include <stdint.h>
#include <string.h>

GX_SUITE(arena);

Test(arena, allocations_are_aligned_distinct_and_counted)
{
    struct gx_arena a;
    char *prev = NULL;

    gx_arena_init(&a, 256);
    for (size_t i = 1; i < 2000; i += 37) {
        char *p = gx_arena_alloc(&a, i);
        cr_assert_not_null(p);
        cr_assert_eq((uintptr_t)p % sizeof(void *), 0, "size %zu misaligned", i);
        memset(p, 0xab, i); /* ASan catches an overlap or overrun */
        cr_assert_neq(p, prev);
        prev = p;
    }
    cr_assert_geq(a.total, (size_t)1 + 38 + 75);
    /* a block larger than a chunk still fits */
    cr_assert_not_null(gx_arena_alloc(&a, 10000));
    gx_arena_release(&a);
    cr_assert_null(a.head);
}

Test(arena, strings_are_copied_and_terminated)
{
    struct gx_arena a;
    const char src[] = "gpu-node-a and more";
    char *s, *t;

    gx_arena_init(&a, 0);
    s = gx_arena_strndup(&a, src, 10);
    t = gx_arena_strdup(&a, src);
    cr_assert_str_eq(s, "gpu-node-a");
    cr_assert_str_eq(t, src);
    cr_assert_neq(t, src);
    gx_arena_release(&a);
}
