/* Fuzzes the report endpoint's input: the query string of
 * GET /api/v1/reports/gpu-hours (ledger/report.h) against a small in-memory
 * ledger, plus the price and date parsers. Every input gets 200 or 400, a
 * 400 always carries a JSON error, and a parsed price is never negative.
 * fuzz-max-len: 4200 */
#include "base/log.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

#include "fuzz.h"

static struct fair_ledger *ledger(void)
{
    static struct fair_ledger *l;
    if (l)
        return l;
    struct fair_ledger_options o;
    struct fair_error err = {0};
    fair_log_set_level(FAIR_LOG_ERROR);
    fair_ledger_options_init(&o);
    o.path = ":memory:";
    if (fair_ledger_open(&o, &l, &err))
        fuzz_fail("cannot open an in-memory ledger: %s", err.msg);
    struct fair_ledger_interval_info in = {.uid = "u1",
                                           .namespace_ = "ns",
                                           .pod = "p",
                                           .queue = "q",
                                           .project = "alpha",
                                           .team = "alpha",
                                           .cost_center = "",
                                           .node = "n",
                                           .gpu_model = "A100",
                                           .gpu_milli = 1500,
                                           .inquota_milli = 1000,
                                           .start_ms = 1793491200000LL};
    struct fair_ledger_sample_row row = {.queue = "q",
                                         .project = "alpha",
                                         .team = "alpha",
                                         .allocated = 1500,
                                         .guaranteed = 1000,
                                         .lent = -1};
    if (fair_ledger_interval_open(l, &in, &err) ||
        fair_ledger_interval_close(l, "u1", 1793491200000LL + 7200000, FAIR_LEDGER_PREEMPTED,
                                   &err) ||
        fair_ledger_sample(l, 1793491200000LL + 60000, &row, 1, &err) || fair_ledger_flush(l, &err))
        fuzz_fail("fixture: %s", err.msg);
    return l;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size, 4200);
    struct fair_buf body;
    const char *ct = NULL;
    int status = 0;
    fair_buf_init(&body, 0);
    if (fair_report_http(ledger(), s, &body, &ct, &status) != 0)
        fuzz_fail("fair_report_http failed outright for \"%.200s\"", s);
    if (status != 200 && status != 400)
        fuzz_fail("status %d for \"%.200s\": %s", status, s, fair_buf_str(&body));
    if (!ct || !body.len)
        fuzz_fail("empty answer for \"%.200s\"", s);
    if (status == 400 && strncmp(fair_buf_str(&body), "{\"error\":\"", 10) != 0)
        fuzz_fail("400 without a JSON error for \"%.200s\"", s);
    fair_buf_release(&body);

    struct fair_error err = {0};
    int64_t v = -1;
    if (fair_price_parse(s, &v, &err) == 0 && v < 0)
        fuzz_fail("price \"%.200s\" parsed as negative", s);
    int tz = 0;
    if (fair_report_tz_parse(s, &tz, &err) == 0 && (tz < -14 * 60 || tz > 14 * 60))
        fuzz_fail("zone \"%.200s\" parsed as %d minutes", s, tz);
    (void)fair_report_date_parse(s, 0, &v, &err);
    free(s);
    return 0;
}
