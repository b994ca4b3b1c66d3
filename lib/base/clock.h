/* The clock as an operations struct, so that tests and the simulator can
 * drive time without sleeping. lib/engine never reads a clock: it is given
 * "now" in its snapshot. */
#ifndef FAIR_BASE_CLOCK_H
#define FAIR_BASE_CLOCK_H

#include <stdint.h>

struct fair_clock {
    int64_t (*now_ms)(void *ctx);      /* wall clock, ms since the Unix epoch */
    int64_t (*monotonic_ms)(void *ctx); /* monotonic, for timeouts */
    void *ctx;
};

/* The real clocks (CLOCK_REALTIME and CLOCK_MONOTONIC). Borrowed, static. */
const struct fair_clock *fair_clock_system(void);

/* A manual clock for tests: both readings return *ctx (an int64_t ms). */
void fair_clock_manual_init(struct fair_clock *c, int64_t *now_ms);

static inline int64_t fair_now_ms(const struct fair_clock *c)
{
    return c->now_ms(c->ctx);
}
static inline int64_t fair_mono_ms(const struct fair_clock *c)
{
    return c->monotonic_ms(c->ctx);
}

/* RFC 3339 ("2026-11-23T19:31:15Z", fractions and offsets allowed) to ms
 * since the epoch; FAIR_EINVAL when malformed. */
int fair_time_parse_rfc3339(const char *s, int64_t *out_ms);
/* ms since the epoch to "2026-11-23T19:31:15Z" (UTC, second precision,
 * rounded down). A value beyond the years struct tm holds gives "". */
void fair_time_format_rfc3339(int64_t ms, char *out, int n);

#endif
