/* CSV and HTML (inline SVG) reports of simulation runs. The HTML is one
 * file with no script and no external resource, so it opens anywhere. */
#include "sim/report.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"

static const char *const colors[FAIR_SIM_MAX_RUNS] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd"};

static double gpus(int64_t milli)
{
    return (double)milli / 1000.0;
}

static double secs(int64_t ms)
{
    return (double)ms / 1000.0;
}

/* CSV-quotes s when it holds a comma, a quote or a newline. */
static int csv_str(struct fair_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\n\r"))
        return fair_buf_appends(b, s);
    int rc = fair_buf_appends(b, "\"");
    for (; !rc && *s; s++)
        rc = *s == '"' ? fair_buf_appends(b, "\"\"") : fair_buf_append(b, s, 1);
    return rc ? rc : fair_buf_appends(b, "\"");
}

static int html_str(struct fair_buf *b, const char *s)
{
    int rc = 0;
    for (; !rc && *s; s++) {
        switch (*s) {
        case '<':
            rc = fair_buf_appends(b, "&lt;");
            break;
        case '>':
            rc = fair_buf_appends(b, "&gt;");
            break;
        case '&':
            rc = fair_buf_appends(b, "&amp;");
            break;
        case '"':
            rc = fair_buf_appends(b, "&quot;");
            break;
        case '\'':
            rc = fair_buf_appends(b, "&#39;");
            break;
        default:
            rc = fair_buf_append(b, s, 1);
        }
    }
    return rc;
}

int fair_sim_csv_timeseries(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(b, "config,t_s,gpu_capacity,gpu_allocated,alloc_ratio,"
                                 "running_pods,pending_pods,pending_gpu\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        for (size_t i = 0; !rc && i < run->nsamples; i++) {
            const struct fair_sim_sample *s = &run->samples[i];
            rc = csv_str(b, runs[r].label);
            if (!rc)
                rc = fair_buf_appendf(
                    b, ",%.3f,%.3f,%.3f,%.4f,%d,%d,%.3f\n", secs(s->t_ms), gpus(run->gpu_capacity),
                    gpus(s->gpu_allocated),
                    run->gpu_capacity ? (double)s->gpu_allocated / (double)run->gpu_capacity : 0,
                    s->running, s->pending, gpus(s->pending_gpu));
        }
    }
    return rc;
}

int fair_sim_csv_queues(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(b, "config,t_s,queue,project,allocated_gpu,fair_share_gpu,"
                                 "guaranteed_gpu,running_pods,pending_pods\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        const struct fair_sim_config *cfg = runs[r].cfg;
        for (size_t i = 0; !rc && i < run->nsamples; i++) {
            for (size_t q = 0; !rc && q < run->nqueues; q++) {
                const struct fair_sim_qsample *s = &run->qsamples[i * run->nqueues + q];
                const struct fair_queue *cq = &cfg->queues[q];
                rc = csv_str(b, runs[r].label);
                if (!rc)
                    rc = fair_buf_appendf(b, ",%.3f,", secs(run->samples[i].t_ms));
                if (!rc)
                    rc = csv_str(b, cq->q.name);
                if (!rc)
                    rc = fair_buf_appends(b, ",");
                if (!rc)
                    rc = csv_str(b, cq->project_name ? cq->project_name : "");
                if (!rc)
                    rc = fair_buf_appendf(
                        b, ",%.3f,%.3f,%.3f,%d,%d\n", gpus(s->allocated), gpus(s->fair_share),
                        gpus(cq->q.guaranteed.v[FAIR_RES_GPU]), s->running, s->pending);
            }
        }
    }
    return rc;
}

static int summary_row(struct fair_buf *b, const struct fair_sim_labeled *l, const char *queue,
                       const struct fair_sim_qstats *s, bool total)
{
    int rc = csv_str(b, l->label);
    if (!rc)
        rc = fair_buf_appends(b, ",");
    if (!rc)
        rc = csv_str(b, l->policy);
    if (!rc)
        rc = fair_buf_appends(b, ",");
    if (!rc)
        rc = csv_str(b, queue);
    if (!rc)
        rc = fair_buf_appendf(b, ",%zu,%zu,%zu,%zu,", s->jobs, s->started, s->completed,
                              s->never_started);
    if (!rc && s->wait_p50_ms >= 0)
        rc = fair_buf_appendf(b, "%.3f,%.3f,%.3f", secs(s->wait_p50_ms), secs(s->wait_p95_ms),
                              secs(s->wait_max_ms));
    else if (!rc)
        rc = fair_buf_appends(b, ",,");
    if (!rc)
        rc = fair_buf_appendf(b, ",%zu,%.3f,%.3f", s->preemptions,
                              (double)s->lost_gpu_ms / 1000.0 / 3600000.0,
                              (double)s->used_gpu_ms / 1000.0 / 3600000.0);
    const struct fair_sim_run *run = l->run;
    if (!rc && total) {
        rc = fair_buf_appendf(b, ",%.4f,%.4f,", run->mean_alloc_ratio, run->peak_alloc_ratio);
        if (!rc && run->first_fail_ms >= 0)
            rc = fair_buf_appendf(b, "%.3f,%.3f", secs(run->first_fail_ms - run->start_ms),
                                  gpus(run->first_fail_unallocated));
        else if (!rc)
            rc = fair_buf_appends(b, ",");
        if (!rc)
            rc = fair_buf_appendf(b, ",%.3f,%zu,%zu\n", secs(run->end_ms - run->start_ms),
                                  run->cycles, run->evictions);
    } else if (!rc) {
        rc = fair_buf_appends(b, ",,,,,,,\n");
    }
    return rc;
}

int fair_sim_csv_summary(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(
        b, "config,policy,queue,jobs,started,completed,never_started,wait_p50_s,wait_p95_s,"
           "wait_max_s,preemptions,lost_gpu_hours,used_gpu_hours,mean_alloc_ratio,"
           "peak_alloc_ratio,first_fail_s,unallocated_gpu_at_first_fail,duration_s,cycles,"
           "evictions\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        for (size_t q = 0; !rc && q < run->nqueues; q++)
            rc = summary_row(b, &runs[r], runs[r].cfg->queues[q].q.name, &run->qstats[q], false);
        if (!rc)
            rc = summary_row(b, &runs[r], "*", &run->qstats[run->nqueues], true);
    }
    return rc;
}

int fair_sim_csv_frag(struct fair_buf *b, const struct fair_sim_frag_row *rows, size_t n)
{
    int rc = fair_buf_appends(b, "trace,policy,repeats,unallocated_gpu,unallocated_gpu_min,"
                                 "unallocated_gpu_max,first_fail_unallocated_gpu,"
                                 "first_fail_arrived_pct,failed_pods,seconds\n");
    for (size_t i = 0; !rc && i < n; i++) {
        const struct fair_sim_frag_row *r = &rows[i];
        rc = csv_str(b, r->trace);
        if (!rc)
            rc = fair_buf_appends(b, ",");
        if (!rc)
            rc = csv_str(b, r->policy);
        if (!rc)
            rc = fair_buf_appendf(b, ",%zu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.2f\n", r->repeats,
                                  r->unallocated_gpu, r->unallocated_gpu_min,
                                  r->unallocated_gpu_max, r->first_fail_unallocated,
                                  r->first_fail_arrived_pct, r->failed_pods, r->seconds);
    }
    return rc;
}

/* ---- HTML ---------------------------------------------------------------- */

#define CW 720
#define CH 262
#define ML 56
#define MR 16
#define MT 28
#define MB 58

struct series {
    const char *label;
    const char *color;
    bool dashed;
    const struct fair_sim_run *run;
    /* value of sample i */
    double (*value)(const struct fair_sim_run *run, size_t i, size_t q);
    size_t q;
};

static double v_ratio(const struct fair_sim_run *run, size_t i, size_t q)
{
    (void)q;
    return run->gpu_capacity
               ? 100.0 * (double)run->samples[i].gpu_allocated / (double)run->gpu_capacity
               : 0;
}

static double v_pending(const struct fair_sim_run *run, size_t i, size_t q)
{
    (void)q;
    return gpus(run->samples[i].pending_gpu);
}

static double v_qalloc(const struct fair_sim_run *run, size_t i, size_t q)
{
    return gpus(run->qsamples[i * run->nqueues + q].allocated);
}

static double v_qfair(const struct fair_sim_run *run, size_t i, size_t q)
{
    return gpus(run->qsamples[i * run->nqueues + q].fair_share);
}

static double nice_max(double v)
{
    if (v <= 0)
        return 1;
    double step = 1;
    while (step * 10 < v)
        step *= 10;
    while (step > v * 10)
        step /= 10;
    for (double m = step;; m += step / 2)
        if (m >= v)
            return m;
}

static int chart(struct fair_buf *b, const char *title, const char *yunit, double ymax_fixed,
                 const struct series *s, size_t ns)
{
    double xmax = 0, ymax = ymax_fixed;
    for (size_t k = 0; k < ns; k++) {
        const struct fair_sim_run *run = s[k].run;
        double span = (double)(run->end_ms - run->start_ms) / 3600000.0;
        if (span > xmax)
            xmax = span;
        if (ymax_fixed <= 0)
            for (size_t i = 0; i < run->nsamples; i++) {
                double v = s[k].value(run, i, s[k].q);
                if (v > ymax)
                    ymax = v;
            }
    }
    if (ymax_fixed <= 0)
        ymax = nice_max(ymax);
    if (xmax <= 0)
        xmax = 1;
    const double pw = CW - ML - MR, ph = CH - MT - MB;
    int rc = fair_buf_appendf(b,
                              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                              "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n"
                              "<text x=\"%d\" y=\"18\" class=\"t\">",
                              CW, CH, CW, CH, ML);
    if (!rc)
        rc = html_str(b, title);
    if (!rc)
        rc = fair_buf_appendf(b,
                              "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" "
                              "fill=\"none\" stroke=\"#999\"/>\n",
                              ML, MT, pw, ph);
    for (int i = 0; !rc && i <= 4; i++) {
        double y = MT + ph - ph * i / 4.0;
        rc = fair_buf_appendf(b,
                              "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" "
                              "stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" class=\"a\" "
                              "text-anchor=\"end\">%g%s</text>\n",
                              ML, ML + pw, y, y, ML - 4, y + 4, ymax * i / 4.0, yunit);
    }
    for (int i = 0; !rc && i <= 6; i++) {
        double x = ML + pw * i / 6.0;
        rc = fair_buf_appendf(b,
                              "<text x=\"%.1f\" y=\"%.0f\" class=\"a\" "
                              "text-anchor=\"middle\">%.3gh</text>\n",
                              x, MT + ph + 16, xmax * i / 6.0);
    }
    for (size_t k = 0; !rc && k < ns; k++) {
        const struct fair_sim_run *run = s[k].run;
        rc = fair_buf_appendf(b,
                              "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\"%s "
                              "points=\"",
                              s[k].color, s[k].dashed ? " stroke-dasharray=\"5,3\"" : "");
        for (size_t i = 0; !rc && i < run->nsamples; i++) {
            double x =
                ML + pw * ((double)(run->samples[i].t_ms - run->start_ms) / 3600000.0) / xmax;
            double v = s[k].value(run, i, s[k].q);
            if (v > ymax)
                v = ymax;
            double y = MT + ph - ph * v / ymax;
            rc = fair_buf_appendf(b, "%.1f,%.1f ", x, y);
        }
        if (!rc)
            rc = fair_buf_appends(b, "\"/>\n");
        /* Legend: one row under the x axis, out of the data's way. */
        double lx = ML + 170.0 * (double)(k % 4), ly = CH - 8 - 14.0 * (double)(k / 4 == 0);
        if (!rc)
            rc = fair_buf_appendf(b,
                                  "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" "
                                  "stroke=\"%s\" stroke-width=\"2\"%s/><text x=\"%.0f\" "
                                  "y=\"%.0f\" class=\"a\">",
                                  lx, lx + 20, ly - 4, ly - 4, s[k].color,
                                  s[k].dashed ? " stroke-dasharray=\"5,3\"" : "", lx + 24, ly);
        if (!rc)
            rc = html_str(b, s[k].label);
        if (!rc)
            rc = fair_buf_appends(b, "</text>\n");
    }
    if (!rc)
        rc = fair_buf_appends(b, "</svg>\n");
    return rc;
}

static int td_wait(struct fair_buf *b, int64_t ms)
{
    if (ms < 0)
        return fair_buf_appends(b, "<td>-</td>");
    return fair_buf_appendf(b, "<td>%.0f</td>", secs(ms));
}

static int table(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(
        b, "<table><tr><th>config</th><th>queue</th><th>jobs</th><th>started</th>"
           "<th>completed</th><th>wait p50 (s)</th><th>wait p95 (s)</th><th>wait max (s)</th>"
           "<th>preemptions</th><th>lost GPU-h</th><th>used GPU-h</th></tr>\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        for (size_t q = 0; !rc && q <= run->nqueues; q++) {
            const struct fair_sim_qstats *s = &run->qstats[q];
            rc = fair_buf_appendf(b, "<tr%s><td style=\"color:%s\">",
                                  q == run->nqueues ? " class=\"tot\"" : "", colors[r]);
            if (!rc)
                rc = html_str(b, runs[r].label);
            if (!rc)
                rc = fair_buf_appends(b, "</td><td>");
            if (!rc)
                rc = html_str(b, q == run->nqueues ? "all" : runs[r].cfg->queues[q].q.name);
            if (!rc)
                rc = fair_buf_appendf(b, "</td><td>%zu</td><td>%zu</td><td>%zu</td>", s->jobs,
                                      s->started, s->completed);
            if (!rc)
                rc = td_wait(b, s->wait_p50_ms);
            if (!rc)
                rc = td_wait(b, s->wait_p95_ms);
            if (!rc)
                rc = td_wait(b, s->wait_max_ms);
            if (!rc)
                rc = fair_buf_appendf(b, "<td>%zu</td><td>%.1f</td><td>%.1f</td></tr>\n",
                                      s->preemptions, (double)s->lost_gpu_ms / 3.6e9,
                                      (double)s->used_gpu_ms / 3.6e9);
        }
    }
    return rc ? rc : fair_buf_appends(b, "</table>\n");
}

int fair_sim_html(struct fair_buf *b, const char *title, const struct fair_sim_labeled *runs,
                  size_t n)
{
    if (n > FAIR_SIM_MAX_RUNS)
        n = FAIR_SIM_MAX_RUNS;
    struct series s[2 * FAIR_SIM_MAX_RUNS];
    memset(s, 0, sizeof(s));
    int rc = fair_buf_appends(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
                                 "charset=\"utf-8\"><title>");
    if (!rc)
        rc = html_str(b, title);
    if (!rc)
        rc = fair_buf_appends(
            b, "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:80em}"
               "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
               "padding:2px 8px;text-align:right}tr.tot{font-weight:bold}"
               "svg .t{font-size:14px;font-weight:bold}svg .a{font-size:11px;fill:#444}"
               "</style></head><body>\n<h1>");
    if (!rc)
        rc = html_str(b, title);
    if (!rc)
        rc = fair_buf_appends(b, "</h1>\n<h2>Configurations</h2>\n<table><tr><th>config</th>"
                                 "<th>projects file</th><th>placement</th><th>mean GPU "
                                 "allocation</th><th>peak</th><th>first failed arrival</th>"
                                 "<th>unallocated GPUs then</th><th>simulated time</th>"
                                 "<th>cycles</th><th>evictions</th></tr>\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        rc = fair_buf_appendf(b, "<tr><td style=\"color:%s\">", colors[r]);
        if (!rc)
            rc = html_str(b, runs[r].label);
        if (!rc)
            rc = fair_buf_appends(b, "</td><td>");
        if (!rc)
            rc = html_str(b, runs[r].source);
        if (!rc)
            rc = fair_buf_appends(b, "</td><td>");
        if (!rc)
            rc = html_str(b, runs[r].policy);
        if (!rc)
            rc = fair_buf_appendf(b, "</td><td>%.1f%%</td><td>%.1f%%</td>",
                                  100 * run->mean_alloc_ratio, 100 * run->peak_alloc_ratio);
        if (!rc && run->first_fail_ms >= 0)
            rc = fair_buf_appendf(b, "<td>%.2fh</td><td>%.1f</td>",
                                  (double)(run->first_fail_ms - run->start_ms) / 3.6e6,
                                  gpus(run->first_fail_unallocated));
        else if (!rc)
            rc = fair_buf_appends(b, "<td>none</td><td>-</td>");
        if (!rc)
            rc = fair_buf_appendf(b, "<td>%.2fh</td><td>%zu</td><td>%zu</td></tr>\n",
                                  (double)(run->end_ms - run->start_ms) / 3.6e6, run->cycles,
                                  run->evictions);
    }
    if (!rc)
        rc = fair_buf_appends(b, "</table>\n<h2>Cluster</h2>\n");
    for (size_t r = 0; r < n; r++)
        s[r] = (struct series){runs[r].label, colors[r], false, runs[r].run, v_ratio, 0};
    if (!rc)
        rc = chart(b, "GPU allocation ratio", "%", 100, s, n);
    for (size_t r = 0; r < n; r++)
        s[r] = (struct series){runs[r].label, colors[r], false, runs[r].run, v_pending, 0};
    if (!rc)
        rc = chart(b, "GPUs requested by pending pods", "", 0, s, n);
    if (!rc)
        rc = fair_buf_appends(b, "<h2>Queues: allocated (solid) against fair share "
                                 "(dashed), in GPUs</h2>\n");
    /* One chart per queue name; runs that lack the queue are skipped.
     * At most FAIR_SIM_MAX_CHARTS charts: queues.csv has every queue. */
    size_t charts = 0, skipped = 0;
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_config *cfg = runs[r].cfg;
        for (size_t q = 0; !rc && q < cfg->nqueues; q++) {
            bool seen = false; /* already charted with an earlier run */
            for (size_t e = 0; e < r && !seen; e++)
                seen = fair_sim_config_queue(runs[e].cfg, cfg->queues[q].q.name) >= 0;
            if (seen)
                continue;
            if (charts >= FAIR_SIM_MAX_CHARTS) {
                skipped++;
                continue;
            }
            charts++;
            size_t ns = 0;
            char lab[2 * FAIR_SIM_MAX_RUNS][96];
            for (size_t x = r; x < n; x++) {
                int32_t qi = fair_sim_config_queue(runs[x].cfg, cfg->queues[q].q.name);
                if (qi < 0)
                    continue;
                snprintf(lab[ns], sizeof(lab[0]), "%s allocated", runs[x].label);
                s[ns] =
                    (struct series){lab[ns], colors[x], false, runs[x].run, v_qalloc, (size_t)qi};
                ns++;
                snprintf(lab[ns], sizeof(lab[0]), "%s fair share", runs[x].label);
                s[ns] = (struct series){lab[ns], colors[x], true, runs[x].run, v_qfair, (size_t)qi};
                ns++;
            }
            char t[300];
            snprintf(t, sizeof(t), "queue %s", cfg->queues[q].q.name);
            rc = chart(b, t, "", 0, s, ns);
        }
    }
    if (!rc && skipped)
        rc = fair_buf_appendf(
            b, "<p>%zu more queues are not charted; queues.csv has them all.</p>\n", skipped);
    if (!rc)
        rc = fair_buf_appends(b, "<h2>Wait times and preemptions</h2>\n<p>Wait: from arrival "
                                 "to first start. Lost GPU-h: work thrown away by evictions "
                                 "(evicted pods restart from scratch).</p>\n");
    if (!rc)
        rc = table(b, runs, n);
    if (!rc)
        rc = fair_buf_appends(b, "<p>Generated by <code>fairsharectl simulate</code>; see "
                                 "docs/simulator.md.</p>\n</body></html>\n");
    return rc;
}

int fair_sim_write_file(const char *path, const struct fair_buf *b, struct fair_error *err)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return fair_error_set(err, FAIR_EIO, "%s: cannot create: %s", path, strerror(errno));
    size_t len = b->len;
    int rc = 0;
    if (len && fwrite(fair_buf_str(b), 1, len, f) != len)
        rc = fair_error_set(err, FAIR_EIO, "%s: write failed: %s", path, strerror(errno));
    if (fclose(f) != 0 && !rc)
        rc = fair_error_set(err, FAIR_EIO, "%s: write failed: %s", path, strerror(errno));
    return rc;
}

int fair_sim_write_reports(const char *dir, const char *title, const struct fair_sim_labeled *runs,
                           size_t n, struct fair_error *err)
{
    static const char *const names[4] = {"timeseries.csv", "queues.csv", "summary.csv",
                                         "report.html"};
    int rc = 0;
    for (int i = 0; i < 4 && !rc; i++) {
        struct fair_buf b;
        fair_buf_init(&b, FAIR_SIM_MAX_REPORT_BYTES);
        switch (i) {
        case 0:
            rc = fair_sim_csv_timeseries(&b, runs, n);
            break;
        case 1:
            rc = fair_sim_csv_queues(&b, runs, n);
            break;
        case 2:
            rc = fair_sim_csv_summary(&b, runs, n);
            break;
        default:
            rc = fair_sim_html(&b, title, runs, n);
            break;
        }
        char path[4096];
        if (rc) {
            rc = fair_error_set(err, rc, "%s: cannot build: %s", names[i], fair_strerror(rc));
        } else if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, names[i]) >= sizeof(path)) {
            rc = fair_error_set(err, FAIR_ERANGE, "%s: path too long", dir);
        } else {
            rc = fair_sim_write_file(path, &b, err);
        }
        fair_buf_release(&b);
    }
    return rc;
}
