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

/*
 * A self-signed P-256 certificate and its pin as openssl computes it:
 *   openssl x509 -pubkey -noout | openssl pkey -pubin -outform der |
 *   openssl dgst -sha256 -binary | base64
 */
static const char pin_cert[] = "-----BEGIN CERTIFICATE-----\n"
                               "MIIBpzCCAU2gAwIBAgIUfo7syxghvnTIvkhisIZgFNEU2RswCgYIKoZIzj0EAwIw\n"
                               "KDEmMCQGA1UEAwwdZ3B1LWV4dGVuZGVyLmdwdS1leHRlbmRlci5zdmMwIBcNMjYx\n"
                               "MjA1MDMyNzE2WhgPMjEyNjExMTEwMzI3MTZaMCgxJjAkBgNVBAMMHWdwdS1leHRl\n"
                               "bmRlci5ncHUtZXh0ZW5kZXIuc3ZjMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n"
                               "brGn+ipf8eUrpJFhtJjl7YFmJ1UF1O4vRxY3ZN0i+QE1QKEta8Vz35nKlodi8iT8\n"
                               "8tS1IUEwfdzEBkshkhjHoqNTMFEwHQYDVR0OBBYEFLPx1kQ/V1uS5opXyWP5BS0v\n"
                               "5oyKMB8GA1UdIwQYMBaAFLPx1kQ/V1uS5opXyWP5BS0v5oyKMA8GA1UdEwEB/wQF\n"
                               "MAMBAf8wCgYIKoZIzj0EAwIDSAAwRQIhAL4eKUNol9lQl8SZWluWNeqCMghbKTuU\n"
                               "EmIfvkflywNNAiB007ccVxKt9dayDgFKoqtahECQdYhAKUbjoAh3BmjwOQ==\n"
                               "-----END CERTIFICATE-----\n";

Test(tls, the_pin_of_a_certificate_is_the_sha256_of_its_public_key)
{
    char pin[128];

    cr_assert_eq(gx_tls_pubkey_pin(pin_cert, strlen(pin_cert), pin, sizeof(pin)), GX_OK);
    cr_assert_str_eq(pin, "sha256//2NvnhhwlWaC7G94Xo4r9UKONpSaVqY4v9Mx4s6m2VSY=");
    cr_assert_eq(gx_tls_pubkey_pin(pin_cert, strlen(pin_cert), pin, 20), GX_EINVAL, "too small");
    cr_assert_eq(gx_tls_pubkey_pin("not pem", 7, pin, sizeof(pin)), GX_EINVAL);
}
