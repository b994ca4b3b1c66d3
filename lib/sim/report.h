/* Simulation reports: CSV files (timeseries.csv, queues.csv, summary.csv,
 * jobs.csv, timequota.csv) and one self-contained HTML page with inline SVG charts (no
 * script, no network). Several runs (the base config and a --compare
 * config) go side by side, told apart by the "config" column and by
 * colour. Also the number and duration formats the console shares.
 *
 * Ownership: everything is borrowed. */
#ifndef FAIR_SIM_REPORT_H
#define FAIR_SIM_REPORT_H

#include <stddef.h>

#include "base/buf.h"
#include "sim/config.h"
#include "sim/frag.h"
#include "sim/replay.h"

#define FAIR_SIM_MAX_RUNS 4
#define FAIR_SIM_MAX_CHARTS 40                      /* queue charts in the HTML report */
#define FAIR_SIM_MAX_REPORT_BYTES ((size_t)1 << 30) /* per output file */

struct fair_sim_labeled {
    const char *label;  /* "base", "compare": the config column */
    const char *source; /* the projects file, or "(default)" */
    const char *policy; /* placement policy name */
    const struct fair_sim_run *run;
    const struct fair_sim_config *cfg;
    const struct fair_sim_trace *trace; /* the jobs' names (jobs.csv) */
};

/* The CSV files into buffers (each NUL-terminated). */
int fair_sim_csv_timeseries(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n);
int fair_sim_csv_queues(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n);
int fair_sim_csv_summary(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n);
/* Time windows and budgets: one row per window switch (kind "window":
 * the Project or Queue and the window now in force, "(spec)" for none)
 * and per budget alert (kind "budget": the project, 80 or 100, its
 * budget, period and the period's start). */
int fair_sim_csv_timequota(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n);
/* One row per job (a multi-pod job is one row). */
int fair_sim_csv_jobs(struct fair_buf *b, const struct fair_sim_labeled *runs, size_t n);
/* The HTML report. title is escaped. */
int fair_sim_html(struct fair_buf *b, const char *title, const struct fair_sim_labeled *runs,
                  size_t n);

/* Writes timeseries.csv, queues.csv, summary.csv, jobs.csv,
 * timequota.csv and report.html into dir (which must exist). */
int fair_sim_write_reports(const char *dir, const char *title, const struct fair_sim_labeled *runs,
                           size_t n, struct fair_error *err);

/* One row of the fragmentation table. */
struct fair_sim_frag_row {
    const char *trace; /* variant name */
    const char *policy;
    size_t repeats;
    double unallocated_gpu; /* mean over repeats, GPUs */
    double unallocated_gpu_min, unallocated_gpu_max;
    double first_fail_unallocated; /* mean, GPUs; -1 if no failure */
    double first_fail_arrived_pct; /* mean */
    double failed_pods;            /* mean */
    double seconds;                /* wall time of all repeats */
};

/* CSV of the fragmentation rows (frag.csv). */
int fair_sim_csv_frag(struct fair_buf *b, const struct fair_sim_frag_row *rows, size_t n);

/* Human-readable figures, for the console and the HTML report. v with
 * decimals digits after the point and a comma between thousands
 * ("1,110", "0.5"); never "-0". Returns buf. */
const char *fair_sim_fmt_num(char *buf, size_t n, double v, int decimals);
/* A duration in the unit its size reads best in: seconds below 2
 * minutes ("45 s", "2.5 s"), minutes below an hour ("12.5 min"), hours
 * below 3 days ("5.2 h"), else days ("3.1 d"); "-" when ms < 0. Returns
 * buf. */
const char *fair_sim_fmt_duration(char *buf, size_t n, int64_t ms);

/* Writes buffer contents to path, replacing it. */
int fair_sim_write_file(const char *path, const struct fair_buf *b, struct fair_error *err);

#endif
