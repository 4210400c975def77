/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "strmap.h"
#include "gx_test.h"

GX_SUITE(strmap);

Test(strmap, finds_what_was_put_and_replaces_values)
{
    struct gx_strmap m;
    int a = 1, b = 2;

    gx_strmap_init(&m);
    cr_assert_eq(gx_strmap_put(&m, "gpu-node-a", 10, &a), GX_OK);
    cr_assert_eq(gx_strmap_get(&m, "gpu-node-a", 10), &a);
    cr_assert_null(gx_strmap_get(&m, "gpu-node-b", 10));
    cr_assert_eq(gx_strmap_put(&m, "gpu-node-a", 10, &b), GX_OK);
    cr_assert_eq(gx_strmap_get(&m, "gpu-node-a", 10), &b);
    cr_assert_eq(m.count, 1);
    gx_strmap_release(&m);
}

/* Random inserts and deletes against a plain array model. */
Test(strmap, delete_keeps_every_other_key_reachable)
{
    enum { N = 3000 };
    static char keys[N][16];
    static bool present[N];
    struct gx_strmap m;
    uint64_t x = 88172645463325252ULL;

    gx_strmap_init(&m);
    for (int i = 0; i < N; i++) {
        (void)snprintf(keys[i], sizeof(keys[i]), "node-%d", i);
    }
    for (int step = 0; step < 40000; step++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int k = (int)(x % N);
        if (x & 1024) {
            cr_assert_eq(gx_strmap_put(&m, keys[k], strlen(keys[k]), keys[k]), GX_OK);
            present[k] = true;
        } else {
            void *v = gx_strmap_del(&m, keys[k], strlen(keys[k]));
            cr_assert_eq(v, present[k] ? (void *)keys[k] : NULL);
            present[k] = false;
        }
    }
    size_t count = 0, pos = 0;
    const char *key;
    size_t klen;
    for (int i = 0; i < N; i++) {
        void *v = gx_strmap_get(&m, keys[i], strlen(keys[i]));
        cr_assert_eq(v, present[i] ? (void *)keys[i] : NULL, "key %s", keys[i]);
        count += present[i];
    }
    cr_assert_eq(m.count, count);
    size_t seen = 0;
    while (gx_strmap_next(&m, &pos, &key, &klen) != NULL) {
        seen++;
    }
    cr_assert_eq(seen, count);
    gx_strmap_release(&m);
}

Test(strmap, interner_keeps_one_copy_per_string_up_to_its_limit)
{
    struct gx_arena a;
    struct gx_interner in;
    const char *x, *y, *z, *w;

    gx_arena_init(&a, 0);
    gx_intern_init(&in, &a, 8);
    x = gx_intern(&in, "gpu-node", 8);
    y = gx_intern(&in, "gpu-node-a", 8); /* the first 8 bytes: the same string */
    z = gx_intern(&in, "a-longer-string", 15);
    w = gx_intern(&in, "a-longer-string", 15);
    cr_assert_str_eq(x, "gpu-node");
    cr_assert_eq(x, y);
    cr_assert_str_eq(z, w);
    cr_assert_neq(z, w); /* over the limit: copied, not shared */
    gx_intern_release(&in);
    gx_arena_release(&a);
}

Test(strmap, reserve_makes_the_next_puts_infallible)
{
    struct gx_strmap m;
    char keys[100][8];

    gx_strmap_init(&m);
    cr_assert_eq(gx_strmap_reserve(&m, 100), GX_OK);
    cr_assert_geq(m.cap, (size_t)200);
    for (int i = 0; i < 100; i++) {
        size_t cap = m.cap;
        (void)snprintf(keys[i], sizeof(keys[i]), "k%d", i);
        cr_assert_eq(gx_strmap_put(&m, keys[i], strlen(keys[i]), keys[i]), GX_OK);
        cr_assert_eq(m.cap, cap, "a put after reserve must not grow the table");
    }
    cr_assert_eq(gx_strmap_get(&m, "k42", 3), keys[42]);
    gx_strmap_release(&m);
}
