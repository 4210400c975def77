/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_seen.c - the filter-to-bind pod cache: hit, miss, eviction, expiry.
 */
#include "gx_test.h"

#include "seen.h"

#include <string.h>

GX_SUITE(seen);

static struct gx_pod
pod(const char *uid)
{
    struct gx_pod p;

    memset(&p, 0, sizeof(p));
    p.uid = uid;
    p.namespace = "ml";
    p.name = "trainer";
    return p;
}

Test(seen, remembers_what_filter_learned_until_it_expires)
{
    struct gx_seen *s = gx_seen_new();
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 2, .util_pct = -1};
    struct gx_pod p = pod("uid-1");
    const struct gx_seen_pod *e;

    cr_assert_not_null(s);
    cr_assert_null(gx_seen_get(s, "uid-1", 1000));
    gx_seen_put(s, &p, &req, 1000);
    e = gx_seen_get(s, "uid-1", 2000);
    cr_assert_not_null(e);
    cr_assert_str_eq(e->pod, "ml/trainer");
    cr_assert_eq(e->req.slices, 2);
    cr_assert_null(gx_seen_get(s, "uid-2", 2000));
    cr_assert_null(gx_seen_get(s, "uid-1", 1000 + 15 * 60 * 1000 + 1));
    gx_seen_free(s);
}

Test(seen, skips_pods_without_a_usable_uid)
{
    struct gx_seen *s = gx_seen_new();
    struct gx_podreq req = {.kind = GX_REQ_SHARED, .slices = 1, .util_pct = -1};
    char longuid[100];
    struct gx_pod p = pod("");

    memset(longuid, 'u', sizeof(longuid) - 1);
    longuid[sizeof(longuid) - 1] = '\0';
    gx_seen_put(s, &p, &req, 1);
    cr_assert_null(gx_seen_get(s, "", 1));
    p = pod(longuid);
    gx_seen_put(s, &p, &req, 1);
    cr_assert_null(gx_seen_get(s, longuid, 1));
    gx_seen_free(s);
}
