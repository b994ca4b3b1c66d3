/* A token bucket (QPS + burst) for the client's requests, like client-go's
 * flowcontrol.NewTokenBucketRateLimiter. It lives in lib/kube rather than
 * lib/cache because the client, which is below the cache, uses it.
 *
 * Time comes from a struct fair_clock (monotonic reading), so tests drive
 * it with a manual clock. Reservations may run the bucket negative: each
 * reservation is told how long to wait before it may go, and reservations
 * are served in order, as Go's rate.Limiter.Reserve() does. */
#ifndef FAIR_KUBE_RATELIMIT_H
#define FAIR_KUBE_RATELIMIT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/clock.h"

#define FAIR_KUBE_DEFAULT_QPS 50.0
#define FAIR_KUBE_DEFAULT_BURST 100

/* Caller-owned. qps <= 0 disables limiting (every call may go now). */
struct fair_tokenbucket {
    double qps;
    double burst;
    double tokens; /* may be negative: tokens owed by reservations */
    int64_t last_ms;
    const struct fair_clock *clock; /* borrowed */
};

/* burst < 1 is taken as 1. The bucket starts full. */
void fair_tokenbucket_init(struct fair_tokenbucket *tb, double qps, int burst,
                           const struct fair_clock *clock);

/* Takes one token if one is available now; false otherwise (nothing
 * taken). */
bool fair_tokenbucket_try(struct fair_tokenbucket *tb);

/* Takes one token, possibly borrowed from the future, and returns how many
 * milliseconds the caller must wait before acting (0: go now). */
int64_t fair_tokenbucket_reserve(struct fair_tokenbucket *tb);

#endif
