/* Fair-share arithmetic for one level of the tree (the cluster's projects,
 * or one project's queues) and one resource: exact integers, deterministic
 * remainders. See docs/engine.md for the rules and a worked example. */
#ifndef FAIR_ENGINE_SHARE_H
#define FAIR_ENGINE_SHARE_H

#include <stddef.h>
#include <stdint.h>

struct fair_share_child {
    const char *name;   /* tie-break for remainders; NULL sorts as "" */
    int64_t guaranteed; /* >= 0 */
    int64_t demand;     /* >= 0 */
    int64_t limit;      /* >= 0, FAIR_UNLIMITED when absent */
    int64_t weight;     /* > 0 */
    int32_t priority;   /* higher tiers get the surplus first */
    int64_t share;      /* out */
};

/* Scales val[0..n) down so that it sums to exactly cap (when the sum is
 * above cap; otherwise copies): out[i] = floor(cap * val[i] / sum), then
 * the units left over go one each to the largest fractional remainders,
 * ties by name, then by position. scratch: FAIR_SHARE_SCRATCH(n) bytes. */
void fair_share_scale(const int64_t *val, const char *const *names, size_t n, int64_t cap,
                      int64_t *out, void *scratch);

/* Bytes of scratch space the functions below need for n children. */
#define FAIR_SHARE_SCRATCH(n) ((n)*32 + 32)

/* Shares capacity among children: each first gets min(guaranteed, demand,
 * limit) (scaled down with fair_share_scale when these exceed capacity);
 * the rest goes tier by tier (highest priority first), water-filled in
 * proportion to weight, capped at min(demand, limit), the remainders of
 * the last round handed out as in fair_share_scale. */
void fair_share_distribute(int64_t capacity, struct fair_share_child *c, size_t n, void *scratch);

/* Decayed usage (docs/engine.md, "Decayed usage"): the over-quota weight
 * of each of n siblings times Slurm's classic fair-share factor
 * F = 2^(-U/S), U = usage[i] / sum(usage), S = weight[i] / sum(weight),
 * in units of FAIR_USAGE_WEIGHT_ONE (out[i] >= 1). With no usage at all
 * (every usage[i] <= 0) out[i] = weight[i] unchanged and 0 is returned;
 * otherwise 1. */
#define FAIR_USAGE_WEIGHT_ONE (1LL << 20)
int fair_share_usage_weights(const int64_t *weight, const int64_t *usage, size_t n, int64_t *out);

/* Saturating helpers for sums of quantities. */
static inline int64_t fair_sat_add(int64_t a, int64_t b)
{
    if (b > 0 && a > INT64_MAX - b)
        return INT64_MAX;
    if (b < 0 && a < INT64_MIN - b)
        return INT64_MIN;
    return a + b;
}

#endif
