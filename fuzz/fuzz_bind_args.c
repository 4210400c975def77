/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_bind_args.c - ExtenderBindingArgs as kube-scheduler POSTs them to
 * bind: decode, then use the decoded fields as the error texts of a
 * binding result and an HTTP error body (both must stay valid JSON).
 */
#include "fuzz_util.h"

#include "extender.h"

/* Encode @msg both ways and check each answer is one JSON document. */
static void
encode_with(const char *msg)
{
    struct gx_buf out;
    enum gx_err rc;

    gx_buf_init(&out, 16u << 20);
    rc = gx_ext_encode_bind_result(&out, msg);
    FZ_CHECK(rc == GX_OK, "encode_bind_result: %s", gx_strerror(rc));
    FZ_CHECK(fz_is_json(out.data, out.len), "bind result is not JSON: %.200s", out.data);
    FZ_CHECK(strchr(out.data, '%') == NULL, "'%%' in a bind result: %.200s", out.data);
    gx_buf_reset(&out);
    rc = gx_ext_encode_http_error(&out, 400, msg);
    FZ_CHECK(rc == GX_OK, "encode_http_error: %s", gx_strerror(rc));
    FZ_CHECK(fz_is_json(out.data, out.len), "error body is not JSON: %.200s", out.data);
    gx_buf_release(&out);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct gx_ext_bind_args b;
    struct gx_why why = {{0}};

    if (gx_ext_decode_bind((const char *)data, size, fz_config()->max_json_depth, &b, &why) !=
        GX_OK) {
        FZ_CHECK(why.text[0] != '\0', "decode failed without a reason");
        return 0;
    }
    FZ_CHECK(b.pod_name != NULL && b.pod_namespace != NULL && b.pod_uid != NULL && b.node != NULL,
             "a decoded field is NULL");
    FZ_CHECK(b.pod_name[0] && b.pod_namespace[0] && b.pod_uid[0] && b.node[0],
             "a decoded field is empty");
    encode_with(b.pod_name);
    encode_with(b.pod_namespace);
    encode_with(b.pod_uid);
    encode_with(b.node);
    encode_with(why.text);
    gx_ext_bind_args_release(&b);
    return 0;
}
