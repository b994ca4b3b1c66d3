/* Allocation-failure sweep shared by the unit tests: runs op(ctx) with
 * allocation k failing, for k = 0, 1, ... until it succeeds. op returns 0
 * or a FAIR_E* code and must clean up after itself on failure (the
 * sanitizer build checks for leaks). Fails the test when a run fails with
 * something other than FAIR_ENOMEM, when a run succeeds although one of
 * its allocations failed, or after max_sites failed runs. Returns the
 * number of failed runs (the allocation sites reached). Include after
 * <cmocka.h>. */
#ifndef FAIR_TEST_ALLOC_SWEEP_H
#define FAIR_TEST_ALLOC_SWEEP_H

#include "base/alloc.h"
#include "base/error.h"

static __attribute__((unused)) long fair_test_alloc_sweep(int (*op)(void *ctx), void *ctx,
                                                          long max_sites)
{
    long failures = 0;
    for (long k = 0;; k++) {
        fair_alloc_fail_after(k);
        int rc = op(ctx);
        long used = fair_alloc_count();
        fair_alloc_fail_after(-1);
        if (rc == 0) {
            /* It succeeded because it needed no more than k allocations. */
            if (used > k)
                fail_msg("succeeded although allocation %ld of %ld failed", k, used);
            break;
        }
        if (rc != FAIR_ENOMEM)
            fail_msg("allocation %ld failed: got %d, not FAIR_ENOMEM", k, rc);
        failures++;
        assert_true(k < max_sites);
    }
    return failures;
}

#endif
