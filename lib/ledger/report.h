/* GPU-hour reports over the ledger: per team, project, queue or namespace,
 * for a period [from, to), exact in milli-GPU x ms and formatted at the end
 * as table, CSV or JSON. Also the HTTP form of the same report
 * (GET /api/v1/reports/gpu-hours) as a pure function.
 *
 * Exactness rule (docs/ledger.md): an interval contributes
 * gpu_milli x |[start, end) ∩ [from, to)|; in-quota is inquota_milli x the
 * same overlap, borrowed the rest; preempted counts intervals that ended
 * PREEMPTED; lent comes from the queue samples (each sample stands for
 * [t - dur, t)). Open intervals count up to the ledger's heartbeat. Full
 * UTC days come from the daily rollups, the partial days at the edges from
 * raw rows, so reports stay exact after pruning for periods whose edges are
 * at UTC midnight (or after the prune cut); otherwise the report says
 * exact=false. */
#ifndef FAIR_LEDGER_REPORT_H
#define FAIR_LEDGER_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "ledger/ledger.h"

enum fair_report_by {
    FAIR_REPORT_BY_TEAM,
    FAIR_REPORT_BY_PROJECT,
    FAIR_REPORT_BY_QUEUE,
    FAIR_REPORT_BY_NAMESPACE,
    /* The pod's creator, as recorded at bind time (ledger.creatorLabel);
     * read from the intervals, not the daily rollups. */
    FAIR_REPORT_BY_USER,
};
enum fair_report_format { FAIR_REPORT_TABLE, FAIR_REPORT_CSV, FAIR_REPORT_JSON };

/* "team" ... ; -1 when unknown. "team,model" (any of the four, then
 * ",model"): the grouping with FAIR_REPORT_BY_MODEL added (issue 15: one
 * row per group and GPU model; mask it off for the grouping). */
#define FAIR_REPORT_BY_MODEL 0x10
int fair_report_by_parse(const char *s);
const char *fair_report_by_name(enum fair_report_by by);
int fair_report_format_parse(const char *s);

/* "UTC", "Z", "+HH:MM" or "-HH:MM" (|offset| <= 14:00) to minutes east. */
int fair_report_tz_parse(const char *s, int *minutes, struct fair_error *err);
/* "YYYY-MM-DD" (midnight in the zone tz_min) or a full RFC 3339 time. */
int fair_report_date_parse(const char *s, int tz_min, int64_t *out_ms, struct fair_error *err);

/* ---- relative dates and time zones (fairsharectl report's defaults) ----
 *
 * A zone is a fixed offset, or a rule that the caller supplies as the
 * offset in force at a UTC instant (fairsharectl reads IANA zones such as
 * Europe/Berlin through the C library; tests give a table), so that this
 * code stays free of global state. Days and months are calendar days and
 * months in the zone: across a DST change a day lasts 23 or 25 hours. */
struct fair_report_zone {
    int fixed_min; /* minutes east of UTC, when offset_at is NULL */
    /* The offset at utc_ms in *min_east (|offset| <= 18 h); 0 or <0. */
    int (*offset_at)(void *ctx, int64_t utc_ms, int *min_east);
    void *ctx;
};

/* The offset of z at utc_ms, in minutes east. */
int fair_report_zone_offset(const struct fair_report_zone *z, int64_t utc_ms, int *min_east,
                            struct fair_error *err);
/* The first instant of the calendar day y-m-d in z (local midnight; where
 * midnight falls in a DST gap, the end of the gap). m may be 0 or 13
 * (December of y-1, January of y+1). Years 1 to 9999. */
int fair_report_day_start(const struct fair_report_zone *z, int y, int m, int d, int64_t *out_ms,
                          struct fair_error *err);

/* A report date for `--from` and `--to`, resolved at now_ms in zone z:
 *   today, yesterday       midnight starting that day
 *   -Nd                    midnight N days before today (1 <= N <= 36600)
 *   this-month, last-month midnight on the first of that month
 *   YYYY-MM-DD             midnight starting that day
 *   an RFC 3339 time       that instant
 * *start is the instant. *span_end is the end of what a relative name
 * names, and the default `--to` when it is given as `--from` (today:
 * tomorrow; yesterday and -Nd: today; this-month: the next month's first;
 * last-month: this month's first), or INT64_MIN for the other forms. */
int fair_report_date_resolve(const char *s, const struct fair_report_zone *z, int64_t now_ms,
                             int64_t *start, int64_t *span_end, struct fair_error *err);

/* The longest period a report covers: 100 years. */
#define FAIR_REPORT_MAX_PERIOD_MS (100LL * 366 * 86400000LL)

struct fair_report_params {
    int64_t from_ms; /* inclusive */
    int64_t to_ms;   /* exclusive; > from_ms, at most 100 years later */
    enum fair_report_by by;
    int by_model; /* issue 15: one row per group and GPU model (--by team,model) */
    int tz_min;   /* only for printing the period */
    /* Printing: the offset of to_ms when it differs (a DST change in
     * the period), flagged by tz_to_set; else tz_min. */
    int tz_to_min;
    int tz_to_set;
};

struct fair_report_model {
    char *model; /* owned */
    int64_t gpu_mms;
};

struct fair_report_row {
    char *key; /* owned; the team, project, queue or namespace */
    int64_t gpu_mms;
    int64_t inquota_mms;
    int64_t borrowed_mms;
    int64_t preempted_mms;
    int64_t lent_mms;
    int64_t pods;
    size_t nmodels;
    struct fair_report_model *models; /* gpu_mms per GPU model, for cost */
};

struct fair_report {
    struct fair_report_params params;
    size_t n;
    struct fair_report_row *rows; /* sorted by key */
    struct fair_report_row total; /* key "TOTAL" */
    int lent_known;               /* 0 for by=namespace and user: samples are per queue */
    int exact;                    /* 0: an edge falls in pruned raw data */
};

/* Runs the report. *out is new; free with fair_report_free(). */
int fair_report_run(struct fair_ledger *l, const struct fair_report_params *p,
                    struct fair_report **out, struct fair_error *err);
void fair_report_free(struct fair_report *r);

/* Prices in micro-currency units per GPU-hour: a default (or -1: none) and
 * per GPU model entries. */
struct fair_price_entry {
    char *model;
    int64_t micro;
};
struct fair_prices {
    int64_t default_micro;
    size_t n;
    struct fair_price_entry *e;
};
void fair_prices_init(struct fair_prices *p);
void fair_prices_release(struct fair_prices *p);
/* "2.5" -> 2500000; non-negative, at most 6 decimals, < 10^9. */
int fair_price_parse(const char *s, int64_t *micro, struct fair_error *err);
/* CSV "model,price" lines (header "model,price" optional, '#' comments);
 * at most 10000 lines of 512 bytes. */
int fair_prices_load(struct fair_prices *p, const char *path, struct fair_error *err);

enum fair_report_unit { FAIR_REPORT_HOURS, FAIR_REPORT_DAYS };
/* "hours" or "days"; -1 when unknown. */
int fair_report_unit_parse(const char *s);

struct fair_report_style {
    enum fair_report_format format;
    const struct fair_prices *prices; /* borrowed; NULL: no cost column */
    enum fair_report_unit unit;       /* GPU-hours (default) or GPU-days */
    int percent;                      /* a SHARE column: each row's GPU time, % of the total */
};

/* Renders r; prices may be NULL (no cost column). A GPU model without a
 * price and no default fails with FAIR_EINVAL naming the model. */
int fair_report_render(const struct fair_report *r, enum fair_report_format f,
                       const struct fair_prices *prices, struct fair_buf *out,
                       struct fair_error *err);
/* The same with a unit and the share column. With the defaults (hours, no
 * percent) the output is fair_report_render()'s, byte for byte. */
int fair_report_render_style(const struct fair_report *r, const struct fair_report_style *st,
                             struct fair_buf *out, struct fair_error *err);
/* The prices as the HTTP parameter "prices": "MODEL:PRICE,...,*:PRICE"
 * (the default as "*"). FAIR_EINVAL when a model name holds ',' or ':'. */
int fair_prices_to_param(const struct fair_prices *p, struct fair_buf *out, struct fair_error *err);
int fair_prices_from_param(struct fair_prices *p, const char *s, struct fair_error *err);

/* GET /api/v1/reports/gpu-hours?from=YYYY-MM-DD&to=...&by=team
 *   [&format=json|csv|table][&tz=UTC|+HH:MM][&price=X]
 *   [&prices=MODEL:X,...][&unit=hours|days][&percent=true|false]
 * Validates the query (unknown or repeated keys, bad values: status 400 and
 * {"error": "..."}), runs and renders. *content_type is static. Returns 0
 * when a response was produced (check *status), <0 only on ENOMEM. */
int fair_report_http(struct fair_ledger *l, const char *query, struct fair_buf *body,
                     const char **content_type, int *status);

/* Query-string helpers shared with the dashboard: splits "a=1&b=2" and
 * percent-decodes ('+' stays '+'). Up to max pairs of 256-byte values. */
#define FAIR_QUERY_MAX_PAIRS 16
#define FAIR_QUERY_VALUE_MAX 1024
struct fair_query {
    size_t n;
    char key[FAIR_QUERY_MAX_PAIRS][32];
    char val[FAIR_QUERY_MAX_PAIRS][FAIR_QUERY_VALUE_MAX];
};
int fair_query_parse(const char *qs, struct fair_query *q, struct fair_error *err);
/* The value of key, or NULL. */
const char *fair_query_get(const struct fair_query *q, const char *key);
/* JSON string escaping into b (with the quotes). */
int fair_json_str(struct fair_buf *b, const char *s);
/* mms as GPU-hours with 3 decimals, rounded half up ("12.500"). */
void fair_gpu_hours_format(int64_t mms, char *out, size_t n);

#endif
