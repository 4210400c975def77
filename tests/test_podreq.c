/* SPDX-License-Identifier: Apache-2.0 */
/* test_podreq.c - effective requests (with sidecars) and pod classification. */
#include "gx_test.h"

#include <string.h>

#include "kobj.h"
#include "podreq.h"

GX_SUITE(podreq);

static struct gx_arena arena;
static struct gx_config *cfg; /* the shipped defaults; a test overrides what it tests */

static void
setup(void)
{
    gx_arena_init(&arena, 0);
    cr_assert_eq(gx_config_default(&cfg), GX_OK);
}

static void
teardown(void)
{
    gx_arena_release(&arena);
    gx_config_free(cfg);
}

/* Decode a pod written as JSON with single quotes for readability. */
static struct gx_pod
pod_of(const char *json_sq)
{
    char *json = strdup(json_sq);
    struct gx_pod pod;
    struct gx_why why = {{0}};

    cr_assert_not_null(json);
    for (char *p = json; *p != '\0'; p++) {
        if (*p == '\'') {
            *p = '"';
        }
    }
    cr_assert_eq(gx_kobj_decode_pod(json, strlen(json), 64, &arena, &pod, &why), GX_OK, "%s: %s",
                 json, why.text);
    free(json);
    return pod;
}

static int64_t
gpus_of(const char *json_sq)
{
    struct gx_pod pod = pod_of(json_sq);
    int64_t v = -1;

    cr_assert_eq(gx_podreq_effective(&pod, "nvidia.com/gpu", &v), GX_OK, "%s", json_sq);
    return v;
}

#define GPU(n) "{'resources':{'limits':{'nvidia.com/gpu':'" #n "'}}}"
#define SIDECAR(n) "{'restartPolicy':'Always','resources':{'requests':{'nvidia.com/gpu':'" #n "'}}}"

Test(podreq, sums_app_containers, .init = setup, .fini = teardown)
{
    cr_assert_eq(gpus_of("{'spec':{'containers':[" GPU(1) "," GPU(2) ",{'name':'cpu'}]}}"), 3);
}

Test(podreq, takes_max_of_init_containers_and_app, .init = setup, .fini = teardown)
{
    /* init 3 and 2 run one after another: the peak is 3, above the app's 1. */
    cr_assert_eq(
        gpus_of("{'spec':{'initContainers':[" GPU(3) "," GPU(2) "],'containers':[" GPU(1) "]}}"),
        3);
    /* app 4 above the largest init 2. */
    cr_assert_eq(
        gpus_of("{'spec':{'initContainers':[" GPU(2) "],'containers':[" GPU(2) "," GPU(2) "]}}"),
        4);
}

Test(podreq, sidecar_before_init_adds_to_its_peak, .init = setup, .fini = teardown)
{
    /* app = 1 + sidecar 2 = 3; init peak = init 3 + sidecar 2 started before it = 5. */
    cr_assert_eq(gpus_of("{'spec':{'initContainers':[" SIDECAR(2) "," GPU(3) "],'containers':[" GPU(
                     1) "]}}"),
                 5);
    /* The sidecar starts after the init container: peak is max(3, 2) = 3, app = 3. */
    cr_assert_eq(gpus_of("{'spec':{'initContainers':[" GPU(3) "," SIDECAR(2) "],'containers':[" GPU(
                     1) "]}}"),
                 3);
    /* Two sidecars before an init: 1 + 1 + 4 = 6 against app 1 + 1 + 0. */
    cr_assert_eq(gpus_of("{'spec':{'initContainers':[" SIDECAR(1) "," SIDECAR(1) "," GPU(4) "]}}"),
                 6);
}

Test(podreq, sidecars_count_toward_app_phase, .init = setup, .fini = teardown)
{
    cr_assert_eq(gpus_of("{'spec':{'initContainers':[" SIDECAR(2) "],'containers':[" GPU(2) "," GPU(
                     1) "]}}"),
                 5);
}

Test(podreq, uses_request_before_limit, .init = setup, .fini = teardown)
{
    cr_assert_eq(
        gpus_of("{'spec':{'containers':[{'resources':{'limits':{'nvidia.com/gpu':'2'}}}]}}"), 2);
    cr_assert_eq(gpus_of("{'spec':{'containers':[{'resources':{'requests':{'nvidia.com/gpu':'1'},"
                         "'limits':{'nvidia.com/gpu':'2'}}}]}}"),
                 1);
    cr_assert_eq(gpus_of("{'spec':{'containers':[{'resources':{'requests':{'cpu':'1'},"
                         "'limits':{'nvidia.com/gpu':'2'}}}]}}"),
                 2);
}

Test(podreq, ignores_overhead_and_absent_resources, .init = setup, .fini = teardown)
{
    cr_assert_eq(gpus_of("{'spec':{'overhead':{'nvidia.com/gpu':'4','cpu':'1'},"
                         "'containers':[{'resources':{'limits':{'cpu':'2'}}}]}}"),
                 0);
    cr_assert_eq(gpus_of("{}"), 0);
}

Test(podreq, effective_rejects_bad_quantity, .init = setup, .fini = teardown)
{
    struct gx_pod pod = pod_of("{'spec':{'containers':[" GPU(1) "," GPU(x2) "]}}");
    int64_t v = -9;

    cr_assert_eq(gx_podreq_effective(&pod, "nvidia.com/gpu", &v), GX_EPARSE);
    cr_assert_eq(v, -9);
    cr_assert_eq(gx_podreq_effective(&pod, "cpu", &v), GX_OK);
    cr_assert_eq(v, 0);
}

static struct gx_podreq
classify(const char *json_sq)
{
    struct gx_pod pod = pod_of(json_sq);
    struct gx_podreq r;
    struct gx_why why = {{0}};

    memset(&r, 0x5a, sizeof(r));
    cr_assert_eq(gx_podreq_parse(cfg, &pod, &r, &why), GX_OK, "%s: %s", json_sq, why.text);
    return r;
}

/* Classify a pod that must be rejected; returns the reason. */
static const char *
reject(const char *json_sq)
{
    static struct gx_why why;
    struct gx_pod pod = pod_of(json_sq);
    struct gx_podreq r = {.slices = -77};

    memset(&why, 0, sizeof(why));
    cr_assert_eq(gx_podreq_parse(cfg, &pod, &r, &why), GX_EINVAL, "%s", json_sq);
    cr_assert_eq(r.slices, -77, "output written on error");
    return why.text;
}

Test(podreq, classifies_annotation_shared, .init = setup, .fini = teardown)
{
    struct gx_podreq r = classify("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'2',"
                                  "'gpu-extender.io/gpu-memory':'6Gi','gpu-extender.io/gpu-util':"
                                  "'30'}},'spec':{'containers':[{'name':'a'}]}}");

    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert_not(r.device_plugin);
    cr_assert_eq(r.slices, 2);
    cr_assert_eq(r.memory_mib, 6144);
    cr_assert_float_eq(r.util_pct, 30.0, 1e-9);
    cr_assert_eq(r.gpus, 0);

    r = classify("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'64'}}}");
    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert_eq(r.slices, 64);
    cr_assert_eq(r.memory_mib, 0);
    cr_assert_float_eq(r.util_pct, -1.0, 1e-9);
}

/* A Kubernetes quantity; a bare number is bytes ("6442450944" was once read as 6 PiB). */
Test(podreq, reads_memory_annotation_as_a_quantity, .init = setup, .fini = teardown)
{
    static const struct {
        const char *mem;
        int64_t mib;
    } cases[] = {{"6442450944", 6144}, {"6Gi", 6144}, {"1G", 954}, {"512Mi", 512}, {"0", 0},
                 {"1.5Gi", 1536},      {"1048577", 2}};
    char json[256];

    for (size_t i = 0; i < GX_ARRAY_LEN(cases); i++) {
        struct gx_podreq r;

        (void)snprintf(json, sizeof(json),
                       "{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1',"
                       "'gpu-extender.io/gpu-memory':'%s','gpu-extender.io/gpu-util':'12.5'}}}",
                       cases[i].mem);
        r = classify(json);
        cr_assert_eq(r.memory_mib, cases[i].mib, "%s: got %lld", cases[i].mem,
                     (long long)r.memory_mib);
        cr_assert_float_eq(r.util_pct, 12.5, 1e-9);
    }
}

Test(podreq, classifies_virtual_resource_shared, .init = setup, .fini = teardown)
{
    struct gx_podreq r =
        classify("{'spec':{'containers':[{'resources':{'limits':{'gpu-extender.io/time-slice':'3'"
                 "}}}]}}");

    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert_not(r.device_plugin);
    cr_assert_eq(r.slices, 3);

    /* The annotation, when present, says how many slices. */
    r = classify("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'2'}},"
                 "'spec':{'containers':[{'resources':{'limits':{'gpu-extender.io/time-slice':'1'}}}"
                 "]}}");
    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert_eq(r.slices, 2);
}

/* The request the cluster counts (quota, node capacity) sizes the share, not a default. */
Test(podreq, deprecated_default_slices_sizes_nothing, .init = setup, .fini = teardown)
{
    struct gx_podreq r;

    cfg->default_slices = 5;
    r = classify("{'spec':{'containers':[{'resources':{'limits':{'gpu-extender.io/time-slice':'1'"
                 "}}}]}}");
    cr_assert_eq(r.slices, 1);
    r = classify("{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'300'}}}");
    cr_assert_eq(r.slices, 1);
}

Test(podreq, classifies_device_plugin_shared, .init = setup, .fini = teardown)
{
    struct gx_podreq r =
        classify("{'metadata':{'annotations':{'gpu-extender.io/gpu-memory':'4Gi'}},'spec':{"
                 "'containers':[{'resources':{'limits':{'nvidia.com/gpu.shared':'2'}}}]}}");

    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert(r.device_plugin);
    cr_assert_eq(r.slices, 2);
    cr_assert_eq(r.memory_mib, 4096);
    cr_assert_float_eq(r.util_pct, -1.0, 1e-9);
}

Test(podreq, classifies_exclusive_and_none, .init = setup, .fini = teardown)
{
    struct gx_podreq r = classify("{'spec':{'containers':[" GPU(2) "," GPU(2) "]}}");

    cr_assert_eq(r.kind, GX_REQ_EXCLUSIVE);
    cr_assert_eq(r.gpus, 4);
    cr_assert_eq(r.slices, 0);
    cr_assert_not(r.device_plugin);

    /* Memory annotations do not make an exclusive pod shared, nor get parsed. */
    r = classify("{'metadata':{'annotations':{'gpu-extender.io/gpu-memory':'lots'}},"
                 "'spec':{'containers':[" GPU(1) "]}}");
    cr_assert_eq(r.kind, GX_REQ_EXCLUSIVE);
    cr_assert_eq(r.gpus, 1);

    r = classify("{'spec':{'containers':[{'resources':{'limits':{'cpu':'2','memory':'1Gi'}}}]}}");
    cr_assert_eq(r.kind, GX_REQ_NONE);
    cr_assert_eq(r.gpus, 0);
    cr_assert_float_eq(r.util_pct, -1.0, 1e-9);

    r = classify("{'spec':{'containers':[" GPU(0) "]}}");
    cr_assert_eq(r.kind, GX_REQ_NONE);
}

Test(podreq, classifies_gpu_pod_fixture_as_exclusive_one, .init = setup, .fini = teardown)
{
    size_t len;
    char *text = gx_fixture("pod-gpu.json", &len);
    struct gx_pod pod;
    struct gx_podreq r;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_kobj_decode_pod(text, len, 64, &arena, &pod, &why), GX_OK, "%s", why.text);
    free(text);
    cr_assert_eq(gx_podreq_parse(cfg, &pod, &r, &why), GX_OK, "%s", why.text);
    cr_assert_eq(r.kind, GX_REQ_EXCLUSIVE);
    cr_assert_eq(r.gpus, 1);
}

Test(podreq, rejects_time_slices_with_whole_gpus, .init = setup, .fini = teardown)
{
    cr_assert_not_null(
        strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1'}},"
                      "'spec':{'containers':[" GPU(1) "]}}"),
               "time slices and whole GPUs cannot be combined"));
    cr_assert_not_null(
        strstr(reject("{'spec':{'containers':[" GPU(1) ",{'resources':{'limits':{"
                                                       "'gpu-extender.io/time-slice':'1'}}}]}}"),
               "time slices and whole GPUs cannot be combined"));
    /* A sidecar's GPU counts as whole GPUs too. */
    cr_assert_not_null(
        strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1'}},"
                      "'spec':{'initContainers':[" SIDECAR(1) "]}}"),
               "cannot be combined"));
}

Test(podreq, reads_bound_pods_through_the_old_bindings_note, .init = setup, .fini = teardown)
{
    /* earlier Bindings wrote time-slices "0" on whole GPUs, the replicas on device-plugin shares */
    struct gx_podreq r = classify("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'0'}},"
                                  "'spec':{'nodeName':'n1','containers':[" GPU(2) "]}}");

    cr_assert_eq(r.kind, GX_REQ_EXCLUSIVE);
    cr_assert_eq(r.gpus, 2);
    r = classify("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1'}},"
                 "'spec':{'nodeName':'n1','containers':[{'resources':{'limits':{"
                 "'nvidia.com/gpu.shared':'1'}}}]}}");
    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert(r.device_plugin);
    /* pending, or asking for a share of ours as well, it is still a request that cannot be met */
    cr_assert_not_null(strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/time-slices':"
                                     "'0'}},'spec':{'containers':[" GPU(2) "]}}"),
                              "cannot be combined"));
    cr_assert_not_null(
        strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1',"
                      "'gpu-extender.io/gpu-milli':'300'}},'spec':{'nodeName':'n1',"
                      "'containers':[" GPU(1) "]}}"),
               "cannot be combined"));
}

Test(podreq, rejects_other_shared_combinations, .init = setup, .fini = teardown)
{
    cr_assert_str_eq(reject("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1'}},"
                            "'spec':{'containers':[{'resources':{'limits':{"
                            "'nvidia.com/gpu.shared':'1'}}}]}}"),
                     "time slices and nvidia.com/gpu.shared cannot be combined");
    cr_assert_str_eq(reject("{'spec':{'containers':[" GPU(1) ",{'resources':{'limits':{"
                                                             "'nvidia.com/gpu.shared':'1'}}}]}}"),
                     "nvidia.com/gpu.shared and nvidia.com/gpu cannot be combined");
    cr_assert_str_eq(reject("{'spec':{'containers':[{'resources':{'limits':{"
                            "'gpu-extender.io/time-slice':'65'}}}]}}"),
                     "gpu-extender.io/time-slice must be from 1 to 64, not 65");
}

Test(podreq, rejects_bad_annotation_values, .init = setup, .fini = teardown)
{
    static const char *const slices[] = {"0",  "65", "abc", "1.5",        "-1",
                                         " 2", "",   "+2",  "99999999999"};
    /* "8000": a bare number is bytes, and 8000 bytes of GPU memory was surely meant as MiB */
    static const char *const memory[] = {"lots", "-1Gi", "6 Gi", "", "6GB", "8000"};
    static const char *const util[] = {"101", "-1", "nan", "abc", "", "1e2", " 5", "100.5"};
    char json[256], want[128];

    for (size_t i = 0; i < GX_ARRAY_LEN(slices); i++) {
        (void)snprintf(json, sizeof(json),
                       "{'metadata':{'annotations':{'gpu-extender.io/time-slices':'%s'}}}",
                       slices[i]);
        /* the reason names the value, so the user sees which pod's annotation to fix */
        (void)snprintf(want, sizeof(want),
                       "gpu-extender.io/time-slices must be an integer from 1 to 64, not \"%s\"",
                       slices[i]);
        cr_assert_str_eq(reject(json), want, "%s", slices[i]);
    }
    for (size_t i = 0; i < GX_ARRAY_LEN(memory); i++) {
        (void)snprintf(json, sizeof(json),
                       "{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1',"
                       "'gpu-extender.io/gpu-memory':'%s'}}}",
                       memory[i]);
        cr_assert_not_null(strstr(reject(json), "gpu-extender.io/gpu-memory must be"), "%s",
                           memory[i]);
    }
    for (size_t i = 0; i < GX_ARRAY_LEN(util); i++) {
        (void)snprintf(json, sizeof(json),
                       "{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1',"
                       "'gpu-extender.io/gpu-util':'%s'}}}",
                       util[i]);
        cr_assert_not_null(strstr(reject(json), "gpu-extender.io/gpu-util must be a number from 0"),
                           "%s", util[i]);
    }
}

Test(podreq, names_container_and_resource_of_bad_quantity, .init = setup, .fini = teardown)
{
    cr_assert_str_eq(
        reject("{'spec':{'containers':[" GPU(1) ",{'name':'train','resources':{"
                                                "'limits':{'nvidia.com/gpu':'two'}}}]}}"),
        "containers[1] \"train\": resources.limits[\"nvidia.com/gpu\"]: invalid "
        "quantity \"two\"");
    cr_assert_str_eq(reject("{'spec':{'initContainers':[{'name':'warm','resources':{"
                            "'requests':{'nvidia.com/gpu.shared':'-1'}}}]}}"),
                     "initContainers[0] \"warm\": resources.requests[\"nvidia.com/gpu.shared\"]: "
                     "negative quantity \"-1\"");
    cr_assert_str_eq(reject("{'spec':{'containers':[{'name':'x','resources':{"
                            "'requests':{'gpu-extender.io/time-slice':'1e30'}}}]}}"),
                     "containers[0] \"x\": resources.requests[\"gpu-extender.io/time-slice\"]: "
                     "too large quantity \"1e30\"");
}

Test(podreq, classifies_milli_share, .init = setup, .fini = teardown)
{
    struct gx_podreq r = classify("{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'220'}},"
                                  "'spec':{'containers':[{'name':'a','resources':{'requests':{"
                                  "'gpu-extender.io/time-slice':'1'}}}]}}");

    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert_not(r.device_plugin);
    cr_assert_eq(r.milli, 220);
    cr_assert_eq(r.slices, 1);
    r = classify("{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'1000'}}}");
    cr_assert_eq(r.kind, GX_REQ_SHARED);
    cr_assert_eq(r.milli, 1000);
    r = classify("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'2'}}}");
    cr_assert_eq(r.milli, 0, "slices keep sizing the share without the annotation");
}

Test(podreq, rejects_bad_milli, .init = setup, .fini = teardown)
{
    cr_assert(strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'0'}}}"),
                     "from 1 to 1000") != NULL);
    cr_assert(strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'1001'}}}"),
                     "from 1 to 1000") != NULL);
    cr_assert(strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'2.5'}}}"),
                     "milli-GPU") != NULL);
    cr_assert(strstr(reject("{'metadata':{'annotations':{'gpu-extender.io/gpu-milli':'300'}},"
                            "'spec':{'containers':[{'name':'a','resources':{'limits':{"
                            "'nvidia.com/gpu':'1'}}}]}}"),
                     "cannot be combined") != NULL);
}

/* A member carries its gang's id (gx_hash of the gang key) and the options it asks. */
Test(podreq, reads_the_gang_and_its_card_options, .init = setup, .fini = teardown)
{
    struct gx_podreq r = classify("{'metadata':{'namespace':'ml','annotations':{"
                                  "'gpu-extender.io/time-slices':'1',"
                                  "'gpu-extender.io/gang-distinct-cards':'true',"
                                  "'gpu-extender.io/gang-same-numa':'false'}},"
                                  "'spec':{'schedulingGroup':{'podGroupName':'ddp'}}}");
    struct gx_podreq other = classify("{'metadata':{'namespace':'ml'},"
                                      "'spec':{'schedulingGroup':{'podGroupName':'ddp2'}}}");

    cr_assert_eq(r.gang, gx_hash("ml/ddp", 6));
    cr_assert(r.apart);
    cr_assert_not(r.same_numa);
    cr_assert_neq(other.gang, r.gang);
    r = classify("{'metadata':{'annotations':{'gpu-extender.io/gang-same-numa':'true'}}}");
    cr_assert_eq(r.gang, 0, "no schedulingGroup: no gang");
    cr_assert(r.same_numa);
    cr_assert_not(r.apart);
    cr_assert(strstr(reject("{'metadata':{'annotations':{"
                            "'gpu-extender.io/gang-distinct-cards':'yes'}}}"),
                     "gang-distinct-cards must be \"true\" or \"false\"") != NULL);
}

/* Node CPU/memory as kube-scheduler counts them: max(apps + sidecars, init peak) + overhead. */
Test(podreq, host_requests_add_overhead_to_the_peak, .init = setup, .fini = teardown)
{
    struct gx_pod pod =
        pod_of("{'spec':{'overhead':{'cpu':'100m','memory':'1Mi'},"
               "'initContainers':[{'resources':{'requests':{'cpu':'2','memory':'1Mi'}}},"
               "{'restartPolicy':'Always','resources':{'requests':{'cpu':'500m','memory':'4Mi'}}}],"
               "'containers':[{'resources':{'requests':{'cpu':'1','memory':'3Mi'}}}]}}");
    struct gx_podreq r;
    struct gx_why why = {{0}};
    int64_t cpu = -1, mem = -1;

    gx_podreq_host(&pod, &cpu, &mem);
    /* init peak 2 CPU beats app 1 + sidecar 0.5; memory app 3Mi + sidecar 4Mi beats 1Mi */
    cr_assert_eq(cpu, 2100, "cpu %lld", (long long)cpu);
    cr_assert_eq(mem, 8 * 1024 * 1024, "mem %lld", (long long)mem);
    cr_assert_eq(gx_podreq_parse(cfg, &pod, &r, &why), GX_OK, "%s", why.text);
    cr_assert_eq(r.cpu_milli, 2100);
    cr_assert_eq(r.mem_mib, 8);
    /* an overhead that is not a quantity counts as 0, like a bad request */
    pod = pod_of("{'spec':{'overhead':{'cpu':'lots'},"
                 "'containers':[{'resources':{'requests':{'cpu':'1'}}}]}}");
    gx_podreq_host(&pod, &cpu, &mem);
    cr_assert(cpu == 1000 && mem == 0);
}

Test(podreq, managed_only_with_a_managed_resource, .init = setup, .fini = teardown)
{
    cr_expect(!gx_podreq_managed(cfg, &(struct gx_pod){0}));
    {
        struct gx_pod p = pod_of("{'spec':{'containers':[" GPU(1) "]}}");
        cr_expect(gx_podreq_managed(cfg, &p));
    }
    {
        struct gx_pod p = pod_of("{'spec':{'containers':[{'resources':{'limits':"
                                 "{'gpu-extender.io/time-slice':'1'}}}]}}");
        cr_expect(gx_podreq_managed(cfg, &p));
    }
    {
        /* the annotation alone routes nothing to the extender */
        struct gx_pod p = pod_of("{'metadata':{'annotations':{'gpu-extender.io/time-slices':'1'}},"
                                 "'spec':{'containers':[{'resources':{'limits':{'cpu':'1'}}}]}}");
        cr_expect(!gx_podreq_managed(cfg, &p));
    }
}
