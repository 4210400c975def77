/* SPDX-License-Identifier: Apache-2.0 */
#include <string.h>

#include "metrics.h"
#include "gx_test.h"

GX_SUITE(metrics);

Test(metrics, histogram_buckets_are_cumulative_when_rendered)
{
    struct gx_metrics m;
    struct gx_metrics_gauges g = {.now_ms = 1000};
    struct gx_buf b;

    gx_metrics_init(&m);
    gx_metrics_request(&m, GX_VERB_FILTER, 200, 0.00005);
    gx_metrics_request(&m, GX_VERB_FILTER, 200, 0.003);
    gx_metrics_request(&m, GX_VERB_FILTER, 400, 20.0);
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_metrics_render(&m, &g, &b), GX_OK);
    cr_assert(strstr(
        b.data, "gpu_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"5e-05\"} 1\n"));
    cr_assert(strstr(
        b.data, "gpu_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"0.0001\"} 1\n"));
    cr_assert(strstr(
        b.data, "gpu_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"0.005\"} 2\n"));
    cr_assert(strstr(
        b.data, "gpu_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"10\"} 2\n"));
    cr_assert(strstr(
        b.data, "gpu_extender_request_duration_seconds_bucket{verb=\"filter\",le=\"+Inf\"} 3\n"));
    cr_assert(strstr(b.data, "gpu_extender_requests_total{verb=\"filter\",code=\"2xx\"} 2\n"));
    cr_assert(strstr(b.data, "gpu_extender_requests_total{verb=\"filter\",code=\"4xx\"} 1\n"));
    gx_buf_release(&b);
}

Test(metrics, every_family_has_help_and_type)
{
    struct gx_metrics m;
    struct gx_metrics_gauges g = {.now_ms = 5000, .ready = true};
    struct gx_buf b;
    char *line, *save = NULL;
    char last_type[128] = "";

    gx_metrics_init(&m);
    m.up[GX_UP_PROMETHEUS].last_success_ms = 2000;
    gx_buf_init(&b, 1 << 20);
    cr_assert_eq(gx_metrics_render(&m, &g, &b), GX_OK);
    cr_assert(strstr(b.data, "gpu_extender_source_age_seconds{upstream=\"prometheus\"} 3.000\n"));
    cr_assert(strstr(b.data, "gpu_extender_source_age_seconds{upstream=\"kubernetes\"} -1.000\n"));
    for (line = strtok_r(b.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, "# TYPE ", 7) == 0) {
            (void)snprintf(last_type, sizeof(last_type), "%.*s", (int)strcspn(line + 7, " "),
                           line + 7);
            continue;
        }
        if (line[0] == '#') {
            continue;
        }
        cr_assert(strncmp(line, last_type, strlen(last_type)) == 0, "sample %s under %s", line,
                  last_type);
    }
    gx_buf_release(&b);
}
