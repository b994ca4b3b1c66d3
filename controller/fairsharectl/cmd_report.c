/* fairsharectl report: GPU-hours per team, project, queue or namespace for
 * a period, from a ledger file (--db) or a running controller (--server,
 * over HTTPS with a bearer token: cmd_server.c). */
#include <curl/curl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "base/alloc.h"
#include "base/buf.h"
#include "base/clock.h"
#include "base/error.h"
#include "httpd/auth.h"
#include "kube/config.h"
#include "ledger/ledger.h"
#include "ledger/report.h"

#include "cmd.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: fairsharectl report [--from DATE] [--to DATE] [--tz ZONE]\n"
        "         [--by team|project|queue|namespace[,model]|user] [-o|--format table|csv|json]\n"
        "         [--unit hours|days] [--percent]\n"
        "         (--db FILE | --server URL | --via-apiserver [--controller-namespace NS]\n"
        "          [--controller-port PORT])\n"
        "         [--price-per-gpu-hour X] [--price-table FILE]\n"
        "\n"
        "The period is [from, to): --to is exclusive. Without --from and --to it\n"
        "is yesterday. A DATE is midnight starting a day in --tz: YYYY-MM-DD, today,\n"
        "yesterday, -Nd (N days ago), this-month or last-month (the first of the\n"
        "month); or a full RFC 3339 time. Without --to the period ends where\n"
        "--from's name does (--from last-month: the whole month; today: tomorrow),\n"
        "else at midnight starting today. ZONE: UTC (default), +HH:MM, -HH:MM or an\n"
        "IANA name such as Europe/Berlin (days of 23 or 25 hours across DST).\n"
        "--by user groups by the pod's creator, recorded at bind time from the label\n"
        "that the controller's ledger.creatorLabel names ((none) without it).\n"
        "--unit days shows GPU-days; --percent adds each row's share of the total\n"
        "GPU time. --price-table is a CSV of model,price lines (\"*\" for the\n"
        "default). --via-apiserver reaches the controller through the API server's\n"
        "service proxy (services/https:fairshare-controller:PORT in NS, default\n"
        "fairshare-system and 8080) with the kubeconfig's server, CA and credentials;\n"
        "the user's token (--token, --token-file or the kubeconfig's) also goes in\n"
        "X-Fairshare-Authorization, which the proxy passes on; the user needs get on\n"
        "services/proxy there. Exit status: 0 ok, 1 error, 2 usage.\n"
        "\n");
    fair_cmd_server_usage(f);
}

struct opts {
    const char *from, *to, *by, *format, *db, *server, *price, *price_table, *tz, *unit;
    const char *ctl_ns, *ctl_port;
    int percent, via;
    struct fair_cmd_server srv;
};

/* ---- time zones by IANA name, through the C library ----
 * fairsharectl is single-threaded, so setting TZ once is safe here; the
 * report code only sees the offset at each instant. */
static int libc_offset(void *ctx, int64_t utc_ms, int *min_east)
{
    (void)ctx;
    time_t t = (time_t)(utc_ms >= 0 ? utc_ms / 1000 : -((-utc_ms + 999) / 1000));
    struct tm tm;
    if (!localtime_r(&t, &tm))
        return -1;
    *min_east = (int)(tm.tm_gmtoff / 60);
    return 0;
}

/* name: "Area/City" as in the tz database; checked against the zone files
 * ($TZDIR or /usr/share/zoneinfo), since the C library takes an unknown
 * name for UTC without a word. */
static int iana_zone(const char *name, struct fair_report_zone *z, struct fair_error *err)
{
    size_t n = strlen(name);
    if (n == 0 || n > 64 || name[0] == '/' || name[0] == '.' || strstr(name, "..") ||
        strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789/_+-") != n)
        return fair_error_set(err, FAIR_EINVAL,
                              "bad time zone \"%.40s\": use UTC, +HH:MM, -HH:MM or an IANA "
                              "name such as Europe/Berlin",
                              name);
    const char *dir = getenv("TZDIR");
    char path[512], magic[4];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", name);
    FILE *f = fopen(path, "rb");
    struct stat st;
    int ok = f && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && fread(magic, 1, 4, f) == 4 &&
             memcmp(magic, "TZif", 4) == 0;
    if (f)
        fclose(f);
    if (!ok)
        return fair_error_set(err, FAIR_EINVAL,
                              "unknown time zone \"%.40s\": no zone file %.300s (is the "
                              "tzdata package installed?); +HH:MM works everywhere",
                              name, path);
    if (setenv("TZ", name, 1))
        return fair_error_set(err, FAIR_ENOMEM, "cannot set TZ");
    tzset();
    z->fixed_min = 0;
    z->offset_at = libc_offset;
    z->ctx = NULL;
    return 0;
}

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
        /* kubectl's spelling of the same choice */
        {"--output", offsetof(struct opts, format)},
        {"-o", offsetof(struct opts, format)},
        {"--db", offsetof(struct opts, db)},
        {"--server", offsetof(struct opts, server)},
        {"--price-per-gpu-hour", offsetof(struct opts, price)},
        {"--price-table", offsetof(struct opts, price_table)},
        {"--tz", offsetof(struct opts, tz)},
        {"--unit", offsetof(struct opts, unit)},
        {"--controller-namespace", offsetof(struct opts, ctl_ns)},
        {"--controller-port", offsetof(struct opts, ctl_port)},
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 1;
        }
        if (strcmp(a, "--percent") == 0 || strcmp(a, "--percent=true") == 0) {
            o->percent = 1;
            continue;
        }
        if (strcmp(a, "--via-apiserver") == 0 || strcmp(a, "--via-apiserver=true") == 0) {
            o->via = 1;
            continue;
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

/* The resolved query: instants as RFC 3339 UTC times (the client's
 * "yesterday", not the server's), tz for printing. */
struct server_query {
    char from[48], to[48], tz[8];
    const char *prices; /* "MODEL:X,..." or NULL */
};

static int from_server(const struct opts *o, const struct server_query *sq)
{
    struct fetch f;
    struct fair_buf url, auth, xauth;
    struct curl_slist *hdrs = NULL;
    char *token = NULL, *base = NULL;
    struct fair_kconfig kc;
    fair_kconfig_init(&kc);
    fair_buf_init(&xauth, 0);
    int rc;
    if (o->via) {
        rc = fair_cmd_via_apiserver("fairsharectl report", &o->srv, &kc, &token);
        char *path = rc ? NULL : fair_cmd_via_path(o->ctl_ns, o->ctl_port);
        if (!rc && path) {
            size_t n = strlen(kc.server) + strlen(path) + 1;
            if ((base = fair_malloc(n)))
                snprintf(base, n, "%s%s", kc.server, path);
        }
        if (!rc && !base)
            rc = 1;
        fair_free(path);
    } else {
        rc = fair_cmd_server_token("fairsharectl report", &o->srv, o->server, &token);
    }
    if (rc) {
        if (token)
            memset(token, 0, strlen(token));
        fair_free(token);
        fair_kconfig_release(&kc);
        return rc;
    }
    const char *server = o->via ? base : o->server;
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
    size_t slen = strlen(server);
    while (slen && server[slen - 1] == '/')
        slen--;
    fair_buf_appendf(&url, "%.*s/api/v1/reports/gpu-hours?from=", (int)slen, server);
    char *e = curl_easy_escape(c, sq->from, 0);
    fair_buf_appends(&url, e ? e : "");
    curl_free(e);
    append_param(&url, c, "to", sq->to);
    append_param(&url, c, "by", o->by ? o->by : "team");
    append_param(&url, c, "format", o->format ? o->format : "table");
    append_param(&url, c, "tz", sq->tz[0] ? sq->tz : NULL);
    append_param(&url, c, "price", o->price);
    append_param(&url, c, "prices", sq->prices);
    append_param(&url, c, "unit", o->unit);
    append_param(&url, c, "percent", o->percent ? "true" : NULL);
    curl_easy_setopt(c, CURLOPT_URL, fair_buf_str(&url));
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &f);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https,http");
    if (o->via) {
        /* The API server hop: the kubeconfig's own credentials and CA; the
         * controller hop: the user's token in X-Fairshare-Authorization. */
        struct curl_slist *h2 = NULL;
        if ((kc.token && fair_buf_appendf(&auth, "Authorization: Bearer %s", kc.token)) ||
            fair_buf_appendf(&xauth, FAIR_AUTH_ALT_HEADER ": Bearer %s", token) ||
            (kc.token && !(hdrs = curl_slist_append(NULL, fair_buf_str(&auth)))) ||
            !(h2 = curl_slist_append(hdrs, fair_buf_str(&xauth)))) {
            fprintf(stderr, "fairsharectl report: out of memory\n");
            goto out;
        }
        hdrs = h2;
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
        curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "https");
        if (kc.ca) {
            struct curl_blob b = {kc.ca, kc.ca_len, CURL_BLOB_NOCOPY};
            curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &b);
        }
        if (kc.cert && kc.key) {
            struct curl_blob cb = {kc.cert, kc.cert_len, CURL_BLOB_NOCOPY};
            struct curl_blob kb = {kc.key, kc.key_len, CURL_BLOB_NOCOPY};
            curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cb);
            curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
            curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &kb);
            curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
        }
        if (kc.insecure) {
            curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
        }
    } else if (token) {
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
                    o->via  ? "the API server (the kubeconfig's credentials) or the "
                              "controller (the token) refused: see the answer above"
                    : token ? "the controller did not accept the token (expired? another "
                              "cluster's?)"
                            : "no token was sent: give --token, --token-file or a kubeconfig "
                              "whose user has a token");
        else if (status == 403)
            fprintf(stderr,
                    "fairsharectl report: the token's user needs get on "
                    "reports.fairshare.dev: bind the ClusterRole fairshare-finance%s\n",
                    o->via ? " (and, for --via-apiserver, get on services/proxy in the "
                             "controller's namespace)"
                           : "");
        else if (o->via && (status == 404 || status == 503))
            fprintf(stderr,
                    "fairsharectl report: is the controller's Service fairshare-controller "
                    "in namespace %s, port %s? (--controller-namespace, --controller-port)\n",
                    o->ctl_ns, o->ctl_port);
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
    if (xauth.data)
        memset(xauth.data, 0, xauth.len);
    fair_buf_release(&xauth);
    fair_free(base);
    fair_kconfig_release(&kc);
    if (token)
        memset(token, 0, strlen(token));
    fair_free(token);
    fair_buf_release(&f.body);
    fair_buf_release(&url);
    return rc;
}

static void offset_format(int min, char *out, size_t n)
{
    int a = min < 0 ? -min : min;
    if (min == 0)
        snprintf(out, n, "UTC");
    else
        snprintf(out, n, "%c%02d:%02d", min < 0 ? '-' : '+', a / 60 % 100, a % 60);
}

int fair_cmd_report(int argc, char **argv)
{
    struct opts o = {0};
    struct fair_error err = {0};
    struct fair_prices prices;
    struct fair_ledger *l = NULL;
    struct fair_report *r = NULL;
    struct fair_buf out, param;
    struct fair_report_zone zone = {0};
    struct fair_report_style st = {0};
    int by = FAIR_REPORT_BY_TEAM, fmt = FAIR_REPORT_TABLE, unit = FAIR_REPORT_HOURS, rc;
    fair_prices_init(&prices);
    fair_buf_init(&out, 0);
    fair_buf_init(&param, 8192);

    rc = parse_args(argc, argv, &o);
    if (rc)
        return rc > 0 ? 0 : 2;
    if (!!o.db + !!o.server + !!o.via != 1)
        return usage_error("%s", "give exactly one of --db FILE, --server URL and --via-apiserver");
    if ((o.ctl_ns || o.ctl_port) && !o.via)
        return usage_error("%s", "--controller-namespace and --controller-port work with "
                                 "--via-apiserver only");
    if (o.via && (o.srv.ca_file || o.srv.insecure))
        return usage_error("%s", "--via-apiserver trusts the kubeconfig's CA: --ca-file and "
                                 "--insecure-skip-tls-verify work with --server only");
    char vmsg[128];
    if (fair_cmd_via_target(&o.ctl_ns, &o.ctl_port, vmsg, sizeof vmsg))
        return usage_error("%s", vmsg);
    if (o.tz && fair_report_tz_parse(o.tz, &zone.fixed_min, &err) && iana_zone(o.tz, &zone, &err))
        return usage_error("%s", err.msg);
    if (o.by && (by = fair_report_by_parse(o.by)) < 0)
        return usage_error("bad --by \"%s\": use team, project, queue, namespace or user, the "
                           "first four optionally followed by \",model\" (team,model)",
                           o.by);
    if (o.format && (fmt = fair_report_format_parse(o.format)) < 0)
        return usage_error("bad --format \"%s\": use table, csv or json", o.format);
    if (o.unit && (unit = fair_report_unit_parse(o.unit)) < 0)
        return usage_error("bad --unit \"%s\": use hours or days", o.unit);
    struct fair_report_params p = {0};
    p.by = by & ~FAIR_REPORT_BY_MODEL;
    p.by_model = (by & FAIR_REPORT_BY_MODEL) != 0;
    /* The period: --from defaults to yesterday; --to to the end of what
     * --from names, else midnight starting today, in the zone. */
    int64_t now = fair_now_ms(fair_clock_system()), span_end, ignored, today;
    if (fair_report_date_resolve(o.from ? o.from : "yesterday", &zone, now, &p.from_ms, &span_end,
                                 &err))
        return usage_error("--from: %s", err.msg);
    if (o.to) {
        if (fair_report_date_resolve(o.to, &zone, now, &p.to_ms, &ignored, &err))
            return usage_error("--to: %s", err.msg);
    } else if (span_end != INT64_MIN) {
        p.to_ms = span_end;
    } else {
        if (fair_report_date_resolve("today", &zone, now, &today, &ignored, &err))
            return usage_error("%s", err.msg);
        p.to_ms = today;
    }
    if (p.to_ms <= p.from_ms)
        return usage_error("%s", o.to ? "--to must be after --from"
                                      : "--from must be before today (or give --to)");
    if (p.to_ms - p.from_ms > FAIR_REPORT_MAX_PERIOD_MS)
        return usage_error("%s", "the period is longer than 100 years");
    if (fair_report_zone_offset(&zone, p.from_ms, &p.tz_min, &err) ||
        fair_report_zone_offset(&zone, p.to_ms, &p.tz_to_min, &err))
        return usage_error("%s", err.msg);
    p.tz_to_set = p.tz_to_min != p.tz_min;
    if (o.price && fair_price_parse(o.price, &prices.default_micro, &err))
        return usage_error("%s", err.msg);
    rc = 1;
    if (o.price_table && fair_prices_load(&prices, o.price_table, &err)) {
        fprintf(stderr, "fairsharectl report: %s\n", err.msg);
        goto out;
    }
    if (o.server || o.via) {
        struct server_query sq = {0};
        fair_time_format_rfc3339(p.from_ms, sq.from, sizeof sq.from);
        fair_time_format_rfc3339(p.to_ms, sq.to, sizeof sq.to);
        offset_format(p.tz_min, sq.tz, sizeof sq.tz);
        if (o.price_table) {
            if (fair_prices_to_param(&prices, &param, &err)) {
                fprintf(stderr, "fairsharectl report: --price-table: %s\n", err.msg);
                goto out;
            }
            if (param.len >= FAIR_QUERY_VALUE_MAX) {
                fprintf(stderr,
                        "fairsharectl report: --price-table is too large to send to a server "
                        "(%zu bytes as MODEL:PRICE,..., at most %d): use --db on a backup\n",
                        param.len, FAIR_QUERY_VALUE_MAX - 1);
                goto out;
            }
            sq.prices = fair_buf_str(&param);
        }
        rc = from_server(&o, &sq);
        goto out;
    }
    if (o.srv.kubeconfig || o.srv.context || o.srv.token || o.srv.token_file || o.srv.ca_file ||
        o.srv.insecure) {
        rc = usage_error("%s", "--token, --kubeconfig, --ca-file and the like work with "
                               "--server only");
        goto out;
    }
    struct fair_ledger_options lo;
    fair_ledger_options_init(&lo);
    lo.path = o.db;
    lo.readonly = 1;
    st.format = (enum fair_report_format)fmt;
    st.prices = (o.price || o.price_table) ? &prices : NULL;
    st.unit = (enum fair_report_unit)unit;
    st.percent = o.percent;
    if (fair_ledger_open(&lo, &l, &err) || fair_report_run(l, &p, &r, &err) ||
        fair_report_render_style(r, &st, &out, &err)) {
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
    fair_buf_release(&param);
    return rc;
}
