/* Fuzzes fair_prices_load (lib/ledger/report.h), the price table of
 * `fairsharectl report --prices FILE` ("model,price" lines). It reads a
 * path, so each input is written to a file in a private temporary folder.
 * Properties: failure carries a message; the loader accepts exactly what
 * an independent reading of the format accepts, with the same entries in
 * the same order and the same default:
 *  - lines end at '\n' (the last may not); a line of 519 bytes or more is
 *    refused; trailing '\n', '\r' and ' ' are dropped;
 *  - empty lines, lines starting with '#' and the header "model,price"
 *    are skipped;
 *  - any other line is MODEL,PRICE with one comma and a non-empty MODEL;
 *    PRICE is what fair_price_parse accepts; MODEL "*" is the default;
 *  - a NUL byte in a line that is read is refused (a C string would drop
 *    what follows it without a word).
 * fuzz-max-len: 4096 */
#include <unistd.h>

#include "ledger/report.h"

#include "fuzz.h"

static char dir[64];
static char path[96];

static void cleanup(void)
{
    unlink(path);
    rmdir(dir);
}

struct entry {
    char model[520];
    int64_t micro;
};

/* Returns 0 with the entries, or -1. */
static int model(const uint8_t *d, size_t n, struct entry *e, size_t *ne, int64_t *def)
{
    *ne = 0;
    *def = -1;
    size_t i = 0;
    while (i < n) {
        const uint8_t *nl = memchr(d + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (d + i)) : n - i;
        if (len >= 519)
            return -1;
        char line[520];
        memcpy(line, d + i, len);
        line[len] = '\0';
        i += len + (nl ? 1 : 0);
        while (len && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\n'))
            len--;
        bool has_nul = memchr(line, '\0', len) != NULL;
        line[len] = '\0';
        if (len == 0 || line[0] == '#')
            continue;
        if (has_nul)
            return -1;
        if (strcmp(line, "model,price") == 0)
            continue;
        char *comma = strchr(line, ',');
        if (!comma || comma == line || strchr(comma + 1, ','))
            return -1;
        *comma = '\0';
        int64_t micro;
        if (fair_price_parse(comma + 1, &micro, NULL))
            return -1;
        if (strcmp(line, "*") == 0) {
            *def = micro;
            continue;
        }
        snprintf(e[*ne].model, sizeof e[*ne].model, "%s", line);
        e[*ne].micro = micro;
        (*ne)++;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/fair-fuzz-prices-XXXXXX");
        if (!mkdtemp(dir))
            fuzz_fail("mkdtemp failed");
        snprintf(path, sizeof path, "%s/prices.csv", dir);
        atexit(cleanup);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        fuzz_fail("cannot write %s", path);
    if (size)
        fwrite(data, 1, size, f);
    fclose(f);
    static struct entry want[4200];
    size_t nwant = 0;
    int64_t want_def = -1;
    int mrc = model(data, size, want, &nwant, &want_def);

    struct fair_prices p;
    struct fair_error err = {0};
    fair_prices_init(&p);
    int rc = fair_prices_load(&p, path, &err);
    if (rc != 0 && !err.msg[0])
        fuzz_fail("failure %d without a message", rc);
    if ((rc == 0) != (mrc == 0))
        fuzz_fail("loader %d (%s), format %d", rc, err.msg, mrc);
    if (rc == 0) {
        if (p.n != nwant)
            fuzz_fail("%zu entries, want %zu", p.n, nwant);
        if (p.default_micro != want_def)
            fuzz_fail("default %lld, want %lld", (long long)p.default_micro, (long long)want_def);
        for (size_t i = 0; i < p.n; i++) {
            if (strcmp(p.e[i].model, want[i].model) != 0 || p.e[i].micro != want[i].micro)
                fuzz_fail("entry %zu: \"%s\" %lld, want \"%s\" %lld", i, p.e[i].model,
                          (long long)p.e[i].micro, want[i].model, (long long)want[i].micro);
            if (p.e[i].micro < 0 || p.e[i].micro >= 1000000000LL * 1000000)
                fuzz_fail("entry %zu: price %lld out of range", i, (long long)p.e[i].micro);
        }
    }
    fair_prices_release(&p);
    return 0;
}
