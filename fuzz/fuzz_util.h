/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_util.h - helpers shared by the libFuzzer targets: a process-wide
 * default config, checks that fail loudly (a failed check is a finding:
 * libFuzzer saves the input), and readers that make ASan look at every byte
 * a parser hands back.
 */
#ifndef GX_FUZZ_UTIL_H
#define GX_FUZZ_UTIL_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "common.h"
#include "config.h"
#include "json.h"
#include "kobj.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* Stop the run with a message when an invariant of the API does not hold. */
#define FZ_CHECK(cond, ...)                                                                        \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz check failed at %s:%d: %s: ", __FILE__, __LINE__, #cond);        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Sink for values read only so ASan checks the memory they come from. */
static volatile size_t fz_sink;

/* Read every byte of @s (NULL allowed). */
static inline void
fz_touch_str(const char *s)
{
    if (s != NULL)
        fz_sink += strlen(s);
}

/* Read every key and value of a key/value array. */
static inline void
fz_touch_kv(const struct gx_kv *kv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        FZ_CHECK(kv[i].key != NULL, "kv[%zu] has a NULL key", i);
        fz_touch_str(kv[i].key);
        fz_touch_str(kv[i].value);
    }
}

/* Read every field of a decoded pod. */
static inline void
fz_touch_pod(const struct gx_pod *p)
{
    fz_touch_str(p->name);
    fz_touch_str(p->namespace);
    fz_touch_str(p->uid);
    fz_touch_str(p->node_name);
    fz_touch_str(p->phase);
    fz_touch_str(p->resource_version);
    fz_touch_kv(p->labels, p->n_labels);
    fz_touch_kv(p->annotations, p->n_annotations);
    fz_touch_kv(p->overhead, p->n_overhead);
    for (size_t i = 0; i < p->n_containers; i++) {
        fz_touch_str(p->containers[i].name);
        fz_touch_kv(p->containers[i].requests, p->containers[i].n_requests);
        fz_touch_kv(p->containers[i].limits, p->containers[i].n_limits);
    }
    for (size_t i = 0; i < p->n_init_containers; i++) {
        fz_touch_str(p->init_containers[i].name);
        fz_touch_kv(p->init_containers[i].requests, p->init_containers[i].n_requests);
        fz_touch_kv(p->init_containers[i].limits, p->init_containers[i].n_limits);
    }
}

/* Read every field of a decoded node; labels must be sorted by key. */
static inline void
fz_touch_node(const struct gx_node_info *n)
{
    fz_touch_str(n->name);
    fz_touch_str(n->resource_version);
    fz_touch_kv(n->labels, n->n_labels);
    for (size_t i = 1; i < n->n_labels; i++)
        FZ_CHECK(strcmp(n->labels[i - 1].key, n->labels[i].key) <= 0, "labels not sorted");
    fz_touch_kv(n->allocatable, n->n_allocatable);
    fz_touch_kv(n->capacity, n->n_capacity);
    for (size_t i = 0; i < n->n_taints; i++) {
        fz_touch_str(n->taints[i].key);
        fz_touch_str(n->taints[i].value);
        fz_touch_str(n->taints[i].effect);
    }
}

/* True when @len bytes of @text are one complete JSON document. */
static inline int
fz_is_json(const char *text, size_t len)
{
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, 0);
    int ok = root != NULL && end == text + len;

    cJSON_Delete(root);
    return ok;
}

/* True when @len bytes of @text are one value by the project's strict scanner. */
static inline int
fz_is_strict_json(const char *text, size_t len)
{
    struct gx_json j;

    gx_json_init(&j, text, len, 1000, NULL);
    if (gx_json_skip(&j) != GX_OK)
        return 0;
    return gx_json_peek(&j) == 0 && j.pos == len;
}

/* The process-wide default config (created once, never freed). */
static inline const struct gx_config *
fz_config(void)
{
    static struct gx_config *cfg;

    if (cfg == NULL && gx_config_default(&cfg) != GX_OK) {
        fprintf(stderr, "gx_config_default failed\n");
        abort();
    }
    return cfg;
}

#endif
