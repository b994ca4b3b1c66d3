/* Token bucket for client requests (see ratelimit.h). */
#include "kube/ratelimit.h"

void fair_tokenbucket_init(struct fair_tokenbucket *tb, double qps, int burst,
                           const struct fair_clock *clock)
{
    tb->qps = qps;
    tb->burst = burst < 1 ? 1 : burst;
    tb->tokens = tb->burst;
    tb->clock = clock ? clock : fair_clock_system();
    tb->last_ms = fair_mono_ms(tb->clock);
}

static void refill(struct fair_tokenbucket *tb)
{
    int64_t now = fair_mono_ms(tb->clock);
    if (now > tb->last_ms) {
        tb->tokens += (double)(now - tb->last_ms) * tb->qps / 1000.0;
        if (tb->tokens > tb->burst)
            tb->tokens = tb->burst;
        tb->last_ms = now;
    }
}

bool fair_tokenbucket_try(struct fair_tokenbucket *tb)
{
    if (tb->qps <= 0)
        return true;
    refill(tb);
    if (tb->tokens < 1.0)
        return false;
    tb->tokens -= 1.0;
    return true;
}

int64_t fair_tokenbucket_reserve(struct fair_tokenbucket *tb)
{
    if (tb->qps <= 0)
        return 0;
    refill(tb);
    tb->tokens -= 1.0;
    if (tb->tokens >= 0)
        return 0;
    /* Round up: waiting a little too long is fine, too short is not. */
    double ms = -tb->tokens * 1000.0 / tb->qps;
    int64_t w = (int64_t)ms;
    return (double)w < ms ? w + 1 : w;
}
