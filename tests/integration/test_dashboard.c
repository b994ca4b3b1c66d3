/* The dashboard in a real headless Chromium: a fixture ledger served by
 * `fairsharectl dashboard`, the page loaded with --dump-dom after its JS
 * ran, and checked for what it shows (team names, GPU-hour figures, queue
 * rows); then a screenshot (build/dashboard.png; with FAIR_UPDATE_DOCS=1,
 * docs/dashboard.png); then the same page served by fairshare-controller
 * itself, pointed at the fixture ledger.
 * Without chromium the test fails with a message saying how to install it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper_run.h"
#include "test_controller_common.h"

#include "base/buf.h"
#include "base/clock.h"
#include "ledger/ledger.h"

static char dir[64], db[128];
static pid_t server_pid; /* killed in teardown when a test fails midway */

static int64_t T(const char *s)
{
    int64_t ms = 0;
    assert_int_equal(fair_time_parse_rfc3339(s, &ms), 0);
    return ms;
}

struct fx {
    const char *uid, *queue, *team;
    int64_t milli, inq;
    const char *start, *end; /* end NULL: still running */
    enum fair_ledger_end reason;
};

/* research 528 GPU-h, vision 312, speech 72 + 48 (running) = 120. */
static const struct fx fixture_ivs[] = {
    {"r1", "research-train", "research", 8000, 8000, "2026-11-01T00:00:00Z", "2026-11-03T00:00:00Z",
     FAIR_LEDGER_COMPLETED},
    {"r2", "research-train", "research", 4000, 4000, "2026-11-04T00:00:00Z", "2026-11-05T12:00:00Z",
     FAIR_LEDGER_COMPLETED},
    {"v1", "vision-batch", "vision", 6000, 4000, "2026-11-02T00:00:00Z", "2026-11-04T00:00:00Z",
     FAIR_LEDGER_COMPLETED},
    {"v2", "vision-batch", "vision", 500, 500, "2026-11-05T00:00:00Z", "2026-11-07T00:00:00Z",
     FAIR_LEDGER_FAILED},
    {"s1", "speech-dev", "speech", 3000, 2000, "2026-11-01T12:00:00Z", "2026-11-02T12:00:00Z",
     FAIR_LEDGER_PREEMPTED},
    {"s2", "speech-dev", "speech", 1000, 1000, "2026-11-06T00:00:00Z", NULL, 0},
};
#define NFX (sizeof(fixture_ivs) / sizeof(fixture_ivs[0]))

static void fixture(void)
{
    struct fair_ledger_options o;
    struct fair_ledger *l = NULL;
    struct fair_error err = {0};
    fair_ledger_options_init(&o);
    o.path = db;
    o.sample_period_ms = 600000;
    assert_int_equal(fair_ledger_open(&o, &l, &err), 0);
    for (size_t i = 0; i < NFX; i++) {
        const struct fx *f = &fixture_ivs[i];
        struct fair_ledger_interval_info in = {.uid = f->uid,
                                               .namespace_ = f->team,
                                               .pod = f->uid,
                                               .queue = f->queue,
                                               .project = f->team,
                                               .team = f->team,
                                               .cost_center = "cc",
                                               .node = "gpu-node-1",
                                               .gpu_model = "H100",
                                               .gpu_milli = f->milli,
                                               .inquota_milli = f->inq,
                                               .start_ms = T(f->start)};
        assert_int_equal(fair_ledger_interval_open(l, &in, &err), 0);
        if (f->end)
            assert_int_equal(fair_ledger_interval_close(l, f->uid, T(f->end), f->reason, &err), 0);
    }
    /* Samples every 10 minutes: allocation from the intervals, a fair share
     * that splits 16 GPUs over the busy queues by guarantee. */
    static const char *const queues[3] = {"research-train", "vision-batch", "speech-dev"};
    static const char *const teams[3] = {"research", "vision", "speech"};
    static const int64_t guar[3] = {8000, 4000, 2000};
    int64_t t0 = T("2026-11-01T00:00:00Z"), t1 = T("2026-11-08T00:00:00Z");
    for (int64_t t = t0 + 600000; t <= t1; t += 600000) {
        struct fair_ledger_sample_row rows[3];
        int64_t busy_guar = 0, alloc[3] = {0, 0, 0};
        for (size_t i = 0; i < NFX; i++) {
            const struct fx *f = &fixture_ivs[i];
            if (T(f->start) < t && (!f->end || T(f->end) >= t))
                for (int q = 0; q < 3; q++)
                    if (strcmp(f->queue, queues[q]) == 0)
                        alloc[q] += f->milli;
        }
        for (int q = 0; q < 3; q++)
            if (alloc[q])
                busy_guar += guar[q];
        for (int q = 0; q < 3; q++) {
            rows[q] = (struct fair_ledger_sample_row){
                .queue = queues[q],
                .project = teams[q],
                .team = teams[q],
                .allocated = alloc[q],
                .guaranteed = guar[q],
                .fair_share = alloc[q] && busy_guar ? 16000 * guar[q] / busy_guar : 0,
                .pending = 0,
                .lent = -1};
        }
        assert_int_equal(fair_ledger_sample(l, t, rows, 3, &err), 0);
    }
    assert_int_equal(fair_ledger_flush(l, &err), 0);
    fair_ledger_free(l);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof(dir), "/tmp/fair_dashboard_XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/ledger.db", dir);
    fixture();
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fair_test_stop_child(&server_pid);
    return fair_test_remove_dir(dir);
}

static const char *find_chromium(void)
{
    static const char *const cands[] = {"/usr/bin/chromium", "/usr/bin/chromium-browser",
                                        "/usr/lib/chromium/chromium"};
    for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++)
        if (access(cands[i], X_OK) == 0)
            return cands[i];
    return NULL;
}

static pid_t start_server(char *url, size_t n)
{
    fair_test_dashboard_start(db, &server_pid, url, n);
    return server_pid;
}

/* Runs chromium headless with extra flags; stdout into out. */
static int chromium(const char *bin, const char *const *extra, struct fair_buf *out)
{
    char profile[160], outp[160];
    snprintf(profile, sizeof(profile), "%s/profile-XXXXXX", dir);
    assert_non_null(mkdtemp(profile));
    char udd[200];
    snprintf(udd, sizeof(udd), "--user-data-dir=%s", profile);
    snprintf(outp, sizeof(outp), "%s/chromium.out", dir);
    const char *argv[32] = {bin,
                            "--headless",
                            "--no-sandbox",
                            "--disable-gpu",
                            "--disable-quic",
                            "--no-first-run",
                            "--disable-background-networking",
                            "--disable-component-update",
                            "--disable-sync",
                            "--disable-dev-shm-usage",
                            "--hide-scrollbars",
                            udd};
    int n = 12;
    for (int i = 0; extra[i] && n < 31; i++)
        argv[n++] = extra[i];
    argv[n] = NULL;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (!freopen(outp, "w", stdout) || !freopen("/dev/null", "w", stderr))
            _exit(127);
        alarm(120); /* a hung browser fails the test instead of blocking ctest */
        execv(bin, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    FILE *f = fopen(outp, "r");
    char chunk[4096];
    size_t k;
    fair_buf_reset(out);
    if (f) {
        while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
            assert_int_equal(fair_buf_append(out, chunk, k), 0);
        fclose(f);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static size_t buf_sink(char *p, size_t s, size_t n, void *ud)
{
    return fair_buf_append(ud, p, s * n) ? 0 : s * n;
}

static long http_get(const char *url, struct fair_buf *body)
{
    CURL *c = curl_easy_init();
    long status = 0;
    fair_buf_reset(body);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

/* A request with another method: POST (with a body) or HEAD. */
static long http_method(const char *url, const char *method, struct fair_buf *body)
{
    CURL *c = curl_easy_init();
    long status = 0;
    fair_buf_reset(body);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, buf_sink);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, body);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 20L);
    if (strcmp(method, "HEAD") == 0)
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    else
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, "x=1");
    assert_int_equal(curl_easy_perform(c), CURLE_OK);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_cleanup(c);
    return status;
}

static void test_endpoints(void **state)
{
    (void)state;
    char url[128], u[400];
    struct fair_buf body;
    fair_buf_init(&body, 0);
    pid_t pid = start_server(url, sizeof(url));
    snprintf(u, sizeof(u), "%sapi/v1/queues/current", url);
    assert_int_equal(http_get(u, &body), 200);
    assert_non_null(strstr(fair_buf_str(&body),
                           "{\"queue\":\"speech-dev\",\"project\":\"speech\",\"team\":\"speech\","
                           "\"allocated\":1000,\"guaranteed\":2000,\"fair_share\":16000,"
                           "\"borrowed\":0,\"lent\":0,\"pending\":0}"));
    snprintf(u, sizeof(u), "%sapi/v1/queues/samples?from=2026-11-01&to=2026-11-08", url);
    assert_int_equal(http_get(u, &body), 200);
    /* 7 days in 300 buckets of 2016 s: the first research bucket is 8 GPUs. */
    assert_non_null(strstr(fair_buf_str(&body), "\"step_ms\":2016000,"));
    assert_non_null(strstr(fair_buf_str(&body),
                           "{\"queue\":\"research-train\",\"team\":\"research\",\"points\":"
                           "[[1793493216000,8000,"));
    snprintf(u, sizeof(u), "%s", url);
    assert_int_equal(http_get(u, &body), 200);
    assert_non_null(strstr(fair_buf_str(&body), "<title>Fairshare GPU ledger</title>"));
    /* No external asset: no src= or href= at all, no URL but the SVG
     * namespace name. */
    assert_null(strstr(fair_buf_str(&body), "src="));
    assert_null(strstr(fair_buf_str(&body), "href="));
    assert_null(strstr(fair_buf_str(&body), "https://"));
    const char *h = fair_buf_str(&body);
    while ((h = strstr(h, "http://")) != NULL) {
        assert_int_equal(strncmp(h, "http://www.w3.org/2000/svg", 26), 0);
        h += 7;
    }
    /* The route table: a known path with another method is 405, HEAD is
     * GET without a body, an unknown path is 404; all errors are JSON. */
    assert_int_equal(http_method(url, "POST", &body), 405);
    assert_string_equal(fair_buf_str(&body), "{\"error\":\"method not allowed\"}\n");
    assert_int_equal(http_method(url, "HEAD", &body), 200);
    assert_int_equal(body.len, 0);
    snprintf(u, sizeof(u), "%sapi/v1/nothing", url);
    assert_int_equal(http_get(u, &body), 404);
    assert_string_equal(fair_buf_str(&body), "{\"error\":\"not found\"}\n");
    snprintf(u, sizeof(u), "%sapi/v1/queues/current?x=1", url);
    assert_int_equal(http_get(u, &body), 400);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    server_pid = 0;
    fair_buf_release(&body);
}

/* The page's DOM after its JS ran (fails the test otherwise). */
static const char *dump_page(const char *bin, const char *page, struct fair_buf *dom)
{
    /* --virtual-time-budget lets the page's JS and fetches finish before
     * the DOM is dumped; on a loaded machine, try once more with more. */
    const char *budgets[] = {"--virtual-time-budget=5000", "--virtual-time-budget=20000"};
    const char *d = "";
    for (int attempt = 0; attempt < 2; attempt++) {
        const char *dump[] = {budgets[attempt], "--dump-dom", page, NULL};
        int st = chromium(bin, dump, dom);
        if (st != 0 || !dom->len)
            fail_msg("chromium exited with %d and printed %zu bytes", st, dom->len);
        d = fair_buf_str(dom);
        if (strstr(d, "data-ready=\"1\""))
            break;
    }
    /* The JS ran to the end without an error. */
    if (!strstr(d, "data-ready=\"1\""))
        fail_msg("page did not finish loading; DOM: %.2000s", d);
    return d;
}

/* Bar chart: the fixture's team names and GPU-hour figures. */
static void assert_bars(const char *d)
{
    assert_non_null(strstr(d, "class=\"bar-label\">research</text>"));
    assert_non_null(strstr(d, "class=\"bar-label\">vision</text>"));
    assert_non_null(strstr(d, "class=\"bar-label\">speech</text>"));
    assert_non_null(strstr(d, "class=\"bar-value\">528.000 GPU-h</text>"));
    assert_non_null(strstr(d, "class=\"bar-value\">312.000 GPU-h</text>"));
    assert_non_null(strstr(d, "class=\"bar-value\">120.000 GPU-h</text>"));
}

static const char *need_chromium(void)
{
    const char *bin = find_chromium();
    if (!bin)
        fail_msg("chromium is not installed: run scripts/install-deps.sh browser (Debian "
                 "package \"chromium\"; make test does); the dashboard test needs a real "
                 "browser");
    return bin;
}

static void test_chromium(void **state)
{
    (void)state;
    const char *bin = need_chromium();
    char url[128], page[300];
    struct fair_buf dom;
    fair_buf_init(&dom, 0);
    pid_t pid = start_server(url, sizeof(url));
    snprintf(page, sizeof(page), "%s?from=2026-11-01&to=2026-11-08", url);
    const char *d = dump_page(bin, page, &dom);
    assert_bars(d);
    /* Report table: speech used 72 GPU-h preempted, 24 of them borrowed. */
    assert_non_null(strstr(d, "<tr><td>speech</td><td>120.000</td><td>96.000</td><td>24.000</td>"
                              "<td>72.000</td>"));
    assert_non_null(strstr(d, "<tr><td>TOTAL</td><td>960.000</td>"));
    /* One line chart per queue, and the current queues table. */
    assert_non_null(strstr(d, "data-queue=\"research-train\""));
    assert_non_null(strstr(d, "data-queue=\"vision-batch\""));
    assert_non_null(strstr(d, "data-queue=\"speech-dev\""));
    assert_non_null(strstr(d, "<tr><td>speech-dev</td><td>speech</td><td>1</td><td>2</td>"
                              "<td>16</td><td>0</td><td>0</td><td>0</td></tr>"));
    assert_non_null(strstr(d, "<tr><td>research-train</td><td>research</td><td>0</td><td>8</td>"));

    char shot[200], shotarg[240];
    /* Into the build folder, so that `make test` leaves the source tree
     * alone; FAIR_UPDATE_DOCS=1 writes docs/dashboard.png instead. */
    if (getenv("FAIR_UPDATE_DOCS"))
        snprintf(shot, sizeof(shot), "%s/docs/dashboard.png", FAIR_SOURCE_DIR);
    else
        snprintf(shot, sizeof(shot), "%s/dashboard.png", FAIR_BIN_DIR);
    snprintf(shotarg, sizeof(shotarg), "--screenshot=%s", shot);
    unlink(shot);
    const char *ss[] = {"--virtual-time-budget=5000", shotarg, "--window-size=1280,900", page,
                        NULL};
    assert_int_equal(chromium(bin, ss, &dom), 0);
    struct stat sb;
    assert_int_equal(stat(shot, &sb), 0);
    assert_true(sb.st_size > 10000);
    FILE *f = fopen(shot, "rb");
    unsigned char sig[8];
    assert_non_null(f);
    assert_int_equal(fread(sig, 1, 8, f), 8);
    fclose(f);
    assert_memory_equal(sig, "\x89PNG\r\n\x1a\n", 8);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    server_pid = 0;
    fair_buf_release(&dom);
}

/* The same page as the controller serves it: the daemon, pointed at the
 * fixture ledger, against the fake API server. Last, since the controller
 * reconciles the ledger's open intervals with the (absent) live pods. */
static void test_chromium_controller(void **state)
{
    (void)state;
    const char *bin = need_chromium();
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    /* A browser sends no bearer token: the controller serves plain HTTP on
     * loopback (http.secureServing false), as for local use.
     * test_controller_auth.c shows the page through `fairsharectl
     * dashboard --server`, the way a user reaches a secured controller. */
    c.plain = true;
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 8};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    snprintf(c.ledger, sizeof c.ledger, "%s", db);
    assert_int_equal(ctl_start(&c, &fake, "dashboard"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready");
    }
    char page[300];
    snprintf(page, sizeof(page), "http://127.0.0.1:%d/?from=2026-11-01&to=2026-11-08", c.port);
    struct fair_buf dom;
    fair_buf_init(&dom, 0);
    assert_bars(dump_page(bin, page, &dom));
    fair_buf_release(&dom);
    stop_all(&fake, &c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_endpoints),
        cmocka_unit_test(test_chromium),
        cmocka_unit_test_teardown(test_chromium_controller, tc_teardown),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
