/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config_load.c - gx_config_load(): read the config file (4 MiB cap), parse
 * it with its directory as base_dir, read the TLS certificate and key it
 * names and check that every other file it names can be read (the file
 * sources, the API server's and Prometheus' token, password and CA files):
 * start-up would refuse to serve without them, so --check-config and a
 * reload refuse them too, naming the key.
 *
 * The only file of the config module that does I/O; parsing and checking
 * are gx_config_parse's (config.c).
 */
#include "config_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tls.h"

/* The config file is small; anything bigger is a mistake or an attack. */
#define CONFIG_FILE_CAP (4u << 20)

/* The directory part of @path ("." when there is none); NULL on ENOMEM. */
static char *
dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');

    if (slash == NULL) {
        return gx_config_dup_str(".");
    }
    if (slash == path) {
        return gx_config_dup_str("/");
    }
    return gx_strndup(path, (size_t)(slash - path));
}

/*
 * The TLS pair must be what start-up can serve with: both files readable
 * (1 MiB cap, as start-up reads them) and a certificate matching its key.
 */
static enum gx_err
check_tls_files(const struct gx_config *cfg, struct gx_why *why)
{
    char *cert = NULL, *key = NULL;
    size_t cert_len = 0, key_len = 0;
    enum gx_err rc;

    if (cfg->tls_cert_file == NULL) {
        return GX_OK;
    }
    rc = gx_read_file(cfg->tls_cert_file, 1u << 20, &cert, &cert_len);
    if (rc != GX_OK) {
        gx_why_set(why, "server.tls_cert_file: cannot read '%s': %s", cfg->tls_cert_file,
                   gx_strerror(rc));
        rc = GX_EINVAL;
        goto out;
    }
    rc = gx_read_file(cfg->tls_key_file, 1u << 20, &key, &key_len);
    if (rc != GX_OK) {
        gx_why_set(why, "server.tls_key_file: cannot read '%s': %s", cfg->tls_key_file,
                   gx_strerror(rc));
        rc = GX_EINVAL;
        goto out;
    }
    rc = gx_tls_check_pair(cert, cert_len, key, key_len, why) == GX_OK ? GX_OK : GX_EINVAL;
out:
    free(cert);
    if (key != NULL) {
        memset(key, 0, key_len);
        free(key);
    }
    return rc;
}

enum gx_err
gx_config_check_readable(const char *key, const char *path, struct gx_why *why)
{
    struct stat st;
    int fd;

    if (path == NULL) {
        return GX_OK;
    }
    /* O_NONBLOCK: a FIFO must not hang the check */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        gx_why_set(why, "%s: %s: %s", key, path, strerror(errno));
        return GX_EINVAL;
    }
    if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
        gx_why_set(why, "%s: %s: %s", key, path,
                   S_ISDIR(st.st_mode) ? "is a directory" : strerror(errno));
        (void)close(fd);
        return GX_EINVAL;
    }
    (void)close(fd);
    return GX_OK;
}

/*
 * The files start-up reads: the file sources (start-up loads them before it
 * serves) and the credentials of the API server and Prometheus. The API
 * server's CA is skipped when verification is off, as start-up skips it.
 */
static enum gx_err
check_named_files(const struct gx_config *cfg, struct gx_why *why)
{
    const struct {
        const char *key, *path;
    } files[] = {
        {"sources.files.nodes", cfg->kube_enabled ? NULL : cfg->nodes_file},
        {"kubernetes.token_file", cfg->kube_token_file},
        {"kubernetes.ca_file", cfg->kube_insecure ? NULL : cfg->kube_ca_file},
        {"prometheus.bearer_token_file", cfg->prom_bearer_token_file},
        {"prometheus.basic_auth.password_file", cfg->prom_basic_password_file},
        {"prometheus.ca_file", cfg->prom_insecure ? NULL : cfg->prom_ca_file},
    };
    char key[64];

    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        if (gx_config_check_readable(files[i].key, files[i].path, why) != GX_OK) {
            return GX_EINVAL;
        }
    }
    for (size_t i = 0; i < cfg->n_metrics_files; i++) {
        (void)snprintf(key, sizeof(key), "sources.files.metrics[%zu]", i);
        if (gx_config_check_readable(key, cfg->metrics_files[i], why) != GX_OK) {
            return GX_EINVAL;
        }
    }
    return GX_OK;
}

/* Read at most 4 MiB from @path and parse it with its directory as base_dir. */
enum gx_err
gx_config_load(const char *path, struct gx_config **out, struct gx_why *why)
{
    struct gx_config *cfg = NULL;
    char *text = NULL, *dir = NULL;
    size_t len = 0;
    enum gx_err rc;

    rc = gx_read_file(path, CONFIG_FILE_CAP, &text, &len); /* "-" is stdin, its dir "." */
    if (rc != GX_OK) {
        gx_why_set(why, "cannot read config file '%s': %s", path,
                   rc == GX_ETOOBIG ? "larger than 4 MiB" : gx_strerror(rc));
        goto out;
    }
    if ((dir = dir_of(path)) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    if ((rc = gx_config_parse(text, len, dir, &cfg, why)) != GX_OK) {
        goto out;
    }
    if ((rc = check_tls_files(cfg, why)) != GX_OK || (rc = check_named_files(cfg, why)) != GX_OK) {
        goto out;
    }
    if ((cfg->path = gx_config_dup_str(path)) == NULL) {
        rc = GX_ENOMEM;
        goto out;
    }
    *out = cfg;
    cfg = NULL;
out:
    gx_config_free(cfg);
    free(dir);
    free(text);
    return rc;
}
