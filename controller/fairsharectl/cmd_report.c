/* fairsharectl report: GPU-hours per team, project, queue or namespace for
 * a period, from a ledger file (--db) or a running controller (--server,
 * over HTTPS with a bearer token: cmd_server.c). */
#include <curl/curl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/error.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

#include "cmd.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: fairsharectl report --from YYYY-MM-DD --to YYYY-MM-DD\n"
               "         [--by team|project|queue|namespace] [--format table|csv|json]\n"
               "         (--db FILE | --server URL)\n"
               "         [--price-per-gpu-hour X] [--price-table FILE] [--tz UTC|+HH:MM|-HH:MM]\n"
               "\n"
               "The period is [from, to): --to is exclusive. Dates are midnight in --tz\n"
               "(default UTC); full RFC 3339 times are accepted too. --price-table is a\n"
               "CSV of model,price lines (\"*\" for the default); with --server only\n"
               "--price-per-gpu-hour is supported. Exit status: 0 ok, 1 error, 2 usage.\n"
               "\n");
    fair_cmd_server_usage(f);
}

struct opts {
    const char *from, *to, *by, *format, *db, *server, *price, *price_table, *tz;
    struct fair_cmd_server srv;
};

__attribute__((format(printf, 1, 2))) static int usage_error(const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "fairsharectl report: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n\n");
    usage(stderr);
    return 2;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
    static const struct {
        const char *name;
        size_t off;
    } table[] = {
        {"--from", offsetof(struct opts, from)},
        {"--to", offsetof(struct opts, to)},
        {"--by", offsetof(struct opts, by)},
        {"--format", offsetof(struct opts, format)},
        {"--db", offsetof(struct opts, db)},
        {"--server", offsetof(struct opts, server)},
        {"--price-per-gpu-hour", offsetof(struct opts, price)},
        {"--price-table", offsetof(struct opts, price_table)},
        {"--tz", offsetof(struct opts, tz)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        }
        int r = fair_cmd_server_opt(&o->srv, argc, argv, &i);
        if (r < 0)
            return usage_error("option %s needs a value (once)", a), -1;
        if (r > 0)
            continue;
        size_t k, n = sizeof(table) / sizeof(table[0]);
        const char *val = NULL;
        for (k = 0; k < n; k++) {
            size_t len = strlen(table[k].name);
            if (strncmp(a, table[k].name, len) == 0 && (a[len] == '\0' || a[len] == '=')) {
                if (a[len] == '=')
                    val = a + len + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else
                    return usage_error("option %s needs a value", a), -1;
                break;
            }
        }
        if (k == n)
            return usage_error("unknown argument \"%s\"", a), -1;
        const char **slot = (const char **)((char *)o + table[k].off);
        if (*slot)
            return usage_error("option %s given twice", table[k].name), -1;
        *slot = val;
    }
    return 0;
}

struct fetch {
    struct fair_buf body;
};

static size_t on_data(char *p, size_t size, size_t n, void *ud)
{
    struct fetch *f = ud;
    if (fair_buf_append(&f->body, p, size * n))
        return 0; /* over the cap: curl aborts the transfer */
    return size * n;
}

static void append_param(struct fair_buf *u, CURL *c, const char *key, const char *val)
{
    if (!val)
        return;
    char *e = curl_easy_escape(c, val, 0);
    fair_buf_appendf(u, "&%s=%s", key, e ? e : "");
    curl_free(e);
}

static int from_server(const struct opts *o)
{
    struct fetch f;
    struct fair_buf url, auth;
    struct curl_slist *hdrs = NULL;
    char *token = NULL;
    int rc = fair_cmd_server_token("fairsharectl report", &o->srv, o->server, &token);
    if (rc)
        return rc;
    rc = 1;
    long status = 0;
    fair_buf_init(&f.body, 64 << 20);
    fair_buf_init(&url, 8192);
    fair_buf_init(&auth, 0);
    CURL *c = curl_easy_init();
    if (!c) {
        fprintf(stderr, "fairsharectl report: cannot start libcurl\n");
        goto out;
    }
    size_t slen = strlen(o->server);
    while (slen && o->server[slen - 1] == '/')
        slen--;
    fair_buf_appendf(&url, "%.*s/api/v1/reports/gpu-hours?from=", (int)slen, o->server);
    char *e = curl_easy_escape(c, o->from, 0);
    fair_buf_appends(&url, e ? e : "");
    curl_free(e);
    append_param(&url, c, "to", o->to);
    append_param(&url, c, "by", o->by ? o->by : "team");
    append_param(&url, c, "format", o->format ? o->format : "table");
    append_param(&url, c, "tz", o->tz);
    append_param(&url, c, "price", o->price);
    curl_easy_setopt(c, CURLOPT_URL, fair_buf_str(&url));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    if (token) {
        if (fair_buf_appendf(&auth, "Authorization: Bearer %s", token) ||
            !(hdrs = curl_slist_append(NULL, fair_buf_str(&auth)))) {
            fprintf(stderr, "fairsharectl report: out of memory\n");
            goto out;
        }
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    }
    if (o->srv.ca_file)
        curl_easy_setopt(c, CURLOPT_CAINFO, o->srv.ca_file);
    if (o->srv.insecure) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    }
    CURLcode cc = curl_easy_perform(c);
    if (cc != CURLE_OK) {
        fprintf(stderr, "fairsharectl report: GET %s: %s\n", fair_buf_str(&url),
                curl_easy_strerror(cc));
        goto out;
    }
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        fprintf(stderr, "fairsharectl report: server answered %ld: %s", status,
                fair_buf_str(&f.body));
        if (status == 401)
            fprintf(stderr, "fairsharectl report: %s\n",
                    token ? "the controller did not accept the token (expired? another "
                            "cluster's?)"
                          : "no token was sent: give --token, --token-file or a kubeconfig "
                            "whose user has a token");
        else if (status == 403)
            fprintf(stderr, "fairsharectl report: the token's user needs get on "
                            "reports.fairshare.dev: bind the ClusterRole fairshare-finance\n");
        goto out;
    }
    fwrite(f.body.data ? f.body.data : "", 1, f.body.len, stdout);
    rc = 0;
out:
    if (c)
        curl_easy_cleanup(c);
    curl_slist_free_all(hdrs);
    if (auth.data)
        memset(auth.data, 0, auth.len);
    fair_buf_release(&auth);
    if (token)
        memset(token, 0, strlen(token));
    fair_free(token);
    fair_buf_release(&f.body);
    fair_buf_release(&url);
    return rc;
}

int fair_cmd_report(int argc, char **argv)
{
    struct opts o = {0};
    struct fair_error err = {0};
    struct fair_prices prices;
    struct fair_ledger *l = NULL;
    struct fair_report *r = NULL;
    struct fair_buf out;
    int tz = 0, by = FAIR_REPORT_BY_TEAM, fmt = FAIR_REPORT_TABLE, rc;
    fair_prices_init(&prices);
    fair_buf_init(&out, 0);

    rc = parse_args(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (!o.from || !o.to)
        return usage_error("%s", "--from and --to are required");
    if (!o.db == !o.server)
        return usage_error("%s", "give exactly one of --db FILE and --server URL");
    if (o.tz && fair_report_tz_parse(o.tz, &tz, &err))
        return usage_error("%s", err.msg);
    if (o.by && (by = fair_report_by_parse(o.by)) < 0)
        return usage_error("bad --by \"%s\": use team, project, queue or namespace", o.by);
    if (o.format && (fmt = fair_report_format_parse(o.format)) < 0)
        return usage_error("bad --format \"%s\": use table, csv or json", o.format);
    struct fair_report_params p = {0};
    p.by = by;
    p.tz_min = tz;
    if (fair_report_date_parse(o.from, tz, &p.from_ms, &err) ||
        fair_report_date_parse(o.to, tz, &p.to_ms, &err))
        return usage_error("%s", err.msg);
    if (p.to_ms <= p.from_ms)
        return usage_error("%s", "--to must be after --from");
    if (p.to_ms - p.from_ms > FAIR_REPORT_MAX_PERIOD_MS)
        return usage_error("%s", "the period is longer than 100 years");
    if (o.price && fair_price_parse(o.price, &prices.default_micro, &err))
        return usage_error("%s", err.msg);
    if (o.server) {
        if (o.price_table)
            return usage_error("%s", "--price-table works with --db only");
        return from_server(&o);
    }
    if (o.srv.kubeconfig || o.srv.context || o.srv.token || o.srv.token_file || o.srv.ca_file ||
        o.srv.insecure)
        return usage_error("%s", "--token, --kubeconfig, --ca-file and the like work with "
                                 "--server only");
    rc = 1;
    if (o.price_table && fair_prices_load(&prices, o.price_table, &err)) {
        fprintf(stderr, "fairsharectl report: %s\n", err.msg);
        goto out;
    }
    struct fair_ledger_options lo;
    fair_ledger_options_init(&lo);
    lo.path = o.db;
    lo.readonly = 1;
    if (fair_ledger_open(&lo, &l, &err) || fair_report_run(l, &p, &r, &err) ||
        fair_report_render(r, fmt, (o.price || o.price_table) ? &prices : NULL, &out, &err)) {
        fprintf(stderr, "fairsharectl report: %s\n", err.msg);
        goto out;
    }
    if (!r->exact)
        fprintf(stderr, "fairsharectl report: warning: the period's edges fall in pruned raw "
                        "data; use dates at UTC midnight for exact figures\n");
    fwrite(fair_buf_str(&out), 1, out.len, stdout);
    rc = 0;
out:
    fair_report_free(r);
    fair_ledger_free(l);
    fair_prices_release(&prices);
    fair_buf_release(&out);
    return rc;
}
