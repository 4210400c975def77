/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_report.c - the outputs of the trace replay (sim.h): the --json
 * document of one policy's seeds and the SVG plot of allocation against
 * arrived workload, both from the seeds' mean (gx_sim_mean), and the
 * progress line of a seed. Formats results only; runs nothing and writes
 * no file (simcli.c does).
 */
#include "sim.h"

#include <stdio.h>
#include <string.h>

/* Append @v[0..n) as a JSON array of numbers with 2 decimals. */
static enum gx_err
json_array(struct gx_buf *b, const double *v, size_t n)
{
    enum gx_err rc = gx_buf_adds(b, "[");

    for (size_t i = 0; rc == GX_OK && i < n; i++) {
        rc = gx_buf_addf(b, "%s%.2f", i ? "," : "", v[i]);
    }
    return rc == GX_OK ? gx_buf_adds(b, "]") : rc;
}

/* The gangs of a series: its spec and the sums over its seeds. */
static enum gx_err
json_gangs(const char *spec, const struct gx_sim_result *m, struct gx_buf *out)
{
    enum gx_err rc = gx_buf_adds(out, ",\"gangs\":{\"spec\":");

    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, spec, strlen(spec));
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(out,
                         ",\"total\":%zu,\"placed\":%zu,\"failed\":%zu,\"partially_bound\":%zu,"
                         "\"total_at_100\":%zu,\"failed_at_100\":%zu}",
                         m->gangs, m->gangs_placed, m->gangs_failed, m->gangs_partial, m->gangs_100,
                         m->gangs_failed_100);
    }
    return rc;
}

/* One series of the --json document: its policy and the means over its seeds. */
static enum gx_err
json_series(const struct gx_sim_series *s, struct gx_buf *out)
{
    struct gx_sim_result m;
    enum gx_err rc;

    gx_sim_mean(s->runs, s->n_runs, &m);
    rc = gx_buf_adds(out, "{\"policy\":");
    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, s->policy, strlen(s->policy));
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"alloc_pct\":");
    }
    if (rc == GX_OK) {
        rc = json_array(out, m.alloc_pct, GX_SIM_STEPS);
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"frag_pct\":");
    }
    if (rc == GX_OK) {
        rc = json_array(out, m.frag_pct, GX_SIM_STEPS);
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(out, ",\"failed_pods\":%zu,\"pods\":%zu", m.failed, m.pods);
    }
    if (rc == GX_OK && s->gangs != NULL) {
        rc = json_gangs(s->gangs, &m, out);
    }
    return rc == GX_OK ? gx_buf_adds(out, "}") : rc;
}

/* The trace, the seeds and the x axis the series share. */
static enum gx_err
json_head(const struct gx_sim_series *s, size_t n, struct gx_buf *out)
{
    const char *trace = n > 0 ? s[0].trace : "";
    enum gx_err rc = gx_buf_adds(out, "{\"trace\":");

    if (rc == GX_OK) {
        rc = gx_buf_add_json_str(out, trace, strlen(trace));
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"seeds\":[");
    }
    for (size_t k = 0; rc == GX_OK && n > 0 && k < s[0].n_runs; k++) {
        rc = gx_buf_addf(out, "%s%llu", k ? "," : "", (unsigned long long)s[0].runs[k].seed);
    }
    if (rc == GX_OK) {
        rc = gx_buf_adds(out, "],\"arrived_pct\":[");
    }
    for (size_t i = 0; rc == GX_OK && i < GX_SIM_STEPS; i++) {
        rc = gx_buf_addf(out, "%s%zu", i ? "," : "", i);
    }
    return rc == GX_OK ? gx_buf_adds(out, "]") : rc;
}

enum gx_err
gx_sim_json(const struct gx_sim_series *s, size_t n, struct gx_buf *out)
{
    enum gx_err rc = json_head(s, n, out);

    if (rc == GX_OK) {
        rc = gx_buf_adds(out, ",\"series\":[");
    }
    for (size_t k = 0; rc == GX_OK && k < n; k++) {
        rc = k == 0 ? GX_OK : gx_buf_adds(out, ",");
        rc = rc == GX_OK ? json_series(&s[k], out) : rc;
    }
    return rc == GX_OK ? gx_buf_adds(out, "]}\n") : rc;
}

/* SVG geometry: plot area inside margins, x 0..130 %, y 0..100 % (no broken axis). */
#define SVG_W 720
#define SVG_H 440
#define SVG_L 60
#define SVG_R 180
#define SVG_T 30
#define SVG_B 50

static double
svg_x(double arrived)
{
    return SVG_L + arrived / 130.0 * (SVG_W - SVG_L - SVG_R);
}

static double
svg_y(double pct)
{
    double v = pct < 0.0 ? 0.0 : pct > 100.0 ? 100.0 : pct;
    return SVG_T + (100.0 - v) / 100.0 * (SVG_H - SVG_T - SVG_B);
}

/* Axes, grid and labels. */
static enum gx_err
svg_axes(struct gx_buf *b, const char *trace)
{
    enum gx_err rc = gx_buf_addf(
        b,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
        "font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"100%%\" height=\"100%%\" "
        "fill=\"white\"/>\n<text x=\"%d\" y=\"18\" font-size=\"14\">GPU allocation vs arrived "
        "workload: %.80s</text>\n",
        SVG_W, SVG_H, SVG_L, trace);

    for (int a = 0; rc == GX_OK && a <= 130; a += 10) {
        rc = gx_buf_addf(b,
                         "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                         "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n",
                         svg_x(a), SVG_T, svg_x(a), SVG_H - SVG_B, svg_x(a), SVG_H - SVG_B + 16, a);
    }
    for (int p = 0; rc == GX_OK && p <= 100; p += 10) {
        rc = gx_buf_addf(b,
                         "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                         "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d</text>\n",
                         SVG_L, svg_y(p), SVG_W - SVG_R, svg_y(p), SVG_L - 6, svg_y(p) + 4, p);
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(b,
                         "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">arrived workload (%% "
                         "of GPU capacity)</text>\n<text x=\"14\" y=\"%d\" transform=\"rotate(-90 "
                         "14 %d)\" text-anchor=\"middle\">GPU allocation (%%)</text>\n",
                         (SVG_W - SVG_R + SVG_L) / 2, SVG_H - 10, SVG_H / 2, SVG_H / 2);
    }
    return rc;
}

/* Top of the legend: what its numbers are, and over how many seeds. */
#define LEG_T (SVG_T + 56)

static enum gx_err
svg_legend_head(struct gx_buf *b, size_t n_seeds)
{
    int x = SVG_W - SVG_R + 10;

    return gx_buf_addf(b,
                       "<text x=\"%d\" y=\"%d\">GPU allocation at</text>"
                       "<text x=\"%d\" y=\"%d\">100 %% arrived, mean</text>"
                       "<text x=\"%d\" y=\"%d\">of %zu seed%s:</text>\n",
                       x, SVG_T + 4, x, SVG_T + 20, x, SVG_T + 36, n_seeds,
                       n_seeds == 1 ? "" : "s");
}

/* One series: its curve (mean over its seeds) and its legend entry, in color @k. */
static enum gx_err
svg_series(struct gx_buf *out, const struct gx_sim_series *s, size_t k)
{
    static const char *const colors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e",
                                         "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};
    const char *col = colors[k % GX_ARRAY_LEN(colors)];
    struct gx_sim_result m;
    enum gx_err rc;

    gx_sim_mean(s->runs, s->n_runs, &m);
    rc = gx_buf_addf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
                     col);
    for (size_t i = 0; rc == GX_OK && i < GX_SIM_STEPS; i++) {
        rc = gx_buf_addf(out, "%s%.1f,%.1f", i ? " " : "", svg_x((double)i), svg_y(m.alloc_pct[i]));
    }
    if (rc == GX_OK) {
        rc = gx_buf_addf(out,
                         "\"/>\n<line x1=\"%d\" y1=\"%zu\" x2=\"%d\" y2=\"%zu\" stroke=\"%s\" "
                         "stroke-width=\"3\"/><text x=\"%d\" y=\"%zu\">%.40s %.2f %%</text>\n",
                         SVG_W - SVG_R + 10, LEG_T + 18 * k, SVG_W - SVG_R + 30, LEG_T + 18 * k,
                         col, SVG_W - SVG_R + 36, LEG_T + 4 + 18 * k, s->policy, m.alloc_pct[100]);
    }
    return rc;
}

enum gx_err
gx_sim_svg(const struct gx_sim_series *s, size_t n, struct gx_buf *out)
{
    enum gx_err rc = svg_axes(out, n > 0 ? s[0].trace : "");

    if (rc == GX_OK) {
        rc = svg_legend_head(out, n > 0 ? s[0].n_runs : 0);
    }
    for (size_t k = 0; rc == GX_OK && k < n; k++) {
        rc = svg_series(out, &s[k], k);
    }
    return rc == GX_OK ? gx_buf_adds(out, "</svg>\n") : rc;
}

/* @v with a comma every three digits, as people read pod counts. */
static void
grouped(size_t v, char *out, size_t n)
{
    char digits[32];
    int len = snprintf(digits, sizeof(digits), "%zu", v);
    size_t o = 0;

    for (int i = 0; i < len && o + 1 < n; i++) {
        if (i > 0 && (len - i) % 3 == 0 && o + 2 < n) {
            out[o++] = ',';
        }
        out[o++] = digits[i];
    }
    out[o < n ? o : n - 1] = '\0';
}

void
gx_sim_progress_text(char *out, size_t n, uint64_t seed, size_t done, size_t total)
{
    char d[40], t[40];

    grouped(done, d, sizeof(d));
    grouped(total, t, sizeof(t));
    (void)snprintf(out, n, "seed %llu: %s/%s pods", (unsigned long long)seed, d, t);
}
