/* Ledger rows for tests that start a controller on a ledger with history
 * (e2e and integration). Include after <cmocka.h>. */
#ifndef FAIR_TEST_FIXTURE_LEDGER_H
#define FAIR_TEST_FIXTURE_LEDGER_H

#include <stdint.h>

#include "base/error.h"
#include "ledger/ledger.h"

/* One completed interval: pod uid of project (also its queue and team, in
 * namespace "old") held gpus whole GPUs from start to end (ms). Fails the
 * test on a ledger error. */
static inline void fixture_ledger_add(struct fair_ledger *l, const char *uid, const char *project,
                                      int64_t gpus, int64_t start, int64_t end)
{
    struct fair_ledger_interval_info in = {.uid = uid,
                                           .namespace_ = "old",
                                           .pod = uid,
                                           .queue = project,
                                           .project = project,
                                           .team = project,
                                           .gpu_milli = gpus * 1000,
                                           .start_ms = start};
    struct fair_error err = {0};
    if (fair_ledger_interval_open(l, &in, &err) ||
        fair_ledger_interval_close(l, uid, end, FAIR_LEDGER_COMPLETED, &err))
        fail_msg("ledger: %s", err.msg);
}

#endif
