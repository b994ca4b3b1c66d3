/* Fuzzes the ledger's report endpoint (fair_report_http, lib/ledger/
 * report.h): the input is the query string of GET
 * /api/v1/reports/gpu-hours, run against a real SQLite ledger in a
 * temporary file holding a few intervals (opened once per process).
 * Properties: it returns 0 with status 200 or 400 (never another code for
 * a query), a 400 body is a JSON object with an "error" string, a 200 JSON
 * body parses. Also fair_query_parse directly: keys and values stay
 * NUL-terminated within their caps.
 * fuzz-max-len: 2048 */
#include <jansson.h>
#include <unistd.h>

#include "base/buf.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

#include "fuzz.h"

static struct fair_ledger *ledger;
static char dir[64];

static void cleanup(void)
{
    char p[128];
    fair_ledger_free(ledger);
    static const char *const sfx[] = {"", "-wal", "-shm"};
    for (size_t i = 0; i < 3; i++) {
        snprintf(p, sizeof p, "%s/ledger.db%s", dir, sfx[i]);
        unlink(p);
    }
    rmdir(dir);
}

static void open_ledger(void)
{
    snprintf(dir, sizeof dir, "/tmp/fair-fuzz-report-XXXXXX");
    if (!mkdtemp(dir))
        fuzz_fail("mkdtemp failed");
    char p[128];
    snprintf(p, sizeof p, "%s/ledger.db", dir);
    struct fair_ledger_options o;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = p;
    if (fair_ledger_open(&o, &ledger, &err) != 0)
        fuzz_fail("ledger open: %s", err.msg);
    atexit(cleanup);
    /* 2026-11-01T00:00:00Z and on: a few pods of two teams. */
    const int64_t t0 = 1793491200000LL;
    static const char *const teams[] = {"vision", "nlp"};
    for (int i = 0; i < 6; i++) {
        char uid[32], pod[32];
        snprintf(uid, sizeof uid, "uid-%d", i);
        snprintf(pod, sizeof pod, "pod-%d", i);
        struct fair_ledger_interval_info in = {.uid = uid,
                                               .namespace_ = "ml",
                                               .pod = pod,
                                               .queue = i % 2 ? "q-b" : "q-a",
                                               .project = teams[i % 2],
                                               .team = teams[i % 2],
                                               .cost_center = "cc-1",
                                               .node = "n1",
                                               .gpu_model = "H100",
                                               .gpu_milli = 1000 * (i + 1),
                                               .inquota_milli = 1000,
                                               .start_ms = t0 + i * 3600000LL};
        if (fair_ledger_interval_open(ledger, &in, &err) != 0)
            fuzz_fail("open interval: %s", err.msg);
        if (i < 4 && fair_ledger_interval_close(ledger, uid, t0 + (i + 2) * 3600000LL,
                                                FAIR_LEDGER_COMPLETED, &err) != 0)
            fuzz_fail("close interval: %s", err.msg);
    }
    if (fair_ledger_flush(ledger, &err) != 0)
        fuzz_fail("flush: %s", err.msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ledger)
        open_ledger();
    char *qs = fuzz_cstr(data, size, 2048);
    struct fair_query q;
    if (fair_query_parse(qs, &q, NULL) == 0) {
        if (q.n > FAIR_QUERY_MAX_PAIRS)
            fuzz_fail("%zu pairs", q.n);
        for (size_t i = 0; i < q.n; i++)
            if (strnlen(q.key[i], sizeof q.key[i]) >= sizeof q.key[i] ||
                strnlen(q.val[i], sizeof q.val[i]) >= sizeof q.val[i])
                fuzz_fail("pair %zu not terminated", i);
    }
    struct fair_buf body;
    fair_buf_init(&body, 16u << 20);
    const char *ct = NULL;
    int status = 0;
    int rc = fair_report_http(ledger, qs, &body, &ct, &status);
    if (rc != 0)
        fuzz_fail("fair_report_http returned %d for \"%s\"", rc, qs);
    if (status != 200 && status != 400)
        fuzz_fail("status %d for \"%s\"", status, qs);
    if (!ct)
        fuzz_fail("no content type");
    if (status == 400 || strstr(ct, "json")) {
        json_t *j = json_loadb(fair_buf_str(&body), body.len, 0, NULL);
        if (!j)
            fuzz_fail("status %d body is not JSON: %s", status, fair_buf_str(&body));
        if (status == 400 && !json_is_string(json_object_get(j, "error")))
            fuzz_fail("400 without an error string");
        json_decref(j);
    }
    fair_buf_release(&body);
    free(qs);
    return 0;
}
