/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_sim_deploy.c - the deployments `simulate --deployment` runs: the
 * shipped scheduler profiles read as what they deploy (these fail when a
 * manifest changes what the simulation must model), and profiles the
 * simulation cannot model refused with a reason.
 */
#include "gx_test.h"

#include <unistd.h>

#include "sim_deploy.h"

GX_SUITE(sim_deploy);

/* The profile of the shipped file manifests/@rel. */
static struct gx_sim_sched
shipped(const char *rel)
{
    char path[1024];
    char *text = NULL;
    size_t len = 0;
    struct gx_sim_sched s;
    struct gx_why why = {{0}};

    (void)snprintf(path, sizeof(path), "%s/manifests/%s", GX_SOURCE_DIR, rel);
    cr_assert_eq(gx_read_file(path, 1u << 20, &text, &len), GX_OK, "%s", path);
    cr_assert_eq(gx_sim_sched_parse(text, len, &s, &why), GX_OK, "%s: %s", path, why.text);
    free(text);
    return s;
}

/* Whether two profiles simulate the same scheduler (the HTTP and HTTPS variants must). */
static bool
same_sched(const struct gx_sim_sched *a, const struct gx_sim_sched *b)
{
    return a->profile.strategy == b->profile.strategy &&
           a->profile.fit_weight == b->profile.fit_weight &&
           a->profile.balanced_weight == b->profile.balanced_weight &&
           a->profile.gpu_weight == b->profile.gpu_weight &&
           a->profile.extender_weight == b->profile.extender_weight &&
           a->profile.pct_nodes_to_score == b->profile.pct_nodes_to_score &&
           a->all_pods == b->all_pods;
}

/* The profile of a KubeSchedulerConfiguration made of @body. */
static enum gx_err
parse(const char *body, struct gx_sim_sched *s, struct gx_why *why)
{
    char yaml[4096];

    (void)snprintf(yaml, sizeof(yaml),
                   "apiVersion: kubescheduler.config.k8s.io/v1\n"
                   "kind: KubeSchedulerConfiguration\n%s",
                   body);
    return gx_sim_sched_parse(yaml, strlen(yaml), s, why);
}

Test(sim_deploy, every_listed_deployment_has_its_files)
{
    static const char *const names[] = {"default", "gpu-pods-only"};

    for (size_t i = 0; i < GX_ARRAY_LEN(names); i++) {
        const struct gx_sim_deployment *d = gx_sim_deployment_find(names[i]);
        char path[1024];
        cr_assert_not_null(d, "%s", names[i]);
        cr_assert_str_eq(d->name, names[i]);
        for (int f = 0; f < 2; f++) {
            (void)snprintf(path, sizeof(path), "%s/manifests/%s", GX_SOURCE_DIR,
                           f == 0 ? d->config : d->scheduler);
            cr_assert_eq(access(path, R_OK), 0, "%s: %s", names[i], path);
        }
    }
    cr_assert_null(gx_sim_deployment_find("all-pods"), "the old name of the default");
    cr_assert_null(gx_sim_deployment_find(NULL));
    cr_assert_str_eq(gx_sim_deployment_find("default")->config, "config.json");
    cr_assert_str_eq(gx_sim_deployment_names(), "default|gpu-pods-only");
}

Test(sim_deploy, shipped_default_scores_every_pod_with_the_extender_alone)
{
    struct gx_sim_sched s = shipped(gx_sim_deployment_find("default")->scheduler);

    cr_assert_eq(s.profile.fit_weight, 0);
    cr_assert_eq(s.profile.balanced_weight, 0);
    cr_assert_eq(s.profile.extender_weight, 5);
    cr_assert_eq(s.profile.pct_nodes_to_score, 100);
    cr_assert(s.all_pods, "no managedResources: every pod reaches the extender");
}

Test(sim_deploy, shipped_https_default_is_the_same_profile)
{
    struct gx_sim_sched a = shipped(gx_sim_deployment_find("default")->scheduler);
    struct gx_sim_sched b = shipped("scheduler/kube-scheduler-config-https.yaml");

    cr_assert(same_sched(&a, &b));
}

Test(sim_deploy, shipped_gpu_pods_only_is_least_allocated_beside_the_extender)
{
    struct gx_sim_sched s = shipped(gx_sim_deployment_find("gpu-pods-only")->scheduler);
    struct gx_sim_sched https = shipped("overlays/gpu-pods-only/kube-scheduler-config-https.yaml");

    cr_assert_eq(s.profile.strategy, GX_KS_LEAST_ALLOCATED);
    cr_assert_eq(s.profile.fit_weight, 1);
    cr_assert_eq(s.profile.balanced_weight, 1);
    cr_assert_eq(s.profile.gpu_weight, 0);
    cr_assert_eq(s.profile.extender_weight, 5);
    cr_assert_eq(s.profile.pct_nodes_to_score, 100);
    cr_assert_not(s.all_pods, "managedResources: only GPU pods reach the extender");
    cr_assert(same_sched(&s, &https), "the HTTPS variant simulates the same");
}

Test(sim_deploy, weights_strategy_and_sampling_are_read)
{
    struct gx_sim_sched s;
    struct gx_why why = {{0}};

    cr_assert_eq(parse("percentageOfNodesToScore: 40\n"
                       "profiles:\n"
                       "  - schedulerName: s\n"
                       "    plugins:\n"
                       "      score:\n"
                       "        disabled: [{name: '*'}]\n"
                       "        enabled: [{name: NodeResourcesFit, weight: 3}]\n"
                       "    pluginConfig:\n"
                       "      - name: NodeResourcesFit\n"
                       "        args:\n"
                       "          scoringStrategy:\n"
                       "            type: MostAllocated\n"
                       "            resources: [{name: cpu, weight: 1}, {name: nvidia.com/gpu, "
                       "weight: 2}]\n"
                       "extenders:\n"
                       "  - urlPrefix: http://x\n"
                       "    managedResources: [{name: nvidia.com/gpu}]\n",
                       &s, &why),
                 GX_OK, "%s", why.text);
    cr_assert_eq(s.profile.strategy, GX_KS_MOST_ALLOCATED);
    cr_assert_eq(s.profile.fit_weight, 3);
    cr_assert_eq(s.profile.balanced_weight, 0);
    cr_assert_eq(s.profile.gpu_weight, 2);
    cr_assert_eq(s.profile.extender_weight, 1, "kube-scheduler's default weight");
    cr_assert_eq(s.profile.pct_nodes_to_score, 40);
    cr_assert_not(s.all_pods);
}

Test(sim_deploy, profiles_it_cannot_model_are_refused)
{
    static const struct {
        const char *body, *why;
    } bad[] = {
        {"profiles: [{schedulerName: s}]\n", "no extenders"},
        {"extenders: [{urlPrefix: x}]\n", "no profiles"},
        {"profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: "
         "RequestedToCapacityRatio}}}]}]\nextenders: [{urlPrefix: x}]\n",
         "RequestedToCapacityRatio is not modelled"},
        {"profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: "
         "{resources: [{name: cpu, weight: 3}]}}}]}]\nextenders: [{urlPrefix: x}]\n",
         "resource cpu weight 3"},
        {"profiles: [{}]\nextenders: [{urlPrefix: x, weight: 0}]\n", "positive integer"},
        {"percentageOfNodesToScore: 101\nprofiles: [{}]\nextenders: [{urlPrefix: x}]\n",
         "percentageOfNodesToScore"},
    };

    for (size_t i = 0; i < GX_ARRAY_LEN(bad); i++) {
        struct gx_sim_sched s;
        struct gx_why why = {{0}};
        cr_assert_eq(parse(bad[i].body, &s, &why), GX_EINVAL, "case %zu", i);
        cr_assert(strstr(why.text, bad[i].why) != NULL, "case %zu: %s", i, why.text);
    }
}

Test(sim_deploy, a_configmap_without_a_scheduler_configuration_is_refused)
{
    static const char cm[] = "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: 'kind: Pod'\n";
    static const char two[] = "apiVersion: v1\nkind: ConfigMap\ndata: {a: x, b: y}\n";
    struct gx_sim_sched s;
    struct gx_why why = {{0}};

    cr_assert_eq(gx_sim_sched_parse(cm, strlen(cm), &s, &why), GX_EINVAL);
    cr_assert(strstr(why.text, "not a KubeSchedulerConfiguration") != NULL, "%s", why.text);
    cr_assert_eq(gx_sim_sched_parse(two, strlen(two), &s, &why), GX_EINVAL);
    cr_assert_eq(gx_sim_sched_parse("a: [", 4, &s, &why), GX_EPARSE);
}
