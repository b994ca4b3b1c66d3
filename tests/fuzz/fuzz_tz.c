/* Fuzzes the TZif reader and the POSIX TZ strings (base/tz.h): any input
 * either fails with a message or gives a zone whose offsets are within a
 * day and whose next change always lies in the future, and a window
 * search over it ends (ctl/timequota.h).
 * fuzz-max-len: 8192 */
#include "base/tz.h"
#include "ctl/timequota.h"

#include "fuzz.h"

static void check(const struct fair_tz *z)
{
    static const int64_t at[] = {
        -4000000000000LL, 0, 1700000000000LL, 1795993200000LL, 4102444800000LL, 253402300799000LL};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++) {
        int64_t next = 0;
        int32_t off = fair_tz_offset(z, at[i], &next);
        if (off <= -26 * 3600 || off >= 26 * 3600)
            fuzz_fail("offset %d out of range", off);
        if (next <= at[i])
            fuzz_fail("next change %lld not after %lld", (long long)next, (long long)at[i]);
    }
    struct fair_kwindow w = {.days = 0x7f, .start_min = 90, .end_min = 150};
    const struct fair_tz *zs[1] = {z};
    (void)fair_ctl_window_next(&w, 1, zs, 1795993200000LL, 8 * 86400000LL);
    int64_t s, e;
    fair_ctl_budget_period(FAIR_KBUDGET_MONTH, z, 1795993200000LL, &s, &e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fair_tz *z = NULL;
    struct fair_error err = {0};
    int rc = fair_tz_parse("fuzz", data, size, &z, &err);
    if (rc != 0 && err.msg[0] == '\0')
        fuzz_fail("TZif failure %d without a message", rc);
    if (rc == 0) {
        check(z);
        fair_tz_free(z);
    }
    char *s = fuzz_cstr(data, size, 256);
    z = NULL;
    rc = fair_tz_posix(s, &z, &err);
    if (rc == 0) {
        check(z);
        fair_tz_free(z);
    }
    free(s);
    return 0;
}
