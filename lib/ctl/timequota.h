/* Time-based quota, the controller's side (docs/controller.md, "Time
 * windows, budgets and decayed usage"): which spec.schedule window is in
 * force at an instant and when the next one starts, the effective spec it
 * gives, budget periods in a time zone, and the decay of past usage. Pure
 * functions of their arguments (zones are loaded by the caller), so any
 * clock can drive them; the engine then sees an ordinary spec.
 *
 * Window rule: window w is active at instant t when the local wall time of
 * t in w's zone, on a day listed in w.days, is in [start, end); a window
 * whose end is not after its start runs past midnight into the next day
 * (and counts as the day it starts on). Wall time means that a window
 * starting in a spring-forward gap starts at the end of the gap, and a
 * window inside a fall-back hour is active in both of its runs. The first
 * active window of the list wins; with none, the spec itself applies. */
#ifndef FAIR_CTL_TIMEQUOTA_H
#define FAIR_CTL_TIMEQUOTA_H

#include <stddef.h>
#include <stdint.h>

#include "base/tz.h"
#include "kube/objects.h"

/* The index of the first window active at now_ms, or -1. zones[i] is
 * window i's zone (NULL: that window is never active). */
int fair_ctl_window_active(const struct fair_kwindow *w, size_t n,
                           const struct fair_tz *const *zones, int64_t now_ms);

/* The first instant after now_ms at which the active window (index or
 * none) changes, searched up to now_ms + horizon_ms; 0 when none. Exact to
 * the millisecond: fair_ctl_window_active() differs at the result and at
 * the millisecond before it. */
int64_t fair_ctl_window_next(const struct fair_kwindow *w, size_t n,
                             const struct fair_tz *const *zones, int64_t now_ms,
                             int64_t horizon_ms);

/* The spec in force under window w (NULL: spec itself): the window's
 * guaranteed and limit keys replace the spec's one by one, its weight
 * replaces the spec's when set. */
void fair_ctl_window_apply(const struct fair_kquota *spec, const struct fair_kwindow *w,
                           struct fair_kquota *out);

/* The UTC instant of local time local_ms (ms since the epoch, read as wall
 * time) in zone z: the earlier one when it occurs twice, the end of the
 * gap when it does not occur. */
int64_t fair_ctl_local_to_utc(const struct fair_tz *z, int64_t local_ms);

/* The budget period holding now_ms in zone z: a day from local midnight, a
 * week from Monday's midnight, a calendar month from the 1st's midnight.
 * [*start, *end). */
void fair_ctl_budget_period(enum fair_kbudget_period p, const struct fair_tz *z, int64_t now_ms,
                            int64_t *start, int64_t *end);

/* Budget alert level of used against budget (milli-GPU x ms both): 100
 * when used >= budget, 80 when used >= 80% of it, else 0. A budget of 0
 * is spent at once. */
int fair_ctl_budget_level(int64_t used_mms, int64_t budget_mms);

/* Decay: the weight 2^(-age/half_life) of usage age_ms old, and the
 * decayed amount of gpu_milli held over [a_ms, b_ms) seen at now_ms (the
 * exact integral of gpu_milli x 2^(-(now - t)/H) dt, milli-GPU x ms). */
double fair_ctl_decay_factor(int64_t age_ms, int64_t half_life_ms);
double fair_ctl_decay_interval(int64_t gpu_milli, int64_t a_ms, int64_t b_ms, int64_t now_ms,
                               int64_t half_life_ms);

#endif
