/* Fair-share arithmetic: guarantees first, then weighted water-filling by
 * priority tier, with integer remainders handed out by a fixed rule. All
 * products go through 128-bit integers, so no quantity can overflow. */
#include "engine/share.h"

#include <math.h>
#include <stdbool.h>
#include <string.h>

typedef __int128 i128;

static int cmp_name(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* Hands `units` single units to the candidates idx[0..m): largest rem
 * first, ties by name, then by position (idx order is position order).
 * units < m always holds for the callers. */
static void hand_out(const size_t *idx, const i128 *rem, bool *taken, size_t m,
                     const char *const *names, const char *(*name_of)(const void *, size_t),
                     const void *ctx, int64_t units, int64_t *out, size_t stride)
{
    for (size_t j = 0; j < m; j++)
        taken[j] = false;
    for (int64_t u = 0; u < units; u++) {
        size_t bj = SIZE_MAX;
        for (size_t j = 0; j < m; j++) {
            if (taken[j])
                continue;
            if (bj == SIZE_MAX || rem[j] > rem[bj]) {
                bj = j;
                continue;
            }
            if (rem[j] < rem[bj])
                continue;
            const char *a = names ? names[idx[j]] : name_of(ctx, idx[j]);
            const char *b = names ? names[idx[bj]] : name_of(ctx, idx[bj]);
            if (cmp_name(a, b) < 0)
                bj = j;
        }
        if (bj == SIZE_MAX)
            return;
        taken[bj] = true;
        *(int64_t *)((char *)out + idx[bj] * stride) += 1;
    }
}

struct scratch {
    i128 *rem;
    size_t *idx;
    bool *taken;
};

static struct scratch carve(void *p, size_t n)
{
    struct scratch s;
    char *c = p;
    s.rem = (i128 *)(void *)c;
    s.idx = (size_t *)(void *)(c + n * sizeof(i128));
    s.taken = (bool *)(void *)(c + n * (sizeof(i128) + sizeof(size_t)));
    return s;
}

void fair_share_scale(const int64_t *val, const char *const *names, size_t n, int64_t cap,
                      int64_t *out, void *scratch)
{
    struct scratch s = carve(scratch, n);
    i128 sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += val[i] > 0 ? val[i] : 0;
    if (cap < 0)
        cap = 0;
    if (sum <= cap) {
        for (size_t i = 0; i < n; i++)
            out[i] = val[i] > 0 ? val[i] : 0;
        return;
    }
    int64_t given = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t v = val[i] > 0 ? val[i] : 0;
        out[i] = (int64_t)(((i128)cap * v) / sum);
        s.rem[i] = ((i128)cap * v) % sum;
        s.idx[i] = i;
        given += out[i];
    }
    hand_out(s.idx, s.rem, s.taken, n, names, NULL, NULL, cap - given, out, sizeof(int64_t));
}

static int64_t cap_of(const struct fair_share_child *c)
{
    int64_t d = c->demand > 0 ? c->demand : 0;
    int64_t l = c->limit > 0 ? c->limit : 0;
    return d < l ? d : l;
}

static const char *child_name(const void *ctx, size_t i)
{
    return ((const struct fair_share_child *)ctx)[i].name;
}

void fair_share_distribute(int64_t capacity, struct fair_share_child *c, size_t n, void *scratch)
{
    struct scratch s = carve(scratch, n);
    if (capacity < 0)
        capacity = 0;
    /* Step 1: guarantees, capped by demand and limit; scaled down when
     * they do not all fit. */
    i128 base = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t g = c[i].guaranteed > 0 ? c[i].guaranteed : 0;
        int64_t cp = cap_of(&c[i]);
        c[i].share = g < cp ? g : cp;
        base += c[i].share;
    }
    if (base > capacity) {
        int64_t given = 0;
        for (size_t i = 0; i < n; i++) {
            int64_t v = c[i].share;
            c[i].share = (int64_t)(((i128)capacity * v) / base);
            s.rem[i] = ((i128)capacity * v) % base;
            s.idx[i] = i;
            given += c[i].share;
        }
        hand_out(s.idx, s.rem, s.taken, n, NULL, child_name, c, capacity - given, &c[0].share,
                 sizeof(*c));
        return;
    }
    int64_t left = capacity - (int64_t)base;
    /* Step 2: the surplus, tier by tier, highest overQuotaPriority first. */
    bool have_prev = false;
    int32_t prev = 0;
    while (left > 0) {
        bool found = false;
        int32_t tier = 0;
        for (size_t i = 0; i < n; i++) {
            if (have_prev && c[i].priority >= prev)
                continue;
            if (!found || c[i].priority > tier) {
                tier = c[i].priority;
                found = true;
            }
        }
        if (!found)
            break;
        have_prev = true;
        prev = tier;
        size_t m = 0;
        for (size_t i = 0; i < n; i++)
            if (c[i].priority == tier && c[i].share < cap_of(&c[i]) && c[i].weight > 0)
                s.idx[m++] = i;
        /* Water-filling: children whose weighted part covers what they still
         * want are capped, and the rest is shared again among the others. */
        while (left > 0 && m > 0) {
            i128 w = 0;
            for (size_t j = 0; j < m; j++)
                w += c[s.idx[j]].weight;
            size_t keep = 0;
            bool capped = false;
            int64_t used = 0;
            for (size_t j = 0; j < m; j++) {
                struct fair_share_child *ch = &c[s.idx[j]];
                int64_t want = cap_of(ch) - ch->share;
                if ((i128)left * ch->weight >= (i128)want * w) {
                    ch->share += want;
                    used += want;
                    capped = true;
                } else {
                    s.idx[keep++] = s.idx[j];
                }
            }
            left -= used;
            m = keep;
            if (capped)
                continue;
            int64_t given = 0;
            for (size_t j = 0; j < m; j++) {
                struct fair_share_child *ch = &c[s.idx[j]];
                int64_t q = (int64_t)(((i128)left * ch->weight) / w);
                s.rem[j] = ((i128)left * ch->weight) % w;
                ch->share += q;
                given += q;
            }
            hand_out(s.idx, s.rem, s.taken, m, NULL, child_name, c, left - given, &c[0].share,
                     sizeof(*c));
            left = 0;
        }
    }
}

/* Slurm's classic factor: a child that used its share of the total
 * (U == S) gets half its weight, one that used nothing all of it, one
 * that used twice its share a quarter. Floating point only here, on
 * values that the controller rounds to integers; exp2 is exact enough,
 * and the result is rounded to an integer weight so that the
 * water-filling stays exact. */
int fair_share_usage_weights(const int64_t *weight, const int64_t *usage, size_t n, int64_t *out)
{
    double su = 0, sw = 0;
    for (size_t i = 0; i < n; i++) {
        su += usage[i] > 0 ? (double)usage[i] : 0;
        sw += weight[i] > 0 ? (double)weight[i] : 0;
    }
    if (su <= 0 || sw <= 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = weight[i];
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        double w = weight[i] > 0 ? (double)weight[i] : 1;
        double u = usage[i] > 0 ? (double)usage[i] : 0;
        double x = (u / su) / (w / sw); /* U / S */
        if (x > 60)
            x = 60;
        /* Weights are at most 10^6 (the CRD's bound), 2^20 units each:
         * at most 2^40, so sums and products stay inside 128 bits. */
        if (w > 1e6)
            w = 1e6;
        double f = w * exp2(-x) * (double)FAIR_USAGE_WEIGHT_ONE;
        int64_t v = (int64_t)llround(f);
        out[i] = v < 1 ? 1 : v;
    }
    return 1;
}
