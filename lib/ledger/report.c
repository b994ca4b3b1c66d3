/* GPU-hour reports (see report.h): the queries over rollups and raw rows,
 * prices, rendering as table/CSV/JSON, and the HTTP form. */
#include "ledger/report.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/tz.h"

#define DAY FAIR_LEDGER_DAY_MS

static const char *const by_names[] = {"team", "project", "queue", "namespace", "user"};
/* The SQL expression of each grouping (d: dims, i: intervals). */
static const char *const by_cols[] = {"d.team", "d.project", "d.queue", "d.namespace", "i.creator"};
#define NBY ((int)(sizeof by_names / sizeof *by_names))

int fair_report_by_parse(const char *s)
{
    for (int i = 0; i < NBY; i++) {
        size_t n = strlen(by_names[i]);
        if (s && strcmp(s, by_names[i]) == 0)
            return i;
        if (s && i != FAIR_REPORT_BY_USER && strncmp(s, by_names[i], n) == 0 &&
            strcmp(s + n, ",model") == 0)
            return i | FAIR_REPORT_BY_MODEL;
    }
    return -1;
}

const char *fair_report_by_name(enum fair_report_by by)
{
    return (unsigned)by < (unsigned)NBY ? by_names[by] : "?";
}

int fair_report_format_parse(const char *s)
{
    if (!s)
        return -1;
    if (strcmp(s, "table") == 0)
        return FAIR_REPORT_TABLE;
    if (strcmp(s, "csv") == 0)
        return FAIR_REPORT_CSV;
    if (strcmp(s, "json") == 0)
        return FAIR_REPORT_JSON;
    return -1;
}

static int two_digits(const char *s, int *v)
{
    if (!isdigit((unsigned char)s[0]) || !isdigit((unsigned char)s[1]))
        return -1;
    *v = (s[0] - '0') * 10 + (s[1] - '0');
    return 0;
}

int fair_report_tz_parse(const char *s, int *minutes, struct fair_error *err)
{
    int h, m;
    if (!s)
        return fair_error_set(err, FAIR_EINVAL, "time zone missing");
    if (strcmp(s, "UTC") == 0 || strcmp(s, "Z") == 0 || strcmp(s, "utc") == 0) {
        *minutes = 0;
        return 0;
    }
    if (strlen(s) != 6 || (s[0] != '+' && s[0] != '-') || s[3] != ':' || two_digits(s + 1, &h) ||
        two_digits(s + 4, &m) || m > 59 || h * 60 + m > 14 * 60)
        return fair_error_set(err, FAIR_EINVAL,
                              "bad time zone \"%.40s\": use UTC, +HH:MM or -HH:MM", s);
    *minutes = (s[0] == '-' ? -1 : 1) * (h * 60 + m);
    return 0;
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int fair_report_date_parse(const char *s, int tz_min, int64_t *out_ms, struct fair_error *err)
{
    if (!s || strnlen(s, 65) > 64)
        return fair_error_set(err, FAIR_EINVAL, "date missing or too long");
    if (strlen(s) == 10) {
        /* YYYY-MM-DD: validated through the RFC 3339 parser, then shifted
         * from UTC midnight to midnight in the zone. */
        char buf[32];
        snprintf(buf, sizeof(buf), "%sT00:00:00Z", s);
        int64_t ms;
        if (s[4] != '-' || s[7] != '-' || fair_time_parse_rfc3339(buf, &ms))
            goto bad;
        int y = 0, mo = 0, d = 0;
        for (int i = 0; i < 4; i++)
            y = y * 10 + (s[i] - '0');
        if (two_digits(s + 5, &mo) || two_digits(s + 8, &d) || mo < 1 || mo > 12 || d < 1)
            goto bad;
        static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
        if (d > mdays[mo - 1] + (mo == 2 && leap))
            goto bad;
        *out_ms = ms - (int64_t)tz_min * 60000;
        return 0;
    }
    if (fair_time_parse_rfc3339(s, out_ms) == 0)
        return 0;
bad:
    return fair_error_set(err, FAIR_EINVAL,
                          "bad date \"%.64s\": use YYYY-MM-DD or an RFC 3339 time", s);
}

/* ---- calendar days, zones and relative dates ---- */

/* The civil calendar is base/tz.h's (fair_days_from_civil). */
static void civil_from_days(int64_t z, int *y, int *m, int *d)
{
    int64_t yy;
    fair_civil_from_days(z, &yy, m, d);
    *y = (int)yy;
}

#define MAX_OFFSET_MIN (18 * 60)

int fair_report_zone_offset(const struct fair_report_zone *z, int64_t utc_ms, int *min_east,
                            struct fair_error *err)
{
    int m = z->fixed_min;
    if (z->offset_at && z->offset_at(z->ctx, utc_ms, &m))
        return fair_error_set(err, FAIR_EINVAL, "time zone: no offset known at %" PRId64 " ms",
                              utc_ms);
    if (m < -MAX_OFFSET_MIN || m > MAX_OFFSET_MIN)
        return fair_error_set(err, FAIR_EINVAL, "time zone: offset of %d minutes", m);
    *min_east = m;
    return 0;
}

int fair_report_day_start(const struct fair_report_zone *z, int y, int m, int d, int64_t *out_ms,
                          struct fair_error *err)
{
    if (m == 0)
        m = 12, y--;
    else if (m == 13)
        m = 1, y++;
    if (y < 1 || y > 9999 || m < 1 || m > 12 || d < 1 || d > 31)
        return fair_error_set(err, FAIR_EINVAL, "date %d-%d-%d out of range", y, m, d);
    int64_t local = fair_days_from_civil(y, m, d) * DAY; /* local midnight, as if it were UTC */
    /* The offsets in force a day and a half before and after: a zone
     * changes its offset at most once in three days. Each candidate
     * instant is right when the zone has that offset then. */
    int before = 0, after = 0, at = 0; /* set by each call that returns 0 */
    int rc = fair_report_zone_offset(z, local - 36 * 3600000LL, &before, err);
    rc = rc ? rc : fair_report_zone_offset(z, local + 36 * 3600000LL, &after, err);
    if (rc)
        return rc;
    int64_t cand[2] = {local - before * 60000LL, local - after * 60000LL};
    int64_t best = INT64_MAX;
    for (int i = 0; i < 2; i++) {
        if ((rc = fair_report_zone_offset(z, cand[i], &at, err)))
            return rc;
        if (cand[i] + at * 60000LL == local && cand[i] < best)
            best = cand[i]; /* both hold in an overlap: the earlier */
    }
    if (best == INT64_MAX) {
        /* Midnight falls in a gap (the clocks jump over it): the day starts
         * when the gap ends. Bisect for the change, to the millisecond. */
        int64_t lo = cand[0] < cand[1] ? cand[0] : cand[1];
        int64_t hi = cand[0] < cand[1] ? cand[1] : cand[0];
        int lo_off = 0;
        if ((rc = fair_report_zone_offset(z, lo, &lo_off, err)))
            return rc;
        while (hi - lo > 1) {
            int64_t mid = lo + (hi - lo) / 2;
            if ((rc = fair_report_zone_offset(z, mid, &at, err)))
                return rc;
            if (at == lo_off)
                lo = mid;
            else
                hi = mid;
        }
        best = hi;
    }
    *out_ms = best;
    return 0;
}

/* The local calendar day (days since the epoch) of utc_ms in z. */
static int local_day(const struct fair_report_zone *z, int64_t utc_ms, int64_t *day,
                     struct fair_error *err)
{
    int off = 0;
    int rc = fair_report_zone_offset(z, utc_ms, &off, err);
    if (!rc)
        *day = floor_div(utc_ms + off * 60000LL, DAY);
    return rc;
}

static int day_start_of(const struct fair_report_zone *z, int64_t day, int64_t *out,
                        struct fair_error *err)
{
    int y, m, d;
    civil_from_days(day, &y, &m, &d);
    return fair_report_day_start(z, y, m, d, out, err);
}

int fair_report_date_resolve(const char *s, const struct fair_report_zone *z, int64_t now_ms,
                             int64_t *start, int64_t *span_end, struct fair_error *err)
{
    int64_t today;
    int rc, y, m, d;
    *span_end = INT64_MIN;
    if (!s || strnlen(s, 65) > 64)
        return fair_error_set(err, FAIR_EINVAL, "date missing or too long");
    if ((rc = local_day(z, now_ms, &today, err)))
        return rc;
    civil_from_days(today, &y, &m, &d);
    if (strcmp(s, "today") == 0) {
        rc = day_start_of(z, today, start, err);
        return rc ? rc : day_start_of(z, today + 1, span_end, err);
    }
    if (strcmp(s, "yesterday") == 0) {
        rc = day_start_of(z, today - 1, start, err);
        return rc ? rc : day_start_of(z, today, span_end, err);
    }
    if (strcmp(s, "this-month") == 0) {
        rc = fair_report_day_start(z, y, m, 1, start, err);
        return rc ? rc : fair_report_day_start(z, y, m + 1, 1, span_end, err);
    }
    if (strcmp(s, "last-month") == 0) {
        rc = fair_report_day_start(z, y, m - 1, 1, start, err);
        return rc ? rc : fair_report_day_start(z, y, m, 1, span_end, err);
    }
    if (s[0] == '-' && isdigit((unsigned char)s[1])) {
        int64_t n = 0;
        const char *p = s + 1;
        while (isdigit((unsigned char)*p) && n <= 36600)
            n = n * 10 + (*p++ - '0');
        if (strcmp(p, "d") != 0 || n < 1 || n > 36600)
            return fair_error_set(err, FAIR_EINVAL,
                                  "bad date \"%.64s\": use -Nd for N days ago, 1 <= N <= 36600", s);
        rc = day_start_of(z, today - n, start, err);
        return rc ? rc : day_start_of(z, today, span_end, err);
    }
    if (strlen(s) == 10 && !z->offset_at)
        return fair_report_date_parse(s, z->fixed_min, start, err);
    if (strlen(s) == 10) {
        /* Validated as with a fixed zone, then midnight in z. */
        int64_t ms;
        if ((rc = fair_report_date_parse(s, 0, &ms, err)))
            return rc;
        return day_start_of(z, floor_div(ms, DAY), start, err);
    }
    if (fair_time_parse_rfc3339(s, start) == 0)
        return 0;
    return fair_error_set(err, FAIR_EINVAL,
                          "bad date \"%.64s\": use YYYY-MM-DD, an RFC 3339 time, today, "
                          "yesterday, -Nd, this-month or last-month",
                          s);
}

/* ---- accumulation ---- */

static void row_release(struct fair_report_row *r)
{
    for (size_t i = 0; i < r->nmodels; i++)
        fair_free(r->models[i].model);
    fair_free(r->models);
    fair_free(r->key);
    memset(r, 0, sizeof(*r));
}

void fair_report_free(struct fair_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        row_release(&r->rows[i]);
    fair_free(r->rows);
    row_release(&r->total);
    fair_free(r);
}

struct acc {
    struct fair_report *r;
    size_t cap;
};

static struct fair_report_row *row_get(struct acc *a, const char *key)
{
    struct fair_report *r = a->r;
    /* Binary search: rows are kept sorted by key. */
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(r->rows[mid].key, key);
        if (c == 0)
            return &r->rows[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (r->n >= 1000000 || fair_grow((void **)&r->rows, &a->cap, r->n + 1, sizeof(*r->rows)))
        return NULL;
    char *k = fair_strdup(key);
    if (!k)
        return NULL;
    memmove(&r->rows[lo + 1], &r->rows[lo], (r->n - lo) * sizeof(*r->rows));
    memset(&r->rows[lo], 0, sizeof(*r->rows));
    r->rows[lo].key = k;
    r->n++;
    return &r->rows[lo];
}

static int model_add(struct fair_report_row *row, const char *model, int64_t mms)
{
    for (size_t i = 0; i < row->nmodels; i++)
        if (strcmp(row->models[i].model, model) == 0) {
            row->models[i].gpu_mms += mms;
            return 0;
        }
    size_t cap = row->nmodels;
    if (row->nmodels >= 4096 ||
        fair_grow((void **)&row->models, &cap, row->nmodels + 1, sizeof(*row->models)))
        return FAIR_ENOMEM;
    row->models[row->nmodels].model = fair_strdup(model);
    if (!row->models[row->nmodels].model)
        return FAIR_ENOMEM;
    row->models[row->nmodels].gpu_mms = mms;
    row->nmodels++;
    return 0;
}

static int64_t col64(sqlite3_stmt *st, int i)
{
    return sqlite3_column_int64(st, i);
}

static const char *coltext(sqlite3_stmt *st, int i)
{
    const char *s = (const char *)sqlite3_column_text(st, i);
    return s ? s : "";
}

/* A group key: a team or project left empty is reported as "(none)". */
static const char *keytext(sqlite3_stmt *st, int i)
{
    const char *s = coltext(st, i);
    return *s ? s : "(none)";
}

/* Runs an interval query whose columns are: key, model, gpu, inquota,
 * preempted, pods, [alive]. */
static int run_interval_q(struct fair_ledger *l, struct acc *a, const char *sql,
                          const int64_t *binds, int nbinds, int with_alive, struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    int src = sqlite3_prepare_v2(fair_ledger_db(l), sql, -1, &st, NULL);
    if (src != SQLITE_OK)
        return fair_ledger_sql_error(l, src, "prepare report", err);
    for (int i = 0; i < nbinds; i++)
        sqlite3_bind_int64(st, i + 1, binds[i]);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        struct fair_report_row *row = row_get(a, keytext(st, 0));
        if (!row) {
            rc = fair_error_set(err, FAIR_ENOMEM, "report: out of memory");
            goto out;
        }
        int64_t gpu = col64(st, 2);
        row->gpu_mms += gpu;
        row->inquota_mms += col64(st, 3);
        row->preempted_mms += col64(st, 4);
        row->pods += col64(st, 5) + (with_alive ? col64(st, 6) : 0);
        if (gpu && model_add(row, coltext(st, 1), gpu)) {
            rc = fair_error_set(err, FAIR_ENOMEM, "report: out of memory");
            goto out;
        }
    }
    if (src != SQLITE_DONE)
        rc = fair_ledger_sql_error(l, src, "run report", err);
out:
    sqlite3_finalize(st);
    return rc;
}

static int run_lent_q(struct fair_ledger *l, struct acc *a, const char *sql, const int64_t *binds,
                      int nbinds, struct fair_error *err)
{
    sqlite3_stmt *st = NULL;
    int rc = 0;
    int src = sqlite3_prepare_v2(fair_ledger_db(l), sql, -1, &st, NULL);
    if (src != SQLITE_OK)
        return fair_ledger_sql_error(l, src, "prepare report", err);
    for (int i = 0; i < nbinds; i++)
        sqlite3_bind_int64(st, i + 1, binds[i]);
    while ((src = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t lent = col64(st, 1);
        if (!lent)
            continue;
        struct fair_report_row *row = row_get(a, keytext(st, 0));
        if (!row) {
            rc = fair_error_set(err, FAIR_ENOMEM, "report: out of memory");
            goto out;
        }
        row->lent_mms += lent;
    }
    if (src != SQLITE_DONE)
        rc = fair_ledger_sql_error(l, src, "run report", err);
out:
    sqlite3_finalize(st);
    return rc;
}

/* Overlap of [s, e) with [?A, ?B) in SQL, with A = ?1 and B = ?2. */
#define OV(s, e) "(min(" e ", ?2) - max(" s ", ?1))"

int fair_report_run(struct fair_ledger *l, const struct fair_report_params *p,
                    struct fair_report **out, struct fair_error *err)
{
    struct acc a = {0};
    int rc = 0;
    char sql[1200];
    *out = NULL;
    if (p->to_ms <= p->from_ms)
        return fair_error_set(err, FAIR_EINVAL,
                              "report: the period is empty (--to must be "
                              "after --from)");
    if (p->to_ms - p->from_ms > FAIR_REPORT_MAX_PERIOD_MS)
        return fair_error_set(err, FAIR_ERANGE, "report: the period is longer than 100 years");
    if ((unsigned)p->by > FAIR_REPORT_BY_USER)
        return fair_error_set(err, FAIR_EINVAL, "report: bad grouping");
    a.r = fair_calloc(1, sizeof(*a.r));
    if (!a.r)
        return fair_error_set(err, FAIR_ENOMEM, "report: out of memory");
    a.r->params = *p;
    a.r->exact = 1;
    a.r->lent_known = p->by != FAIR_REPORT_BY_NAMESPACE && p->by != FAIR_REPORT_BY_USER;
    const char *col = by_cols[p->by];
    /* issue 15: by group and GPU model, the key "group<TAB>model". Lent is
     * sampled per queue, not per model: not known then. */
    char colm[96];
    if (p->by_model) {
        snprintf(colm, sizeof colm, "%s || char(9) || d.gpu_model", col);
        col = colm;
        a.r->lent_known = 0;
    }

    int64_t hb, maxlen, pruned, spruned, maxdur;
    if ((rc = fair_ledger_meta_get(l, "heartbeat_ms", &hb, err)) ||
        (rc = fair_ledger_meta_get(l, "max_closed_len_ms", &maxlen, err)) ||
        (rc = fair_ledger_meta_get(l, "pruned_before_ms", &pruned, err)) ||
        (rc = fair_ledger_meta_get(l, "samples_pruned_before_ms", &spruned, err)) ||
        (rc = fair_ledger_meta_get(l, "max_sample_dur_ms", &maxdur, err)))
        goto out;

    int64_t P0 = p->from_ms, P1 = p->to_ms;
    int64_t D0 = -floor_div(-P0, DAY), D1 = floor_div(P1, DAY); /* full days [D0, D1) */
    /* Raw ranges: the partial days at the edges, or the whole period. */
    int64_t ranges[2][2];
    int nranges = 0, mode[2];
    if (D0 < D1 && p->by != FAIR_REPORT_BY_USER) {
        if (P0 < D0 * DAY) {
            ranges[nranges][0] = P0, ranges[nranges][1] = D0 * DAY, mode[nranges++] = 1;
        }
        if (D1 * DAY < P1) {
            ranges[nranges][0] = D1 * DAY, ranges[nranges][1] = P1, mode[nranges++] = 2;
        }
        /* Full days: closed intervals from the rollups. */
        snprintf(sql, sizeof(sql),
                 /* Sum per dimension id first (integer keys), then name. */
                 "SELECT %s, d.gpu_model, sum(g), sum(iq), sum(pr), sum(ps), sum(pa) FROM"
                 " (SELECT dim_id, sum(gpu_mms) g, sum(inquota_mms) iq, sum(preempted_mms) pr,"
                 " sum(pods_started) ps, sum(CASE WHEN day = ?1 THEN pods_alive ELSE 0 END) pa"
                 " FROM interval_day WHERE day >= ?1 AND day < ?2 GROUP BY dim_id) r"
                 " JOIN dims d ON d.id = r.dim_id GROUP BY 1, 2",
                 col);
        int64_t b[2] = {D0, D1};
        rc = run_interval_q(l, &a, sql, b, 2, 1, err);
        if (rc)
            goto out;
        if (a.r->lent_known) {
            snprintf(sql, sizeof(sql),
                     "SELECT %s, sum(l) FROM (SELECT dim_id, sum(lent_mms) l FROM sample_day"
                     " WHERE day >= ?1 AND day < ?2 GROUP BY dim_id) r JOIN dims d"
                     " ON d.id = r.dim_id GROUP BY 1",
                     col);
            rc = run_lent_q(l, &a, sql, b, 2, err);
            if (rc)
                goto out;
        }
    } else {
        ranges[0][0] = P0, ranges[0][1] = P1, mode[0] = 0, nranges = 1;
    }
    for (int k = 0; k < nranges; k++) {
        int64_t A = ranges[k][0], B = ranges[k][1];
        if (A < pruned || (a.r->lent_known && A < spruned))
            a.r->exact = 0;
        /* Pods: count an interval once over the whole period. In the
         * edge before the full days only those that end before them (mode
         * 1); in the edge after, only those that start in it (mode 2). */
        snprintf(
            sql, sizeof(sql),
            "SELECT %s, d.gpu_model, sum(i.gpu_milli * " OV(
                "i.start_ms",
                "i.end_ms") "),"
                            " sum(i.inquota_milli * " OV(
                                "i.start_ms",
                                "i.end_ms") "),"
                                            " sum(CASE WHEN i.reason = %d THEN i.gpu_milli * " OV(
                                                "i.start_ms",
                                                "i.end_ms") " ELSE 0 END),"
                                                            " sum(CASE WHEN ?4 = 0 OR (?4 = 1 AND "
                                                            "i.end_ms <= ?2) OR"
                                                            " (?4 = 2 AND i.start_ms >= ?1) THEN 1 "
                                                            "ELSE 0 END)"
                                                            " FROM intervals i JOIN dims d ON d.id "
                                                            "= i.dim_id"
                                                            " WHERE i.start_ms >= ?1 - ?3 AND "
                                                            "i.start_ms < ?2 AND i.end_ms IS NOT "
                                                            "NULL"
                                                            " AND i.end_ms > ?1 GROUP BY 1, 2",
            col, FAIR_LEDGER_PREEMPTED);
        int64_t b[4] = {A, B, maxlen, mode[k]};
        rc = run_interval_q(l, &a, sql, b, 4, 0, err);
        if (rc)
            goto out;
        if (a.r->lent_known) {
            snprintf(
                sql, sizeof(sql),
                "SELECT %s, sum(s.lent * " OV(
                    "s.t_ms - s.dur_ms",
                    "s.t_ms") ")"
                              " FROM samples s JOIN dims d ON d.id = s.dim_id"
                              " WHERE s.t_ms > ?1 AND s.t_ms < ?2 + ?3 AND s.t_ms - s.dur_ms < ?2"
                              " GROUP BY 1",
                col);
            int64_t sb[3] = {A, B, maxdur + 1};
            rc = run_lent_q(l, &a, sql, sb, 3, err);
            if (rc)
                goto out;
        }
    }
    /* Open intervals: alive up to the heartbeat. */
    snprintf(
        sql, sizeof(sql),
        "SELECT %s, d.gpu_model,"
        " sum(i.gpu_milli * max(0, " OV(
            "i.start_ms", "max(i.start_ms, ?3)") ")),"
                                                 " sum(i.inquota_milli * max(0, " OV(
                                                     "i.start_ms",
                                                     "max(i.start_ms, ?3)") ")),"
                                                                            " 0, sum(CASE WHEN " OV(
                                                                                "i.start_ms",
                                                                                "max(i.start_ms, "
                                                                                "?3)") " > 0 THEN "
                                                                                       "1 ELSE 0"
                                                                                       " END) FROM "
                                                                                       "intervals "
                                                                                       "i JOIN "
                                                                                       "dims d ON "
                                                                                       "d.id = "
                                                                                       "i.dim_id"
                                                                                       " WHERE "
                                                                                       "i.end_ms "
                                                                                       "IS NULL "
                                                                                       "AND "
                                                                                       "i.start_ms "
                                                                                       "< ?2 GROUP "
                                                                                       "BY 1, 2",
        col);
    int64_t ob[3] = {P0, P1, hb};
    rc = run_interval_q(l, &a, sql, ob, 3, 0, err);
    if (rc)
        goto out;
    /* Drop rows with nothing in the period (e.g. open intervals that
     * start after the heartbeat) and compute the totals. */
    size_t w = 0;
    a.r->total.key = fair_strdup("TOTAL");
    if (!a.r->total.key) {
        rc = fair_error_set(err, FAIR_ENOMEM, "report: out of memory");
        goto out;
    }
    for (size_t i = 0; i < a.r->n; i++) {
        struct fair_report_row *row = &a.r->rows[i];
        if (!row->gpu_mms && !row->lent_mms && !row->pods) {
            row_release(row);
            continue;
        }
        row->borrowed_mms = row->gpu_mms - row->inquota_mms;
        struct fair_report_row *t = &a.r->total;
        t->gpu_mms += row->gpu_mms;
        t->inquota_mms += row->inquota_mms;
        t->borrowed_mms += row->borrowed_mms;
        t->preempted_mms += row->preempted_mms;
        t->lent_mms += row->lent_mms;
        t->pods += row->pods;
        for (size_t m = 0; m < row->nmodels; m++)
            if (model_add(t, row->models[m].model, row->models[m].gpu_mms)) {
                rc = fair_error_set(err, FAIR_ENOMEM, "report: out of memory");
                goto out;
            }
        a.r->rows[w++] = *row;
    }
    a.r->n = w;
out:
    if (rc) {
        fair_report_free(a.r);
        return rc;
    }
    *out = a.r;
    return 0;
}

/* ---- prices ---- */

void fair_prices_init(struct fair_prices *p)
{
    memset(p, 0, sizeof(*p));
    p->default_micro = -1;
}

void fair_prices_release(struct fair_prices *p)
{
    for (size_t i = 0; i < p->n; i++)
        fair_free(p->e[i].model);
    fair_free(p->e);
    fair_prices_init(p);
}

int fair_price_parse(const char *s, int64_t *micro, struct fair_error *err)
{
    /* At most 9 integer digits and 6 decimals: v < 10^15 cannot overflow. */
    int64_t v = 0;
    int idigits = 0, frac = -1;
    if (!s || !*s)
        goto bad;
    for (const char *p = s; *p; p++) {
        if (*p == '.' && frac < 0) {
            frac = 0;
            continue;
        }
        if (!isdigit((unsigned char)*p))
            goto bad;
        if (frac >= 0 ? ++frac > 6 : ++idigits > 9)
            goto bad;
        v = v * 10 + (*p - '0');
    }
    if (!idigits && frac <= 0)
        goto bad;
    for (int f = frac < 0 ? 0 : frac; f < 6; f++)
        v *= 10;
    *micro = v;
    return 0;
bad:
    return fair_error_set(err, FAIR_EINVAL,
                          "bad price \"%.40s\": a non-negative decimal below 10^9, at most 6 "
                          "decimals",
                          s ? s : "");
}

int fair_prices_load(struct fair_prices *p, const char *path, struct fair_error *err)
{
    FILE *f = fopen(path, "r");
    char line[520];
    int rc = 0, lineno = 0;
    size_t cap = p->n;
    if (!f)
        return fair_error_set(err, FAIR_EIO, "price table %s: %s", path, strerror(errno));
    for (;;) {
        /* Byte by byte rather than fgets(), which hides a NUL byte: what
         * follows it on the line would be dropped without a word. */
        size_t len = 0;
        int ch;
        while ((ch = getc(f)) != EOF && ch != '\n') {
            if (len == sizeof(line) - 2) {
                rc = fair_error_set(err, FAIR_EPARSE, "price table %s:%d: line too long", path,
                                    lineno + 1);
                goto out;
            }
            line[len++] = (char)ch;
        }
        if (ch == EOF && len == 0)
            break;
        line[len] = '\0';
        lineno++;
        if (lineno > 10000) {
            rc = fair_error_set(err, FAIR_ERANGE, "price table %s: more than 10000 lines", path);
            goto out;
        }
        while (len && (line[len - 1] == '\r' || line[len - 1] == ' '))
            line[--len] = '\0';
        if (!len || line[0] == '#')
            continue;
        if (memchr(line, '\0', len)) {
            rc = fair_error_set(err, FAIR_EPARSE, "price table %s:%d: NUL byte", path, lineno);
            goto out;
        }
        if (strcmp(line, "model,price") == 0)
            continue;
        char *comma = strchr(line, ',');
        if (!comma || comma == line || strchr(comma + 1, ',')) {
            rc = fair_error_set(err, FAIR_EPARSE, "price table %s:%d: expected \"model,price\"",
                                path, lineno);
            goto out;
        }
        *comma = '\0';
        int64_t micro;
        if (fair_price_parse(comma + 1, &micro, err)) {
            rc = fair_error_prefix(err, "price table %s:%d: ", path, lineno);
            goto out;
        }
        if (strcmp(line, "*") == 0) {
            p->default_micro = micro;
            continue;
        }
        if (fair_grow((void **)&p->e, &cap, p->n + 1, sizeof(*p->e)) ||
            !(p->e[p->n].model = fair_strdup(line))) {
            rc = fair_error_set(err, FAIR_ENOMEM, "price table: out of memory");
            goto out;
        }
        p->e[p->n++].micro = micro;
    }
    if (ferror(f))
        rc = fair_error_set(err, FAIR_EIO, "price table %s: read error", path);
out:
    fclose(f);
    return rc;
}

/* Cost of a row in cents (half up): sum over models of mms x micro / (3.6e9 x 1e4). */
static int row_cost(const struct fair_report_row *row, const struct fair_prices *pr, int64_t *cents,
                    struct fair_error *err)
{
    __int128 num = 0;
    for (size_t i = 0; i < row->nmodels; i++) {
        int64_t micro = pr->default_micro;
        for (size_t k = 0; k < pr->n; k++)
            if (strcmp(pr->e[k].model, row->models[i].model) == 0)
                micro = pr->e[k].micro;
        if (micro < 0)
            return fair_error_set(err, FAIR_EINVAL,
                                  "no price for GPU model \"%s\": add it to the price table "
                                  "or give --price-per-gpu-hour",
                                  row->models[i].model);
        num += (__int128)row->models[i].gpu_mms * micro;
    }
    __int128 den = (__int128)FAIR_LEDGER_GPU_HOUR_MMS * 10000;
    *cents = (int64_t)((num + den / 2) / den);
    return 0;
}

void fair_gpu_hours_format(int64_t mms, char *out, size_t n)
{
    /* 0.001 GPU-hour = 3.6e6 mms */
    int neg = mms < 0;
    uint64_t v = neg ? (uint64_t)0 - (uint64_t)mms : (uint64_t)mms;
    uint64_t th = (v + 1800000) / 3600000;
    snprintf(out, n, "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", th / 1000, th % 1000);
}

static void milli_avg_format(int64_t mms, int64_t period_ms, char *out, size_t n)
{
    int64_t milli = (mms + period_ms / 2) / period_ms;
    snprintf(out, n, "%" PRId64 ".%03" PRId64, milli / 1000, milli % 1000);
}

/* Length of the valid UTF-8 sequence at p (2 to 4), or 0 when there is
 * none (overlong forms, surrogates and values above U+10FFFF count as
 * invalid, as in jansson). */
static size_t utf8_seq(const unsigned char *p)
{
    size_t n;
    unsigned v;
    if (*p >= 0xC2 && *p <= 0xDF)
        n = 2, v = *p & 0x1Fu;
    else if (*p >= 0xE0 && *p <= 0xEF)
        n = 3, v = *p & 0x0Fu;
    else if (*p >= 0xF0 && *p <= 0xF4)
        n = 4, v = *p & 0x07u;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80) /* also stops at the NUL */
            return 0;
        v = (v << 6) | (p[i] & 0x3Fu);
    }
    if ((n == 3 && v < 0x800) || (n == 4 && v < 0x10000) || v > 0x10FFFF ||
        (v >= 0xD800 && v <= 0xDFFF))
        return 0;
    return n;
}

/* Bytes that are not UTF-8 (e.g. from a query string) become U+FFFD, so
 * that the output is always valid JSON. */
int fair_json_str(struct fair_buf *b, const char *s)
{
    int rc = fair_buf_append(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p && !rc; p++) {
        size_t n;
        if (*p == '"' || *p == '\\') {
            rc = fair_buf_appendf(b, "\\%c", *p);
        } else if (*p < 0x20) {
            rc = fair_buf_appendf(b, "\\u%04x", *p);
        } else if (*p < 0x80) {
            rc = fair_buf_append(b, p, 1);
        } else if ((n = utf8_seq(p)) != 0) {
            rc = fair_buf_append(b, p, n);
            p += n - 1;
        } else {
            rc = fair_buf_append(b, "\\ufffd", 6);
        }
    }
    return rc ? rc : fair_buf_append(b, "\"", 1);
}

/* CSV field: quoted when it holds a comma, quote or newline. */
static int csv_field(struct fair_buf *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n"))
        return fair_buf_appends(b, s);
    int rc = fair_buf_append(b, "\"", 1);
    for (const char *p = s; *p && !rc; p++)
        rc = *p == '"' ? fair_buf_append(b, "\"\"", 2) : fair_buf_append(b, p, 1);
    return rc ? rc : fair_buf_append(b, "\"", 1);
}

struct cells {
    char gh[32], iq[32], bo[32], pre[32], lent[32], avg[32], cost[32], share[16];
};

int fair_report_unit_parse(const char *s)
{
    if (s && strcmp(s, "hours") == 0)
        return FAIR_REPORT_HOURS;
    if (s && strcmp(s, "days") == 0)
        return FAIR_REPORT_DAYS;
    return -1;
}

/* mms in GPU-hours or GPU-days, 3 decimals, rounded half up. */
static void unit_format(int64_t mms, enum fair_report_unit u, char *out, size_t n)
{
    if (u != FAIR_REPORT_DAYS) {
        fair_gpu_hours_format(mms, out, n);
        return;
    }
    int neg = mms < 0;
    uint64_t v = neg ? (uint64_t)0 - (uint64_t)mms : (uint64_t)mms;
    uint64_t th = (v + 43200000) / 86400000; /* 0.001 GPU-day = 8.64e7 mms */
    snprintf(out, n, "%s%" PRIu64 ".%03" PRIu64, neg ? "-" : "", th / 1000, th % 1000);
}

/* part / total in percent with one decimal, rounded half up; "" when the
 * total is not positive. */
static void share_format(int64_t part, int64_t total, char *out, size_t n)
{
    if (total <= 0 || part < 0) {
        out[0] = '\0';
        return;
    }
    __int128 tenths = ((__int128)part * 1000 + total / 2) / total;
    snprintf(out, n, "%" PRId64 ".%" PRId64, (int64_t)(tenths / 10), (int64_t)(tenths % 10));
}

static int row_cells(const struct fair_report *r, const struct fair_report_row *row,
                     const struct fair_report_style *st, struct cells *c, struct fair_error *err)
{
    unit_format(row->gpu_mms, st->unit, c->gh, sizeof(c->gh));
    unit_format(row->inquota_mms, st->unit, c->iq, sizeof(c->iq));
    unit_format(row->borrowed_mms, st->unit, c->bo, sizeof(c->bo));
    unit_format(row->preempted_mms, st->unit, c->pre, sizeof(c->pre));
    if (r->lent_known)
        unit_format(row->lent_mms, st->unit, c->lent, sizeof(c->lent));
    else
        c->lent[0] = '\0';
    milli_avg_format(row->gpu_mms, r->params.to_ms - r->params.from_ms, c->avg, sizeof(c->avg));
    share_format(row->gpu_mms, r->total.gpu_mms, c->share, sizeof(c->share));
    c->cost[0] = '\0';
    if (st->prices) {
        int64_t cents = 0;
        int rc = row_cost(row, st->prices, &cents, err);
        if (rc)
            return rc;
        snprintf(c->cost, sizeof(c->cost), "%" PRId64 ".%02" PRId64, cents / 100, cents % 100);
    }
    return 0;
}

static void period_format(int64_t ms, int tz_min, char *out, size_t n)
{
    char t[40];
    fair_time_format_rfc3339(ms + (int64_t)tz_min * 60000, t, sizeof(t));
    if (tz_min == 0) {
        snprintf(out, n, "%s", t);
        return;
    }
    size_t len = strlen(t);
    if (len && t[len - 1] == 'Z')
        t[len - 1] = '\0';
    int a = tz_min < 0 ? -tz_min : tz_min;
    snprintf(out, n, "%s%c%02d:%02d", t, tz_min < 0 ? '-' : '+', a / 60, a % 60);
}

int fair_report_render(const struct fair_report *r, enum fair_report_format f,
                       const struct fair_prices *prices, struct fair_buf *out,
                       struct fair_error *err)
{
    struct fair_report_style st = {.format = f, .prices = prices};
    return fair_report_render_style(r, &st, out, err);
}

/* issue 15: the group and the model of a row of a by-model report (key
 * "group<TAB>model"); model "" for the total or without by_model. */
static const char *key_split(const struct fair_report *r, const struct fair_report_row *row,
                             char *group, size_t n)
{
    const char *tab = r->params.by_model ? strchr(row->key, '\t') : NULL;
    size_t len = tab ? (size_t)(tab - row->key) : strlen(row->key);
    snprintf(group, n, "%.*s", (int)(len < n ? len : n - 1), row->key);
    if (!group[0])
        snprintf(group, n, "(none)");
    return tab ? (tab[1] ? tab + 1 : "(none)") : "";
}

int fair_report_render_style(const struct fair_report *r, const struct fair_report_style *st,
                             struct fair_buf *out, struct fair_error *err)
{
    struct cells c;
    int rc = 0;
    const struct fair_prices *prices = st->prices;
    const char *by = fair_report_by_name(r->params.by);
    const char *u = st->unit == FAIR_REPORT_DAYS ? "days" : "hours";
    char from[48], to[48];
    period_format(r->params.from_ms, r->params.tz_min, from, sizeof(from));
    period_format(r->params.to_ms, r->params.tz_to_set ? r->params.tz_to_min : r->params.tz_min, to,
                  sizeof(to));
    if (st->format == FAIR_REPORT_CSV) {
        rc = fair_buf_appendf(out,
                              "%s%s,gpu_%s,in_quota_gpu_%s,borrowed_gpu_%s,"
                              "preempted_gpu_%s,lent_gpu_%s,avg_gpus,pods%s%s\n",
                              by, r->params.by_model ? ",model" : "", u, u, u, u, u,
                              st->percent ? ",share_percent" : "", prices ? ",cost" : "");
        for (size_t i = 0; i <= r->n && !rc; i++) {
            const struct fair_report_row *row = i < r->n ? &r->rows[i] : &r->total;
            if ((rc = row_cells(r, row, st, &c, err)))
                return rc;
            char group[256];
            const char *model = key_split(r, row, group, sizeof group);
            rc = csv_field(out, group) ||
                 (r->params.by_model && (fair_buf_appends(out, ",") || csv_field(out, model))) ||
                 fair_buf_appendf(out, ",%s,%s,%s,%s,%s,%s,%" PRId64 "%s%s%s%s\n", c.gh, c.iq, c.bo,
                                  c.pre, c.lent, c.avg, row->pods, st->percent ? "," : "",
                                  st->percent ? c.share : "", prices ? "," : "", c.cost);
        }
    } else if (st->format == FAIR_REPORT_JSON) {
        rc = fair_buf_appendf(out,
                              "{\"from\":\"%s\",\"to\":\"%s\",\"by\":\"%s\","
                              "\"period_hours\":%.3f,\"exact\":%s,%s\"rows\":[",
                              from, to, by, (double)(r->params.to_ms - r->params.from_ms) / 3.6e6,
                              r->exact ? "true" : "false",
                              st->unit == FAIR_REPORT_DAYS ? "\"unit\":\"days\"," : "");
        for (size_t i = 0; i <= r->n && !rc; i++) {
            const struct fair_report_row *row = i < r->n ? &r->rows[i] : &r->total;
            if ((rc = row_cells(r, row, st, &c, err)))
                return rc;
            if (i == r->n)
                rc = fair_buf_appends(out, "],\"total\":");
            else if (i)
                rc = fair_buf_appends(out, ",");
            char group[256];
            const char *model = key_split(r, row, group, sizeof group);
            rc = rc || fair_buf_appendf(out, "{\"%s\":", by) || fair_json_str(out, group);
            if (r->params.by_model)
                rc = rc || fair_buf_appends(out, ",\"model\":") ||
                     (model[0] ? fair_json_str(out, model) : fair_buf_appends(out, "null"));
            rc = rc ||
                 fair_buf_appendf(out,
                                  ",\"gpu_%s\":%s,\"in_quota_gpu_%s\":%s,"
                                  "\"borrowed_gpu_%s\":%s,\"preempted_gpu_%s\":%s,"
                                  "\"lent_gpu_%s\":%s,\"avg_gpus\":%s,\"pods\":%" PRId64
                                  ",\"gpu_milli_ms\":%" PRId64,
                                  u, c.gh, u, c.iq, u, c.bo, u, c.pre, u,
                                  r->lent_known ? c.lent : "null", c.avg, row->pods, row->gpu_mms);
            if (!rc && st->percent)
                rc = fair_buf_appendf(out, ",\"share_percent\":%s", c.share[0] ? c.share : "null");
            if (!rc && prices)
                rc = fair_buf_appendf(out, ",\"cost\":%s", c.cost);
            rc = rc || fair_buf_appends(out, "}");
        }
        rc = rc || fair_buf_appends(out, "}\n");
    } else {
        size_t w = strlen(by), wm = 0;
        for (size_t i = 0; i < r->n; i++) {
            char group[256];
            const char *model = key_split(r, &r->rows[i], group, sizeof group);
            if (strlen(group) > w)
                w = strlen(group);
            if (r->params.by_model && strlen(model) > wm)
                wm = strlen(model);
        }
        if (r->params.by_model && wm < 5)
            wm = 5;
        if (wm > 64)
            wm = 64;
        if (w < 5)
            w = 5;
        if (w > 64)
            w = 64;
        char upper[16];
        size_t k;
        for (k = 0; by[k] && k < sizeof(upper) - 1; k++)
            upper[k] = (char)toupper((unsigned char)by[k]);
        upper[k] = '\0';
        int days = st->unit == FAIR_REPORT_DAYS;
        rc = fair_buf_appendf(out, "GPU-%s from %s to %s%s\n\n", days ? "days" : "hours", from, to,
                              r->exact ? "" : " (INEXACT: the period's edges fall in pruned data)");
        rc = rc || fair_buf_appendf(out, "%-*s%s%-*s %12s %12s %12s %12s %12s %9s %7s%s%s\n",
                                    (int)w, upper, wm ? " " : "", (int)wm, wm ? "MODEL" : "",
                                    days ? "GPU-DAYS" : "GPU-HOURS", "IN-QUOTA", "BORROWED",
                                    "PREEMPTED", "LENT", "AVG-GPUS", "PODS",
                                    st->percent ? "   SHARE" : "", prices ? "         COST" : "");
        for (size_t i = 0; i <= r->n && !rc; i++) {
            const struct fair_report_row *row = i < r->n ? &r->rows[i] : &r->total;
            if ((rc = row_cells(r, row, st, &c, err)))
                return rc;
            char share[24] = "";
            if (st->percent)
                snprintf(share, sizeof share, " %6s%%", c.share[0] ? c.share : "-");
            char group[256];
            const char *model = key_split(r, row, group, sizeof group);
            rc = fair_buf_appendf(
                out, "%-*.*s%s%-*.*s %12s %12s %12s %12s %12s %9s %7" PRId64 "%s%s%*s\n", (int)w,
                (int)w, group, wm ? " " : "", (int)wm, (int)wm, model, c.gh, c.iq, c.bo, c.pre,
                r->lent_known ? c.lent : "-", c.avg, row->pods, share, prices ? " " : "",
                prices ? 12 : 0, c.cost);
        }
    }
    if (rc)
        return fair_error_set(err, rc < 0 ? rc : FAIR_ENOMEM, "report: output too large");
    return 0;
}

int fair_prices_to_param(const struct fair_prices *p, struct fair_buf *out, struct fair_error *err)
{
    int rc = 0;
    for (size_t i = 0; i < p->n && !rc; i++) {
        if (strpbrk(p->e[i].model, ",:") || !p->e[i].model[0])
            return fair_error_set(err, FAIR_EINVAL,
                                  "GPU model \"%.64s\" cannot be sent to a server (',' or ':')",
                                  p->e[i].model);
        rc = fair_buf_appendf(out, "%s%s:%" PRId64 ".%06" PRId64, i ? "," : "", p->e[i].model,
                              p->e[i].micro / 1000000, p->e[i].micro % 1000000);
    }
    if (!rc && p->default_micro >= 0)
        rc = fair_buf_appendf(out, "%s*:%" PRId64 ".%06" PRId64, p->n ? "," : "",
                              p->default_micro / 1000000, p->default_micro % 1000000);
    if (rc)
        return fair_error_set(err, FAIR_ENOMEM, "price table: too large");
    return 0;
}

int fair_prices_from_param(struct fair_prices *p, const char *s, struct fair_error *err)
{
    size_t cap = p->n;
    const char *q = s;
    if (!*s)
        return fair_error_set(err, FAIR_EINVAL, "prices: empty");
    while (*q) {
        size_t len = strcspn(q, ",");
        const char *colon = memchr(q, ':', len);
        char price[32];
        if (!colon || colon == q || (size_t)(q + len - colon - 1) >= sizeof price)
            return fair_error_set(err, FAIR_EINVAL, "prices: expected MODEL:PRICE,... at \"%.*s\"",
                                  (int)(len > 40 ? 40 : len), q);
        memcpy(price, colon + 1, (size_t)(q + len - colon - 1));
        price[q + len - colon - 1] = '\0';
        int64_t micro;
        if (fair_price_parse(price, &micro, err))
            return FAIR_EINVAL;
        if (colon - q == 1 && *q == '*') {
            p->default_micro = micro;
        } else {
            if (p->n >= 1000)
                return fair_error_set(err, FAIR_ERANGE, "prices: more than 1000 models");
            if (fair_grow((void **)&p->e, &cap, p->n + 1, sizeof(*p->e)) ||
                !(p->e[p->n].model = fair_strndup(q, (size_t)(colon - q))))
                return fair_error_set(err, FAIR_ENOMEM, "prices: out of memory");
            p->e[p->n++].micro = micro;
        }
        q += len;
        if (*q == ',') {
            q++;
            if (!*q)
                return fair_error_set(err, FAIR_EINVAL, "prices: trailing comma");
        }
    }
    return 0;
}

/* ---- query strings and HTTP ---- */

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

static int decode(const char *s, size_t n, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        if (ch == '%') {
            int h, lo;
            if (i + 2 >= n || (h = hexval(s[i + 1])) < 0 || (lo = hexval(s[i + 2])) < 0)
                return -1;
            ch = (char)(h * 16 + lo);
            if (!ch)
                return -1;
            i += 2;
        }
        if (o + 1 >= cap)
            return -1;
        out[o++] = ch;
    }
    out[o] = '\0';
    return 0;
}

int fair_query_parse(const char *qs, struct fair_query *q, struct fair_error *err)
{
    memset(q, 0, sizeof(*q));
    if (!qs)
        return 0;
    if (strnlen(qs, 4097) > 4096)
        return fair_error_set(err, FAIR_ERANGE, "query string longer than 4096 bytes");
    const char *p = qs;
    while (*p) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        if (len) {
            const char *eq = memchr(p, '=', len);
            if (!eq)
                return fair_error_set(err, FAIR_EINVAL, "query parameter \"%.*s\" has no value",
                                      (int)(len > 32 ? 32 : len), p);
            if (q->n == FAIR_QUERY_MAX_PAIRS)
                return fair_error_set(err, FAIR_ERANGE, "more than %d query parameters",
                                      FAIR_QUERY_MAX_PAIRS);
            if (decode(p, (size_t)(eq - p), q->key[q->n], sizeof(q->key[0])) ||
                decode(eq + 1, len - (size_t)(eq - p) - 1, q->val[q->n], sizeof(q->val[0])))
                return fair_error_set(err, FAIR_EINVAL,
                                      "query parameter \"%.*s\" is badly encoded or too long",
                                      (int)(len > 32 ? 32 : len), p);
            for (size_t i = 0; i < q->n; i++)
                if (strcmp(q->key[i], q->key[q->n]) == 0)
                    return fair_error_set(err, FAIR_EINVAL, "query parameter \"%s\" repeated",
                                          q->key[i]);
            q->n++;
        }
        p += len;
        if (*p == '&')
            p++;
    }
    return 0;
}

const char *fair_query_get(const struct fair_query *q, const char *key)
{
    for (size_t i = 0; i < q->n; i++)
        if (strcmp(q->key[i], key) == 0)
            return q->val[i];
    return NULL;
}

static int http_error(struct fair_buf *body, const char **ct, int *status, int code,
                      const char *msg)
{
    fair_buf_reset(body);
    *status = code;
    *ct = "application/json";
    int rc = fair_buf_appends(body, "{\"error\":");
    rc = rc || fair_json_str(body, msg);
    rc = rc || fair_buf_appends(body, "}\n");
    return rc ? FAIR_ENOMEM : 0;
}

int fair_report_http(struct fair_ledger *l, const char *query, struct fair_buf *body,
                     const char **content_type, int *status)
{
    struct fair_query q;
    struct fair_error err = {0};
    struct fair_report *r = NULL;
    struct fair_prices prices;
    int rc = 0, tz = 0, by = FAIR_REPORT_BY_TEAM, fmt = FAIR_REPORT_JSON, have_price = 0;
    fair_prices_init(&prices);
    static const char *const known[] = {"from",  "to",     "by",   "format", "tz",
                                        "price", "prices", "unit", "percent"};
    struct fair_report_style st = {0};
    if (fair_query_parse(query, &q, &err))
        goto bad;
    for (size_t i = 0; i < q.n; i++) {
        size_t k;
        for (k = 0; k < sizeof(known) / sizeof(known[0]); k++)
            if (strcmp(q.key[i], known[k]) == 0)
                break;
        if (k == sizeof(known) / sizeof(known[0])) {
            fair_error_set(&err, FAIR_EINVAL, "unknown query parameter \"%s\"", q.key[i]);
            goto bad;
        }
    }
    const char *v;
    if ((v = fair_query_get(&q, "tz")) && fair_report_tz_parse(v, &tz, &err))
        goto bad;
    if ((v = fair_query_get(&q, "by")) && (by = fair_report_by_parse(v)) < 0) {
        fair_error_set(&err, FAIR_EINVAL,
                       "bad by \"%s\": use team, project, queue, namespace or user, the first four "
                       "optionally followed by \",model\"",
                       v);
        goto bad;
    }
    if ((v = fair_query_get(&q, "format")) && (fmt = fair_report_format_parse(v)) < 0) {
        fair_error_set(&err, FAIR_EINVAL, "bad format \"%s\": use json, csv or table", v);
        goto bad;
    }
    if ((v = fair_query_get(&q, "price"))) {
        if (fair_price_parse(v, &prices.default_micro, &err))
            goto bad;
        have_price = 1;
    }
    if ((v = fair_query_get(&q, "prices"))) {
        /* A price table (fairsharectl report --server --price-table); a
         * price=X given too is the default for models it does not name. */
        if (fair_prices_from_param(&prices, v, &err)) {
            if (err.code == FAIR_ENOMEM) {
                rc = FAIR_ENOMEM;
                goto out;
            }
            goto bad;
        }
        have_price = 1;
    }
    if ((v = fair_query_get(&q, "unit"))) {
        int unit = fair_report_unit_parse(v);
        if (unit < 0) {
            fair_error_set(&err, FAIR_EINVAL, "bad unit \"%s\": use hours or days", v);
            goto bad;
        }
        st.unit = (enum fair_report_unit)unit;
    }
    if ((v = fair_query_get(&q, "percent"))) {
        if (strcmp(v, "true") != 0 && strcmp(v, "false") != 0) {
            fair_error_set(&err, FAIR_EINVAL, "bad percent \"%s\": use true or false", v);
            goto bad;
        }
        st.percent = strcmp(v, "true") == 0;
    }
    struct fair_report_params p = {0};
    p.by = by & ~FAIR_REPORT_BY_MODEL;
    p.by_model = (by & FAIR_REPORT_BY_MODEL) != 0;
    p.tz_min = tz;
    if (!fair_query_get(&q, "from") || !fair_query_get(&q, "to")) {
        fair_error_set(&err, FAIR_EINVAL, "from and to are required (YYYY-MM-DD)");
        goto bad;
    }
    if (fair_report_date_parse(fair_query_get(&q, "from"), tz, &p.from_ms, &err) ||
        fair_report_date_parse(fair_query_get(&q, "to"), tz, &p.to_ms, &err))
        goto bad;
    if (p.to_ms <= p.from_ms) {
        fair_error_set(&err, FAIR_EINVAL, "to must be after from");
        goto bad;
    }
    rc = fair_report_run(l, &p, &r, &err);
    if (rc) {
        if (rc == FAIR_ENOMEM)
            goto out;
        /* Bad parameters the checks above let through are still the
         * client's fault (400); a locked database is temporary (503). */
        int code = rc == FAIR_EINVAL || rc == FAIR_ERANGE ? 400 : rc == FAIR_EBUSY ? 503 : 500;
        rc = http_error(body, content_type, status, code, err.msg);
        goto out;
    }
    fair_buf_reset(body);
    st.format = fmt;
    st.prices = have_price ? &prices : NULL;
    rc = fair_report_render_style(r, &st, body, &err);
    if (rc) {
        rc = http_error(body, content_type, status, 500, err.msg);
        goto out;
    }
    *status = 200;
    *content_type = fmt == FAIR_REPORT_CSV     ? "text/csv; charset=utf-8"
                    : fmt == FAIR_REPORT_TABLE ? "text/plain; charset=utf-8"
                                               : "application/json";
    goto out;
bad:
    rc = http_error(body, content_type, status, 400, err.msg);
out:
    fair_report_free(r);
    fair_prices_release(&prices);
    return rc;
}
