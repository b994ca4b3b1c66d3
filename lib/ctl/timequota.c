/* Windows, budget periods and decay for time-based quota; see
 * ctl/timequota.h for the rules. */
#include "ctl/timequota.h"

#include <math.h>
#include <stdbool.h>

#define DAY_MS 86400000LL

static int64_t fdiv(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static bool win_on(const struct fair_kwindow *w, const struct fair_tz *z, int64_t t)
{
    int64_t local = t + (int64_t)fair_tz_offset(z, t, NULL) * 1000;
    int64_t day = fdiv(local, DAY_MS), ms = local - day * DAY_MS;
    int wd = fair_weekday(day);
    int64_t s = (int64_t)w->start_min * 60000, e = (int64_t)w->end_min * 60000;
    if (s < e)
        return ((w->days >> wd) & 1) && ms >= s && ms < e;
    /* Past midnight: the evening of a listed day, or the morning after. */
    if (((w->days >> wd) & 1) && ms >= s)
        return true;
    return ((w->days >> ((wd + 6) % 7)) & 1) && ms < e;
}

int fair_ctl_window_active(const struct fair_kwindow *w, size_t n,
                           const struct fair_tz *const *zones, int64_t now_ms)
{
    for (size_t i = 0; i < n; i++)
        if (zones[i] && win_on(&w[i], zones[i], now_ms))
            return (int)i;
    return -1;
}

/* The first instant after t at which window w's state may change: a local
 * midnight, start or end, or a change of the zone's offset. */
static int64_t win_candidate(const struct fair_kwindow *w, const struct fair_tz *z, int64_t t)
{
    int64_t next_off;
    int64_t off = (int64_t)fair_tz_offset(z, t, &next_off) * 1000;
    int64_t local = t + off;
    int64_t day = fdiv(local, DAY_MS);
    int64_t b[3] = {0, (int64_t)w->start_min * 60000, ((int64_t)w->end_min * 60000) % DAY_MS};
    int64_t best = INT64_MAX;
    for (int i = 0; i < 3; i++) {
        int64_t c = day * DAY_MS + b[i];
        if (c <= local)
            c += DAY_MS;
        if (c < best)
            best = c;
    }
    int64_t u = best - off;
    return u < next_off ? u : next_off;
}

int64_t fair_ctl_window_next(const struct fair_kwindow *w, size_t n,
                             const struct fair_tz *const *zones, int64_t now_ms, int64_t horizon_ms)
{
    int cur = fair_ctl_window_active(w, n, zones, now_ms);
    int64_t t = now_ms;
    for (int it = 0; it < 20000; it++) {
        int64_t c = INT64_MAX;
        for (size_t i = 0; i < n; i++) {
            if (!zones[i])
                continue;
            int64_t x = win_candidate(&w[i], zones[i], t);
            if (x < c)
                c = x;
        }
        if (c == INT64_MAX || c - now_ms > horizon_ms)
            return 0;
        if (fair_ctl_window_active(w, n, zones, c) != cur)
            return c;
        t = c;
    }
    return 0;
}

void fair_ctl_window_apply(const struct fair_kquota *spec, const struct fair_kwindow *w,
                           struct fair_kquota *out)
{
    *out = *spec;
    if (!w)
        return;
    for (int r = 0; r < FAIR_RES_COUNT; r++) {
        if ((w->g_set >> r) & 1)
            out->guaranteed.v[r] = w->guaranteed.v[r];
        if ((w->l_set >> r) & 1)
            out->limit.v[r] = w->limit.v[r];
    }
    if (w->weight > 0)
        out->over_quota_weight = w->weight;
}

int64_t fair_ctl_local_to_utc(const struct fair_tz *z, int64_t local_ms)
{
    /* The offset a day earlier is the one "before" any change near L. */
    int64_t o1 = (int64_t)fair_tz_offset(z, local_ms - DAY_MS, NULL) * 1000;
    int64_t u1 = local_ms - o1;
    int64_t p1 = (int64_t)fair_tz_offset(z, u1, NULL) * 1000;
    if (p1 == o1)
        return u1; /* also the earlier of a repeated time */
    int64_t u2 = local_ms - p1;
    int64_t p2 = (int64_t)fair_tz_offset(z, u2, NULL) * 1000;
    if (p2 == p1)
        return u2; /* L is after the change: the new offset */
    /* A gap: L never happens; the end of the gap is the change itself. */
    int64_t next;
    fair_tz_offset(z, u2 < u1 ? u2 : u1, &next);
    return next;
}

void fair_ctl_budget_period(enum fair_kbudget_period p, const struct fair_tz *z, int64_t now_ms,
                            int64_t *start, int64_t *end)
{
    int64_t local = now_ms + (int64_t)fair_tz_offset(z, now_ms, NULL) * 1000;
    int64_t day = fdiv(local, DAY_MS), d0 = day, d1 = day + 1;
    if (p == FAIR_KBUDGET_WEEK) {
        d0 = day - (fair_weekday(day) + 6) % 7; /* Monday */
        d1 = d0 + 7;
    } else if (p == FAIR_KBUDGET_MONTH) {
        int64_t y;
        int m, d;
        fair_civil_from_days(day, &y, &m, &d);
        d0 = fair_days_from_civil(y, m, 1);
        d1 = m == 12 ? fair_days_from_civil(y + 1, 1, 1) : fair_days_from_civil(y, m + 1, 1);
    }
    *start = fair_ctl_local_to_utc(z, d0 * DAY_MS);
    *end = fair_ctl_local_to_utc(z, d1 * DAY_MS);
}

int fair_ctl_budget_level(int64_t used_mms, int64_t budget_mms)
{
    if (used_mms >= budget_mms)
        return 100;
    /* used >= 0.8 budget, without overflow */
    if (used_mms / 4 >= budget_mms / 5 && (__int128)used_mms * 5 >= (__int128)budget_mms * 4)
        return 80;
    return 0;
}

double fair_ctl_decay_factor(int64_t age_ms, int64_t half_life_ms)
{
    if (half_life_ms <= 0)
        return 1;
    if (age_ms < 0)
        age_ms = 0;
    return exp2(-(double)age_ms / (double)half_life_ms);
}

double fair_ctl_decay_interval(int64_t gpu_milli, int64_t a_ms, int64_t b_ms, int64_t now_ms,
                               int64_t half_life_ms)
{
    if (b_ms > now_ms)
        b_ms = now_ms;
    if (b_ms <= a_ms || gpu_milli <= 0)
        return 0;
    if (half_life_ms <= 0)
        return (double)gpu_milli * (double)(b_ms - a_ms);
    double h = (double)half_life_ms;
    return (double)gpu_milli * h / M_LN2 *
           (exp2(-(double)(now_ms - b_ms) / h) - exp2(-(double)(now_ms - a_ms) / h));
}
