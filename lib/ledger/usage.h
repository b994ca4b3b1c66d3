/* Per-project (and per-queue) GPU usage for the controller's time-based quota
 * (docs/ledger.md, "Usage for decay and budgets"): usage decayed with a
 * half-life, and the GPU time of a budget period, both read from the
 * ledger file, so that they survive restarts. Cheap: the daily rollups
 * for past days, raw intervals only for today and for open intervals.
 *
 * Threads: runs on the connection it is given (the writer's, from the
 * controller's loop, between flushes). */
#ifndef FAIR_LEDGER_USAGE_H
#define FAIR_LEDGER_USAGE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "ledger/ledger.h"

struct fair_ledger_usage {
    const char *project;  /* in, borrowed */
    const char *queue;    /* in, borrowed: NULL, the whole project; else that queue's pods only */
    int64_t half_life_ms; /* in: 0 skips the decayed figure */
    int64_t from_ms;      /* in: the budget period [from, to); to <= from skips it */
    int64_t to_ms;
    double decayed_mms; /* out: milli-GPU x ms, weighted 2^(-age/half_life) */
    int64_t period_mms; /* out: milli-GPU x ms within [from, to) */
};

/* Fills the outputs of rows[0..n) at now_ms. Decayed usage: past UTC days
 * from interval_day (each day's GPU time aged from the day's middle), up
 * to 32 half-lives back (at most the 400 days a ledger keeps); today's
 * part of closed intervals and the whole of open intervals (up to now_ms)
 * exactly, from the raw rows. The period: fair_report_run's exact sum
 * (open intervals up to the ledger's heartbeat). */
int fair_ledger_usage_read(struct fair_ledger *l, int64_t now_ms, struct fair_ledger_usage *rows,
                           size_t n, struct fair_error *err);

#endif
