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
};
enum fair_report_format { FAIR_REPORT_TABLE, FAIR_REPORT_CSV, FAIR_REPORT_JSON };

/* "team" ... ; -1 when unknown. */
int fair_report_by_parse(const char *s);
const char *fair_report_by_name(enum fair_report_by by);
int fair_report_format_parse(const char *s);

/* "UTC", "Z", "+HH:MM" or "-HH:MM" (|offset| <= 14:00) to minutes east. */
int fair_report_tz_parse(const char *s, int *minutes, struct fair_error *err);
/* "YYYY-MM-DD" (midnight in the zone tz_min) or a full RFC 3339 time. */
int fair_report_date_parse(const char *s, int tz_min, int64_t *out_ms, struct fair_error *err);

/* The longest period a report covers: 100 years. */
#define FAIR_REPORT_MAX_PERIOD_MS (100LL * 366 * 86400000LL)

struct fair_report_params {
    int64_t from_ms; /* inclusive */
    int64_t to_ms;   /* exclusive; > from_ms, at most 100 years later */
    enum fair_report_by by;
    int tz_min; /* only for printing the period */
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
    int lent_known;               /* 0 for by=namespace: samples are per queue */
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

/* Renders r; prices may be NULL (no cost column). A GPU model without a
 * price and no default fails with FAIR_EINVAL naming the model. */
int fair_report_render(const struct fair_report *r, enum fair_report_format f,
                       const struct fair_prices *prices, struct fair_buf *out,
                       struct fair_error *err);

/* GET /api/v1/reports/gpu-hours?from=YYYY-MM-DD&to=...&by=team
 *   [&format=json|csv|table][&tz=UTC|+HH:MM][&price=X]
 * Validates the query (unknown or repeated keys, bad values: status 400 and
 * {"error": "..."}), runs and renders. *content_type is static. Returns 0
 * when a response was produced (check *status), <0 only on ENOMEM. */
int fair_report_http(struct fair_ledger *l, const char *query, struct fair_buf *body,
                     const char **content_type, int *status);

/* Query-string helpers shared with the dashboard: splits "a=1&b=2" and
 * percent-decodes ('+' stays '+'). Up to max pairs of 256-byte values. */
#define FAIR_QUERY_MAX_PAIRS 16
#define FAIR_QUERY_VALUE_MAX 256
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
