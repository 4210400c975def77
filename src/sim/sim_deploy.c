/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_deploy.c - the shipped deployments (sim_deploy.h): the table of their
 * files and the reading of a gpu-scheduler profile. The YAML goes through
 * yamldoc (codec) into JSON; cJSON stays inside this file. Only the facts
 * ksched models are read; everything else in the profile is left alone,
 * except what would change placement and cannot be modelled, which is
 * refused instead of silently simulated as something else.
 */
#include "sim_deploy.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "yamldoc.h"

/* Caps on the YAML read: a scheduler configuration is a few kB. */
#define DEPLOY_MAX_DEPTH 64
#define DEPLOY_MAX_JSON (4u << 20)

/*
 * One rule for where each deployment lives: `kubectl apply -k` reads the same files. The
 * overlay's profile is a patch that replaces the base ConfigMap's data whole, so the file
 * holds everything the overlay's gpu-scheduler runs.
 */
static const struct gx_sim_deployment deployments[] = {
    {"default", "config.json", "scheduler/kube-scheduler-config.yaml"},
    {"gpu-pods-only", "overlays/gpu-pods-only/config.json",
     "overlays/gpu-pods-only/kube-scheduler-config.yaml"},
};

const struct gx_sim_deployment *
gx_sim_deployment_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < GX_ARRAY_LEN(deployments); i++) {
        if (strcmp(name, deployments[i].name) == 0) {
            return &deployments[i];
        }
    }
    return NULL;
}

const char *
gx_sim_deployment_names(void)
{
    return "default|gpu-pods-only";
}

static const cJSON *
get(const cJSON *o, const char *key)
{
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* The "name" of a plugin or resource entry; "" when it has none. */
static const char *
name_of(const cJSON *e)
{
    const cJSON *n = get(e, "name");

    return cJSON_IsString(n) ? n->valuestring : "";
}

/* The integer "weight" of @e, @dflt when absent; -1 when it is not an integer. */
static int
weight_of(const cJSON *e, int dflt)
{
    const cJSON *w = get(e, "weight");

    if (w == NULL) {
        return dflt;
    }
    return cJSON_IsNumber(w) && w->valuedouble == (double)(int)w->valuedouble ? (int)w->valuedouble
                                                                              : -1;
}

/* The one YAML document of @text as cJSON (you own *out). */
static enum gx_err
yaml_json(const char *text, size_t len, cJSON **out, struct gx_why *why)
{
    struct gx_yamldocs d = {0};
    enum gx_err rc = gx_yamldoc_parse(text, len, DEPLOY_MAX_DEPTH, DEPLOY_MAX_JSON, &d, why);

    if (rc != GX_OK) {
        return rc;
    }
    if (d.n != 1) {
        gx_why_set(why, "expected one YAML document, found %zu", d.n);
        rc = GX_EPARSE;
    } else {
        *out = cJSON_ParseWithLength(d.docs[0].json, d.docs[0].len);
        rc = *out != NULL ? GX_OK : GX_ENOMEM;
    }
    gx_yamldoc_release(&d);
    return rc;
}

static bool
kind_is(const cJSON *doc, const char *kind)
{
    const cJSON *k = get(doc, "kind");

    return cJSON_IsString(k) && strcmp(k->valuestring, kind) == 0;
}

/* Replace a ConfigMap in *@doc by the KubeSchedulerConfiguration of its one data value. */
static enum gx_err
unwrap(cJSON **doc, struct gx_why *why)
{
    const cJSON *data = get(*doc, "data");
    cJSON *inner = NULL;
    enum gx_err rc;

    if (kind_is(*doc, "KubeSchedulerConfiguration")) {
        return GX_OK;
    }
    if (!kind_is(*doc, "ConfigMap") || cJSON_GetArraySize(data) != 1 ||
        !cJSON_IsString(data->child)) {
        gx_why_set(why, "expected a KubeSchedulerConfiguration, or a ConfigMap with one data "
                        "value holding it");
        return GX_EINVAL;
    }
    rc = yaml_json(data->child->valuestring, strlen(data->child->valuestring), &inner, why);
    if (rc != GX_OK) {
        return rc;
    }
    cJSON_Delete(*doc);
    *doc = inner;
    if (!kind_is(inner, "KubeSchedulerConfiguration")) {
        gx_why_set(why, "the ConfigMap's data is not a KubeSchedulerConfiguration");
        return GX_EINVAL;
    }
    return GX_OK;
}

/* plugins.score of @prof: disabled turns a score off ("*" all), enabled sets its weight. */
static enum gx_err
score_plugins(const cJSON *prof, struct gx_ksched_profile *p, struct gx_why *why)
{
    const cJSON *score = get(get(prof, "plugins"), "score"), *e;

    cJSON_ArrayForEach(e, get(score, "disabled"))
    {
        const char *n = name_of(e);
        bool all = strcmp(n, "*") == 0;
        p->fit_weight = all || strcmp(n, "NodeResourcesFit") == 0 ? 0 : p->fit_weight;
        p->balanced_weight =
            all || strcmp(n, "NodeResourcesBalancedAllocation") == 0 ? 0 : p->balanced_weight;
    }
    cJSON_ArrayForEach(e, get(score, "enabled"))
    {
        int *w = strcmp(name_of(e), "NodeResourcesFit") == 0                  ? &p->fit_weight
                 : strcmp(name_of(e), "NodeResourcesBalancedAllocation") == 0 ? &p->balanced_weight
                                                                              : NULL;
        if (w != NULL && (*w = weight_of(e, 1)) < 1) {
            gx_why_set(why, "plugins.score.enabled: %s weight must be a positive integer",
                       name_of(e));
            return GX_EINVAL;
        }
    }
    return GX_OK;
}

/* One entry of NodeResourcesFit's scoringStrategy.resources. */
static enum gx_err
fit_resource(const cJSON *r, struct gx_ksched_profile *p, struct gx_why *why)
{
    const char *n = name_of(r);
    int w = weight_of(r, 1);

    if (strcmp(n, "nvidia.com/gpu") == 0 && w >= 0) {
        p->gpu_weight = w;
        return GX_OK;
    }
    if ((strcmp(n, "cpu") == 0 || strcmp(n, "memory") == 0) && w == 1) {
        return GX_OK;
    }
    gx_why_set(why,
               "NodeResourcesFit scoring resource %s weight %d is not modelled (cpu and memory "
               "weigh 1, nvidia.com/gpu any)",
               n, w);
    return GX_EINVAL;
}

/* NodeResourcesFit's args in pluginConfig of @prof: the scoring strategy and its resources. */
static enum gx_err
fit_args(const cJSON *prof, struct gx_ksched_profile *p, struct gx_why *why)
{
    const cJSON *pc, *r;

    cJSON_ArrayForEach(pc, get(prof, "pluginConfig"))
    {
        const cJSON *ss = get(get(pc, "args"), "scoringStrategy"), *type = get(ss, "type");
        if (strcmp(name_of(pc), "NodeResourcesFit") != 0 || ss == NULL) {
            continue;
        }
        if (cJSON_IsString(type) && strcmp(type->valuestring, "MostAllocated") == 0) {
            p->strategy = GX_KS_MOST_ALLOCATED;
        } else if (type != NULL &&
                   !(cJSON_IsString(type) && strcmp(type->valuestring, "LeastAllocated") == 0)) {
            gx_why_set(why,
                       "NodeResourcesFit scoringStrategy.type %s is not modelled "
                       "(LeastAllocated or MostAllocated)",
                       cJSON_IsString(type) ? type->valuestring : "(not a string)");
            return GX_EINVAL;
        }
        cJSON_ArrayForEach(r, get(ss, "resources"))
        {
            enum gx_err rc = fit_resource(r, p, why);
            if (rc != GX_OK) {
                return rc;
            }
        }
    }
    return GX_OK;
}

/* percentageOfNodesToScore: the profile's, else the configuration's, else adaptive (0). */
static enum gx_err
sampling(const cJSON *root, const cJSON *prof, struct gx_ksched_profile *p, struct gx_why *why)
{
    const cJSON *v = get(prof, "percentageOfNodesToScore");

    v = v != NULL ? v : get(root, "percentageOfNodesToScore");
    if (v == NULL) {
        p->pct_nodes_to_score = 0;
        return GX_OK;
    }
    if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 100) {
        gx_why_set(why, "percentageOfNodesToScore must be a number from 0 to 100");
        return GX_EINVAL;
    }
    p->pct_nodes_to_score = (int)v->valuedouble;
    return GX_OK;
}

/* The first extender: its weight (kube-scheduler's default 1) and whether it takes every pod. */
static enum gx_err
extender(const cJSON *root, struct gx_sim_sched *s, struct gx_why *why)
{
    const cJSON *ext = cJSON_GetArrayItem(get(root, "extenders"), 0);

    if (!cJSON_IsObject(ext)) {
        gx_why_set(why, "no extenders: not a gpu-extender scheduler");
        return GX_EINVAL;
    }
    s->profile.extender_weight = weight_of(ext, 1);
    if (s->profile.extender_weight < 1) {
        gx_why_set(why, "extenders[0].weight must be a positive integer");
        return GX_EINVAL;
    }
    /* HTTPExtender.IsInterested: no managedResources means every pod */
    s->all_pods = cJSON_GetArraySize(get(ext, "managedResources")) == 0;
    return GX_OK;
}

/* The facts of @root, a KubeSchedulerConfiguration, into @s. */
static enum gx_err
read_sched(const cJSON *root, struct gx_sim_sched *s, struct gx_why *why)
{
    const cJSON *prof = cJSON_GetArrayItem(get(root, "profiles"), 0);
    enum gx_err rc;

    gx_ksched_profile_default(&s->profile);
    if (!cJSON_IsObject(prof)) {
        gx_why_set(why, "no profiles: nothing to simulate");
        return GX_EINVAL;
    }
    if ((rc = score_plugins(prof, &s->profile, why)) != GX_OK ||
        (rc = fit_args(prof, &s->profile, why)) != GX_OK ||
        (rc = sampling(root, prof, &s->profile, why)) != GX_OK) {
        return rc;
    }
    return extender(root, s, why);
}

enum gx_err
gx_sim_sched_parse(const char *yaml, size_t len, struct gx_sim_sched *out, struct gx_why *why)
{
    cJSON *doc = NULL;
    struct gx_sim_sched s;
    enum gx_err rc = yaml_json(yaml, len, &doc, why);

    if (rc == GX_OK) {
        rc = unwrap(&doc, why);
    }
    if (rc == GX_OK) {
        rc = read_sched(doc, &s, why);
    }
    if (rc == GX_OK) {
        *out = s;
    }
    cJSON_Delete(doc);
    return rc;
}
