/* Fuzzes RFC 3339 parsing and formatting (base/clock.h). For years 0 to
 * 9999 the formatter must give text that parses back to the same second;
 * the formatter must also take any int64 (the input's first 8 bytes)
 * without undefined behaviour.
 * fuzz-max-len: 96 */
#include "base/clock.h"

#include "fuzz.h"

#define YEAR_0_MS (-62167219200000LL)   /* 0000-01-01T00:00:00Z */
#define YEAR_10000_MS 253402300800000LL /* 10000-01-01T00:00:00Z */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size, 96);
    int64_t ms = 0;
    if (fair_time_parse_rfc3339(s, &ms) == 0 && ms >= YEAR_0_MS && ms < YEAR_10000_MS) {
        char buf[64];
        int64_t back = 0;
        fair_time_format_rfc3339(ms, buf, (int)sizeof buf);
        int64_t floor_s = (ms >= 0 ? ms / 1000 : (ms - 999) / 1000) * 1000;
        if (fair_time_parse_rfc3339(buf, &back) != 0 || back != floor_s)
            fuzz_fail("\"%s\": %lld ms formats as \"%s\", which parses as %lld", s, (long long)ms,
                      buf, (long long)back);
    }
    if (size >= sizeof(int64_t)) {
        int64_t any;
        char buf[64];
        memcpy(&any, data, sizeof any);
        fair_time_format_rfc3339(any, buf, (int)sizeof buf);
        if (strnlen(buf, sizeof buf) >= sizeof buf)
            fuzz_fail("formatting %lld is not terminated", (long long)any);
    }
    free(s);
    return 0;
}
