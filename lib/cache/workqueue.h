/* The controller's work queue, with client-go's semantics:
 *  - keys (strings) are deduplicated: adding a key that is already
 *    queued does nothing;
 *  - a key being processed (between get and done) is not handed out
 *    twice; if it is added meanwhile, it is queued again at done();
 *  - add_rate_limited() re-adds a key after a per-item exponential backoff
 *    (base * 2^failures, capped); forget() resets the failure count;
 *  - the queue holds at most max_len keys: adds beyond fail with
 *    FAIR_ERANGE.
 * Time comes from a struct fair_clock (monotonic), so tests use a manual
 * clock. The queue does not own a timer: callers ask next_delay_ms() and
 * arm one (the controller does this with an evtimer). */
#ifndef FAIR_CACHE_WORKQUEUE_H
#define FAIR_CACHE_WORKQUEUE_H

#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "base/error.h"

#define FAIR_WORKQUEUE_DEFAULT_MAX 100000
#define FAIR_WORKQUEUE_MAX_KEY 512

struct fair_workqueue;

struct fair_workqueue_options {
    size_t max_len;                 /* default FAIR_WORKQUEUE_DEFAULT_MAX */
    int64_t base_delay_ms;          /* default 5 */
    int64_t max_delay_ms;           /* default 1000000 (client-go's 1000 s) */
    const struct fair_clock *clock; /* default the system clock; borrowed */
};

int fair_workqueue_new(const struct fair_workqueue_options *opt, struct fair_workqueue **out);
void fair_workqueue_free(struct fair_workqueue *q);

/* Queues key (copied) now. 0, FAIR_ERANGE (full or key too long),
 * FAIR_ENOMEM. */
int fair_workqueue_add(struct fair_workqueue *q, const char *key);
/* Queues key after delay_ms (an earlier pending time wins). */
int fair_workqueue_add_after(struct fair_workqueue *q, const char *key, int64_t delay_ms);
/* Queues key after its per-item backoff and counts one more failure. */
int fair_workqueue_add_rate_limited(struct fair_workqueue *q, const char *key);
/* Clears the failure count of key. */
void fair_workqueue_forget(struct fair_workqueue *q, const char *key);
int fair_workqueue_failures(const struct fair_workqueue *q, const char *key);

/* Pops the next ready key into a new string (caller frees with fair_free
 * and must call done()). Returns 0, or FAIR_ENOTFOUND when no key is ready
 * now. */
int fair_workqueue_get(struct fair_workqueue *q, char **key_out);
/* Marks key processed; re-queues it if it was added while processing. */
void fair_workqueue_done(struct fair_workqueue *q, const char *key);

/* Keys ready now, and keys waiting (delayed) or being processed. */
size_t fair_workqueue_len(const struct fair_workqueue *q);
size_t fair_workqueue_waiting(const struct fair_workqueue *q);
/* ms until the next delayed key is ready: 0 if one is ready now, -1 if
 * none is waiting. */
int64_t fair_workqueue_next_delay_ms(struct fair_workqueue *q);

#endif
