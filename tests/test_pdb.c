/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_pdb.c - PodDisruptionBudget decoding (list and watch event), which
 * pods a budget selects (matchLabels, matchExpressions, namespace, empty
 * and invalid selectors), the violation count of a victim set as
 * kube-scheduler counts it, and the store (list replaces, events, delete).
 */
#include "gx_test.h"

#include <string.h>

#include "kobj.h"
#include "pdb.h"

GX_SUITE(pdb);

static const char PDBS[] =
    "{\"metadata\":{\"resourceVersion\":\"12\"},\"items\":["
    "{\"metadata\":{\"name\":\"web\",\"namespace\":\"e2e\",\"uid\":\"u1\",\"resourceVersion\":"
    "\"10\"},"
    "\"spec\":{\"minAvailable\":2,\"selector\":{\"matchLabels\":{\"app\":\"web\"},"
    "\"matchExpressions\":[{\"key\":\"tier\",\"operator\":\"In\",\"values\":[\"a\",\"b\"]},"
    "{\"key\":\"canary\",\"operator\":\"DoesNotExist\"}]}},"
    "\"status\":{\"disruptionsAllowed\":1,\"disruptedPods\":{\"web-9\":\"2026-12-01T10:00:00Z\"}}},"
    "{\"metadata\":{\"name\":\"all\",\"namespace\":\"e2e\"},\"spec\":{\"selector\":{}},"
    "\"status\":{\"disruptionsAllowed\":0}},"
    "{\"metadata\":{\"name\":\"bad\",\"namespace\":\"e2e\"},\"spec\":{\"selector\":"
    "{\"matchExpressions\":[{\"key\":\"app\",\"operator\":\"Near\",\"values\":[\"web\"]}]}},"
    "\"status\":{\"disruptionsAllowed\":0}}]}";

struct fx {
    struct gx_arena a;
    struct gx_pdb *items;
    size_t n;
};

static void
fx_init(struct fx *f)
{
    struct gx_why why = {{0}};
    void *items = NULL;
    const char *rv = NULL;

    gx_arena_init(&f->a, 0);
    cr_assert_eq(
        gx_kobj_decode_list(PDBS, strlen(PDBS), GX_KIND_PDB, 32, &f->a, &items, &f->n, &rv, &why),
        GX_OK, "%s", why.text);
    f->items = items;
    cr_assert_str_eq(rv, "12");
}

static struct gx_kv WEB_A[] = {{"app", "web"}, {"tier", "a"}};
static struct gx_kv WEB_C[] = {{"app", "web"}, {"tier", "c"}};
static struct gx_kv WEB_CANARY[] = {{"app", "web"}, {"tier", "b"}, {"canary", "1"}};

static struct gx_pdb_pod
pod(const char *ns, const char *name, struct gx_kv *labels, size_t n)
{
    struct gx_pdb_pod p = {ns, name, labels, n};
    return p;
}

Test(pdb, decodes_selector_and_status)
{
    struct fx f;

    fx_init(&f);
    cr_assert_eq(f.n, 3);
    const struct gx_pdb *p = &f.items[0];
    cr_assert_str_eq(p->name, "web");
    cr_assert_str_eq(p->namespace, "e2e");
    cr_assert(p->has_selector);
    cr_assert_eq(p->n_match_labels, 1);
    cr_assert_str_eq(p->match_labels[0].key, "app");
    cr_assert_eq(p->n_exprs, 2);
    cr_assert_eq(p->exprs[0].op, GX_SEL_IN);
    cr_assert_eq(p->exprs[0].n_values, 2);
    cr_assert_str_eq(p->exprs[0].values[1], "b");
    cr_assert_eq(p->exprs[1].op, GX_SEL_DOES_NOT_EXIST);
    cr_assert_eq(p->disruptions_allowed, 1);
    cr_assert_eq(p->n_disrupted, 1);
    cr_assert_str_eq(p->disrupted[0], "web-9");
    cr_assert_eq(f.items[2].exprs[0].op, GX_SEL_INVALID);
    gx_arena_release(&f.a);
}

Test(pdb, decodes_watch_event_and_rejects_wrong_types)
{
    static const char EV[] = "{\"type\":\"MODIFIED\",\"object\":{\"metadata\":{\"name\":\"w\","
                             "\"namespace\":\"n\",\"resourceVersion\":\"44\"},"
                             "\"spec\":{\"selector\":{\"matchLabels\":{\"a\":\"b\"}}},"
                             "\"status\":{\"disruptionsAllowed\":3}}}";
    static const char BAD[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"w\"},"
                              "\"spec\":{\"selector\":{\"matchExpressions\":[{\"key\":\"a\","
                              "\"operator\":\"In\",\"values\":[1]}]}}}}";
    static const char BAD2[] = "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"name\":\"w\"},"
                               "\"status\":{\"disruptionsAllowed\":\"many\"}}}";
    struct gx_arena a;
    struct gx_watch_event ev;
    struct gx_why why = {{0}};

    gx_arena_init(&a, 0);
    cr_assert_eq(gx_kobj_decode_event(EV, strlen(EV), GX_KIND_PDB, 32, &a, &ev, &why), GX_OK, "%s",
                 why.text);
    cr_assert_eq(ev.type, GX_WATCH_MODIFIED);
    cr_assert_str_eq(ev.resource_version, "44");
    cr_assert_eq(ev.obj.pdb.disruptions_allowed, 3);
    cr_assert_eq(gx_kobj_decode_event(BAD, strlen(BAD), GX_KIND_PDB, 32, &a, &ev, &why), GX_EINVAL);
    cr_assert(strstr(why.text, "matchExpressions[0].values[0]") != NULL, "%s", why.text);
    cr_assert_eq(gx_kobj_decode_event(BAD2, strlen(BAD2), GX_KIND_PDB, 32, &a, &ev, &why),
                 GX_EINVAL);
    cr_assert(strstr(why.text, "disruptionsAllowed") != NULL, "%s", why.text);
    gx_arena_release(&a);
}

Test(pdb, selects_as_the_scheduler_reads_selectors)
{
    struct fx f;
    struct gx_pdb_pod a = pod("e2e", "web-1", WEB_A, 2);

    fx_init(&f);
    cr_assert(gx_pdb_selects(&f.items[0], &a));
    struct gx_pdb_pod c = pod("e2e", "web-2", WEB_C, 2);
    cr_assert_not(gx_pdb_selects(&f.items[0], &c), "tier c is not In [a, b]");
    struct gx_pdb_pod canary = pod("e2e", "web-3", WEB_CANARY, 3);
    cr_assert_not(gx_pdb_selects(&f.items[0], &canary), "canary must not exist");
    struct gx_pdb_pod other = pod("prod", "web-1", WEB_A, 2);
    cr_assert_not(gx_pdb_selects(&f.items[0], &other), "another namespace");
    struct gx_pdb_pod bare = pod("e2e", "x", NULL, 0);
    cr_assert_not(gx_pdb_selects(&f.items[0], &bare), "a pod without labels");
    cr_assert_not(gx_pdb_selects(&f.items[1], &a), "an empty selector selects nothing");
    cr_assert_not(gx_pdb_selects(&f.items[2], &a), "an invalid selector selects nothing");
    gx_arena_release(&f.a);
}

Test(pdb, counts_violations_beyond_the_allowed_disruptions)
{
    struct fx f;
    const struct gx_pdb *pdbs[3];
    struct gx_pdb_pod v[] = {pod("e2e", "web-1", WEB_A, 2), pod("e2e", "web-2", WEB_A, 2),
                             pod("e2e", "web-9", WEB_A, 2), pod("e2e", "web-4", WEB_C, 2)};
    size_t n = 99;

    fx_init(&f);
    for (size_t i = 0; i < 3; i++) {
        pdbs[i] = &f.items[i];
    }
    cr_assert_eq(gx_pdb_violations(pdbs, 3, v, 1, &n), GX_OK);
    cr_assert_eq(n, 0, "one disruption is allowed");
    cr_assert_eq(gx_pdb_violations(pdbs, 3, v, 2, &n), GX_OK);
    cr_assert_eq(n, 1, "the second selected pod takes the budget below zero");
    cr_assert_eq(gx_pdb_violations(pdbs, 3, v, 4, &n), GX_OK);
    cr_assert_eq(n, 1, "web-9 is already disrupted, web-4 is not selected");
    cr_assert_eq(gx_pdb_violations(pdbs, 3, v, 1, &n), GX_OK);
    cr_assert_eq(n, 0, "counting does not spend the budgets");
    gx_arena_release(&f.a);
}

Test(pdb, store_lists_events_and_deletes)
{
    struct fx f;
    struct gx_pdbs *s = gx_pdbs_new();
    struct gx_pdb_pod v[] = {pod("e2e", "web-1", WEB_A, 2), pod("e2e", "web-2", WEB_A, 2)};
    size_t n = 0;

    cr_assert_not_null(s);
    cr_assert_not(gx_pdbs_synced(s));
    fx_init(&f);
    cr_assert_eq(gx_pdbs_set(s, f.items, f.n), GX_OK);
    gx_arena_release(&f.a); /* the store keeps its own copies */
    cr_assert(gx_pdbs_synced(s));
    cr_assert_eq(gx_pdbs_count(s), 3);
    cr_assert_eq(gx_pdbs_violations(s, v, 2, &n), GX_OK);
    cr_assert_eq(n, 1);

    /* the budget now allows two: no violation */
    fx_init(&f);
    f.items[0].disruptions_allowed = 2;
    cr_assert_eq(gx_pdbs_put(s, &f.items[0], false), GX_OK);
    cr_assert_eq(gx_pdbs_count(s), 3, "replaced, not added");
    cr_assert_eq(gx_pdbs_violations(s, v, 2, &n), GX_OK);
    cr_assert_eq(n, 0);
    f.items[0].disruptions_allowed = 0;
    cr_assert_eq(gx_pdbs_put(s, &f.items[0], true), GX_OK);
    cr_assert_eq(gx_pdbs_count(s), 2);
    cr_assert_eq(gx_pdbs_violations(s, v, 2, &n), GX_OK);
    cr_assert_eq(n, 0, "deleted: nothing protects web");

    /* a relist replaces everything */
    cr_assert_eq(gx_pdbs_set(s, f.items, 1), GX_OK);
    cr_assert_eq(gx_pdbs_count(s), 1);
    cr_assert_eq(gx_pdbs_violations(s, v, 2, &n), GX_OK);
    cr_assert_eq(n, 2, "allowed 0: both violate");
    gx_arena_release(&f.a);
    gx_pdbs_absent(s);
    cr_assert_eq(gx_pdbs_count(s), 0);
    cr_assert(gx_pdbs_synced(s));
    gx_pdbs_free(s);
}
