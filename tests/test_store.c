/* SPDX-License-Identifier: Apache-2.0 */
#include <stdio.h>
#include <string.h>

#include "store.h"
#include "gx_test.h"

GX_SUITE(store);

/* A watched object as the stores keep them: its key inside it. */
struct obj {
    int gen;
    char key[];
};

static int freed;

static void
obj_free(void *v)
{
    freed++;
    free(v);
}

static struct obj *
obj_new(const char *key, int gen)
{
    size_t len = strlen(key);
    struct obj *o = malloc(sizeof(*o) + len + 1);

    cr_assert_not_null(o);
    o->gen = gen;
    memcpy(o->key, key, len + 1);
    return o;
}

static void
put(struct gx_store *s, const char *key, int gen)
{
    struct obj *o = obj_new(key, gen);

    cr_assert_eq(gx_store_put(s, o->key, o), GX_OK);
}

static int
gen_of(const struct gx_store *s, const char *key)
{
    const struct obj *o = gx_store_get(s, key);

    return o != NULL ? o->gen : -1;
}

Test(store, starts_empty_and_not_synced)
{
    struct gx_store s;
    size_t pos = 0;

    gx_store_init(&s, obj_free);
    cr_assert_eq(gx_store_count(&s), 0);
    cr_assert_not(gx_store_synced(&s));
    cr_assert_null(gx_store_get(&s, "gpu-node-a"));
    cr_assert_null(gx_store_next(&s, &pos));
    cr_assert_not(gx_store_del(&s, "gpu-node-a"));
    gx_store_release(&s);
}

Test(store, an_event_adds_or_replaces_one_object_and_frees_the_one_before)
{
    struct gx_store s;

    freed = 0;
    gx_store_init(&s, obj_free);
    put(&s, "gpu-node-a", 1);
    put(&s, "gpu-node-b", 1);
    cr_assert_eq(gx_store_count(&s), 2);
    cr_assert_eq(freed, 0);
    /* the key of the slot must now be the new object's: the old one's is freed (ASan) */
    put(&s, "gpu-node-a", 2);
    cr_assert_eq(freed, 1);
    cr_assert_eq(gx_store_count(&s), 2);
    cr_assert_eq(gen_of(&s, "gpu-node-a"), 2);
    cr_assert_eq(gen_of(&s, "gpu-node-b"), 1);
    put(&s, "gpu-node-a", 3);
    cr_assert_eq(gen_of(&s, "gpu-node-a"), 3);
    cr_assert_eq(freed, 2);
    gx_store_release(&s);
    cr_assert_eq(freed, 4);
    cr_assert_eq(gx_store_count(&s), 0);
}

Test(store, putting_the_stored_value_again_keeps_it)
{
    struct gx_store s;
    struct obj *o = obj_new("gpu-node-a", 1);

    freed = 0;
    gx_store_init(&s, obj_free);
    cr_assert_eq(gx_store_put(&s, o->key, o), GX_OK);
    o->gen = 2; /* changed in place, as reconcile updates a pod */
    cr_assert_eq(gx_store_put(&s, o->key, o), GX_OK);
    cr_assert_eq(freed, 0);
    cr_assert_eq(gen_of(&s, "gpu-node-a"), 2);
    gx_store_release(&s);
    cr_assert_eq(freed, 1);
}

Test(store, a_delete_frees_the_object_and_says_whether_there_was_one)
{
    struct gx_store s;

    freed = 0;
    gx_store_init(&s, obj_free);
    put(&s, "ns/a", 1);
    put(&s, "ns/b", 1);
    cr_assert(gx_store_del(&s, "ns/a"));
    cr_assert_eq(freed, 1);
    cr_assert_not(gx_store_del(&s, "ns/a"));
    cr_assert_not(gx_store_del(&s, "ns/c"));
    cr_assert_eq(freed, 1);
    cr_assert_eq(gx_store_count(&s), 1);
    cr_assert_null(gx_store_get(&s, "ns/a"));
    cr_assert_eq(gen_of(&s, "ns/b"), 1);
    gx_store_release(&s);
}

Test(store, a_list_replaces_everything_and_syncs)
{
    struct gx_store s, list;

    freed = 0;
    gx_store_init(&s, obj_free);
    put(&s, "gone", 1);
    put(&s, "kept", 1);
    gx_store_init(&list, obj_free);
    put(&list, "kept", 2);
    put(&list, "new", 2);
    cr_assert_not(gx_store_synced(&s));
    gx_store_replace(&s, &list);
    cr_assert(gx_store_synced(&s));
    cr_assert_eq(freed, 2); /* both old objects, the one the list has again too */
    cr_assert_eq(gx_store_count(&s), 2);
    cr_assert_eq(gen_of(&s, "gone"), -1);
    cr_assert_eq(gen_of(&s, "kept"), 2);
    cr_assert_eq(gen_of(&s, "new"), 2);
    /* the list gave its objects away: nothing of it to free, nothing left in it */
    cr_assert_eq(gx_store_count(&list), 0);
    gx_store_release(&list);
    cr_assert_eq(freed, 2);
    /* events after the list change the store as before, and it stays synced */
    put(&s, "later", 3);
    cr_assert(gx_store_del(&s, "new"));
    cr_assert(gx_store_synced(&s));
    cr_assert_eq(gx_store_count(&s), 2);
    gx_store_release(&s);
    cr_assert_eq(freed, 5);
}

Test(store, an_empty_list_empties_the_store_and_still_syncs)
{
    struct gx_store s, list;

    freed = 0;
    gx_store_init(&s, obj_free);
    put(&s, "a", 1);
    gx_store_init(&list, obj_free);
    gx_store_replace(&s, &list);
    cr_assert(gx_store_synced(&s));
    cr_assert_eq(gx_store_count(&s), 0);
    cr_assert_eq(freed, 1);
    gx_store_release(&s);
}

Test(store, iteration_visits_every_object_once)
{
    enum { N = 500 };
    static bool seen[N];
    struct gx_store s;
    char key[32];
    const struct obj *o;
    size_t pos = 0, n = 0;

    gx_store_init(&s, obj_free);
    for (int i = 0; i < N; i++) {
        (void)snprintf(key, sizeof(key), "node-%d", i);
        put(&s, key, i);
    }
    for (int i = 0; i < N; i += 3) {
        (void)snprintf(key, sizeof(key), "node-%d", i);
        cr_assert(gx_store_del(&s, key));
    }
    while ((o = gx_store_next(&s, &pos)) != NULL) {
        cr_assert(o->gen % 3 != 0, "deleted node-%d still iterated", o->gen);
        cr_assert_not(seen[o->gen], "node-%d iterated twice", o->gen);
        seen[o->gen] = true;
        n++;
    }
    cr_assert_eq(n, gx_store_count(&s));
    cr_assert_eq(n, N - (N + 2) / 3);
    gx_store_release(&s);
}
