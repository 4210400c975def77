/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_ledger.c - the ledger Lease annotation (written by other replicas,
 * editable by anyone with Lease access): decode it, then encode and decode
 * again. What was accepted must encode, the round trip must give the same
 * tenants, and encoding those must give the same bytes.
 */
#include "fuzz_util.h"

#include "ledger.h"

/* True when two tenants hold the same values. */
static bool
same_tenant(const struct gx_tenant *a, const struct gx_tenant *b)
{
    return strcmp(a->uid, b->uid) == 0 && strcmp(a->pod, b->pod) == 0 && a->card == b->card &&
           a->exclusive == b->exclusive && a->slices == b->slices &&
           a->memory_mib == b->memory_mib && a->util_pct == b->util_pct && a->state == b->state &&
           a->since_ms == b->since_ms;
}

/* Encode @t[0..n) as the annotation of node "n" into @out. */
static enum gx_err
encode(struct gx_tenant *t, size_t n, struct gx_buf *out)
{
    struct gx_ledger_node node = {.node = "n", .tenants = t, .n_tenants = n, .cap = n};

    return gx_ledger_node_encode(&node, out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gx_tenant *t1 = NULL, *t2 = NULL;
    size_t n1 = 0, n2 = 0;
    struct gx_buf b1, b2;
    struct gx_why why = {{0}};
    enum gx_err rc;

    if (gx_ledger_node_decode((const char *)data, size, &t1, &n1, &why) != GX_OK) {
        FZ_CHECK(t1 == NULL, "out-param written on failure");
        FZ_CHECK(why.text[0] != '\0', "rejected without a reason");
        return 0;
    }
    for (size_t i = 0; i < n1; i++) {
        FZ_CHECK(memchr(t1[i].uid, '\0', sizeof(t1[i].uid)) != NULL, "uid not terminated");
        FZ_CHECK(memchr(t1[i].pod, '\0', sizeof(t1[i].pod)) != NULL, "pod not terminated");
    }
    gx_buf_init(&b1, 64u << 20);
    gx_buf_init(&b2, 64u << 20);
    rc = encode(t1, n1, &b1);
    FZ_CHECK(rc == GX_OK, "decoded tenants do not encode: %s", gx_strerror(rc));
    rc = gx_ledger_node_decode(b1.data, b1.len, &t2, &n2, &why);
    FZ_CHECK(rc == GX_OK, "own encoding rejected: %s (%s): %.300s", gx_strerror(rc), why.text,
             b1.data);
    FZ_CHECK(n1 == n2, "%zu tenants became %zu", n1, n2);
    for (size_t i = 0; i < n1; i++)
        FZ_CHECK(same_tenant(&t1[i], &t2[i]), "tenant %zu changed in the round trip", i);
    rc = encode(t2, n2, &b2);
    FZ_CHECK(rc == GX_OK, "second encode: %s", gx_strerror(rc));
    FZ_CHECK(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0,
             "encoding not stable:\n%.300s\n%.300s", b1.data, b2.data);
    gx_buf_release(&b2);
    gx_buf_release(&b1);
    free(t2);
    free(t1);
    return 0;
}
