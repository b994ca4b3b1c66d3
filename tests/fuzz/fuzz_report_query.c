/* Fuzzes the report endpoint's input: the query string of
 * GET /api/v1/reports/gpu-hours (ledger/report.h) against a small in-memory
 * ledger, plus the price, price-table parameter and date parsers (absolute
 * and relative, in a fixed zone and in one that changes its offset). Every
 * input gets 200 or 400, a 400 always carries a JSON error, a parsed price
 * is never negative, and a relative date's span never ends before it starts.
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

/* A zone with summer time: +01:00, +02:00 from late March to late October
 * of every year (the changes at 01:00 UTC, roughly as in Europe). */
static int dst_offset(void *ctx, int64_t utc_ms, int *min_east)
{
    (void)ctx;
    int64_t day = utc_ms >= 0 ? utc_ms / 86400000 : -((-utc_ms + 86399999) / 86400000);
    int64_t doy = ((day % 365) + 365) % 365; /* close enough for a fuzz zone */
    *min_east = doy >= 87 && doy < 298 ? 120 : 60;
    return 0;
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

    struct fair_prices pr;
    fair_prices_init(&pr);
    if (fair_prices_from_param(&pr, s, &err) == 0) {
        if (pr.default_micro < -1)
            fuzz_fail("prices \"%.200s\": default %lld", s, (long long)pr.default_micro);
        for (size_t i = 0; i < pr.n; i++)
            if (pr.e[i].micro < 0 || !pr.e[i].model[0])
                fuzz_fail("prices \"%.200s\": entry %zu", s, i);
    }
    fair_prices_release(&pr);
    struct fair_report_zone zones[2] = {{.fixed_min = -570}, {.offset_at = dst_offset}};
    for (int z = 0; z < 2; z++) {
        int64_t start = 0, end = 0;
        if (fair_report_date_resolve(s, &zones[z], 1793491200000LL, &start, &end, &err) == 0 &&
            end != INT64_MIN && end <= start)
            fuzz_fail("date \"%.200s\": span [%lld, %lld)", s, (long long)start, (long long)end);
    }
    free(s);
    return 0;
}
