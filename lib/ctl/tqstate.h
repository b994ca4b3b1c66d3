/* The controller's time-based quota state (docs/controller.md, "Time
 * windows, budgets and decayed usage"): per cycle, the spec in force for
 * every Project and Queue (schedule windows, spent budgets), each
 * project's decayed usage, and the pods a spent budget holds back, all
 * handed to the snapshot (ctl/snapshot.h) so that the engine stays pure;
 * the status fields, the budget alerts (Events) and the metrics.
 *
 * Design note: refresh. The ledger figures (decayed usage, GPU time of the
 * budget period) are read from the ledger file, its source of truth, at
 * most every refresh_ms, and at once when a project with a budget or a
 * half-life appears or a budget period ends. In between, the last figures
 * hold: a budget may overrun by what the project uses in one refresh
 * period (1 minute by default) plus the ledger's flush delay.
 *
 * Budget alert states per project: NONE -> WARNED (>= 80%) -> SPENT
 * (100%), each step announced once (an Event and the metric
 * fairshare_project_budget_alerts_total); a new period goes back to NONE.
 * The announced state lives in memory: a restarted controller announces a
 * level already reached once more.
 *
 * Ownership: the arrays put into the snapshot input belong to the state
 * and stay valid until the next fair_ctl_tq_prepare(); the input objects
 * are borrowed for the call and for those arrays' life (they point into
 * no object, but the names in messages are copied). */
#ifndef FAIR_CTL_TQSTATE_H
#define FAIR_CTL_TQSTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "base/error.h"
#include "ctl/snapshot.h"
#include "ctl/status.h"
#include "ledger/ledger.h"

struct fair_ctl_tq;

struct fair_ctl_tq_options {
    const char *time_zone;        /* IANA; budget periods, and windows naming none */
    int64_t default_half_life_ms; /* for Projects without spec.usageHalfLife; 0: off */
    int64_t refresh_ms;           /* how often the ledger is read again */
};

/* FAIR_EINVAL when the time zone does not load (err names it). */
int fair_ctl_tq_new(const struct fair_ctl_tq_options *o, struct fair_ctl_tq **out,
                    struct fair_error *err);
void fair_ctl_tq_free(struct fair_ctl_tq *t);

/* Computes this cycle's figures for in->projects and in->queues at now_ms
 * (wall clock; mono_ms for the refresh) and sets in's time-based quota
 * arrays. ledger may be NULL: no decayed usage, budgets are shown as
 * Unknown and not enforced. A ledger read that fails keeps the last
 * figures (logged). Returns 0 or FAIR_ENOMEM. */
int fair_ctl_tq_prepare(struct fair_ctl_tq *t, struct fair_ledger *ledger, int64_t now_ms,
                        int64_t mono_ms, struct fair_ctl_snapshot_input *in);

/* The status fields of input project (or queue) i of the last prepare;
 * NULL when it has none of them. Borrowed until the next prepare. */
const struct fair_ctl_status_time *fair_ctl_tq_project_status(const struct fair_ctl_tq *t,
                                                              size_t i);
const struct fair_ctl_status_time *fair_ctl_tq_queue_status(const struct fair_ctl_tq *t, size_t i);

/* Calls cb for each budget alert due since the last call (level 80 or
 * 100), with the project (input index of the last prepare) and a message. */
void fair_ctl_tq_alerts(struct fair_ctl_tq *t,
                        void (*cb)(void *ctx, size_t project, int level, const char *message),
                        void *ctx);

/* Appends the Prometheus text: fairshare_project_budget_gpu_hours,
 * fairshare_project_budget_used_gpu_hours, fairshare_project_budget_used_ratio,
 * fairshare_project_budget_alert_level (0, 80, 100),
 * fairshare_project_budget_alerts_total{level},
 * fairshare_project_usage_decayed_gpu_hours, fairshare_ledger_usage_reads_total,
 * fairshare_ledger_usage_read_errors_total. */
int fair_ctl_tq_metrics(const struct fair_ctl_tq *t, struct fair_buf *out);

#endif
