/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ledger_codec.c - the codec of the Lease annotation that holds a node's
 * tenants: JSON out (gx_ledger_node_encode) and in (gx_ledger_node_decode),
 * each within the limits of ledger_int.h so that what one replica writes
 * the others read back exactly. It keeps no state and does not apply what
 * it decodes: gx_ledger_set_node (ledger.c) checks and books it. The Lease
 * object around the annotation is io/leases.c's.
 */
#include "ledger_int.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Largest annotation decode accepts. */
#define LEDGER_MAX_JSON (1u << 20)
/* integers a double holds exactly; the ranges are the ledger's (gx_ledger_tenant_problem) */
#define EXACT (INT64_C(1) << 53)

/* Hex digits of a gang id in a Lease: the id names the group without its (long) name. */
#define GANG_HEX 16

/* A gang id as GANG_HEX hex digits into @out (GANG_HEX + 1 bytes). Cannot fail. */
static void
gang_hex(uint64_t gang, char *out)
{
    (void)snprintf(out, GANG_HEX + 1, "%016" PRIx64, gang);
}

/* A gang id from exactly GANG_HEX lower-case hex digits; false otherwise. */
static bool
gang_parse(const cJSON *c, uint64_t *out)
{
    uint64_t v = 0;

    if (!cJSON_IsString(c) || strlen(c->valuestring) != GANG_HEX ||
        strspn(c->valuestring, "0123456789abcdef") != GANG_HEX) {
        return false;
    }
    for (const char *p = c->valuestring; *p != '\0'; p++) {
        v = v * 16 + (uint64_t)(*p <= '9' ? *p - '0' : *p - 'a' + 10);
    }
    *out = v;
    return true;
}

/* Add one tenant object to the array @arr. GX_ENOMEM. */
static enum gx_err
encode_tenant(cJSON *arr, const struct gx_tenant *t)
{
    cJSON *o = cJSON_CreateObject();
    char gang[GANG_HEX + 1];

    if (o == NULL) {
        return GX_ENOMEM;
    }
    if (!cJSON_AddItemToArray(arr, o)) {
        cJSON_Delete(o);
        return GX_ENOMEM;
    }
    if (cJSON_AddStringToObject(o, "uid", t->uid) == NULL ||
        cJSON_AddStringToObject(o, "pod", t->pod) == NULL ||
        cJSON_AddNumberToObject(o, "card", t->card) == NULL ||
        cJSON_AddBoolToObject(o, "exclusive", t->exclusive) == NULL ||
        cJSON_AddNumberToObject(o, "slices", t->slices) == NULL ||
        (t->milli > 0 && cJSON_AddNumberToObject(o, "milli", t->milli) == NULL) ||
        (t->cpu_milli > 0 &&
         cJSON_AddNumberToObject(o, "cpu_milli", (double)t->cpu_milli) == NULL) ||
        (t->host_mem_mib > 0 &&
         cJSON_AddNumberToObject(o, "host_mem_mib", (double)t->host_mem_mib) == NULL) ||
        cJSON_AddNumberToObject(o, "memory_mib", (double)t->memory_mib) == NULL ||
        cJSON_AddNumberToObject(o, "util_pct", t->util_pct) == NULL ||
        cJSON_AddStringToObject(o, "state", t->state == GX_TENANT_BOUND ? "bound" : "reserved") ==
            NULL ||
        cJSON_AddNumberToObject(o, "since_ms", (double)t->since_ms) == NULL) {
        return GX_ENOMEM;
    }
    gang_hex(t->gang, gang);
    if (t->gang != 0 && cJSON_AddStringToObject(o, "gang", gang) == NULL) {
        return GX_ENOMEM;
    }
    return GX_OK;
}

enum gx_err
gx_ledger_node_encode(const struct gx_ledger_node *n, struct gx_buf *out)
{
    cJSON *root = NULL, *arr;
    char *text = NULL;
    enum gx_err rc = GX_ENOMEM;

    if (n == NULL || out == NULL) {
        return GX_EINVAL;
    }
    for (size_t i = 0; i < n->n_tenants; i++) {
        if (!gx_ledger_tenant_valid(&n->tenants[i])) {
            return GX_EINVAL;
        }
    }
    if ((root = cJSON_CreateObject()) == NULL) {
        goto out;
    }
    if (cJSON_AddNumberToObject(root, "v", 1) == NULL ||
        (arr = cJSON_AddArrayToObject(root, "tenants")) == NULL) {
        goto out;
    }
    for (size_t i = 0; i < n->n_tenants; i++) {
        if ((rc = encode_tenant(arr, &n->tenants[i])) != GX_OK) {
            goto out;
        }
    }
    rc = GX_ENOMEM;
    if ((text = cJSON_PrintUnformatted(root)) == NULL) {
        goto out;
    }
    rc = gx_buf_adds(out, text);
out:
    cJSON_free(text);
    cJSON_Delete(root);
    return rc;
}

/* The integer value of number @item if it is integral and in [lo, hi]. */
static bool
json_int(const cJSON *item, int64_t lo, int64_t hi, int64_t *v)
{
    double d;

    if (!cJSON_IsNumber(item)) {
        return false;
    }
    d = item->valuedouble;
    if (!isfinite(d) || d != floor(d) || d < (double)lo || d > (double)hi) {
        return false;
    }
    *v = (int64_t)d;
    return true;
}

/* A tenant's field in a Lease: its key, its JSON type, where it goes, whether it must be there. */
enum field_kind { FK_STR, FK_INT, FK_I64, FK_BOOL, FK_DBL, FK_STATE, FK_GANG };
struct tenant_field {
    const char *name;
    enum field_kind kind;
    size_t off, size;
    bool required; /* Leases written before milli, the host requests and gangs lack those */
};

#define FIELD(key, kind, member, required)                                                         \
    {                                                                                              \
        key, kind, offsetof(struct gx_tenant, member), sizeof(((struct gx_tenant *)0)->member),    \
            required                                                                               \
    }
static const struct tenant_field FIELDS[] = {
    FIELD("uid", FK_STR, uid, true),
    FIELD("pod", FK_STR, pod, true),
    FIELD("card", FK_INT, card, true),
    FIELD("exclusive", FK_BOOL, exclusive, true),
    FIELD("slices", FK_INT, slices, true),
    FIELD("memory_mib", FK_I64, memory_mib, true),
    FIELD("util_pct", FK_DBL, util_pct, true),
    FIELD("state", FK_STATE, state, true),
    FIELD("since_ms", FK_I64, since_ms, true),
    FIELD("milli", FK_INT, milli, false),
    FIELD("cpu_milli", FK_I64, cpu_milli, false),
    FIELD("host_mem_mib", FK_I64, host_mem_mib, false),
    FIELD("gang", FK_GANG, gang, false),
};
#undef FIELD
#define N_FIELDS (sizeof(FIELDS) / sizeof(FIELDS[0]))

/* Store @c into @t's field @f when its type fits; the ranges are the ledger's rule. */
static bool
decode_field(const struct tenant_field *f, const cJSON *c, struct gx_tenant *t)
{
    char *dst = (char *)t + f->off;
    int64_t v = 0;

    switch (f->kind) {
    case FK_STR:
        if (!cJSON_IsString(c) || strlen(c->valuestring) >= f->size) {
            return false;
        }
        memcpy(dst, c->valuestring, strlen(c->valuestring) + 1);
        return true;
    case FK_INT:
        if (!json_int(c, INT_MIN, INT_MAX, &v)) {
            return false;
        }
        *(int *)(void *)dst = (int)v;
        return true;
    case FK_I64:
        if (!json_int(c, -EXACT, EXACT, &v)) {
            return false;
        }
        *(int64_t *)(void *)dst = v;
        return true;
    case FK_BOOL:
        *(bool *)(void *)dst = cJSON_IsTrue(c);
        return cJSON_IsBool(c);
    case FK_DBL:
        *(double *)(void *)dst = cJSON_IsNumber(c) ? c->valuedouble : 0.0;
        return cJSON_IsNumber(c);
    case FK_STATE:
        if (!cJSON_IsString(c) ||
            (strcmp(c->valuestring, "bound") != 0 && strcmp(c->valuestring, "reserved") != 0)) {
            return false;
        }
        t->state = c->valuestring[0] == 'b' ? GX_TENANT_BOUND : GX_TENANT_RESERVED;
        return true;
    case FK_GANG:
        return gang_parse(c, &t->gang);
    }
    return false;
}

/* Decode one tenant object into @t; fills @why on failure. */
static enum gx_err
decode_tenant(const cJSON *o, struct gx_tenant *t, struct gx_why *why)
{
    bool seen[N_FIELDS] = {false};
    const char *problem;
    const cJSON *c;

    if (!cJSON_IsObject(o)) {
        gx_why_set(why, "must be an object");
        return GX_EPARSE;
    }
    memset(t, 0, sizeof(*t));
    cJSON_ArrayForEach(c, o)
    {
        size_t f = 0;

        while (f < N_FIELDS && strcmp(c->string, FIELDS[f].name) != 0) {
            f++;
        }
        if (f == N_FIELDS) {
            continue; /* newer writers may add fields */
        }
        if (seen[f]) {
            gx_why_set(why, "%s: duplicate key", FIELDS[f].name);
            return GX_EPARSE;
        }
        seen[f] = true;
        if (!decode_field(&FIELDS[f], c, t)) {
            gx_why_set(why, "%s: wrong type or value", FIELDS[f].name);
            return GX_EPARSE;
        }
    }
    for (size_t f = 0; f < N_FIELDS; f++) {
        if (FIELDS[f].required && !seen[f]) {
            gx_why_set(why, "%s: missing", FIELDS[f].name);
            return GX_EPARSE;
        }
    }
    /* the ledger's own rule: what it would not write is never read (fuzz_ledger) */
    if ((problem = gx_ledger_tenant_problem(t)) != NULL) {
        gx_why_set(why, "%s", problem);
        return GX_EPARSE;
    }
    return GX_OK;
}

enum gx_err
gx_ledger_node_decode(const char *json, size_t len, struct gx_tenant **t, size_t *n,
                      struct gx_why *why)
{
    cJSON *root = NULL;
    const cJSON *ver, *arr, *item;
    const char *end = NULL;
    struct gx_tenant *list = NULL;
    size_t count = 0, i = 0;
    enum gx_err rc = GX_EPARSE;

    if (json == NULL || t == NULL || n == NULL) {
        gx_why_set(why, "no input");
        return GX_EINVAL;
    }
    if (len > LEDGER_MAX_JSON) {
        gx_why_set(why, "ledger annotation larger than %u bytes", LEDGER_MAX_JSON);
        return GX_ETOOBIG;
    }
    root = cJSON_ParseWithLengthOpts(json, len, &end, false);
    if (root == NULL) {
        gx_why_set(why, "malformed JSON");
        goto out;
    }
    for (; end != NULL && end < json + len; end++) {
        if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r' && *end != '\0') {
            gx_why_set(why, "trailing data after JSON");
            goto out;
        }
    }
    if (!cJSON_IsObject(root)) {
        gx_why_set(why, "must be an object");
        goto out;
    }
    ver = cJSON_GetObjectItemCaseSensitive(root, "v");
    if (!cJSON_IsNumber(ver) || ver->valuedouble != 1.0) {
        gx_why_set(why, "v: must be 1");
        goto out;
    }
    arr = cJSON_GetObjectItemCaseSensitive(root, "tenants");
    if (!cJSON_IsArray(arr)) {
        gx_why_set(why, "tenants: must be an array");
        goto out;
    }
    cJSON_ArrayForEach(item, arr)
    {
        if (++count > GX_LEDGER_MAX_TENANTS) {
            gx_why_set(why, "tenants: more than %d entries", GX_LEDGER_MAX_TENANTS);
            goto out;
        }
    }
    if (count > 0 && (list = calloc(count, sizeof(*list))) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    cJSON_ArrayForEach(item, arr)
    {
        if ((rc = decode_tenant(item, &list[i], why)) != GX_OK) {
            gx_why_prefix(why, "tenants[%zu]", i);
            goto out;
        }
        i++;
    }
    *t = list;
    *n = count;
    list = NULL;
    rc = GX_OK;
out:
    free(list);
    cJSON_Delete(root);
    return rc;
}
