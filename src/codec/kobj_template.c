/* SPDX-License-Identifier: Apache-2.0 */
/*
 * kobj_template.c - the Pod a manifest document stands for (gx_kobj_pod_of):
 * a Pod itself, or the pod template of a workload written out as a Pod, so
 * `explain` can answer for `kubectl apply -f deployment.yaml` too. Reads
 * the document with the Pod caps; writes JSON, decodes nothing.
 */
#include "kobj_int.h"

#include <stdio.h>
#include <string.h>

/* Kinds with a pod template, and where it is. */
static const struct {
    const char *kind;
    const char *path[4]; /* keys from the root to the template, NULL-ended */
} workloads[] = {
    {"Deployment", {"spec", "template", NULL}},
    {"StatefulSet", {"spec", "template", NULL}},
    {"DaemonSet", {"spec", "template", NULL}},
    {"ReplicaSet", {"spec", "template", NULL}},
    {"Job", {"spec", "template", NULL}},
    {"CronJob", {"spec", "jobTemplate", "spec", "template"}},
};

/* The string member @key of @o, or @dflt. */
static const char *
str_of(const cJSON *o, const char *key, const char *dflt)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

    return s != NULL ? s : dflt;
}

/* Member @item as JSON text, appended. */
static void
put_item(struct gx_buf *b, enum gx_err *rc, const cJSON *item)
{
    char *s = cJSON_PrintUnformatted(item);

    if (s == NULL) {
        *rc = *rc == GX_OK ? GX_ENOMEM : *rc;
        return;
    }
    gx_buf_put(b, rc, s);
    cJSON_free(s);
}

/* The template @t of workload @w as a Pod named after the workload. */
static enum gx_err
put_template_pod(struct gx_buf *b, const cJSON *w, const cJSON *t)
{
    const cJSON *wmeta = cJSON_GetObjectItemCaseSensitive(w, "metadata");
    const cJSON *tmeta = cJSON_GetObjectItemCaseSensitive(t, "metadata");
    const cJSON *m = cJSON_IsObject(tmeta) ? tmeta->child : NULL;
    enum gx_err rc = GX_OK;

    gx_buf_put(b, &rc, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":");
    gx_buf_put_json_str(b, &rc, str_of(tmeta, "name", str_of(wmeta, "name", "")));
    gx_buf_put(b, &rc, ",\"namespace\":");
    gx_buf_put_json_str(b, &rc, str_of(tmeta, "namespace", str_of(wmeta, "namespace", "")));
    for (; m != NULL; m = m->next) {
        if (strcmp(m->string, "name") != 0 && strcmp(m->string, "namespace") != 0) {
            gx_buf_put(b, &rc, ",");
            gx_buf_put_json_str(b, &rc, m->string);
            gx_buf_put(b, &rc, ":");
            put_item(b, &rc, m);
        }
    }
    gx_buf_put(b, &rc, "},\"spec\":");
    put_item(b, &rc, cJSON_GetObjectItemCaseSensitive(t, "spec"));
    gx_buf_put(b, &rc, "}");
    return rc;
}

/* The pod template of @root, a workload of kind @i; NULL when it has none. */
static const cJSON *
template_of(const cJSON *root, size_t i)
{
    const cJSON *t = root;

    for (int k = 0; k < 4 && workloads[i].path[k] != NULL && t != NULL; k++) {
        t = cJSON_GetObjectItemCaseSensitive(t, workloads[i].path[k]);
    }
    return cJSON_IsObject(t) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(t, "spec")) ? t
                                                                                            : NULL;
}

/* A kind explain refuses, or a workload without a template. */
static enum gx_err
refuse(const char *kind, size_t i, struct gx_why *why)
{
    if (i < sizeof(workloads) / sizeof(workloads[0])) {
        gx_why_set(why, "%s without a pod template (%s.%s)", kind, workloads[i].path[0],
                   workloads[i].path[2] != NULL ? "jobTemplate.spec.template" : "template");
    } else {
        gx_why_set(why,
                   "kind %s is not a Pod; explain takes a Pod or a workload with a pod template "
                   "(Deployment, StatefulSet, DaemonSet, ReplicaSet, Job, CronJob)",
                   kind);
    }
    return GX_EINVAL;
}

enum gx_err
gx_kobj_pod_of(const char *json, size_t len, int max_depth, struct gx_buf *pod, char *what,
               size_t what_n, bool *template, struct gx_why *why)
{
    struct doc doc;
    const cJSON *meta;
    const char *kind;
    size_t i = 0, n = sizeof(workloads) / sizeof(workloads[0]);
    enum gx_err rc;

    *template = false;
    (void)snprintf(what, what_n, "a document");
    if ((rc = kobj_doc_parse(&doc, json, len, max_depth, GX_POD_MAX_VALUES, why)) != GX_OK) {
        kobj_doc_free(&doc);
        return rc;
    }
    if (!cJSON_IsObject(doc.root)) {
        gx_why_set(why, "not an object");
        kobj_doc_free(&doc);
        return GX_EINVAL;
    }
    kind = str_of(doc.root, "kind", "Pod");
    meta = cJSON_GetObjectItemCaseSensitive(doc.root, "metadata");
    (void)snprintf(what, what_n, "%s %s%s%s", kind, str_of(meta, "namespace", ""),
                   str_of(meta, "namespace", "")[0] != '\0' ? "/" : "", str_of(meta, "name", "-"));
    while (i < n && strcmp(kind, workloads[i].kind) != 0) {
        i++;
    }
    if (strcmp(kind, "Pod") == 0) {
        rc = gx_buf_add(pod, json, len);
    } else if (i < n && template_of(doc.root, i) != NULL) {
        *template = true;
        rc = put_template_pod(pod, doc.root, template_of(doc.root, i));
    } else {
        rc = refuse(kind, i, why);
    }
    kobj_doc_free(&doc);
    return rc;
}
