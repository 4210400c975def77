/* SPDX-License-Identifier: Apache-2.0 */
/*
 * main.c - command line: serve, --check-config, explain, --version.
 * Signals are handled through the event loop (SIGTERM/SIGINT drain and
 * exit 0, SIGHUP reloads the config), never in a raw signal handler.
 */
#include <curl/curl.h>
#include <event2/event.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "buf.h"
#include "config.h"
#include "config_schema.h"
#include "explain_pod.h"
#include "log.h"
#include "simcli.h"

static void
usage(FILE *f)
{
    (void)fprintf(
        f, "usage: gpu-extender --config FILE          serve the extender\n"
           "       gpu-extender --check-config FILE    validate a config, exit 0 if valid\n"
           "                                           (FILE -: read it from stdin)\n"
           "       gpu-extender --config-schema        print the config's JSON Schema\n"
           "       gpu-extender explain --config FILE --pod POD.yaml [--json]\n"
           "                                           explain decisions for a pod or a\n"
           "                                           workload (JSON or YAML; --pod -\n"
           "                                           reads it from stdin)\n"
           "       gpu-extender explain --server URL --pod POD.yaml [--json]\n"
           "                                           ask a running instance (its\n"
           "                                           /debug/explain, server.debug_endpoints)\n"
           "       gpu-extender simulate --nodes NODES.csv --pods PODS.csv [--config FILE]\n"
           "                [--policy NAME] [--tune 1.3] [--seeds 42-51] [--json OUT] [--svg OUT]\n"
           "                                           replay a cluster trace (simulate --help)\n"
           "       gpu-extender --version\n");
}

static void
signal_cb(evutil_socket_t sig, short what, void *arg)
{
    struct gx_app *app = arg;

    (void)what;
    if (sig == SIGHUP) {
        gx_info("SIGHUP received, reloading config", NULL);
        gx_app_reload(app);
    } else {
        gx_app_shutdown(app);
    }
}

static int
check_config(const char *path)
{
    struct gx_config *cfg = NULL;
    struct gx_why why = {{0}};

    if (gx_config_load(path, &cfg, &why) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: %s: invalid config: %s\n", path, why.text);
        return 1;
    }
    (void)printf("%s: config OK (hash %016llx)\n", path, (unsigned long long)cfg->hash);
    gx_config_free(cfg);
    return 0;
}

static int
serve(const char *config_path)
{
    struct event_base *base = event_base_new();
    struct gx_app *app = NULL;
    struct gx_why why = {{0}};
    struct event *sigs[3] = {NULL, NULL, NULL};
    const int signums[3] = {SIGTERM, SIGINT, SIGHUP};
    int status = 1;

    if (base == NULL) {
        return 1;
    }
#ifdef __GLIBC__
    /*
     * Request and reply bodies of full-Node calls are megabytes each. Served
     * from mmap, every one costs thousands of fresh page faults (slow in a
     * VM); from the heap they reuse the pages of the previous request. The
     * app trims the heap after snapshot rebuilds. glibc caps the mmap
     * threshold at 32 MiB, so the 49 MiB body and reply of 5,000 full Nodes
     * still came from mmap (25,000 page faults a call, 11x the cost of 1,000
     * nodes): M_MMAP_MAX 0 serves every size from the heap. What requests
     * may hold at once is bounded by server.max_inflight_bytes.
     */
    (void)mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    (void)mallopt(M_MMAP_MAX, 0);
    (void)mallopt(M_TRIM_THRESHOLD, 128 * 1024 * 1024);
#endif
    (void)signal(SIGPIPE, SIG_IGN);
    if (gx_app_new(base, config_path, &app, &why) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: cannot start: %s\n", why.text);
        goto out;
    }
    if (gx_app_listen(app, &why) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: cannot listen: %s\n", why.text);
        goto out;
    }
    for (int i = 0; i < 3; i++) {
        sigs[i] = evsignal_new(base, signums[i], signal_cb, app);
        if (sigs[i] == NULL || event_add(sigs[i], NULL) != 0) {
            goto out;
        }
    }
    (void)event_base_dispatch(base);
    status = 0;
out:
    for (int i = 0; i < 3; i++) {
        if (sigs[i] != NULL) {
            event_free(sigs[i]);
        }
    }
    gx_app_free(app);
    event_base_free(base);
    return status;
}

static size_t
collect_cb(char *ptr, size_t size, size_t nmemb, void *arg)
{
    return gx_buf_add(arg, ptr, size * nmemb) == GX_OK ? size * nmemb : 0;
}

/* POST the pod to a running instance's /debug/explain and print the answer. */
static int
explain_remote(const char *server, const char *pod_json, size_t len, bool json)
{
    char url[2048];
    struct gx_buf out;
    CURL *c;
    CURLcode cc;
    long status = 0;
    struct curl_slist *h = NULL;
    size_t n = strlen(server);

    while (n > 0 && server[n - 1] == '/') {
        n--;
    }
    (void)snprintf(url, sizeof(url), "%.*s/debug/explain?format=%s", (int)n, server,
                   json ? "json" : "text");
    gx_buf_init(&out, (size_t)64 << 20);
    c = curl_easy_init();
    if (c == NULL) {
        return 1;
    }
    h = curl_slist_append(h, "Content-Type: application/json");
    (void)curl_easy_setopt(c, CURLOPT_URL, url);
    (void)curl_easy_setopt(c, CURLOPT_POSTFIELDS, pod_json);
    (void)curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    (void)curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    (void)curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect_cb);
    (void)curl_easy_setopt(c, CURLOPT_WRITEDATA, &out);
    (void)curl_easy_setopt(c, CURLOPT_TIMEOUT, 30L);
    cc = curl_easy_perform(c);
    (void)curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    if (cc != CURLE_OK || status != 200) {
        (void)fprintf(stderr, "gpu-extender: %s: %s%s\n", url,
                      cc != CURLE_OK ? curl_easy_strerror(cc) : "HTTP error ",
                      cc != CURLE_OK ? "" : (out.data ? out.data : ""));
        gx_buf_release(&out);
        return 1;
    }
    (void)fputs(out.data ? out.data : "", stdout);
    gx_buf_release(&out);
    return 0;
}

#define HELP "gpu-extender --help"

/* explain's command line. */
struct explain_opts {
    const char *config, *pod, *server;
    bool json;
};

/* explain's options into @o; 0, the exit status of a usage error, or -1 once --help is shown. */
static int
explain_args(int argc, char **argv, struct explain_opts *o)
{
    for (int i = 0; i < argc; i++) {
        const char **slot = strcmp(argv[i], "--config") == 0   ? &o->config
                            : strcmp(argv[i], "--pod") == 0    ? &o->pod
                            : strcmp(argv[i], "--server") == 0 ? &o->server
                                                               : NULL;
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return -1;
        }
        if (strcmp(argv[i], "--json") == 0) {
            o->json = true;
        } else if (slot == NULL) {
            return gx_usage_error(HELP, "explain: unknown option '%s'", argv[i]);
        } else if (i + 1 >= argc) {
            return gx_usage_error(HELP, "explain: missing value for %s", argv[i]);
        } else {
            *slot = argv[++i];
        }
    }
    if (o->pod == NULL) {
        return gx_usage_error(HELP, "explain: --pod is required");
    }
    if ((o->config == NULL) == (o->server == NULL)) {
        return gx_usage_error(HELP, "explain: give one of --config FILE and --server URL");
    }
    return 0;
}

static int
explain(int argc, char **argv)
{
    struct explain_opts o = {NULL, NULL, NULL, false};
    struct event_base *base = NULL;
    struct gx_app *app = NULL;
    struct gx_why why = {{0}};
    struct gx_buf out;
    char *text = NULL;
    size_t len = 0;
    enum gx_err rc;
    int status = explain_args(argc, argv, &o);

    if (status != 0) {
        return status < 0 ? 0 : status;
    }
    status = 1;
    gx_buf_init(&out, (size_t)64 << 20);
    if ((rc = gx_read_file(o.pod, 16u << 20, &text, &len)) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: explain: cannot read %s: %s\n", o.pod,
                      gx_strerror(rc));
        goto out;
    }
    if (o.server != NULL) {
        status = explain_remote(o.server, text, len, o.json);
        goto out;
    }
    base = event_base_new();
    if (base == NULL || gx_app_new(base, o.config, &app, &why) != GX_OK ||
        gx_explain_pod_offline(app->cfg, &why) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: explain: %s: %s\n", o.config, why.text);
        goto out;
    }
    if (gx_explain_pod(app, text, len, o.json, &out, &why) != GX_OK) {
        (void)fprintf(stderr, "gpu-extender: %s: %s\n", o.pod, why.text);
        goto out;
    }
    (void)fputs(out.data ? out.data : "", stdout);
    status = 0;
out:
    gx_buf_release(&out);
    free(text);
    gx_app_free(app);
    if (base != NULL) {
        event_base_free(base);
    }
    return status;
}

/* What was wrong with a top-level command line; the exit status 2. */
static int
main_usage_error(int argc, char **argv)
{
    const char *a = argv[1];

    if (argc < 2) {
        return gx_usage_error(HELP, "no command given");
    }
    if ((strcmp(a, "--config") == 0 || strcmp(a, "--check-config") == 0) && argc == 2) {
        return gx_usage_error(HELP, "missing value for %s", a);
    }
    if (strcmp(a, "--config") == 0 || strcmp(a, "--check-config") == 0 ||
        strcmp(a, "--version") == 0 || strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        return gx_usage_error(HELP, "unexpected argument '%s' after %s", argv[argc - 1], a);
    }
    return gx_usage_error(HELP, a[0] == '-' ? "unknown option '%s'" : "unknown command '%s'", a);
}

int
main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "simulate") == 0) {
        return gx_simcli_main(argc - 2, argv + 2);
    }
    if (argc >= 2 && strcmp(argv[1], "explain") == 0) {
        return explain(argc - 2, argv + 2);
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        (void)printf("gpu-extender %s\n", GX_VERSION);
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--check-config") == 0) {
        return check_config(argv[2]);
    }
    if (argc == 3 && strcmp(argv[1], "--config") == 0) {
        if (strcmp(argv[2], "-") == 0) {
            return gx_usage_error(HELP, "--config needs a file: the extender reloads it");
        }
        return serve(argv[2]);
    }
    if (argc == 2 && strcmp(argv[1], "--config-schema") == 0) {
        char *schema = NULL;

        if (gx_config_schema(&schema) != GX_OK) {
            (void)fprintf(stderr, "gpu-extender: config schema: out of memory\n");
            return 1;
        }
        (void)printf("%s\n", schema);
        free(schema);
        return 0;
    }
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        usage(stdout);
        return 0;
    }
    return main_usage_error(argc, argv);
}
