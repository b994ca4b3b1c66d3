/* Fuzzes Go-duration parsing (base/duration.h): results are never negative,
 * and formatting a result gives text that parses back to it (the formatter
 * drops milliseconds above one minute, so within a second there).
 * fuzz-max-len: 96 */
#include "base/duration.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size, 96);
    struct fair_error err = {0};
    int64_t ms = -1;
    int rc = fair_duration_parse_ms(s, &ms, &err);
    if (rc != 0 && (err.code != rc || err.msg[0] == '\0'))
        fuzz_fail("failure %d without a message for \"%s\"", rc, s);
    if (rc == 0) {
        if (ms < 0)
            fuzz_fail("\"%s\" parsed as negative %lld ms", s, (long long)ms);
        char buf[64];
        int64_t back = -1;
        fair_duration_format_ms(ms, buf, sizeof buf);
        if (fair_duration_parse_ms(buf, &back, NULL) != 0)
            fuzz_fail("\"%s\": %lld ms formats as \"%s\", which does not parse", s, (long long)ms,
                      buf);
        int64_t tolerance = ms >= 60000 ? 999 : 0;
        if (back > ms || ms - back > tolerance)
            fuzz_fail("\"%s\": %lld ms formats as \"%s\", which parses as %lld", s, (long long)ms,
                      buf, (long long)back);
    }
    free(s);
    return 0;
}
