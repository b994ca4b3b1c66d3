/* Ledger benchmarks: (1) a one-year report over 200 queues and 5 million
 * intervals, (2) the ledger's cost per scheduling cycle (enqueue the opens,
 * closes and sample of a cycle with 1,000 binds, and the flush). Prints
 * medians. The 5M-interval database is built once in /tmp and reused.
 *
 *   make bench    or    build-bench/bench/bench_ledger [--rebuild]
 *
 * The database is generated with one transaction and prepared statements,
 * straight into the ledger's tables (intervals, dims, interval_day,
 * sample_day) with the same rollup rule as fair_ledger_interval_close();
 * the report's total is then checked against a brute-force scan of the raw
 * intervals. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/buf.h"
#include "base/log.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

#define DAY FAIR_LEDGER_DAY_MS
#define NQ 200
#define NIV 5000000
#define NDAYS 372 /* 365 + intervals running into the next year */

static const char *db_path = "/tmp/fair_bench_ledger.db";
static const int64_t Y0 = 1735689600000LL; /* 2025-01-01T00:00:00Z */
static const int64_t Y1 = 1767225600000LL; /* 2026-01-01T00:00:00Z */

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void die_sql(sqlite3 *h, const char *what)
{
    fprintf(stderr, "bench_ledger: %s: %s\n", what, sqlite3_errmsg(h));
    exit(1);
}

static void exec(sqlite3 *h, const char *sql)
{
    if (sqlite3_exec(h, sql, NULL, NULL, NULL) != SQLITE_OK)
        die_sql(h, sql);
}

struct rollup {
    int64_t gpu, inq, pre, started, alive;
};

static int64_t ready(void)
{
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = 0;
    if (access(db_path, R_OK) != 0)
        return 0;
    if (sqlite3_open_v2(db_path, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT value FROM meta WHERE key='bench_intervals'", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
    return v;
}

static void build(void)
{
    char side[256];
    unlink(db_path);
    snprintf(side, sizeof(side), "%s-wal", db_path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", db_path);
    unlink(side);
    /* The schema, through the ledger itself. */
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = db_path;
    if (fair_ledger_open(&o, &l, &err)) {
        fprintf(stderr, "bench_ledger: %s\n", err.msg);
        exit(1);
    }
    fair_ledger_free(l);

    double t0 = now_s();
    sqlite3 *h = NULL;
    if (sqlite3_open(db_path, &h) != SQLITE_OK)
        die_sql(h, "open");
    /* A cache file: no journal while generating. */
    exec(h, "PRAGMA journal_mode=OFF");
    exec(h, "PRAGMA synchronous=OFF");
    exec(h, "PRAGMA cache_size=-262144");
    exec(h, "BEGIN");
    sqlite3_stmt *dim, *iv, *iday, *sday;
    if (sqlite3_prepare_v2(h,
                           "INSERT INTO dims(id, namespace, queue, project, team, cost_center,"
                           " gpu_model) VALUES(?,?,?,?,?,?,?)",
                           -1, &dim, NULL) ||
        sqlite3_prepare_v2(h,
                           "INSERT INTO intervals(uid, dim_id, pod, node, gpu_milli,"
                           " inquota_milli, start_ms, end_ms, reason) VALUES(?,?,?,?,?,?,?,?,?)",
                           -1, &iv, NULL) ||
        sqlite3_prepare_v2(h, "INSERT INTO interval_day VALUES(?,?,?,?,?,?,?)", -1, &iday, NULL) ||
        sqlite3_prepare_v2(h,
                           "INSERT INTO sample_day(day, dim_id, allocated_mms, guaranteed_mms,"
                           " in_quota_mms, borrowed_mms, lent_mms, pending_mms)"
                           " VALUES(?,?,?,?,?,?,?,?)",
                           -1, &sday, NULL))
        die_sql(h, "prepare");
    for (int q = 0; q < NQ; q++) {
        char ns[32], queue[32], team[32];
        snprintf(ns, sizeof(ns), "ns-%03d", q);
        snprintf(queue, sizeof(queue), "queue-%03d", q);
        snprintf(team, sizeof(team), "team-%02d", q / 5);
        sqlite3_bind_int(dim, 1, q + 1);
        sqlite3_bind_text(dim, 2, ns, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(dim, 3, queue, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(dim, 4, team, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(dim, 5, team, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(dim, 6, "cc", -1, SQLITE_STATIC);
        sqlite3_bind_text(dim, 7, q % 2 ? "H100" : "A100", -1, SQLITE_STATIC);
        if (sqlite3_step(dim) != SQLITE_DONE)
            die_sql(h, "insert dim");
        sqlite3_reset(dim);
    }
    struct rollup *ru = calloc((size_t)NDAYS * NQ, sizeof(*ru));
    if (!ru)
        exit(1);
    static const int64_t millis[] = {250, 500, 1000, 1000, 2000, 4000, 8000};
    int64_t d0 = Y0 / DAY, maxlen = 0;
    /* Sorted by start, as a ledger fills up over time. */
    for (int i = 0; i < NIV; i++) {
        int64_t start = Y0 + (int64_t)((__int128)i * (Y1 - Y0) / NIV) + (int64_t)(rnd() % 60000);
        uint64_t r = rnd() % 100;
        int64_t dur = r < 70   ? 60000 + (int64_t)(rnd() % (120 * 60000))
                      : r < 95 ? 2 * 3600000 + (int64_t)(rnd() % (10 * 3600000))
                               : 12 * 3600000 + (int64_t)(rnd() % (60 * 3600000LL));
        int64_t end = start + dur;
        int q = (int)(rnd() % NQ);
        int64_t milli = millis[rnd() % 7];
        int64_t inq = (int64_t)(rnd() % 3) * milli / 2;
        int reason = rnd() % 10 == 0 ? FAIR_LEDGER_PREEMPTED : FAIR_LEDGER_COMPLETED;
        char uid[16];
        snprintf(uid, sizeof(uid), "b%08d", i);
        sqlite3_bind_text(iv, 1, uid, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int(iv, 2, q + 1);
        sqlite3_bind_text(iv, 3, uid, -1, SQLITE_TRANSIENT);
        sqlite3_bind_text(iv, 4, "node-1", -1, SQLITE_STATIC);
        sqlite3_bind_int64(iv, 5, milli);
        sqlite3_bind_int64(iv, 6, inq);
        sqlite3_bind_int64(iv, 7, start);
        sqlite3_bind_int64(iv, 8, end);
        sqlite3_bind_int(iv, 9, reason);
        if (sqlite3_step(iv) != SQLITE_DONE)
            die_sql(h, "insert interval");
        sqlite3_reset(iv);
        if (dur > maxlen)
            maxlen = dur;
        /* Same rollup rule as the ledger's close. */
        int64_t ds = start / DAY, de = (end - 1) / DAY;
        for (int64_t d = ds; d <= de; d++) {
            int64_t a = d * DAY, b = a + DAY;
            int64_t ov = (end < b ? end : b) - (start > a ? start : a);
            struct rollup *x = &ru[(d - d0) * NQ + q];
            x->gpu += milli * ov;
            x->inq += inq * ov;
            x->pre += reason == FAIR_LEDGER_PREEMPTED ? milli * ov : 0;
            x->started += d == ds;
            x->alive += d != ds;
        }
    }
    for (int64_t d = 0; d < NDAYS; d++)
        for (int q = 0; q < NQ; q++) {
            struct rollup *x = &ru[d * NQ + q];
            if (!x->gpu && !x->alive && !x->started)
                continue;
            int64_t v[7] = {d0 + d, q + 1, x->gpu, x->inq, x->pre, x->started, x->alive};
            for (int k = 0; k < 7; k++)
                sqlite3_bind_int64(iday, k + 1, v[k]);
            if (sqlite3_step(iday) != SQLITE_DONE)
                die_sql(h, "insert rollup");
            sqlite3_reset(iday);
        }
    /* Queue samples, as daily rollups: every queue lends 0.5 GPU all day. */
    for (int64_t d = 0; d < 365; d++)
        for (int q = 0; q < NQ; q++) {
            int64_t v[8] = {d0 + d, q + 1, 0, 0, 0, 0, 500 * DAY, 0};
            for (int k = 0; k < 8; k++)
                sqlite3_bind_int64(sday, k + 1, v[k]);
            if (sqlite3_step(sday) != SQLITE_DONE)
                die_sql(h, "insert sample rollup");
            sqlite3_reset(sday);
        }
    char sql[256];
    snprintf(sql, sizeof(sql),
             "INSERT INTO meta VALUES('max_closed_len_ms', %" PRId64 "), ('heartbeat_ms', %" PRId64
             "), ('bench_intervals', %d)",
             maxlen, (int64_t)(Y1 + 7 * DAY), NIV);
    exec(h, sql);
    sqlite3_finalize(dim);
    sqlite3_finalize(iv);
    sqlite3_finalize(iday);
    sqlite3_finalize(sday);
    exec(h, "COMMIT");
    exec(h, "PRAGMA journal_mode=WAL");
    exec(h, "ANALYZE");
    sqlite3_close(h);
    free(ru);
    printf("built %s: %d intervals, %d queues in %.1f s\n", db_path, NIV, NQ, now_s() - t0);
}

static void bench_reports(void)
{
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = db_path;
    o.readonly = 1;
    if (fair_ledger_open(&o, &l, &err)) {
        fprintf(stderr, "bench_ledger: %s\n", err.msg);
        exit(1);
    }
    static const struct {
        const char *name;
        int64_t from, to;
        enum fair_report_by by;
    } cases[] = {
        {"year by team (UTC)", Y0, Y1, FAIR_REPORT_BY_TEAM},
        {"year by queue (UTC)", Y0, Y1, FAIR_REPORT_BY_QUEUE},
        {"year by namespace (UTC)", Y0, Y1, FAIR_REPORT_BY_NAMESPACE},
        {"year by team (+05:30, raw edges)", Y0 - 330 * 60000LL, Y1 - 330 * 60000LL,
         FAIR_REPORT_BY_TEAM},
        {"one day by queue (raw only)", Y0 + 100 * DAY + 3600000, Y0 + 101 * DAY,
         FAIR_REPORT_BY_QUEUE},
    };
    int64_t year_total = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        double t[7];
        for (int k = 0; k < 7; k++) {
            struct fair_report_params p = {
                .from_ms = cases[c].from, .to_ms = cases[c].to, .by = cases[c].by};
            struct fair_report *r = NULL;
            struct fair_buf out;
            fair_buf_init(&out, 0);
            double s = now_s();
            if (fair_report_run(l, &p, &r, &err) ||
                fair_report_render(r, FAIR_REPORT_CSV, NULL, &out, &err)) {
                fprintf(stderr, "bench_ledger: %s\n", err.msg);
                exit(1);
            }
            t[k] = now_s() - s;
            if (c == 0)
                year_total = r->total.gpu_mms;
            if (k == 0)
                printf("  %-34s rows=%zu total_gpu_hours=%.3f\n", cases[c].name, r->n,
                       (double)r->total.gpu_mms / FAIR_LEDGER_GPU_HOUR_MMS);
            fair_report_free(r);
            fair_buf_release(&out);
        }
        printf("report %-34s median %.1f ms (7 runs)\n", cases[c].name, median(t, 7) * 1e3);
    }
    /* Reference: the same total by a full scan of the raw intervals. */
    sqlite3_stmt *st;
    double s = now_s();
    if (sqlite3_prepare_v2(fair_ledger_db(l),
                           "SELECT sum(gpu_milli * (min(end_ms, ?2) - max(start_ms, ?1)))"
                           " FROM intervals WHERE start_ms < ?2 AND end_ms > ?1",
                           -1, &st, NULL) != SQLITE_OK)
        die_sql(fair_ledger_db(l), "prepare scan");
    sqlite3_bind_int64(st, 1, Y0);
    sqlite3_bind_int64(st, 2, Y1);
    if (sqlite3_step(st) != SQLITE_ROW)
        die_sql(fair_ledger_db(l), "scan");
    int64_t scan = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    printf("full scan of raw intervals (reference, no rollups): %.1f ms; totals %s "
           "(%" PRId64 " mms)\n",
           (now_s() - s) * 1e3, scan == year_total ? "EQUAL" : "DIFFER", scan);
    fair_ledger_free(l);
    if (scan != year_total)
        exit(1);
}

static void bench_cycle(void)
{
    const char *path = "/tmp/fair_bench_ledger_cycle.db";
    char side[128];
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = path;
    if (fair_ledger_open(&o, &l, &err)) {
        fprintf(stderr, "bench_ledger: %s\n", err.msg);
        exit(1);
    }
    enum { CYCLES = 21, BINDS = 1000 };
    double tq[CYCLES], tf[CYCLES];
    static char names[NQ][3][24];
    for (int q = 0; q < NQ; q++) {
        snprintf(names[q][0], 24, "queue-%03d", q);
        snprintf(names[q][1], 24, "team-%02d", q / 5);
        snprintf(names[q][2], 24, "ns-%03d", q);
    }
    int64_t t = Y1;
    for (int c = 0; c < CYCLES; c++) {
        t += 60000;
        double s = now_s();
        /* One cycle: 1,000 binds, the 1,000 pods of the previous cycle
         * end, and one sample of 200 queues. */
        for (int i = 0; i < BINDS; i++) {
            char uid[32];
            int q = (int)(rnd() % NQ);
            snprintf(uid, sizeof(uid), "cyc-%d-%d", c, i);
            struct fair_ledger_interval_info in = {.uid = uid,
                                                   .namespace_ = names[q][2],
                                                   .pod = uid,
                                                   .queue = names[q][0],
                                                   .project = names[q][1],
                                                   .team = names[q][1],
                                                   .cost_center = "cc",
                                                   .node = "node-1",
                                                   .gpu_model = "H100",
                                                   .gpu_milli = 1000,
                                                   .inquota_milli = 1000,
                                                   .start_ms = t};
            if (fair_ledger_interval_open(l, &in, &err))
                exit(1);
            if (c > 0) {
                snprintf(uid, sizeof(uid), "cyc-%d-%d", c - 1, i);
                if (fair_ledger_interval_close(l, uid, t, FAIR_LEDGER_COMPLETED, &err))
                    exit(1);
            }
        }
        struct fair_ledger_sample_row rows[NQ];
        for (int q = 0; q < NQ; q++)
            rows[q] = (struct fair_ledger_sample_row){.queue = names[q][0],
                                                      .project = names[q][1],
                                                      .team = names[q][1],
                                                      .allocated = 5000,
                                                      .guaranteed = 4000 + (q % 3) * 1000,
                                                      .fair_share = 5000,
                                                      .pending = 1000,
                                                      .lent = -1};
        if (fair_ledger_sample(l, t, rows, NQ, &err))
            exit(1);
        tq[c] = now_s() - s;
        s = now_s();
        if (fair_ledger_flush(l, &err)) {
            fprintf(stderr, "bench_ledger: %s\n", err.msg);
            exit(1);
        }
        tf[c] = now_s() - s;
    }
    printf("cycle (1000 opens + 1000 closes + 200-queue sample): enqueue median %.3f ms, "
           "flush median %.1f ms (%d cycles)\n",
           median(tq, CYCLES) * 1e3, median(tf, CYCLES) * 1e3, CYCLES);
    fair_ledger_free(l);
    unlink(path);
    snprintf(side, sizeof(side), "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof(side), "%s-shm", path);
    unlink(side);
}

int main(int argc, char **argv)
{
    fair_log_set_level(FAIR_LOG_WARN);
    int rebuild = argc > 1 && strcmp(argv[1], "--rebuild") == 0;
    double t0 = now_s();
    if (rebuild || ready() != NIV)
        build();
    else
        printf("reusing %s (%d intervals; --rebuild to regenerate)\n", db_path, NIV);
    bench_reports();
    bench_cycle();
    printf("bench_ledger: %.1f s in all\n", now_s() - t0);
    return 0;
}
