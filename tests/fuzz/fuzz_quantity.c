/* Fuzzes Kubernetes quantity parsing (base/quantity.h), both scales, and
 * checks three properties: the milli and plain results agree (plain is the
 * milli value divided by 1000, rounded up), and both formatters produce
 * text that parses back to the same value.
 * fuzz-max-len: 96 */
#include "base/quantity.h"

#include "fuzz.h"

static int64_t ceil_div_1000(int64_t v)
{
    int64_t q = v / 1000;
    return (v % 1000 > 0) ? q + 1 : q;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size, 96);
    struct fair_error err = {0};
    int64_t milli = 0, plain = 0;
    int rm = fair_quantity_parse_milli(s, &milli, &err);
    if (rm != 0 && (err.code != rm || err.msg[0] == '\0'))
        fuzz_fail("failure %d without a message for \"%s\"", rm, s);
    int rp = fair_quantity_parse(s, &plain, NULL);
    /* Anything that parses as milli-units parses as units (smaller). */
    if (rm == 0 && rp != 0)
        fuzz_fail("\"%s\": milli parse ok (%lld) but plain parse failed %d", s, (long long)milli,
                  rp);
    if (rm == 0 && rp == 0 && ceil_div_1000(milli) != plain)
        fuzz_fail("\"%s\": milli %lld but plain %lld", s, (long long)milli, (long long)plain);
    char buf[64];
    int64_t back = 0;
    if (rm == 0) {
        fair_milli_format(milli, buf, sizeof buf);
        if (fair_quantity_parse_milli(buf, &back, NULL) != 0 || back != milli)
            fuzz_fail("\"%s\": %lld formats as \"%s\", which parses as %lld", s, (long long)milli,
                      buf, (long long)back);
    }
    if (rp == 0) {
        fair_bytes_format(plain, buf, sizeof buf);
        if (fair_quantity_parse(buf, &back, NULL) != 0 || back != plain)
            fuzz_fail("\"%s\": %lld bytes format as \"%s\", which parses as %lld", s,
                      (long long)plain, buf, (long long)back);
    }
    free(s);
    return 0;
}
