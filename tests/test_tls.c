/* SPDX-License-Identifier: Apache-2.0 */
/* test_tls.c - the GnuTLS checks of server.tls_* settings. */
#include "gx_test.h"

#include <string.h>

#include "tls.h"

GX_SUITE(tls);

Test(tls, priorities_are_checked)
{
    struct gx_why why = {{0}};

    cr_assert_eq(gx_tls_check_priorities(NULL, &why), GX_OK);
    cr_assert_eq(gx_tls_check_priorities("NORMAL", &why), GX_OK);
    cr_assert_eq(gx_tls_check_priorities("NOT-A-PRIORITY", &why), GX_EINVAL);
    cr_assert(strstr(why.text, "server.tls_priorities") != NULL, "%s", why.text);
}

Test(tls, tls_pair_is_checked)
{
    struct gx_why why = {{0}};

    cr_assert_eq(gx_tls_check_pair("not pem", 7, "not pem", 7, &why), GX_EINVAL);
    cr_assert(strstr(why.text, "server.tls_cert_file") != NULL, "%s", why.text);
}

Test(tls, effective_priorities_drop_old_protocols)
{
    char eff[256];

    gx_tls_effective_priorities(NULL, eff, sizeof(eff));
    cr_assert(strncmp(eff, GX_TLS_PRIORITIES, strlen(GX_TLS_PRIORITIES)) == 0, "%s", eff);
    cr_assert(strstr(eff, "-VERS-TLS1.1") != NULL, "%s", eff);
    gx_tls_effective_priorities("NORMAL", eff, sizeof(eff));
    cr_assert(strncmp(eff, "NORMAL:", 7) == 0, "%s", eff);
}
