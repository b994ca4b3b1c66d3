/* Fuzzes MIG profile names (base/mig.h): a name either fails with a
 * message and a zero share, or yields a share in (0, 1000] of a resource
 * that is a MIG resource, and the same name always gives the same answer.
 * fuzz-max-len: 128 */
#include "base/mig.h"

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size, 128);
    struct fair_error err = {0};
    int64_t m = -1, again = -1;
    int rc = fair_mig_share_milli(s, &m, &err);
    if (rc != 0 && (err.code != rc || err.msg[0] == '\0' || m != 0))
        fuzz_fail("failure %d without a message or with share %lld for \"%s\"", rc, (long long)m,
                  s);
    if (rc == 0 && (m <= 0 || m > 1000 || !fair_mig_is_resource(s)))
        fuzz_fail("\"%s\": share %lld", s, (long long)m);
    if (fair_mig_share_milli(s, &again, NULL) != rc || again != m)
        fuzz_fail("\"%s\": a second call disagrees", s);
    free(s);
    return 0;
}
