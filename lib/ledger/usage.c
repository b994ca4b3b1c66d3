/* Decayed usage and budget-period usage per project, from the ledger's
 * rollups and raw intervals (see usage.h). */
#include "ledger/usage.h"

#include <math.h>
#include <stdbool.h>
#include <sqlite3.h>
#include <string.h>

#include "ledger/report.h"

#define DAY FAIR_LEDGER_DAY_MS

static int64_t fdiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static double decay(int64_t age, int64_t h)
{
    return exp2(-(double)(age > 0 ? age : 0) / (double)h);
}

/* gpu x integral over [a, b) of 2^(-(now - t)/h) dt. */
static double decay_int(int64_t gpu, int64_t a, int64_t b, int64_t now, int64_t h)
{
    if (b > now)
        b = now;
    if (b <= a || gpu <= 0)
        return 0;
    double hh = (double)h;
    return (double)gpu * hh / M_LN2 *
           (exp2(-(double)(now - b) / hh) - exp2(-(double)(now - a) / hh));
}

/* Whether row u wants the usage of project p, queue q. */
static bool wants(const struct fair_ledger_usage *u, const char *p, const char *q)
{
    return u->half_life_ms > 0 && p && !strcmp(u->project, p) &&
           (!u->queue || (q && !strcmp(u->queue, q)));
}

/* Runs sql with int64 binds; kind 0: (project, queue, day, mms) rollups;
 * 1: (project, queue, gpu, start, end-or-NULL) raw intervals. Each result
 * row counts for every input row that wants it (a project's and its
 * queues'). */
static int run(struct fair_ledger *l, const char *sql, const int64_t *b, int nb, int kind,
               int64_t now, int64_t today0, struct fair_ledger_usage *rows, size_t n,
               struct fair_error *err)
{
    sqlite3 *db = fair_ledger_db(l);
    sqlite3_stmt *st = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return fair_ledger_sql_error(l, rc, "usage: prepare", err);
    for (int i = 0; i < nb; i++)
        sqlite3_bind_int64(st, i + 1, b[i]);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *p = (const char *)sqlite3_column_text(st, 0);
        const char *q = (const char *)sqlite3_column_text(st, 1);
        for (size_t i = 0; i < n; i++) {
            struct fair_ledger_usage *u = &rows[i];
            if (!wants(u, p, q))
                continue;
            int64_t h = u->half_life_ms;
            if (kind == 0) {
                int64_t day = sqlite3_column_int64(st, 2);
                double mms = sqlite3_column_double(st, 3);
                u->decayed_mms += mms * decay(now - (day * DAY + DAY / 2), h);
            } else {
                int64_t gpu = sqlite3_column_int64(st, 2), a = sqlite3_column_int64(st, 3);
                bool open = sqlite3_column_type(st, 4) == SQLITE_NULL;
                int64_t e = open ? now : sqlite3_column_int64(st, 4);
                if (!open && a < today0)
                    a = today0; /* the earlier days are in the rollups */
                u->decayed_mms += decay_int(gpu, a, e, now, h);
            }
        }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return fair_ledger_sql_error(l, rc, "usage: read", err);
    return 0;
}

int fair_ledger_usage_read(struct fair_ledger *l, int64_t now_ms, struct fair_ledger_usage *rows,
                           size_t n, struct fair_error *err)
{
    int rc = 0;
    int64_t hmax = 0;
    for (size_t i = 0; i < n; i++) {
        rows[i].decayed_mms = 0;
        rows[i].period_mms = 0;
        if (rows[i].half_life_ms > hmax)
            hmax = rows[i].half_life_ms;
    }
    if (hmax > 0) {
        int64_t today = fdiv(now_ms, DAY), today0 = today * DAY;
        int64_t back = (hmax / DAY + 1) * 32;
        if (back > 400)
            back = 400;
        int64_t maxlen = 0;
        if ((rc = fair_ledger_meta_get(l, "max_closed_len_ms", &maxlen, err)))
            return rc;
        int64_t b1[2] = {today - back, today};
        if ((rc = run(l,
                      "SELECT d.project, d.queue, r.day, sum(r.gpu_mms) FROM interval_day r"
                      " JOIN dims d ON d.id = r.dim_id WHERE r.day >= ?1 AND r.day < ?2"
                      " GROUP BY 1, 2, 3",
                      b1, 2, 0, now_ms, today0, rows, n, err)))
            return rc;
        int64_t b2[2] = {today0, today0 - (maxlen > 0 ? maxlen : 0)};
        if ((rc = run(l,
                      "SELECT d.project, d.queue, i.gpu_milli, i.start_ms, i.end_ms FROM"
                      " intervals i JOIN dims d ON d.id = i.dim_id WHERE i.end_ms IS NOT NULL"
                      " AND i.end_ms > ?1 AND i.start_ms >= ?2",
                      b2, 2, 1, now_ms, today0, rows, n, err)) ||
            (rc = run(l,
                      "SELECT d.project, d.queue, i.gpu_milli, i.start_ms, i.end_ms FROM"
                      " intervals i JOIN dims d ON d.id = i.dim_id WHERE i.end_ms IS NULL",
                      NULL, 0, 1, now_ms, today0, rows, n, err)))
            return rc;
    }
    /* Budget periods: one report per distinct period (projects share
     * the controller's day, week or month). */
    for (size_t i = 0; i < n; i++) {
        if (rows[i].to_ms <= rows[i].from_ms || rows[i].queue)
            continue;
        bool done = false;
        for (size_t j = 0; j < i && !done; j++)
            done = rows[j].from_ms == rows[i].from_ms && rows[j].to_ms == rows[i].to_ms;
        if (done)
            continue;
        struct fair_report_params p = {
            .from_ms = rows[i].from_ms, .to_ms = rows[i].to_ms, .by = FAIR_REPORT_BY_PROJECT};
        struct fair_report *r = NULL;
        if ((rc = fair_report_run(l, &p, &r, err)))
            return rc;
        for (size_t k = i; k < n; k++) {
            if (rows[k].from_ms != p.from_ms || rows[k].to_ms != p.to_ms || rows[k].queue)
                continue;
            for (size_t m = 0; m < r->n; m++)
                if (!strcmp(r->rows[m].key, rows[k].project))
                    rows[k].period_mms = r->rows[m].gpu_mms;
        }
        fair_report_free(r);
    }
    return 0;
}
