/* Fuzzes fair_ctl_parse_devices and fair_ctl_format_devices (lib/ctl/
 * snapshot.h): the fairshare.dev/gpu-devices annotation, which a tenant
 * can write on its own pods. The first byte sets the size of the format
 * buffer (0 to 255); the rest is the annotation.
 * Properties: the parser accepts exactly what an independent reading of
 * the grammar accepts (device numbers of one or two digits below
 * FAIR_MAX_GPUS_PER_NODE, separated by single commas, at most 256 bytes)
 * and gives the same mask, never an empty one; a refused input leaves
 * the mask alone; formatting a mask stays within its buffer, is always
 * terminated, and when the buffer is big enough parses back to the same
 * mask in canonical form (ascending, no duplicates).
 * fuzz-max-len: 512 */
#include "ctl/snapshot.h"
#include "engine/engine.h"

#include "fuzz.h"

/* The grammar, read independently of the parser under test. */
static int model(const char *s, uint64_t *mask)
{
    size_t n = strlen(s);
    if (n == 0 || n > 256)
        return -1;
    uint64_t m = 0;
    size_t i = 0;
    for (;;) {
        size_t d = 0;
        int v = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && d < 3) {
            v = v * 10 + (s[i] - '0');
            i++;
            d++;
        }
        if (d == 0 || d > 2 || v >= FAIR_MAX_GPUS_PER_NODE)
            return -1;
        m |= (uint64_t)1 << v;
        if (i == n)
            break;
        if (s[i] != ',' || i + 1 == n)
            return -1;
        i++;
    }
    *mask = m;
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t bufsize = data[0];
    char *s = fuzz_cstr(data + 1, size - 1, 600);
    const uint64_t poison = 0x5a5a5a5a5a5a5a5aULL;
    uint64_t got = poison, want = 0;
    int rc = fair_ctl_parse_devices(s, &got);
    int mrc = model(s, &want);
    if ((rc == 0) != (mrc == 0))
        fuzz_fail("\"%s\": parser %d, grammar %d", s, rc, mrc);
    if (rc == 0 && got != want)
        fuzz_fail("\"%s\": mask %llx, want %llx", s, (unsigned long long)got,
                  (unsigned long long)want);
    if (rc == 0 && got == 0)
        fuzz_fail("\"%s\": empty mask accepted", s);
    if (rc != 0 && got != poison)
        fuzz_fail("\"%s\": refused but the mask was written", s);

    /* Format: any mask (the parsed one, or one made from the input's first
     * bytes), into a buffer of bufsize bytes with guards on both sides. */
    uint64_t m = rc == 0 ? got : 0;
    if (rc != 0)
        for (size_t i = 1; i < size && i < 9; i++)
            m = (m << 8) | data[i];
    char *buf = malloc(bufsize + 2);
    if (!buf)
        abort();
    memset(buf, '#', bufsize + 2);
    fair_ctl_format_devices(m, buf + 1, bufsize);
    if (buf[0] != '#' || buf[bufsize + 1] != '#')
        fuzz_fail("format wrote outside its %zu bytes", bufsize);
    if (bufsize > 0) {
        if (!memchr(buf + 1, '\0', bufsize))
            fuzz_fail("format left its %zu bytes unterminated", bufsize);
        /* Big enough: 64 devices of up to 2 digits and a comma each. */
        if (bufsize >= 64 * 3 && m != 0) {
            uint64_t back = 0;
            if (fair_ctl_parse_devices(buf + 1, &back) != 0 || back != m)
                fuzz_fail("format of %llx (\"%s\") does not parse back", (unsigned long long)m,
                          buf + 1);
            char canon[200];
            size_t len = 0;
            canon[0] = '\0';
            for (int i = 0; i < 64; i++)
                if (m & ((uint64_t)1 << i))
                    len += (size_t)snprintf(canon + len, sizeof canon - len, "%s%d", len ? "," : "",
                                            i);
            if (strcmp(canon, buf + 1) != 0)
                fuzz_fail("format of %llx gave \"%s\", want \"%s\"", (unsigned long long)m, buf + 1,
                          canon);
        }
    }
    free(buf);
    free(s);
    return 0;
}
