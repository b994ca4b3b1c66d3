/* Fuzzes fair_kretry_after_parse (lib/kube/client.h), which reads the
 * Retry-After header of a 429 answer: the API server (or anything on the
 * path that answers for it) chooses the bytes. Each input is one header
 * line as curl hands it (not NUL-terminated; the copy has no byte after
 * it, so ASan sees any read past the end).
 * Properties: it returns 0 or 1; 1 only for a line whose name is
 * Retry-After (any case) and whose value, without the whitespace around
 * it, is one or more digits, and then the delay is those seconds, capped
 * at FAIR_KUBE_RETRY_AFTER_MAX_S, in ms; 0 leaves the output alone.
 * fuzz-max-len: 256 */
#include <strings.h>

#include "kube/client.h"

#include "fuzz.h"

static bool ows(char c)
{
    return c == ' ' || c == '\t';
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *line = malloc(size ? size : 1);
    if (!line)
        abort();
    memcpy(line, data, size);
    const int64_t poison = -77;
    int64_t ms = poison;
    int rc = fair_kretry_after_parse(line, size, &ms);

    /* The model. */
    int want = 0;
    int64_t want_ms = 0;
    static const char name[] = "Retry-After:";
    size_t nl = sizeof name - 1;
    if (size >= nl && strncasecmp(line, name, nl) == 0) {
        size_t b = nl, e = size;
        while (e > b && (ows(line[e - 1]) || line[e - 1] == '\r' || line[e - 1] == '\n'))
            e--;
        while (b < e && ows(line[b]))
            b++;
        bool digits = b < e;
        for (size_t i = b; i < e; i++)
            digits = digits && line[i] >= '0' && line[i] <= '9';
        if (digits) {
            want = 1;
            /* Leading zeros do not count towards the cap. */
            while (b + 1 < e && line[b] == '0')
                b++;
            if (e - b > 6) {
                want_ms = (int64_t)FAIR_KUBE_RETRY_AFTER_MAX_S * 1000;
            } else {
                int64_t v = 0;
                for (size_t i = b; i < e; i++)
                    v = v * 10 + (line[i] - '0');
                want_ms =
                    (v > FAIR_KUBE_RETRY_AFTER_MAX_S ? FAIR_KUBE_RETRY_AFTER_MAX_S : v) * 1000;
            }
        }
    }
    if (rc != 0 && rc != 1)
        fuzz_fail("returned %d", rc);
    if (rc != want)
        fuzz_fail("\"%.*s\": returned %d, want %d", (int)size, line, rc, want);
    if (rc == 0 && ms != poison)
        fuzz_fail("\"%.*s\": returned 0 but wrote %lld", (int)size, line, (long long)ms);
    if (rc == 1 && ms != want_ms)
        fuzz_fail("\"%.*s\": %lld ms, want %lld", (int)size, line, (long long)ms,
                  (long long)want_ms);
    if (rc == 1 && (ms < 0 || ms > (int64_t)FAIR_KUBE_RETRY_AFTER_MAX_S * 1000 || ms % 1000))
        fuzz_fail("\"%.*s\": %lld ms out of range", (int)size, line, (long long)ms);
    free(line);
    return 0;
}
