/* CSV and HTML (inline SVG) reports of simulation runs, and the number
 * formats they share with the console. The HTML is one
 * file with no script and no external resource, so it opens anywhere. */
#include "sim/report.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"

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

/* ---- numbers ------------------------------------------------------------ */

const char *fair_sim_fmt_num(char *buf, size_t n, double v, int decimals)
{
    char tmp[64];
    if (n == 0)
        return buf;
    if (decimals < 0)
        decimals = 0;
    if (decimals > 6)
        decimals = 6;
    if (!isfinite(v) || fabs(v) >= 1e15) {
        snprintf(buf, n, "%g", v);
        return buf;
    }
    snprintf(tmp, sizeof(tmp), "%.*f", decimals, fabs(v));
    bool zero = strspn(tmp, "0.") == strlen(tmp);
    const char *dot = strchr(tmp, '.');
    size_t ilen = dot ? (size_t)(dot - tmp) : strlen(tmp), o = 0;
    char out[96];
    if (v < 0 && !zero)
        out[o++] = '-';
    for (size_t i = 0; i < ilen; i++) {
        out[o++] = tmp[i];
        size_t left = ilen - 1 - i;
        if (left > 0 && left % 3 == 0)
            out[o++] = ',';
    }
    snprintf(out + o, sizeof(out) - o, "%s", dot ? dot : "");
    snprintf(buf, n, "%s", out);
    return buf;
}

/* Copies s into buf (n bytes), cut to fit. */
static void copy_cut(char *buf, size_t n, const char *s)
{
    if (!n)
        return;
    size_t l = strlen(s);
    if (l >= n)
        l = n - 1;
    memcpy(buf, s, l);
    buf[l] = '\0';
}

const char *fair_sim_fmt_duration(char *buf, size_t n, int64_t ms)
{
    char num[64], out[80];
    double s = (double)ms / 1000.0;
    if (ms < 0)
        snprintf(out, sizeof out, "-");
    else if (s < 10)
        snprintf(out, sizeof out, "%s s", fair_sim_fmt_num(num, sizeof(num), s, ms % 1000 ? 1 : 0));
    else if (s < 120)
        snprintf(out, sizeof out, "%s s", fair_sim_fmt_num(num, sizeof(num), s, 0));
    else if (s < 3600)
        snprintf(out, sizeof out, "%s min", fair_sim_fmt_num(num, sizeof(num), s / 60, 1));
    else if (s < 72 * 3600)
        snprintf(out, sizeof out, "%s h", fair_sim_fmt_num(num, sizeof(num), s / 3600, 1));
    else
        snprintf(out, sizeof out, "%s d", fair_sim_fmt_num(num, sizeof(num), s / 86400, 1));
    copy_cut(buf, n, out);
    return buf;
}

/* GPU-hours from milli-GPU x ms. */
static double gpu_hours(int64_t gpu_ms)
{
    return (double)gpu_ms / 3.6e9;
}

/* ---- Time windows and budgets ---------------------------------------------- */

/* The schedule or budget fields of project p, or of queue q (p < 0). */
static const struct fair_ktime *ktime_of(const struct fair_sim_config *cfg, int32_t p, int32_t q)
{
    if (p >= 0)
        return cfg->kprojects && (size_t)p < cfg->nprojects && cfg->kprojects[p]
                   ? cfg->kprojects[p]->time
                   : NULL;
    return cfg->kqueues && q >= 0 && (size_t)q < cfg->nqueues && cfg->kqueues[q]
               ? cfg->kqueues[q]->time
               : NULL;
}

/* The name of window w of the object's schedule: "(spec)" when none is
 * in force (-1), "" without a schedule (-2). */
static const char *window_name(const struct fair_sim_config *cfg, int32_t p, int32_t q, int w)
{
    if (w == -1)
        return "(spec)";
    const struct fair_ktime *tm = ktime_of(cfg, p, q);
    if (w < 0 || !tm || (size_t)w >= tm->nwindows)
        return "";
    return tm->windows[w].name;
}

static const char *object_name(const struct fair_sim_config *cfg, int32_t p, int32_t q)
{
    const char *n = p >= 0 ? cfg->projects[p].q.name : cfg->queues[q].q.name;
    return n ? n : "";
}

static const char *period_word(enum fair_kbudget_period p)
{
    return p == FAIR_KBUDGET_DAY ? "day" : p == FAIR_KBUDGET_WEEK ? "week" : "month";
}

/* ---- CSV ---------------------------------------------------------------- */

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
                                 "guaranteed_gpu,running_pods,pending_pods,demand_gpu,"
                                 "effective_guaranteed_gpu,window,project_window,"
                                 "budget_used_gpu_h,budget_remaining_gpu_h\n");
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
                    rc = fair_buf_appendf(b, ",%.3f,%.3f,%.3f,%d,%d,%.3f,%.3f,", gpus(s->allocated),
                                          gpus(s->fair_share),
                                          gpus(cq->q.guaranteed.v[FAIR_RES_GPU]), s->running,
                                          s->pending, gpus(s->demand), gpus(s->guaranteed));
                if (!rc)
                    rc = csv_str(b, window_name(cfg, -1, (int32_t)q, s->window));
                if (!rc)
                    rc = fair_buf_appends(b, ",");
                if (!rc)
                    rc = csv_str(b, window_name(cfg, cq->project, -1, s->project_window));
                const struct fair_ktime *tm = ktime_of(cfg, cq->project, -1);
                if (!rc && s->budget_used >= 0 && tm) {
                    int64_t left = tm->budget_milli_hours * 3600000 - s->budget_used;
                    rc = fair_buf_appendf(b, ",%.3f,%.3f\n", gpu_hours(s->budget_used),
                                          gpu_hours(left > 0 ? left : 0));
                } else if (!rc) {
                    rc = fair_buf_appends(b, ",,\n");
                }
            }
        }
    }
    return rc;
}

int fair_sim_csv_timequota(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(b, "config,t_s,wall_time,kind,project,queue,window,budget_level,"
                                 "budget_gpu_h,period,period_start\n");
    char wall[40], ps[40];
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        const struct fair_sim_config *cfg = runs[r].cfg;
        for (size_t i = 0; !rc && i < run->nswitches; i++) {
            const struct fair_sim_switch *w = &run->switches[i];
            fair_time_format_rfc3339(run->opts.start_wall_ms + w->t_ms, wall, (int)sizeof wall);
            rc = csv_str(b, runs[r].label);
            if (!rc)
                rc = fair_buf_appendf(b, ",%.3f,%s,window,", secs(w->t_ms), wall);
            if (!rc)
                rc = csv_str(b, w->project >= 0 ? object_name(cfg, w->project, -1) : "");
            if (!rc)
                rc = fair_buf_appends(b, ",");
            if (!rc)
                rc = csv_str(b, w->queue >= 0 ? object_name(cfg, -1, w->queue) : "");
            if (!rc)
                rc = fair_buf_appends(b, ",");
            if (!rc)
                rc = csv_str(b, window_name(cfg, w->project, w->queue, w->window));
            if (!rc)
                rc = fair_buf_appends(b, ",,,,\n");
        }
        for (size_t i = 0; !rc && i < run->nalerts; i++) {
            const struct fair_sim_budget_alert *a = &run->alerts[i];
            const struct fair_ktime *tm = ktime_of(cfg, a->project, -1);
            fair_time_format_rfc3339(run->opts.start_wall_ms + a->t_ms, wall, (int)sizeof wall);
            fair_time_format_rfc3339(a->period_start_wall_ms, ps, (int)sizeof ps);
            rc = csv_str(b, runs[r].label);
            if (!rc)
                rc = fair_buf_appendf(b, ",%.3f,%s,budget,", secs(a->t_ms), wall);
            if (!rc)
                rc = csv_str(b, object_name(cfg, a->project, -1));
            if (!rc)
                rc = fair_buf_appendf(b, ",,,%d,%.3f,%s,%s\n", a->level, gpu_hours(a->budget_mms),
                                      tm ? period_word(tm->budget_period) : "", ps);
        }
    }
    return rc;
}

/* ",x" in seconds with 3 decimals, or "," when ms < 0 (no value). */
static int csv_secs(struct fair_buf *b, int64_t ms)
{
    return ms < 0 ? fair_buf_appends(b, ",") : fair_buf_appendf(b, ",%.3f", secs(ms));
}

static int csv_dist(struct fair_buf *b, const struct fair_sim_dist *d, bool mean)
{
    int rc = 0;
    if (mean)
        rc = d->n ? fair_buf_appendf(b, ",%.3f", d->mean_ms / 1000.0) : fair_buf_appends(b, ",");
    if (!rc)
        rc = csv_secs(b, d->p50_ms);
    if (!rc)
        rc = csv_secs(b, d->p95_ms);
    if (!rc)
        rc = csv_secs(b, d->p99_ms);
    if (!rc)
        rc = csv_secs(b, d->max_ms);
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
        rc = fair_buf_appendf(b, ",%zu,%zu,%zu,%zu,%zu", s->jobs, s->started, s->completed,
                              s->never_started, s->unrunnable);
    if (!rc)
        rc = csv_dist(b, &s->wait, true);
    if (!rc)
        rc = csv_dist(b, &s->jct, true);
    if (!rc)
        rc = fair_buf_appendf(b, ",%zu,%d,%.3f,%.3f,%.3f", s->preemptions, s->max_restarts,
                              gpu_hours(s->lost_gpu_ms), gpu_hours(s->used_gpu_ms),
                              gpu_hours(s->used_gpu_ms - s->lost_gpu_ms));
    /* The guarantee: empty where nothing is guaranteed. */
    if (!rc && s->guaranteed > 0) {
        rc = fair_buf_appendf(b, ",%.3f,%.3f,", gpus(s->guaranteed), secs(s->demand_ge_guar_ms));
        if (!rc && s->guar_owed_gpu_ms > 0)
            rc = fair_buf_appendf(b, "%.4f",
                                  (double)s->guar_delivered_gpu_ms / (double)s->guar_owed_gpu_ms);
        if (!rc)
            rc = fair_buf_appendf(b, ",%zu,%zu", s->ttg.n, s->ttg_unfinished);
        if (!rc)
            rc = csv_dist(b, &s->ttg, false);
    } else if (!rc) {
        rc = fair_buf_appends(b, ",0.000,,,,,,,,");
    }
    const struct fair_sim_run *run = l->run;
    if (!rc && total) {
        rc = fair_buf_appendf(b, ",%.4f,%.4f,%.4f", run->mean_alloc_ratio, run->useful_alloc_ratio,
                              run->peak_alloc_ratio);
        if (!rc)
            rc = fair_buf_appendf(
                b, ",%.3f,%zu,%.3f,%.3f,%zu,%.3f,%.3f", gpu_hours(run->idle_fit.gpu_ms),
                run->idle_fit.episodes, secs(run->idle_fit.longest_ms),
                gpu_hours(run->idle_fit_admissible.gpu_ms), run->idle_fit_admissible.episodes,
                secs(run->idle_fit_admissible.longest_ms), gpu_hours(run->held_idle_gpu_ms));
        if (!rc && run->first_fail_ms >= 0)
            rc = fair_buf_appendf(b, ",%.3f,%.3f", secs(run->first_fail_ms - run->start_ms),
                                  gpus(run->first_fail_unallocated));
        else if (!rc)
            rc = fair_buf_appends(b, ",,");
        if (!rc)
            rc = fair_buf_appendf(b, ",%.3f,%.3f,%.3f,%.3f", secs(run->window_start_ms),
                                  secs(run->window_end_ms - run->window_start_ms),
                                  secs(run->end_ms - run->start_ms), secs(run->opts.checkpoint_ms));
        if (!rc)
            rc = fair_buf_appendf(
                b, ",%d,%.3f,%d,%.3f,%zu,%zu\n", run->opts.over_quota_threshold_pct,
                secs(run->opts.over_quota_min_runtime_ms), run->opts.max_evictions,
                secs(run->opts.hold_timeout_ms), run->cycles, run->evictions);
    } else if (!rc) {
        rc = fair_buf_appends(b, ",,,,,,,,,,,,,,,,,,,,,,\n");
    }
    return rc;
}

int fair_sim_csv_summary(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(
        b, "config,policy,queue,jobs,started,completed,never_started,unrunnable,"
           "wait_mean_s,wait_p50_s,wait_p95_s,wait_p99_s,wait_max_s,"
           "jct_mean_s,jct_p50_s,jct_p95_s,jct_p99_s,jct_max_s,"
           "preemptions,max_restarts,lost_gpu_hours,used_gpu_hours,useful_gpu_hours,"
           "guaranteed_gpu,demand_ge_guarantee_s,guarantee_delivered_ratio,ttg_episodes,"
           "ttg_unfinished,ttg_p50_s,ttg_p95_s,ttg_p99_s,ttg_max_s,"
           "mean_alloc_ratio,useful_alloc_ratio,peak_alloc_ratio,idle_fit_gpu_hours,"
           "idle_fit_episodes,idle_fit_longest_s,idle_fit_admissible_gpu_hours,"
           "idle_fit_admissible_episodes,idle_fit_admissible_longest_s,held_idle_gpu_hours,"
           "first_fail_s,unallocated_gpu_at_first_fail,window_start_s,window_s,duration_s,"
           "checkpoint_s,over_quota_threshold_pct,over_quota_min_runtime_s,max_evictions,"
           "node_hold_timeout_s,cycles,evictions\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        for (size_t q = 0; !rc && q < run->nqueues; q++)
            rc = summary_row(b, &runs[r], runs[r].cfg->queues[q].q.name, &run->qstats[q], false);
        if (!rc)
            rc = summary_row(b, &runs[r], "*", &run->qstats[run->nqueues], true);
    }
    return rc;
}

/* A job's name: its gang's for a multi-pod job, else its pod's. */
static const char *job_name(const struct fair_sim_labeled *l, const struct fair_sim_jobrec *j)
{
    if (!l->trace || j->first < 0 || (size_t)j->first >= l->trace->njobs)
        return "?";
    const struct fair_sim_job *p = &l->trace->jobs[j->first];
    return p->gang ? p->gang : p->name;
}

int fair_sim_csv_jobs(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(b, "config,job,queue,pods,gpu,status,submit_s,first_start_s,"
                                 "end_s,wait_s,jct_s,restarts,used_gpu_hours,lost_gpu_hours,"
                                 "useful_gpu_hours\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        for (size_t i = 0; !rc && i < run->njobs; i++) {
            const struct fair_sim_jobrec *j = &run->jobs[i];
            rc = csv_str(b, runs[r].label);
            if (!rc)
                rc = fair_buf_appends(b, ",");
            if (!rc)
                rc = csv_str(b, job_name(&runs[r], j));
            if (!rc)
                rc = fair_buf_appends(b, ",");
            if (!rc)
                rc = csv_str(b, runs[r].cfg->queues[j->queue].q.name);
            if (!rc)
                rc = fair_buf_appendf(b, ",%d,%.3f,%s,%.3f", j->pods, gpus(j->gpu_milli),
                                      fair_sim_job_status_name(j->status), secs(j->submit_ms));
            if (!rc)
                rc = csv_secs(b, j->first_start_ms);
            if (!rc)
                rc = csv_secs(b, j->end_ms);
            if (!rc)
                rc = csv_secs(b, j->first_start_ms >= 0 ? j->first_start_ms - j->submit_ms : -1);
            if (!rc)
                rc = csv_secs(b, j->end_ms >= 0 ? j->end_ms - j->submit_ms : -1);
            if (!rc)
                rc = fair_buf_appendf(b, ",%d,%.6f,%.6f,%.6f\n", j->restarts,
                                      gpu_hours(j->used_gpu_ms), gpu_hours(j->lost_gpu_ms),
                                      gpu_hours(j->used_gpu_ms - j->lost_gpu_ms));
        }
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
#define ML 64
#define MR 32
#define MT 28
#define MB 58

enum line_style { SOLID, DASHED, DOTTED, DASHDOT };

static const char *const dash[] = {"", " stroke-dasharray=\"5,3\"", " stroke-dasharray=\"1.5,2.5\"",
                                   " stroke-dasharray=\"8,3,2,3\""};

struct series {
    const char *label;
    const char *color;
    enum line_style style;
    bool clip; /* may run off the top: the y axis is not stretched for it */
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

static double v_qguar(const struct fair_sim_run *run, size_t i, size_t q)
{
    return gpus(run->qsamples[i * run->nqueues + q].guaranteed);
}

static double v_qdemand(const struct fair_sim_run *run, size_t i, size_t q)
{
    return gpus(run->qsamples[i * run->nqueues + q].demand);
}

/* 1, 2 or 5 times a power of ten, at least raw. */
static double nice_step(double raw)
{
    if (!(raw > 0))
        return 1;
    double p = 1;
    while (p * 10 <= raw)
        p *= 10;
    while (p > raw)
        p /= 10;
    double m = raw / p;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * p;
}

/* Digits after the point that the tick at v, on ticks step apart, needs:
 * none on whole numbers ("0", "1", "1.5"). */
static int tick_decimals(double v, double step)
{
    int d = 0;
    if (fabs(v - round(v)) < 1e-9 * (fabs(v) + 1))
        return 0;
    for (double x = step; x < 0.999 && d < 6; x *= 10)
        d++;
    return d;
}

/* The x axis' unit for a span of ms. */
static void time_unit(double span_ms, double *unit_ms, const char **name)
{
    if (span_ms < 180e3) {
        *unit_ms = 1e3;
        *name = "s";
    } else if (span_ms < 3 * 3.6e6) {
        *unit_ms = 60e3;
        *name = "min";
    } else if (span_ms < 240 * 3.6e6) {
        *unit_ms = 3.6e6;
        *name = "h";
    } else {
        *unit_ms = 86.4e6;
        *name = "d";
    }
}

static int chart(struct fair_buf *b, const char *title, const char *yunit, double ymax_fixed,
                 const struct series *s, size_t ns)
{
    double span_ms = 0, ymax = 0, yclip = 0;
    bool clipped = false;
    for (size_t k = 0; k < ns; k++) {
        const struct fair_sim_run *run = s[k].run;
        double span = (double)(run->window_end_ms - run->window_start_ms);
        if (span > span_ms)
            span_ms = span;
        for (size_t i = 0; ymax_fixed <= 0 && i < run->nsamples; i++) {
            double v = s[k].value(run, i, s[k].q);
            if (s[k].clip && v > yclip)
                yclip = v;
            else if (!s[k].clip && v > ymax)
                ymax = v;
        }
    }
    double step;
    if (ymax_fixed > 0) {
        ymax = ymax_fixed;
        step = nice_step(ymax / 4);
    } else {
        /* Lines that may be clipped stretch the axis to twice the others'
         * top at most, so that allocations stay readable. */
        if (yclip > ymax)
            ymax = ymax > 0 && yclip > 2 * ymax ? 2 * ymax : yclip;
        if (ymax <= 0)
            ymax = 1;
        step = nice_step(ymax / 4);
        ymax = ceil(ymax / step - 1e-9) * step;
    }
    clipped = yclip > ymax;
    if (span_ms <= 0)
        span_ms = 1000;
    double unit_ms;
    const char *uname;
    time_unit(span_ms, &unit_ms, &uname);
    double span = span_ms / unit_ms, xstep = nice_step(span / 6);
    size_t rows = (ns + 3) / 4, extra = rows > 2 ? 14 * (rows - 2) : 0;
    const double pw = CW - ML - MR, ph = CH - MT - MB;
    char num[64];
    int rc = fair_buf_appendf(b,
                              "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                              "height=\"%zu\" viewBox=\"0 0 %d %zu\" role=\"img\">\n"
                              "<text x=\"%d\" y=\"18\" class=\"t\">",
                              CW, CH + extra, CW, CH + extra, ML);
    if (!rc)
        rc = html_str(b, title);
    if (!rc && clipped)
        rc = fair_buf_appendf(b, " (demand above %s not drawn)",
                              fair_sim_fmt_num(num, sizeof(num), ymax, tick_decimals(ymax, step)));
    if (!rc)
        rc = fair_buf_appendf(b,
                              "</text>\n<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" "
                              "fill=\"none\" stroke=\"#999\"/>\n",
                              ML, MT, pw, ph);
    for (int i = 0; !rc && i * step <= ymax * (1 + 1e-9); i++) {
        double y = MT + ph - ph * (i * step) / ymax;
        rc = fair_buf_appendf(
            b,
            "<line x1=\"%d\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" "
            "stroke=\"#eee\"/><text x=\"%d\" y=\"%.1f\" class=\"a\" "
            "text-anchor=\"end\">%s%s</text>\n",
            ML, ML + pw, y, y, ML - 4, y + 4,
            fair_sim_fmt_num(num, sizeof(num), i * step, tick_decimals(i * step, step)), yunit);
    }
    for (int i = 0; !rc && i * xstep <= span * (1 + 1e-9); i++) {
        double x = ML + pw * (i * xstep) / span;
        rc = fair_buf_appendf(
            b,
            "<text x=\"%.1f\" y=\"%.0f\" class=\"a\" "
            "text-anchor=\"middle\">%s %s</text>\n",
            x, MT + ph + 16,
            fair_sim_fmt_num(num, sizeof(num), i * xstep, tick_decimals(i * xstep, xstep)), uname);
    }
    for (size_t k = 0; !rc && k < ns; k++) {
        const struct fair_sim_run *run = s[k].run;
        rc = fair_buf_appendf(b,
                              "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\"%s%s "
                              "points=\"",
                              s[k].color, s[k].style == SOLID ? "1.5" : "1.2", dash[s[k].style],
                              s[k].clip ? " stroke-opacity=\"0.6\"" : "");
        for (size_t i = 0; !rc && i < run->nsamples; i++) {
            double x =
                ML + pw * ((double)(run->samples[i].t_ms - run->window_start_ms) / unit_ms) / span;
            double v = s[k].value(run, i, s[k].q);
            if (v > ymax)
                v = ymax;
            double y = MT + ph - ph * v / ymax;
            rc = fair_buf_appendf(b, "%.1f,%.1f ", x, y);
        }
        if (!rc)
            rc = fair_buf_appends(b, "\"/>\n");
        /* Legend: rows of four under the x axis, out of the data's way. */
        double lx = ML + 165.0 * (double)(k % 4),
               ly = (double)(CH + extra) - 8 - 14.0 * (double)(rows - 1 - k / 4);
        if (!rc)
            rc = fair_buf_appendf(b,
                                  "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.0f\" y2=\"%.0f\" "
                                  "stroke=\"%s\" stroke-width=\"2\"%s/><text x=\"%.0f\" "
                                  "y=\"%.0f\" class=\"a\">",
                                  lx, lx + 20, ly - 4, ly - 4, s[k].color, dash[s[k].style],
                                  lx + 24, ly);
        if (!rc)
            rc = html_str(b, s[k].label);
        if (!rc)
            rc = fair_buf_appends(b, "</text>\n");
    }
    if (!rc)
        rc = fair_buf_appends(b, "</svg>\n");
    return rc;
}

static int td_dur(struct fair_buf *b, int64_t ms)
{
    char t[64];
    return fair_buf_appendf(b, "<td>%s</td>", fair_sim_fmt_duration(t, sizeof(t), ms));
}

static int td_num(struct fair_buf *b, double v, int decimals)
{
    char t[64];
    return fair_buf_appendf(b, "<td>%s</td>", fair_sim_fmt_num(t, sizeof(t), v, decimals));
}

/* GPU-hours: whole from 100 on, one decimal from 1 on, else three. */
static int td_gpuh(struct fair_buf *b, int64_t gpu_ms)
{
    double h = gpu_hours(gpu_ms);
    return td_num(b, h, fabs(h) >= 100 ? 0 : fabs(h) >= 1 ? 1 : 3);
}

static int td_dist(struct fair_buf *b, const struct fair_sim_dist *d, bool mean)
{
    int rc = mean ? td_dur(b, d->n ? (int64_t)(d->mean_ms + 0.5) : -1) : 0;
    if (!rc)
        rc = td_dur(b, d->p50_ms);
    if (!rc)
        rc = td_dur(b, d->p95_ms);
    if (!rc)
        rc = td_dur(b, d->p99_ms);
    if (!rc)
        rc = td_dur(b, d->max_ms);
    return rc;
}

/* The opening cells of a row: config (in its colour) and queue. */
static int row_head(struct fair_buf *b, const struct fair_sim_labeled *l, size_t r, size_t q)
{
    const struct fair_sim_run *run = l->run;
    int rc = fair_buf_appendf(b, "<tr%s><td style=\"color:%s\">",
                              q == run->nqueues ? " class=\"tot\"" : "", colors[r]);
    if (!rc)
        rc = html_str(b, l->label);
    if (!rc)
        rc = fair_buf_appends(b, "</td><td>");
    if (!rc)
        rc = html_str(b, q == run->nqueues ? "all" : l->cfg->queues[q].q.name);
    return rc ? rc : fair_buf_appends(b, "</td>");
}

static int table_jobs(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(
        b, "<table><tr><th rowspan=\"2\">config</th><th rowspan=\"2\">queue</th>"
           "<th rowspan=\"2\">jobs</th><th rowspan=\"2\">left out</th>"
           "<th rowspan=\"2\">started</th><th rowspan=\"2\">completed</th>"
           "<th colspan=\"5\">wait</th><th colspan=\"5\">completion time (JCT)</th>"
           "<th rowspan=\"2\">restarts</th><th rowspan=\"2\">most restarts of a job</th>"
           "<th rowspan=\"2\">used GPU-h</th><th rowspan=\"2\">lost GPU-h</th>"
           "<th rowspan=\"2\">useful GPU-h</th></tr>\n<tr><th>mean</th><th>p50</th>"
           "<th>p95</th><th>p99</th><th>max</th><th>mean</th><th>p50</th><th>p95</th>"
           "<th>p99</th><th>max</th></tr>\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        for (size_t q = 0; !rc && q <= run->nqueues; q++) {
            const struct fair_sim_qstats *s = &run->qstats[q];
            rc = row_head(b, &runs[r], r, q);
            if (!rc)
                rc = fair_buf_appendf(b, "<td>%zu</td><td>%zu</td><td>%zu</td><td>%zu</td>",
                                      s->jobs, s->unrunnable, s->started, s->completed);
            if (!rc)
                rc = td_dist(b, &s->wait, true);
            if (!rc)
                rc = td_dist(b, &s->jct, true);
            if (!rc)
                rc =
                    fair_buf_appendf(b, "<td>%zu</td><td>%d</td>", s->preemptions, s->max_restarts);
            if (!rc)
                rc = td_gpuh(b, s->used_gpu_ms);
            if (!rc)
                rc = td_gpuh(b, s->lost_gpu_ms);
            if (!rc)
                rc = td_gpuh(b, s->used_gpu_ms - s->lost_gpu_ms);
            if (!rc)
                rc = fair_buf_appends(b, "</tr>\n");
        }
    }
    return rc ? rc : fair_buf_appends(b, "</table>\n");
}

static int table_guarantees(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    int rc = fair_buf_appends(
        b, "<table><tr><th rowspan=\"2\">config</th><th rowspan=\"2\">queue</th>"
           "<th rowspan=\"2\">guarantee (GPUs)</th><th rowspan=\"2\">time with demand &ge; "
           "guarantee</th><th rowspan=\"2\">share of the guarantee delivered then</th>"
           "<th colspan=\"6\">time to guarantee</th></tr>\n<tr><th>episodes</th><th>p50</th>"
           "<th>p95</th><th>p99</th><th>max</th><th>still owed at the end</th></tr>\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        for (size_t q = 0; !rc && q <= run->nqueues; q++) {
            const struct fair_sim_qstats *s = &run->qstats[q];
            if (s->guaranteed <= 0)
                continue;
            rc = row_head(b, &runs[r], r, q);
            if (!rc)
                rc = td_num(b, gpus(s->guaranteed), s->guaranteed % 1000 ? 1 : 0);
            if (!rc)
                rc = td_dur(b, s->demand_ge_guar_ms);
            if (!rc && s->guar_owed_gpu_ms > 0)
                rc = fair_buf_appendf(b, "<td>%.1f%%</td>",
                                      100.0 * (double)s->guar_delivered_gpu_ms /
                                          (double)s->guar_owed_gpu_ms);
            else if (!rc)
                rc = fair_buf_appends(b, "<td>-</td>");
            if (!rc)
                rc = fair_buf_appendf(b, "<td>%zu</td>", s->ttg.n);
            if (!rc)
                rc = td_dist(b, &s->ttg, false);
            if (!rc)
                rc = fair_buf_appendf(b, "<td>%zu</td></tr>\n", s->ttg_unfinished);
        }
    }
    return rc ? rc : fair_buf_appends(b, "</table>\n");
}

/* The jobs a config left out, with a few names. */
static int left_out(struct fair_buf *b, const struct fair_sim_labeled *l)
{
    const struct fair_sim_run *run = l->run;
    size_t count = run->qstats[run->nqueues].unrunnable, shown = 0;
    if (count == 0)
        return 0;
    int rc = fair_buf_appends(b, "<p class=\"warn\">");
    if (!rc)
        rc = html_str(b, l->label);
    if (!rc)
        rc = fair_buf_appendf(b, ": %zu job%s can never run and %s left out:", count,
                              count == 1 ? "" : "s", count == 1 ? "is" : "are");
    for (size_t i = 0; !rc && i < run->njobs && shown < 10; i++) {
        const struct fair_sim_jobrec *j = &run->jobs[i];
        if (!fair_sim_job_unrunnable(j->status))
            continue;
        rc = fair_buf_appends(b, shown ? ", " : " ");
        if (!rc)
            rc = html_str(b, job_name(l, j));
        if (!rc)
            rc = fair_buf_appendf(b, " (%s)", fair_sim_job_status_name(j->status));
        shown++;
    }
    if (!rc && count > shown)
        rc = fair_buf_appendf(b, " and %zu more (jobs.csv lists them)", count - shown);
    return rc ? rc : fair_buf_appends(b, ".</p>\n");
}

#define HTML_MAX_TQ_ROWS 200

/* Time in force of each window of one object (index w + 1; 0: none in
 * force), from its first evaluation to the end of the run, and how often
 * each was entered. */
static void window_times(const struct fair_sim_run *run, int32_t p, int32_t q, int64_t *ms,
                         int *entered)
{
    int cur = -3;
    int64_t since = 0;
    for (size_t i = 0; i < run->nswitches; i++) {
        const struct fair_sim_switch *w = &run->switches[i];
        if (w->project != p || w->queue != q || w->window < -1 || w->window >= FAIR_KWINDOW_MAX)
            continue;
        if (cur >= -1)
            ms[cur + 1] += w->t_ms - since;
        cur = w->window;
        since = w->t_ms;
        entered[cur + 1]++;
    }
    if (cur >= -1 && run->end_ms > since)
        ms[cur + 1] += run->end_ms - since;
}

static int windows_of(struct fair_buf *b, const struct fair_sim_labeled *l, int32_t p, int32_t q,
                      const struct fair_ktime *tm)
{
    int64_t ms[FAIR_KWINDOW_MAX + 1] = {0};
    int entered[FAIR_KWINDOW_MAX + 1] = {0};
    window_times(l->run, p, q, ms, entered);
    int64_t total = 0;
    for (int w = 0; w <= FAIR_KWINDOW_MAX; w++)
        total += ms[w];
    int rc = 0;
    size_t nw = tm->nwindows < FAIR_KWINDOW_MAX ? tm->nwindows : FAIR_KWINDOW_MAX;
    for (int w = -1; !rc && w < (int)nw; w++) {
        rc = fair_buf_appends(b, "<tr><td style=\"text-align:left\">");
        if (!rc)
            rc = html_str(b, l->label);
        if (!rc)
            rc = fair_buf_appendf(b, "</td><td style=\"text-align:left\">%s ",
                                  p >= 0 ? "Project" : "Queue");
        if (!rc)
            rc = html_str(b, object_name(l->cfg, p, q));
        if (!rc)
            rc = fair_buf_appends(b, "</td><td style=\"text-align:left\">");
        if (!rc)
            rc = html_str(b, w < 0 ? "(spec: no window)" : tm->windows[w].name);
        if (!rc)
            rc = fair_buf_appends(b, "</td>");
        if (!rc)
            rc = td_dur(b, ms[w + 1]);
        if (!rc)
            rc = fair_buf_appendf(b, "<td>%.1f%%</td><td>%d</td></tr>\n",
                                  total > 0 ? 100.0 * (double)ms[w + 1] / (double)total : 0.0,
                                  entered[w + 1]);
    }
    return rc;
}

/* The answers of time windows and budgets: how long each window was in
 * force, and each budget alert with the controller's words. Nothing when
 * no run has a schedule or a budget. */
static int table_timequota(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n)
{
    bool any_w = false, any_b = false;
    for (size_t r = 0; r < n; r++) {
        const struct fair_sim_config *cfg = runs[r].cfg;
        for (size_t p = 0; p < cfg->nprojects; p++) {
            const struct fair_ktime *tm = ktime_of(cfg, (int32_t)p, -1);
            any_w = any_w || (tm && tm->nwindows);
            any_b = any_b || (tm && tm->budget_period != FAIR_KBUDGET_NONE);
        }
        for (size_t q = 0; q < cfg->nqueues; q++) {
            const struct fair_ktime *tm = ktime_of(cfg, -1, (int32_t)q);
            any_w = any_w || (tm && tm->nwindows);
        }
    }
    if (!any_w && !any_b)
        return 0;
    int rc = fair_buf_appends(b, "<h2>Time windows and budgets</h2>\n");
    if (!rc && any_w)
        rc = fair_buf_appends(
            b, "<p>How long each <code>spec.schedule</code> window was in force (from the first "
               "engine cycle to the end of the run), and how often it was entered. The queue "
               "charts' dotted line is the guarantee the engine used.</p>\n<table><tr>"
               "<th>config</th><th>object</th><th>window</th><th>in force</th><th>share</th>"
               "<th>entered</th></tr>\n");
    for (size_t r = 0; !rc && any_w && r < n; r++) {
        const struct fair_sim_config *cfg = runs[r].cfg;
        for (size_t p = 0; !rc && p < cfg->nprojects; p++) {
            const struct fair_ktime *tm = ktime_of(cfg, (int32_t)p, -1);
            if (tm && tm->nwindows)
                rc = windows_of(b, &runs[r], (int32_t)p, -1, tm);
        }
        for (size_t q = 0; !rc && q < cfg->nqueues; q++) {
            const struct fair_ktime *tm = ktime_of(cfg, -1, (int32_t)q);
            if (tm && tm->nwindows)
                rc = windows_of(b, &runs[r], -1, (int32_t)q, tm);
        }
    }
    if (!rc && any_w)
        rc = fair_buf_appends(b, "</table>\n");
    if (!rc && any_b)
        rc = fair_buf_appends(
            b, "<p>Budget alerts: the moment a project's GPU-hours in its budget period reached "
               "80% and 100% of its <code>spec.budget</code> (the controller sends an Event "
               "and counts <code>fairshare_project_budget_alerts_total</code> at each). "
               "timequota.csv has every alert and window switch.</p>\n<table><tr>"
               "<th>config</th><th>project</th><th>level</th><th>reached at</th>"
               "<th>wall time</th><th style=\"max-width:40em\">alert</th></tr>\n");
    size_t shown = 0, more = 0;
    for (size_t r = 0; !rc && any_b && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        const struct fair_sim_config *cfg = runs[r].cfg;
        for (size_t i = 0; !rc && i < run->nalerts; i++) {
            if (shown >= HTML_MAX_TQ_ROWS) {
                more++;
                continue;
            }
            shown++;
            const struct fair_sim_budget_alert *a = &run->alerts[i];
            const struct fair_ktime *tm = ktime_of(cfg, a->project, -1);
            char wall[40], gh[40], msg[400];
            fair_time_format_rfc3339(run->opts.start_wall_ms + a->t_ms, wall, (int)sizeof wall);
            fair_sim_fmt_num(gh, sizeof gh, gpu_hours(a->budget_mms), 1);
            const char *per = tm ? period_word(tm->budget_period) : "period";
            bool block = tm && tm->budget_action == FAIR_KBUDGET_BLOCK;
            snprintf(msg, sizeof msg,
                     "project %s used %d%% of its %s GPU-hour budget for this %s; %s",
                     object_name(cfg, a->project, -1), a->level, gh, per,
                     a->level < 100 ? "at 100% it is enforced"
                     : block        ? "action block: no new pods start until the period ends"
                                    : "action overQuotaOnly: it borrows nothing until the period "
                                      "ends");
            rc = fair_buf_appends(b, "<tr><td style=\"text-align:left\">");
            if (!rc)
                rc = html_str(b, runs[r].label);
            if (!rc)
                rc = fair_buf_appends(b, "</td><td style=\"text-align:left\">");
            if (!rc)
                rc = html_str(b, object_name(cfg, a->project, -1));
            if (!rc)
                rc = fair_buf_appendf(b, "</td><td>%d%%</td>", a->level);
            if (!rc)
                rc = td_dur(b, a->t_ms - run->start_ms);
            if (!rc)
                rc = fair_buf_appendf(b,
                                      "<td>%s</td><td style=\"text-align:left;white-space:"
                                      "normal\">",
                                      wall);
            if (!rc)
                rc = html_str(b, msg);
            if (!rc)
                rc = fair_buf_appends(b, "</td></tr>\n");
        }
    }
    if (!rc && any_b && !shown)
        rc = fair_buf_appends(b, "<tr><td colspan=\"6\" style=\"text-align:left\">no "
                                 "project reached 80% of its budget</td></tr>\n");
    if (!rc && any_b)
        rc = fair_buf_appends(b, "</table>\n");
    if (!rc && more)
        rc = fair_buf_appendf(b, "<p>%zu more alerts are in timequota.csv.</p>\n", more);
    return rc;
}

int fair_sim_html(struct fair_buf *b, const char *title, const struct fair_sim_labeled *runs,
                  size_t n)
{
    if (n > FAIR_SIM_MAX_RUNS)
        n = FAIR_SIM_MAX_RUNS;
    struct series s[4 * FAIR_SIM_MAX_RUNS];
    memset(s, 0, sizeof(s));
    char t1[64], t2[64];
    int rc = fair_buf_appends(b, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
                                 "charset=\"utf-8\"><title>");
    if (!rc)
        rc = html_str(b, title);
    if (!rc)
        rc = fair_buf_appends(
            b, "</title>\n<style>body{font-family:sans-serif;margin:2em;max-width:80em}"
               "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;"
               "padding:2px 8px;text-align:right}td{white-space:nowrap}th{max-width:10em}"
               "tr.tot{font-weight:bold}"
               "td.big{font-size:130%;font-weight:bold}p.warn{color:#a30}"
               "svg .t{font-size:14px;font-weight:bold}svg .a{font-size:11px;fill:#444}"
               "</style></head><body>\n<h1>");
    if (!rc)
        rc = html_str(b, title);
    /* The headline: what lending is for, useful work. */
    if (!rc)
        rc = fair_buf_appends(
            b, "</h1>\n<h2>Useful work</h2>\n<table><tr><th>config</th><th>GPU allocation</th>"
               "<th>useful allocation</th><th>lost GPU-h</th><th>idle GPU-h while a pending "
               "pod fitted</th><th>episodes</th><th>longest</th><th>the same, pods held by a "
               "limit and held nodes left out</th><th>idle GPU-h on held nodes</th>"
               "<th>most restarts of a job</th><th>jobs left out</th></tr>\n");
    for (size_t r = 0; !rc && r < n; r++) {
        const struct fair_sim_run *run = runs[r].run;
        const struct fair_sim_qstats *tot = &run->qstats[run->nqueues];
        rc = fair_buf_appendf(b, "<tr><td style=\"color:%s\">", colors[r]);
        if (!rc)
            rc = html_str(b, runs[r].label);
        if (!rc)
            rc = fair_buf_appendf(b,
                                  "</td><td class=\"big\">%.1f%%</td><td class=\"big\">"
                                  "%.1f%%</td>",
                                  100 * run->mean_alloc_ratio, 100 * run->useful_alloc_ratio);
        if (!rc)
            rc = td_gpuh(b, tot->lost_gpu_ms);
        if (!rc)
            rc = td_gpuh(b, run->idle_fit.gpu_ms);
        if (!rc)
            rc = fair_buf_appendf(b, "<td>%zu</td>", run->idle_fit.episodes);
        if (!rc)
            rc = td_dur(b, run->idle_fit.longest_ms);
        if (!rc)
            rc = td_gpuh(b, run->idle_fit_admissible.gpu_ms);
        if (!rc)
            rc = td_gpuh(b, run->held_idle_gpu_ms);
        if (!rc)
            rc = fair_buf_appendf(b, "<td>%d</td><td>%zu</td></tr>\n", tot->max_restarts,
                                  tot->unrunnable);
    }
    if (!rc)
        rc = fair_buf_appends(
            b, "</table>\n<p>Useful allocation: GPU-time allocated minus the work evictions "
               "threw away, over capacity times the reporting window. Idle while a pending "
               "pod fitted: after each engine cycle, the smaller of the free GPUs of the nodes "
               "where some pending pod fits and the GPUs those pods ask for, until the next "
               "cycle (docs/simulator.md).</p>\n");
    for (size_t r = 0; !rc && r < n; r++)
        rc = left_out(b, &runs[r]);
    if (!rc)
        rc = fair_buf_appends(b, "<h2>Configurations</h2>\n<table><tr><th>config</th>"
                                 "<th>projects file</th><th>placement</th><th>checkpoints"
                                 "</th><th>reclaim beyond a guarantee: threshold, min "
                                 "runtime</th><th>max evictions</th><th>node hold</th>"
                                 "<th>window</th><th>peak allocation</th>"
                                 "<th>first failed arrival</th><th>unallocated GPUs then</th>"
                                 "<th>simulated time</th><th>cycles</th><th>evictions</th>"
                                 "</tr>\n");
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
            rc = fair_buf_appendf(
                b, "</td><td>%s</td>",
                run->opts.checkpoint_ms > 0
                    ? fair_sim_fmt_duration(t1, sizeof(t1), run->opts.checkpoint_ms)
                    : "none");
        if (!rc)
            rc = fair_buf_appendf(
                b, "<td>%d%%, %s</td><td>%d</td><td>%s</td>", run->opts.over_quota_threshold_pct,
                fair_sim_fmt_duration(t1, sizeof(t1), run->opts.over_quota_min_runtime_ms),
                run->opts.max_evictions,
                run->opts.hold_timeout_ms > 0
                    ? fair_sim_fmt_duration(t2, sizeof(t2), run->opts.hold_timeout_ms)
                    : "none");
        if (!rc)
            rc = fair_buf_appendf(
                b, "<td>%s</td><td>%.1f%%</td>",
                fair_sim_fmt_duration(t2, sizeof(t2), run->window_end_ms - run->window_start_ms),
                100 * run->peak_alloc_ratio);
        if (!rc && run->first_fail_ms >= 0)
            rc = fair_buf_appendf(
                b, "<td>%s</td><td>%s</td>",
                fair_sim_fmt_duration(t1, sizeof(t1), run->first_fail_ms - run->start_ms),
                fair_sim_fmt_num(t2, sizeof(t2), gpus(run->first_fail_unallocated), 1));
        else if (!rc)
            rc = fair_buf_appends(b, "<td>none</td><td>-</td>");
        if (!rc)
            rc =
                fair_buf_appendf(b, "<td>%s</td><td>%zu</td><td>%zu</td></tr>\n",
                                 fair_sim_fmt_duration(t1, sizeof(t1), run->end_ms - run->start_ms),
                                 run->cycles, run->evictions);
    }
    if (!rc)
        rc = fair_buf_appends(b, "</table>\n<h2>Cluster</h2>\n");
    for (size_t r = 0; r < n; r++)
        s[r] = (struct series){runs[r].label, colors[r], SOLID, false, runs[r].run, v_ratio, 0};
    if (!rc)
        rc = chart(b, "GPU allocation ratio", "%", 100, s, n);
    for (size_t r = 0; r < n; r++)
        s[r] = (struct series){runs[r].label, colors[r], SOLID, false, runs[r].run, v_pending, 0};
    if (!rc)
        rc = chart(b, "GPUs requested by pending pods", "", 0, s, n);
    if (!rc)
        rc = fair_buf_appends(b, "<h2>Queues, in GPUs: allocated (solid), fair share (dashed), "
                                 "guarantee (dotted), demand (dash-dot)</h2>\n");
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
            static const char *const what[4] = {"allocated", "fair share", "guarantee", "demand"};
            double (*const val[4])(const struct fair_sim_run *, size_t,
                                   size_t) = {v_qalloc, v_qfair, v_qguar, v_qdemand};
            char lab[4 * FAIR_SIM_MAX_RUNS][96];
            for (size_t x = r; x < n; x++) {
                int32_t qi = fair_sim_config_queue(runs[x].cfg, cfg->queues[q].q.name);
                if (qi < 0)
                    continue;
                for (int k = 0; k < 4; k++) {
                    snprintf(lab[ns], sizeof(lab[0]), "%s %s", runs[x].label, what[k]);
                    s[ns] = (struct series){lab[ns],     colors[x], (enum line_style)k, k == 3,
                                            runs[x].run, val[k],    (size_t)qi};
                    ns++;
                }
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
        rc = fair_buf_appends(b, "<h2>Waits, completion times and restarts</h2>\n<p>Wait: from "
                                 "arrival to first start. Completion time: from arrival to "
                                 "the end. Lost GPU-h: work thrown away by evictions (an "
                                 "evicted job restarts from its last checkpoint, or from "
                                 "scratch without checkpoints).</p>\n");
    if (!rc)
        rc = table_jobs(b, runs, n);
    if (!rc)
        rc = fair_buf_appends(b, "<h2>Guarantees</h2>\n<p>Over the time a queue's demand was at "
                                 "least its guarantee, the share of the guarantee it held; and "
                                 "how long it took, from the moment a pending pod of the queue "
                                 "would fit within its guarantee, until none would.</p>\n");
    if (!rc)
        rc = table_guarantees(b, runs, n);
    if (!rc)
        rc = table_timequota(b, runs, n);
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
    static const char *const names[6] = {"timeseries.csv", "queues.csv",    "summary.csv",
                                         "jobs.csv",       "timequota.csv", "report.html"};
    int rc = 0;
    for (int i = 0; i < 6 && !rc; i++) {
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
        case 3:
            rc = fair_sim_csv_jobs(&b, runs, n);
            break;
        case 4:
            rc = fair_sim_csv_timequota(&b, runs, n);
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
