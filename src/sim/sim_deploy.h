/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_deploy.h - the shipped deployments as `gpu-extender simulate
 * --deployment` runs them: which files of the repository's manifests/ make
 * each one (the extender's config.json and the gpu-scheduler's
 * KubeSchedulerConfiguration), and the facts of that scheduler profile the
 * simulation models, read from the YAML itself so the simulation cannot
 * drift from what `kubectl apply -k` deploys. Pure: no I/O (simcli reads
 * the files).
 */
#ifndef GX_SIM_DEPLOY_H
#define GX_SIM_DEPLOY_H

#include <stdbool.h>
#include <stddef.h>

#include "common.h"
#include "ksched.h"

/** One shipped deployment: its name and its files, relative to manifests/. */
struct gx_sim_deployment {
    const char *name;      /* "default" (all pods through the extender), "gpu-pods-only" */
    const char *config;    /* the extender's config.json */
    const char *scheduler; /* the gpu-scheduler's KubeSchedulerConfiguration (a ConfigMap) */
};

/** The deployment named @name, NULL for none. The table is static: nothing to free. */
const struct gx_sim_deployment *gx_sim_deployment_find(const char *name);

/** The deployments' names as "a|b" for usage and error messages. Static storage. */
const char *gx_sim_deployment_names(void);

/** What a gpu-scheduler profile sets that the simulation models. */
struct gx_sim_sched {
    struct gx_ksched_profile profile; /* strategy, plugin weights, extender weight, sampling */
    bool all_pods; /* the extender entry has no managedResources: every pod goes through it */
};

/**
 * Read the scheduler facts from @yaml (@len bytes): a ConfigMap whose one
 * data value is a KubeSchedulerConfiguration, or the configuration itself.
 * Its first profile is the one simulated (score plugins disabled or
 * weighted, NodeResourcesFit's scoringStrategy), with the first extender
 * (weight, managedResources) and percentageOfNodesToScore. GX_EPARSE with
 * @why for YAML that does not read, GX_EINVAL for a profile the simulation
 * cannot model (no extender, a strategy other than LeastAllocated or
 * MostAllocated, cpu/memory weights other than 1); GX_ENOMEM. @out is
 * written only on success.
 */
enum gx_err gx_sim_sched_parse(const char *yaml, size_t len, struct gx_sim_sched *out,
                               struct gx_why *why) GX_WUR;

#endif
