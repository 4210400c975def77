/* SPDX-License-Identifier: Apache-2.0 */
/*
 * explain_pod.c - "why is my pod pending?": a manifest (JSON or YAML, one
 * or more documents) read as a Pod, or as the pod template of a workload,
 * and decided against the current snapshot and ledger, for `explain` and
 * /debug/explain. Warns when kube-scheduler would never ask the extender
 * about the pod at all.
 */
#include "explain_pod.h"

#include <stdio.h>
#include <string.h>

#include "explain.h"
#include "kobj.h"
#include "podreq.h"
#include "sync.h"
#include "yamldoc.h"

/* The scheduler name the manifests and the chart deploy the extender behind. */
#define SHIPPED_SCHEDULER "gpu-scheduler"

/* JSON of all documents of one manifest together, at most. */
#define MANIFEST_JSON_CAP (16u << 20)

/* The manifest read as a Pod: its JSON and what explain says about where it came from. */
struct manifest {
    struct gx_yamldocs docs;
    struct gx_buf pod;     /* the chosen document as Pod JSON */
    char source[1024];     /* "" for a lone Pod */
    char warnings[2][512]; /* why the pod may never reach the extender */
    const char *warning_ptrs[2];
    size_t n_warnings;
};

/* The documents of @text: itself when JSON, else its YAML documents as JSON. */
static enum gx_err
read_docs(const char *text, size_t len, int max_depth, struct gx_yamldocs *docs, struct gx_why *why)
{
    if (gx_yamldoc_is_json(text, len)) {
        memset(docs, 0, sizeof(*docs));
        return GX_OK;
    }
    if (gx_yamldoc_parse(text, len, max_depth, MANIFEST_JSON_CAP, docs, why) != GX_OK) {
        gx_why_prefix(why, "not JSON nor YAML: ");
        return GX_EPARSE;
    }
    if (docs->n == 0) {
        gx_why_set(why, "no document in the manifest");
        return GX_EINVAL;
    }
    return GX_OK;
}

/* Append "kind name" of every document but @chosen to @s (size @n). */
static void
list_others(const struct gx_yamldocs *docs, size_t chosen, int max_depth, char *s, size_t n)
{
    size_t off = strlen(s);

    for (size_t i = 0; i < docs->n && off + 1 < n; i++) {
        struct gx_buf scratch;
        struct gx_why why = {{0}};
        char what[300];
        bool tpl;

        if (i == chosen) {
            continue;
        }
        gx_buf_init(&scratch, GX_POD_MAX_BYTES);
        /* @what names the document whether or not it is a Pod */
        if (gx_kobj_pod_of(docs->docs[i].json, docs->docs[i].len, max_depth, &scratch, what,
                           sizeof(what), &tpl, &why) != GX_OK) {
            tpl = false;
        }
        gx_buf_release(&scratch);
        off += (size_t)snprintf(s + off, n - off, "%s%s (line %d)", off ? ", " : "", what,
                                docs->docs[i].line);
    }
}

/* The first document that is a Pod or a workload, into m->pod; the rest named in m->source. */
static enum gx_err
choose_doc(struct manifest *m, int max_depth, struct gx_why *why)
{
    char what[300], others[700] = "";
    bool tpl = false;
    enum gx_err rc = GX_EINVAL;
    size_t i;

    for (i = 0; i < m->docs.n && rc != GX_OK; i++) {
        gx_buf_reset(&m->pod);
        rc = gx_kobj_pod_of(m->docs.docs[i].json, m->docs.docs[i].len, max_depth, &m->pod, what,
                            sizeof(what), &tpl, why);
    }
    if (rc != GX_OK && m->docs.n > 1) {
        list_others(&m->docs, SIZE_MAX, max_depth, others, sizeof(others));
        gx_why_set(why, "no Pod nor workload with a pod template among the %zu documents: %s",
                   m->docs.n, others);
    }
    if (rc != GX_OK) {
        return rc;
    }
    if (m->docs.n > 1) {
        list_others(&m->docs, i - 1, max_depth, others, sizeof(others));
    }
    (void)snprintf(m->source, sizeof(m->source), "%s%s%s%s%s", tpl ? what : "",
                   tpl ? ": its pod template, explained as a pod" : "",
                   others[0] != '\0' ? (tpl ? "; " : "") : "",
                   others[0] != '\0' ? "the first of several documents; also in the file: " : "",
                   others);
    return GX_OK;
}

/* Warn when kube-scheduler would never call the extender for @pod. */
static void
warn_unreachable(struct manifest *m, const struct gx_config *cfg, const struct gx_pod *pod)
{
    const char *sched = pod->scheduler_name[0] != '\0' ? pod->scheduler_name : "default-scheduler";

    if (strcmp(sched, SHIPPED_SCHEDULER) != 0) {
        (void)snprintf(m->warnings[m->n_warnings++], sizeof(m->warnings[0]),
                       "spec.schedulerName is \"%.100s\"%s, but the extender is deployed behind "
                       "the scheduler \"%s\" (the shipped default; the config names no "
                       "scheduler): the pod's scheduler never asks the extender",
                       sched, pod->scheduler_name[0] != '\0' ? "" : " (unset)", SHIPPED_SCHEDULER);
    }
    if (!gx_podreq_managed(cfg, pod)) {
        (void)snprintf(m->warnings[m->n_warnings++], sizeof(m->warnings[0]),
                       "the pod requests none of the extender's managed resources (%.80s, %.80s, "
                       "%.80s): kube-scheduler never calls the extender for it",
                       cfg->res_gpu, cfg->res_shared, cfg->res_time_slice);
    }
    for (size_t i = 0; i < m->n_warnings; i++) {
        m->warning_ptrs[i] = m->warnings[i];
    }
}

/* Decode the chosen Pod and explain it into @out. */
static enum gx_err
explain_chosen(struct gx_app *app, struct manifest *m, bool json, struct gx_buf *out,
               struct gx_why *why)
{
    struct gx_arena a;
    struct gx_pod pod;
    struct gx_podreq req;
    struct gx_decide_ctx ctx;
    struct gx_explain_notes notes = {NULL, m->warning_ptrs, 0};
    char name[600];
    enum gx_err rc;

    gx_arena_init(&a, 0);
    rc = gx_kobj_decode_pod(m->pod.data, m->pod.len, app->cfg->max_json_depth, &a, &pod, why);
    if (rc == GX_OK) {
        rc = gx_podreq_parse(app->cfg, &pod, &req, why);
    }
    if (rc == GX_OK) {
        warn_unreachable(m, app->cfg, &pod);
        notes.source = m->source[0] != '\0' ? m->source : NULL;
        notes.n_warnings = m->n_warnings;
        (void)snprintf(name, sizeof(name), "%s/%s", pod.namespace, pod.name);
        gx_sync_decide_ctx(app, &ctx);
        rc = json ? gx_explain_json(&ctx, &req, name, &notes, out)
                  : gx_explain_text(&ctx, &req, name, &notes, out);
    }
    gx_arena_release(&a);
    return rc;
}

enum gx_err
gx_explain_pod(struct gx_app *app, const char *text, size_t len, bool json, struct gx_buf *out,
               struct gx_why *why)
{
    struct manifest m;
    int depth = app->cfg->max_json_depth;
    char what[300];
    bool tpl;
    enum gx_err rc;

    memset(&m, 0, sizeof(m));
    gx_buf_init(&m.pod, GX_POD_MAX_BYTES);
    rc = read_docs(text, len, depth, &m.docs, why);
    if (rc == GX_OK && m.docs.n == 0) {
        rc = gx_kobj_pod_of(text, len, depth, &m.pod, what, sizeof(what), &tpl, why);
        if (rc == GX_OK && tpl) {
            (void)snprintf(m.source, sizeof(m.source), "%s: its pod template, explained as a pod",
                           what);
        }
    } else if (rc == GX_OK) {
        rc = choose_doc(&m, depth, why);
    }
    if (rc == GX_OK) {
        rc = explain_chosen(app, &m, json, out, why);
    }
    gx_buf_release(&m.pod);
    gx_yamldoc_release(&m.docs);
    return rc;
}

enum gx_err
gx_explain_pod_offline(const struct gx_config *cfg, struct gx_why *why)
{
    if (cfg->kube_enabled || cfg->nodes_file == NULL) {
        gx_why_set(why,
                   "the config reads the cluster from the API server (%s), so there is "
                   "nothing to explain against offline; ask a running extender with "
                   "--server URL (server.debug_endpoints on)",
                   cfg->kube_enabled ? "kubernetes.enabled" : "no sources.files.nodes");
        return GX_EINVAL;
    }
    return GX_OK;
}
