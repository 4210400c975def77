/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_podsum.c - the per-node sums of pods the extender does not manage:
 * add / modify / delete, pods that do not count (finished, managed, ledger
 * tenants, unscheduled), a relist replacing the view, the sums reaching the
 * ledger, and the memory one counted pod costs.
 */
#include "gx_test.h"

#include <string.h>
#ifdef GX_SANITIZE
size_t __sanitizer_get_current_allocated_bytes(void); /* the sanitizer runtime's */
#elif defined(__GLIBC__)
#include <malloc.h>
#endif

#include "kobj.h"
#include "ledger.h"
#include "podsum.h"

GX_SUITE(podsum);

#define LABEL "gpu-extender.io/managed"
#define MIB (INT64_C(1024) * 1024)

static struct gx_arena arena;
static int changes;
static const char *tenant_uid; /* the one uid is_tenant says yes to */

static bool
is_tenant(void *ctx, const char *uid)
{
    (void)ctx;
    return tenant_uid != NULL && strcmp(uid, tenant_uid) == 0;
}

static void
changed(void *ctx)
{
    (void)ctx;
    changes++;
}

static const struct gx_podsum_cbs CBS = {is_tenant, changed};

static void
setup(void)
{
    gx_arena_init(&arena, 0);
    changes = 0;
    tenant_uid = NULL;
}

static void
teardown(void)
{
    gx_arena_release(&arena);
}

/* A pod: @uid on @node (NULL: pending) in @phase, with @labels and @spec_extra JSON members. */
static struct gx_pod
pod(const char *uid, const char *node, const char *phase, const char *labels, const char *spec)
{
    char json[2048];
    struct gx_pod p;
    struct gx_why why = {{0}};
    int n;

    n = snprintf(json, sizeof(json),
                 "{\"metadata\":{\"name\":\"p-%s\",\"namespace\":\"ns\",\"uid\":\"%s\","
                 "\"labels\":{%s}},\"spec\":{%s%s%s%s},\"status\":{\"phase\":\"%s\"}}",
                 uid, uid, labels, node ? "\"nodeName\":\"" : "", node ? node : "",
                 node ? "\"," : "", spec, phase);
    cr_assert(n > 0 && (size_t)n < sizeof(json));
    cr_assert_eq(gx_kobj_decode_pod(json, strlen(json), 64, &arena, &p, &why), GX_OK, "%s: %s",
                 json, why.text);
    return p;
}

/* A pod with one container asking @cpu and @mem. */
static struct gx_pod
simple(const char *uid, const char *node, const char *cpu, const char *mem)
{
    char spec[512];

    (void)snprintf(spec, sizeof(spec),
                   "\"containers\":[{\"name\":\"c\",\"resources\":{\"requests\":"
                   "{\"cpu\":\"%s\",\"memory\":\"%s\"}}}]",
                   cpu, mem);
    return pod(uid, node, "Running", "", spec);
}

static void
expect_node(const struct gx_podsum *p, const char *node, int64_t cpu, int64_t mem)
{
    int64_t c = -1, m = -1;

    (void)gx_podsum_node(p, node, &c, &m);
    cr_assert_eq(c, cpu, "%s cpu %lld, want %lld", node, (long long)c, (long long)cpu);
    cr_assert_eq(m, mem, "%s mem %lld, want %lld", node, (long long)m, (long long)mem);
}

static void
expect_ledger(const struct gx_ledger *l, const char *node, int64_t cpu, int64_t mib)
{
    const struct gx_ledger_node *e = gx_ledger_node(l, node);

    cr_assert_not_null(e, "%s has a ledger entry", node);
    cr_assert_eq(e->untracked_cpu_milli, cpu, "%s ledger cpu %lld", node,
                 (long long)e->untracked_cpu_milli);
    cr_assert_eq(e->untracked_mem_mib, mib, "%s ledger mem %lld", node,
                 (long long)e->untracked_mem_mib);
}

Test(podsum, add_modify_delete_reach_the_ledger, .init = setup, .fini = teardown)
{
    struct gx_podsum *p = gx_podsum_new(LABEL, &CBS, NULL);
    struct gx_ledger *l = gx_ledger_new();
    struct gx_pod a = simple("u1", "node-a", "500m", "1Gi");
    struct gx_pod b = simple("u2", "node-a", "2", "512Mi");
    struct gx_pod a2 = simple("u1", "node-a", "1500m", "100");
    size_t n;
    int64_t cpu, mem;

    cr_assert(p != NULL && l != NULL);
    cr_assert_eq(gx_podsum_put(p, &a, false), GX_OK);
    cr_assert_eq(gx_podsum_put(p, &b, false), GX_OK);
    expect_node(p, "node-a", 2500, 1536 * MIB);
    cr_assert_eq(changes, 2);
    cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
    expect_ledger(l, "node-a", 2500, 1536);

    /* MODIFIED replaces the pod's old requests; memory rounds up to MiB in the ledger */
    cr_assert_eq(gx_podsum_put(p, &a2, false), GX_OK);
    expect_node(p, "node-a", 3500, 512 * MIB + 100);
    cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
    expect_ledger(l, "node-a", 3500, 513);
    gx_podsum_totals(p, &n, &cpu, &mem);
    cr_assert_eq(n, 2);
    cr_assert_eq(cpu, 3500);

    /* DELETED needs only the uid; the last pod gone puts the node back to zero */
    cr_assert_eq(gx_podsum_put(p, &b, true), GX_OK);
    cr_assert_eq(gx_podsum_put(p, &a, true), GX_OK);
    cr_assert_not(gx_podsum_node(p, "node-a", &cpu, &mem));
    cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
    expect_ledger(l, "node-a", 0, 0);
    gx_podsum_totals(p, &n, &cpu, &mem);
    cr_assert(n == 0 && cpu == 0 && mem == 0);
    /* deleting an unknown pod changes nothing */
    changes = 0;
    cr_assert_eq(gx_podsum_put(p, &a, true), GX_OK);
    cr_assert_eq(changes, 0);
    gx_podsum_free(p);
    gx_ledger_free(l);
}

Test(podsum, finished_pod_stops_counting, .init = setup, .fini = teardown)
{
    struct gx_podsum *p = gx_podsum_new(LABEL, &CBS, NULL);
    const char *spec = "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]";
    struct gx_pod run = pod("u1", "node-a", "Running", "", spec);
    struct gx_pod done = pod("u1", "node-a", "Succeeded", "", spec);
    struct gx_pod failed = pod("u2", "node-a", "Failed", "", spec);
    struct gx_pod pending = pod("u3", NULL, "Pending", "", spec);
    size_t n;
    int64_t cpu, mem;

    cr_assert_not_null(p);
    cr_assert_eq(gx_podsum_put(p, &run, false), GX_OK);
    expect_node(p, "node-a", 1000, 0);
    cr_assert_eq(gx_podsum_put(p, &done, false), GX_OK);
    expect_node(p, "node-a", 0, 0);
    cr_assert_eq(gx_podsum_put(p, &failed, false), GX_OK);
    cr_assert_eq(gx_podsum_put(p, &pending, false), GX_OK);
    gx_podsum_totals(p, &n, &cpu, &mem);
    cr_assert_eq(n, 0, "finished and unscheduled pods are not kept (%zu)", n);
    gx_podsum_free(p);
}

Test(podsum, managed_pods_and_tenants_do_not_count, .init = setup, .fini = teardown)
{
    struct gx_podsum *p = gx_podsum_new(LABEL, &CBS, NULL);
    const char *spec = "\"containers\":[{\"resources\":{\"requests\":{\"cpu\":\"1\"}}}]";
    struct gx_pod managed = pod("u1", "node-a", "Running", "\"" LABEL "\":\"true\"", spec);
    struct gx_pod other = pod("u2", "node-a", "Running", "\"" LABEL "\":\"false\"", spec);
    struct gx_pod tenant = pod("u3", "node-a", "Running", "", spec);

    cr_assert_not_null(p);
    tenant_uid = "u3";
    cr_assert_eq(gx_podsum_put(p, &managed, false), GX_OK);
    cr_assert_eq(gx_podsum_put(p, &other, false), GX_OK);
    cr_assert_eq(gx_podsum_put(p, &tenant, false), GX_OK);
    expect_node(p, "node-a", 1000, 0); /* only u2 */
    /* a new managed label: u1 counts now */
    cr_assert_eq(gx_podsum_set_label(p, "example.com/other"), GX_OK);
    cr_assert_eq(gx_podsum_put(p, &managed, false), GX_OK);
    expect_node(p, "node-a", 2000, 0);
    gx_podsum_free(p);
}

Test(podsum, init_containers_and_overhead_as_kube_scheduler, .init = setup, .fini = teardown)
{
    struct gx_podsum *p = gx_podsum_new(LABEL, &CBS, NULL);
    /* app 1 + 1 CPU, init peak 3 CPU: max is 3; memory app 2Gi over init 1Gi; + overhead */
    struct gx_pod big = pod("u1", "node-a", "Running", "",
                            "\"overhead\":{\"cpu\":\"250m\",\"memory\":\"64Mi\"},"
                            "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"requests\":"
                            "{\"cpu\":\"3\",\"memory\":\"1Gi\"}}}],"
                            "\"containers\":[{\"name\":\"a\",\"resources\":{\"requests\":"
                            "{\"cpu\":\"1\",\"memory\":\"1Gi\"}}},{\"name\":\"b\",\"resources\":"
                            "{\"limits\":{\"cpu\":\"1\",\"memory\":\"1Gi\"}}}]");

    cr_assert_not_null(p);
    cr_assert_eq(gx_podsum_put(p, &big, false), GX_OK);
    expect_node(p, "node-a", 3250, 2048 * MIB + 64 * MIB);
    gx_podsum_free(p);
}

Test(podsum, relist_replaces_the_view, .init = setup, .fini = teardown)
{
    struct gx_podsum *p = gx_podsum_new(LABEL, &CBS, NULL);
    struct gx_ledger *l = gx_ledger_new();
    struct gx_pod first[2] = {simple("u1", "node-a", "1", "1Mi"),
                              simple("u2", "node-b", "2", "2Mi")};
    struct gx_pod second[2] = {simple("u2", "node-b", "2", "2Mi"),
                               simple("u3", "node-c", "4", "4Mi")};
    size_t n;
    int64_t cpu, mem;

    cr_assert(p != NULL && l != NULL);
    cr_assert_not(gx_podsum_synced(p));
    cr_assert_eq(gx_podsum_set(p, first, 2), GX_OK);
    cr_assert(gx_podsum_synced(p));
    cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
    expect_ledger(l, "node-a", 1000, 1);
    expect_ledger(l, "node-b", 2000, 2);
    /* u1 was deleted while the watch was down: the relist alone must drop it */
    cr_assert_eq(gx_podsum_set(p, second, 2), GX_OK);
    cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
    expect_ledger(l, "node-a", 0, 0);
    expect_ledger(l, "node-b", 2000, 2);
    expect_ledger(l, "node-c", 4000, 4);
    gx_podsum_totals(p, &n, &cpu, &mem);
    cr_assert(n == 2 && cpu == 6000 && mem == 6 * MIB, "n=%zu cpu=%lld", n, (long long)cpu);
    /* a list with no pods empties everything */
    cr_assert_eq(gx_podsum_set(p, NULL, 0), GX_OK);
    cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
    expect_ledger(l, "node-b", 0, 0);
    expect_ledger(l, "node-c", 0, 0);
    gx_podsum_free(p);
    gx_ledger_free(l);
}

Test(podsum, ledger_tenants_keep_their_own_requests, .init = setup, .fini = teardown)
{
    struct gx_podsum *p = gx_podsum_new(LABEL, &CBS, NULL);
    struct gx_ledger *l = gx_ledger_new();
    struct gx_pod cpu_only = simple("u9", "node-a", "750m", "3Mi");
    int64_t cpu, mem;

    cr_assert(p != NULL && l != NULL);
    cr_assert_eq(gx_podsum_put(p, &cpu_only, false), GX_OK);
    cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
    gx_ledger_entry_host(gx_ledger_node(l, "node-a"), &cpu, &mem);
    cr_assert(cpu == 750 && mem == 3, "host view %lld/%lld", (long long)cpu, (long long)mem);
    /* nothing pending: a second apply writes nothing */
    {
        uint64_t v = gx_ledger_version(l);
        cr_assert_eq(gx_podsum_apply(p, l), GX_OK);
        cr_assert_eq(gx_ledger_version(l), v);
    }
    gx_podsum_free(p);
    gx_ledger_free(l);
}

static size_t
heap_bytes(void)
{
#ifdef GX_SANITIZE
    return __sanitizer_get_current_allocated_bytes();
#elif defined(__GLIBC__)
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
#else
    return 0;
#endif
}

/* What one counted pod costs: its entry and its share of the uid map (docs/operations.md). */
Test(podsum, memory_per_pod_is_small, .init = setup, .fini = teardown)
{
    enum { PODS = 20000, NODES = 500 };
    struct gx_podsum *p = gx_podsum_new(LABEL, &CBS, NULL);
    struct gx_pod tmpl = simple("00000000-0000-0000-0000-000000000000", "node-0000", "100m", "1Mi");
    static char uids[PODS][40];
    static char nodes[NODES][16];
    size_t before, after;
    double per_pod;

    cr_assert_not_null(p);
    for (int i = 0; i < NODES; i++) {
        (void)snprintf(nodes[i], sizeof(nodes[i]), "node-%04d", i);
    }
    before = heap_bytes();
    for (int i = 0; i < PODS; i++) {
        (void)snprintf(uids[i], sizeof(uids[i]), "%08x-0000-4000-8000-%012x", (unsigned)i,
                       (unsigned)i);
        tmpl.uid = uids[i];
        tmpl.node_name = nodes[i % NODES];
        cr_assert_eq(gx_podsum_put(p, &tmpl, false), GX_OK);
    }
    after = heap_bytes();
    per_pod = (double)(after - before) / PODS;
    cr_log_info("podsum: %.1f bytes per counted pod (%d pods on %d nodes)", per_pod, PODS, NODES);
    (void)fprintf(stderr, "podsum: %.1f bytes per counted pod (%d pods on %d nodes)\n", per_pod,
                  PODS, NODES);
    if (before != 0 || after != 0) {
        cr_assert(per_pod > 40.0 && per_pod < 256.0, "%.1f bytes per pod", per_pod);
    }
    gx_podsum_free(p);
}
