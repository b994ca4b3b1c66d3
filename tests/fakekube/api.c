/* fakekube's HTTP API: authentication, fault injection, routing of the
 * Kubernetes REST paths, and the verbs (get, list, create, update, merge
 * patch, delete, the binding/eviction/status subresources). Semantics
 * follow the real kube-apiserver; docs/fakekube.md lists the sources. */
#include "fakekube.h"

#include "base/alloc.h"
#include "base/buf.h"
#include "base/log.h"
#include "base/quantity.h"

#include <ctype.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdbool.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/queue.h>

#define MAX_SEGS 12

struct fk_deferred {
    struct fk_deferred *next, *prev;
    struct fk_server *srv;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    struct event *ev;
    int code;
    struct evbuffer *body;
    int held; /* sent when fk_release_held() runs (or after an hour) */
};

/* ---- replies ---- */

json_t *fk_status(int code, const char *reason, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    json_t *st = json_pack("{s:s,s:s,s:{},s:s,s:s,s:s,s:i}", "kind", "Status", "apiVersion", "v1",
                           "metadata", "status", code < 400 ? "Success" : "Failure", "message", msg,
                           "reason", reason, "code", code);
    if (st && code < 400) {
        json_object_del(st, "message");
        json_object_del(st, "reason");
    }
    return st;
}

static json_t *status_details(json_t *st, const char *name, const char *group, const char *kind)
{
    if (!st)
        return st;
    json_t *d = json_object();
    if (name && *name)
        json_object_set_new(d, "name", json_string(name));
    if (group && *group)
        json_object_set_new(d, "group", json_string(group));
    if (kind)
        json_object_set_new(d, "kind", json_string(kind));
    json_object_set_new(st, "details", d);
    return st;
}

static const char *reason_phrase(int code)
{
    switch (code) {
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 409:
        return "Conflict";
    case 410:
        return "Gone";
    case 413:
        return "Request Entity Too Large";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 504:
        return "Gateway Timeout";
    default:
        return "Status";
    }
}

static void deferred_unlink(struct fk_server *s, struct fk_deferred *d)
{
    if (d->prev)
        d->prev->next = d->next;
    else
        s->deferred = d->next;
    if (d->next)
        d->next->prev = d->prev;
}

static void deferred_free(struct fk_deferred *d)
{
    if (d->ev)
        event_free(d->ev);
    if (d->body)
        evbuffer_free(d->body);
    fair_free(d);
}

static void deferred_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fk_deferred *d = arg;
    deferred_unlink(d->srv, d);
    evhttp_send_reply(d->req, d->code, reason_phrase(d->code), d->body);
    deferred_free(d);
}

void fk_deferred_cancel_conn(struct fk_server *s, struct evhttp_connection *evcon)
{
    struct fk_deferred *d = s->deferred, *next;
    for (; d; d = next) {
        next = d->next;
        if (d->evcon != evcon)
            continue;
        deferred_unlink(s, d);
        if (evhttp_request_get_connection(d->req) == NULL)
            evhttp_request_free(d->req);
        deferred_free(d);
    }
}

void fk_deferred_release_all(struct fk_server *s)
{
    while (s->deferred) {
        struct fk_deferred *d = s->deferred;
        deferred_unlink(s, d);
        deferred_free(d);
    }
}

/* jansson writes token by token: gather them in a flat buffer and hand
 * them to the evbuffer in large pieces (evbuffer_add per token is slow). */
struct dump_sink {
    struct fair_buf flat;
    struct evbuffer *out;
    int failed;
};

static int dump_to_sink(const char *data, size_t len, void *arg)
{
    struct dump_sink *d = arg;
    if (fair_buf_append(&d->flat, data, len) != 0) {
        d->failed = 1;
        return -1;
    }
    return 0;
}

static void sink_flush(struct dump_sink *d, size_t threshold)
{
    if (d->flat.len >= threshold && d->flat.len > 0) {
        if (evbuffer_add(d->out, d->flat.data, d->flat.len) != 0)
            d->failed = 1;
        fair_buf_reset(&d->flat);
    }
}

/* Sends buf (taken) with code, after delay_ms (0: now); held: only when
 * fk_release_held() runs. */
static void reply_buf_ms(struct fk_server *s, struct evhttp_request *req, int code,
                         struct evbuffer *buf, int delay_ms, int held)
{
    if (held)
        delay_ms = 3600 * 1000;
    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "application/json");
    if (delay_ms > 0) {
        struct fk_deferred *d = fair_calloc(1, sizeof(*d));
        if (d) {
            d->srv = s;
            d->req = req;
            d->evcon = evhttp_request_get_connection(req);
            d->code = code;
            d->body = buf;
            d->held = held;
            d->ev = evtimer_new(s->base, deferred_cb, d);
            if (d->ev) {
                evhttp_connection_set_closecb(d->evcon, fk_on_close, s);
                struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
                evtimer_add(d->ev, &tv);
                d->next = s->deferred;
                if (s->deferred)
                    s->deferred->prev = d;
                s->deferred = d;
                return;
            }
            d->body = NULL;
            deferred_free(d);
        }
    }
    evhttp_send_reply(req, code, reason_phrase(code), buf);
    evbuffer_free(buf);
}

/* Sends buf (taken) with code, after the latency when delay is set. */
static void reply_buf(struct fk_server *s, struct evhttp_request *req, int code,
                      struct evbuffer *buf, int delay)
{
    reply_buf_ms(s, req, code, buf, delay ? s->latency_ms : 0, 0);
}

static void reply_raw(struct fk_server *s, struct evhttp_request *req, int code, const char *data,
                      size_t len, int delay)
{
    struct evbuffer *buf = evbuffer_new();
    if (!buf) {
        evhttp_send_error(req, 500, NULL);
        return;
    }
    evbuffer_add(buf, data, len);
    reply_buf(s, req, code, buf, delay);
}

static void reply_json_ms(struct fk_server *s, struct evhttp_request *req, int code, json_t *body,
                          int delay_ms, int held);

static void reply_json(struct fk_server *s, struct evhttp_request *req, int code, json_t *body,
                       int delay)
{
    reply_json_ms(s, req, code, body, delay ? s->latency_ms : 0, 0);
}

void fk_reply_after(struct fk_server *s, struct evhttp_request *req, int code, json_t *body,
                    int delay_ms)
{
    reply_json_ms(s, req, code, body, delay_ms, 0);
}

void fk_reply_held(struct fk_server *s, struct evhttp_request *req, int code, json_t *body)
{
    reply_json_ms(s, req, code, body, 0, 1);
}

size_t fk_release_held(struct fk_server *s)
{
    size_t n = 0;
    for (struct fk_deferred *d = s->deferred; d; d = d->next)
        if (d->held) {
            d->held = 0;
            event_active(d->ev, EV_TIMEOUT, 1);
            n++;
        }
    return n;
}

static void reply_json_ms(struct fk_server *s, struct evhttp_request *req, int code, json_t *body,
                          int delay_ms, int held)
{
    struct evbuffer *buf = body ? evbuffer_new() : NULL;
    struct dump_sink sink = {.out = buf};
    fair_buf_init(&sink.flat, 0);
    if (buf && json_dump_callback(body, dump_to_sink, &sink, JSON_COMPACT) == 0)
        sink_flush(&sink, 0);
    else
        sink.failed = 1;
    fair_buf_release(&sink.flat);
    if (sink.failed) {
        static const char oom[] = "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},"
                                  "\"status\":\"Failure\",\"message\":\"out of memory\","
                                  "\"reason\":\"InternalError\",\"code\":500}";
        json_decref(body);
        if (buf)
            evbuffer_free(buf);
        reply_raw(s, req, 500, oom, sizeof(oom) - 1, 0);
        return;
    }
    json_decref(body);
    reply_buf_ms(s, req, code, buf, delay_ms, held);
}

void fk_reply(struct fk_server *s, struct evhttp_request *req, int code, json_t *body)
{
    reply_json(s, req, code, body, 1);
}

/* ---- small helpers ---- */

static const char *qualified(const struct fk_type *t, char *buf, size_t n)
{
    if (t->group[0])
        snprintf(buf, n, "%s.%s", t->plural, t->group);
    else
        snprintf(buf, n, "%s", t->plural);
    return buf;
}

static void reply_not_found(struct fk_server *s, struct evhttp_request *req,
                            const struct fk_type *t, const char *name)
{
    char q[160];
    json_t *st =
        fk_status(404, "NotFound", "%s \"%s\" not found", qualified(t, q, sizeof(q)), name);
    fk_reply(s, req, 404, status_details(st, name, t->group, t->plural));
}

static void reply_conflict(struct fk_server *s, struct evhttp_request *req, const struct fk_type *t,
                           const char *name)
{
    char q[160];
    json_t *st = fk_status(409, "Conflict",
                           "Operation cannot be fulfilled on %s \"%s\": the object has been "
                           "modified; please apply your changes to the latest version and try "
                           "again",
                           qualified(t, q, sizeof(q)), name);
    fk_reply(s, req, 409, status_details(st, name, t->group, t->plural));
}

/* A metav1.LabelSelector's matchExpressions as the API server validates
 * them (ValidateLabelSelectorRequirement): the operator is In, NotIn,
 * Exists or DoesNotExist; In and NotIn take values, the others none. On a
 * violation, fills field (under path) and detail and returns true. */
static bool selector_invalid(const json_t *sel, const char *path, char *field, size_t nfield,
                             char *detail, size_t ndetail)
{
    const json_t *me = json_is_object(sel) ? json_object_get(sel, "matchExpressions") : NULL;
    size_t i;
    const json_t *e;
    json_array_foreach(me, i, e)
    {
        const char *op = json_string_value(json_object_get(e, "operator"));
        size_t nv = json_array_size(json_object_get(e, "values"));
        bool set = op && (!strcmp(op, "In") || !strcmp(op, "NotIn"));
        bool exists = op && (!strcmp(op, "Exists") || !strcmp(op, "DoesNotExist"));
        if (!set && !exists) {
            snprintf(field, nfield, "%s.matchExpressions[%zu].operator", path, i);
            snprintf(detail, ndetail, "Invalid value: \"%s\": not a valid selector operator",
                     op ? op : "");
            return true;
        }
        if (set != (nv > 0)) {
            snprintf(field, nfield, "%s.matchExpressions[%zu].values", path, i);
            snprintf(detail, ndetail, "%s",
                     set ? "Required value: must be specified when `operator` is 'In' or 'NotIn'"
                         : "Forbidden: may not be specified when `operator` is 'Exists' or "
                           "'DoesNotExist'");
            return true;
        }
    }
    return false;
}

static void reply_invalid(struct fk_server *s, struct evhttp_request *req, const struct fk_type *t,
                          const char *name, const char *field, const char *detail)
{
    json_t *st =
        fk_status(422, "Invalid", "%s \"%s\" is invalid: %s: %s", t->kind, name, field, detail);
    status_details(st, name, t->group, t->kind);
    json_t *causes = json_pack("[{s:s,s:s,s:s}]", "reason", "FieldValueInvalid", "message", detail,
                               "field", field);
    if (st && causes)
        json_object_set_new(json_object_get(st, "details"), "causes", causes);
    else
        json_decref(causes);
    fk_reply(s, req, 422, st);
}

static int json_depth_ok(const json_t *v, int depth)
{
    if (depth > FK_MAX_JSON_DEPTH)
        return 0;
    if (json_is_object(v)) {
        const char *k;
        json_t *c;
        json_object_foreach((json_t *)v, k, c)
        {
            (void)k;
            if (!json_depth_ok(c, depth + 1))
                return 0;
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *c;
        json_array_foreach(v, i, c)
        {
            if (!json_depth_ok(c, depth + 1))
                return 0;
        }
    }
    return 1;
}

/* Reads the request body as a JSON object; replies 400 and returns NULL on
 * failure. New reference. */
json_t *fk_read_body(struct fk_server *s, struct evhttp_request *req)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    if (len > FK_MAX_BODY) {
        fk_reply(s, req, 413, fk_status(413, "RequestEntityTooLarge", "request entity too large"));
        return NULL;
    }
    const char *data = (const char *)evbuffer_pullup(in, -1);
    json_error_t jerr;
    json_t *v = json_loadb(data ? data : "", len, 0, &jerr);
    if (!v) {
        fk_reply(s, req, 400,
                 fk_status(400, "BadRequest", "the object provided is unrecognized: %s (line %d)",
                           jerr.text, jerr.line));
        return NULL;
    }
    if (!json_is_object(v) || !json_depth_ok(v, 0)) {
        json_decref(v);
        fk_reply(s, req, 400,
                 fk_status(400, "BadRequest",
                           "the object provided is unrecognized: not a JSON object or nested "
                           "deeper than %d",
                           FK_MAX_JSON_DEPTH));
        return NULL;
    }
    return v;
}

static json_t *meta_of(json_t *obj)
{
    json_t *m = json_object_get(obj, "metadata");
    if (!json_is_object(m)) {
        m = json_object();
        json_object_set_new(obj, "metadata", m);
    }
    return m;
}

static int valid_name(const char *n, int label)
{
    size_t len = strlen(n);
    if (len == 0 || len > (label ? 63u : 253u))
        return 0;
    for (size_t i = 0; i < len; i++) {
        char c = n[i];
        int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
        if (alnum)
            continue;
        if (c == '-' && i > 0 && i + 1 < len && n[i - 1] != '.' && n[i + 1] != '.')
            continue;
        if (c == '.' && !label && i > 0 && i + 1 < len && n[i - 1] != '-' && n[i + 1] != '-')
            continue;
        return 0;
    }
    return 1;
}

static long query_long(struct evkeyvalq *q, const char *k, long def, int *bad)
{
    const char *v = evhttp_find_header(q, k);
    if (!v || !*v)
        return def;
    char *end;
    long r = strtol(v, &end, 10);
    if (*end || r < 0) {
        *bad = 1;
        return def;
    }
    return r;
}

/* ---- continue tokens: base64url of {"v":..,"rv":N,"start":key,"c":E} ----
 * E counts the compactions before the token was made: a token from before
 * a compaction has expired, one made after it (at the same rv) has not. */

static char *continue_encode(const struct fk_server *s, uint64_t rv, const char *key)
{
    char *res = NULL;
    json_t *t = json_pack("{s:s,s:I,s:s,s:I}", "v", "meta.k8s.io/v1", "rv", (json_int_t)rv, "start",
                          key, "c", (json_int_t)s->compactions);
    char *txt = t ? json_dumps(t, JSON_COMPACT) : NULL;
    json_decref(t);
    if (!txt)
        return NULL;
    size_t len = strlen(txt);
    res = fair_malloc(4 * ((len + 2) / 3) + 1);
    if (res) {
        int n = EVP_EncodeBlock((unsigned char *)res, (unsigned char *)txt, (int)len);
        while (n > 0 && res[n - 1] == '=')
            n--;
        res[n] = '\0';
        for (int i = 0; i < n; i++)
            res[i] = res[i] == '+' ? '-' : res[i] == '/' ? '_' : res[i];
    }
    free(txt);
    return res;
}

static int continue_decode(const char *tok, uint64_t *rv, uint64_t *epoch, char *key, size_t keyn)
{
    size_t len = strlen(tok);
    if (len == 0 || len > 4096)
        return -1;
    char b64[4100];
    size_t j = 0;
    for (size_t i = 0; i < len; i++) {
        char c = tok[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        else if (!isalnum((unsigned char)c) && c != '+' && c != '/' && c != '=')
            return -1;
        b64[j++] = c;
    }
    while (j % 4)
        b64[j++] = '=';
    b64[j] = '\0';
    unsigned char raw[3100];
    int n = EVP_DecodeBlock(raw, (unsigned char *)b64, (int)j);
    if (n < 0)
        return -1;
    while (n > 0 && raw[n - 1] == '\0')
        n--;
    json_error_t jerr;
    json_t *t = json_loadb((const char *)raw, (size_t)n, 0, &jerr);
    int rc = -1;
    json_int_t r = json_integer_value(json_object_get(t, "rv"));
    const char *start = json_string_value(json_object_get(t, "start"));
    json_int_t c = json_integer_value(json_object_get(t, "c"));
    if (t && r > 0 && start && strlen(start) < keyn) {
        *rv = (uint64_t)r;
        *epoch = c > 0 ? (uint64_t)c : 0;
        snprintf(key, keyn, "%s", start);
        rc = 0;
    }
    json_decref(t);
    return rc;
}

/* ---- routing ---- */

struct route {
    int type;
    const char *ns;   /* NULL for cluster-scoped or all namespaces */
    const char *name; /* NULL for collections */
    const char *sub;  /* subresource or NULL */
    int watch_path;   /* the legacy /watch/ prefix */
};

static int split_path(char *path, char **segs, int max)
{
    int n = 0;
    char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        if (!*p)
            break;
        if (n == max)
            return -1;
        segs[n++] = p;
        while (*p && *p != '/')
            p++;
        if (*p)
            *p++ = '\0';
    }
    return n;
}

/* Returns 0 and fills r, or -1 for an unknown path. */
static int parse_route(struct fk_server *s, char **seg, int n, struct route *r)
{
    memset(r, 0, sizeof(*r));
    const char *group, *version;
    int i;
    if (n >= 2 && strcmp(seg[0], "api") == 0) {
        group = "";
        version = seg[1];
        i = 2;
    } else if (n >= 3 && strcmp(seg[0], "apis") == 0) {
        group = seg[1];
        version = seg[2];
        i = 3;
    } else {
        return -1;
    }
    if (i < n && strcmp(seg[i], "watch") == 0) {
        r->watch_path = 1;
        i++;
    }
    int rest = n - i;
    if (rest >= 3 && strcmp(seg[i], "namespaces") == 0) {
        int t = fk_type_find(s, group, version, seg[i + 2]);
        if (t >= 0 && s->types[t].namespaced) {
            if (rest > 5)
                return -1;
            r->type = t;
            r->ns = seg[i + 1];
            r->name = rest >= 4 ? seg[i + 3] : NULL;
            r->sub = rest >= 5 ? seg[i + 4] : NULL;
            return 0;
        }
    }
    if (rest < 1 || rest > 3)
        return -1;
    int t = fk_type_find(s, group, version, seg[i]);
    if (t < 0)
        return -1;
    if (s->types[t].namespaced && rest > 1)
        return -1;
    r->type = t;
    r->name = rest >= 2 ? seg[i + 1] : NULL;
    r->sub = rest >= 3 ? seg[i + 2] : NULL;
    return 0;
}

/* ---- list and get ---- */

static void handle_list(struct fk_server *s, struct evhttp_request *req, const struct route *r,
                        struct evkeyvalq *q)
{
    const struct fk_type *t = &s->types[r->type];
    struct fk_selector labels, fields;
    char err[256];
    int bad = 0;
    json_t *items = NULL;
    char *cont = NULL;
    memset(&labels, 0, sizeof(labels));
    memset(&fields, 0, sizeof(fields));

    if (fk_selector_parse(evhttp_find_header(q, "labelSelector"), 0, &labels, err, sizeof(err))) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "unable to parse requirement: %s", err));
        goto out;
    }
    if (fk_selector_parse(evhttp_find_header(q, "fieldSelector"), 1, &fields, err, sizeof(err)) ||
        fk_selector_check_fields(&fields, r->type, err, sizeof(err))) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "%s", err));
        goto out;
    }
    long limit = query_long(q, "limit", 0, &bad);
    if (bad) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "invalid limit"));
        goto out;
    }
    uint64_t list_rv = s->rv;
    const char *rvs = evhttp_find_header(q, "resourceVersion");
    const char *match = evhttp_find_header(q, "resourceVersionMatch");
    if (rvs && *rvs && strcmp(rvs, "0") != 0) {
        char *end;
        unsigned long long v = strtoull(rvs, &end, 10);
        if (*end) {
            fk_reply(s, req, 400, fk_status(400, "BadRequest", "invalid resourceVersion: %s", rvs));
            goto out;
        }
        if (v > s->rv) {
            json_t *st = fk_status(504, "Timeout",
                                   "Too large resource version: %llu, current: %" PRIu64, v, s->rv);
            json_t *causes =
                json_pack("{s:[{s:s,s:s}],s:i}", "causes", "reason", "ResourceVersionTooLarge",
                          "message", "Too large resource version", "retryAfterSeconds", 1);
            if (st && causes)
                json_object_set_new(st, "details", causes);
            else
                json_decref(causes);
            fk_reply(s, req, 504, st);
            goto out;
        }
        if (match && strcmp(match, "Exact") == 0 && v != s->rv && v < s->hist_floor) {
            fk_reply(s, req, 410,
                     fk_status(410, "Expired", "too old resource version: %llu (%" PRIu64 ")", v,
                               s->hist_floor));
            goto out;
        }
    }
    const char *start = NULL;
    char startkey[600];
    const char *ctok = evhttp_find_header(q, "continue");
    if (ctok && *ctok) {
        uint64_t crv, cepoch;
        if (continue_decode(ctok, &crv, &cepoch, startkey, sizeof(startkey))) {
            fk_reply(
                s, req, 400,
                fk_status(400, "BadRequest", "continue key is not valid: illegal base64 data"));
            goto out;
        }
        int expire = s->expire_continue > 0;
        if (expire)
            s->expire_continue--;
        if (crv < s->continue_floor || cepoch < s->compactions || expire) {
            /* Like the real server: 410 plus a token that continues the
             * list inconsistently at the current rv. */
            json_t *st = fk_status(
                410, "Expired",
                "The provided continue parameter is too old to display a consistent list "
                "result. You can start a new list without the continue parameter, or use the "
                "continue token in this response to retrieve the remainder of the results. "
                "Continuing with the provided token results in an inconsistent list - objects "
                "that were created, modified, or deleted between the time the first chunk was "
                "returned and now may show up in the list.");
            cont = continue_encode(s, s->rv, startkey);
            if (st && cont)
                json_object_set_new(st, "metadata", json_pack("{s:s}", "continue", cont));
            fk_reply(s, req, 410, st);
            goto out;
        }
        start = startkey;
        list_rv = crv; /* like the real server, every page reports the first page's rv */
    }

    size_t n;
    char **keys = fk_sorted_keys(s, r->type, &n);
    size_t lo = 0;
    if (start) { /* first key > start */
        size_t hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (strcmp(keys[mid], start) <= 0)
                lo = mid + 1;
            else
                hi = mid;
        }
    } else if (r->ns && t->namespaced) { /* first key with prefix "ns/" */
        char prefix[300];
        snprintf(prefix, sizeof(prefix), "%s/", r->ns);
        size_t hi = n;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (strcmp(keys[mid], prefix) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
    }
    items = json_array();
    if (!items)
        goto oom;
    size_t nsl = r->ns ? strlen(r->ns) : 0;
    const char *last = NULL;
    size_t i;
    for (i = lo; i < n; i++) {
        if (r->ns && t->namespaced && (strncmp(keys[i], r->ns, nsl) != 0 || keys[i][nsl] != '/'))
            break;
        if (limit > 0 && (long)json_array_size(items) >= limit)
            break;
        json_t *obj = fk_get(s, r->type, keys[i]);
        if (!fk_selector_match(&labels, obj) || !fk_selector_match(&fields, obj))
            continue;
        json_array_append(items, obj); /* serialized below, without a copy */
        last = keys[i];
    }
    long remaining = -1;
    if (limit > 0 && i < n && last) {
        size_t more = 0;
        if (!labels.nreqs && !fields.nreqs) {
            /* Count by key range: the namespace's keys end before "ns0"
             * ('0' follows '/'). */
            size_t end = n;
            if (r->ns && t->namespaced) {
                char upper[300];
                snprintf(upper, sizeof(upper), "%s0", r->ns);
                size_t a = i, b = n;
                while (a < b) {
                    size_t mid = (a + b) / 2;
                    if (strcmp(keys[mid], upper) < 0)
                        a = mid + 1;
                    else
                        b = mid;
                }
                end = a;
            }
            more = end - i;
            remaining = (long)more;
        } else {
            /* With selectors the real server omits the count: just look
             * for one more match. */
            for (size_t j = i; j < n && !more; j++) {
                if (r->ns && t->namespaced &&
                    (strncmp(keys[j], r->ns, nsl) != 0 || keys[j][nsl] != '/'))
                    break;
                json_t *obj = fk_get(s, r->type, keys[j]);
                if (fk_selector_match(&labels, obj) && fk_selector_match(&fields, obj))
                    more++;
            }
        }
        if (more) {
            cont = continue_encode(s, list_rv, last);
            if (!cont)
                goto oom;
        } else {
            remaining = -1;
        }
    }
    char rvbuf[32], lk[96];
    snprintf(rvbuf, sizeof(rvbuf), "%" PRIu64, list_rv);
    snprintf(lk, sizeof(lk), "%sList", t->kind);
    json_t *meta = json_pack("{s:s}", "resourceVersion", rvbuf);
    if (meta && cont)
        json_object_set_new(meta, "continue", json_string(cont));
    if (meta && remaining >= 0)
        json_object_set_new(meta, "remainingItemCount", json_integer(remaining));
    /* Streamed into one evbuffer item by item: no list copy and no
     * single giant string (150,000 pods are ~200 MB of JSON). */
    struct evbuffer *buf = evbuffer_new();
    if (!buf || !meta) {
        json_decref(meta);
        if (buf)
            evbuffer_free(buf);
        goto oom;
    }
    struct dump_sink sink = {.out = buf};
    fair_buf_init(&sink.flat, 0);
    fair_buf_appendf(&sink.flat, "{\"kind\":\"%s\",\"apiVersion\":\"%s\",\"metadata\":", lk,
                     t->api_version);
    json_dump_callback(meta, dump_to_sink, &sink, JSON_COMPACT);
    json_decref(meta);
    fair_buf_appends(&sink.flat, ",\"items\":[");
    size_t k;
    json_t *it;
    json_array_foreach(items, k, it)
    {
        if (k)
            fair_buf_append(&sink.flat, ",", 1);
        if (t->builtin) {
            /* Typed lists omit kind and apiVersion on items. */
            json_t *c = json_copy(it);
            if (!c) {
                sink.failed = 1;
                break;
            }
            json_object_del(c, "kind");
            json_object_del(c, "apiVersion");
            json_dump_callback(c, dump_to_sink, &sink, JSON_COMPACT);
            json_decref(c);
        } else {
            json_dump_callback(it, dump_to_sink, &sink, JSON_COMPACT);
        }
        sink_flush(&sink, 256 * 1024);
    }
    fair_buf_append(&sink.flat, "]}", 2);
    sink_flush(&sink, 0);
    fair_buf_release(&sink.flat);
    if (sink.failed) {
        evbuffer_free(buf);
        goto oom;
    }
    reply_buf(s, req, 200, buf, 1);
    goto out;
oom:
    fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
out:
    json_decref(items);
    fair_free(cont);
    fk_selector_release(&labels);
    fk_selector_release(&fields);
}

/* ---- writes ---- */

static void fill_kind(const struct fk_type *t, json_t *obj)
{
    json_object_set_new(obj, "kind", json_string(t->kind));
    json_object_set_new(obj, "apiVersion", json_string(t->api_version));
}

static int check_kind(struct fk_server *s, struct evhttp_request *req, const struct fk_type *t,
                      json_t *obj)
{
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    if ((kind && strcmp(kind, t->kind) != 0) || (av && strcmp(av, t->api_version) != 0)) {
        fk_reply(s, req, 400,
                 fk_status(400, "BadRequest",
                           "the API version in the data (%s) does not match the expected API "
                           "version (%s) or kind (%s) does not match %s",
                           av ? av : "", t->api_version, kind ? kind : "", t->kind));
        return -1;
    }
    fill_kind(t, obj);
    return 0;
}

/* A quantity given as a JSON number becomes the string the real server
 * would write back ("1", "500m"). */
static void normalize_quantities(json_t *list)
{
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(list, tmp, k, v)
    {
        if (json_is_integer(v)) {
            char b[32];
            snprintf(b, sizeof(b), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
            json_object_set_new(list, k, json_string(b));
        } else if (json_is_real(v)) {
            char b[48];
            double milli = json_real_value(v) * 1000.0;
            long long m = (long long)(milli + (milli >= 0 ? 0.5 : -0.5));
            if (m % 1000 == 0)
                snprintf(b, sizeof(b), "%lld", m / 1000);
            else
                snprintf(b, sizeof(b), "%lldm", m);
            json_object_set_new(list, k, json_string(b));
        }
    }
}

/* Extended resources (such as nvidia.com/gpu) are whole numbers and cannot
 * be overcommitted: the request must equal the limit. */
static int is_extended(const char *k)
{
    return strchr(k, '/') && strncmp(k, "kubernetes.io/", 14) != 0 &&
           strncmp(k, "requests.", 9) != 0;
}

/* Defaults and validates container resources as the pod strategy and
 * validation do: requests default to limits; quantities must parse;
 * extended resources are integers with request == limit. Also sets
 * status.qosClass. Returns 0, or -1 after replying 422. */
static int pod_resources(struct fk_server *s, struct evhttp_request *req, const struct fk_type *t,
                         const char *name, json_t *pod)
{
    static const char *const lists[] = {"initContainers", "containers", NULL};
    json_t *spec = json_object_get(pod, "spec");
    int any = 0, guaranteed = 1;
    char field[200], detail[300];
    for (size_t li = 0; lists[li]; li++) {
        size_t ci;
        json_t *c;
        json_array_foreach(json_object_get(spec, lists[li]), ci, c)
        {
            json_t *res = json_object_get(c, "resources");
            json_t *lim = json_object_get(res, "limits");
            json_t *rq = json_object_get(res, "requests");
            if (json_is_object(lim))
                normalize_quantities(lim);
            if (json_is_object(rq))
                normalize_quantities(rq);
            if (json_is_object(lim) && json_object_size(lim) > 0) {
                if (!json_is_object(rq)) {
                    rq = json_object();
                    json_object_set_new(res, "requests", rq);
                }
                const char *k;
                json_t *v;
                json_object_foreach(lim, k, v)
                {
                    if (!json_object_get(rq, k))
                        json_object_set(rq, k, v);
                }
            }
            for (int pass = 0; pass < 2; pass++) {
                json_t *m = pass ? lim : rq;
                const char *k;
                json_t *v;
                json_object_foreach(m, k, v)
                {
                    int64_t q, ql;
                    snprintf(field, sizeof(field), "spec.%s[%zu].resources.%s[%s]", lists[li], ci,
                             pass ? "limits" : "requests", k);
                    if (!json_is_string(v) ||
                        fair_quantity_parse_milli(json_string_value(v), &q, NULL) != 0 || q < 0) {
                        reply_invalid(s, req, t, name, field,
                                      "Invalid value: quantities must match the regular "
                                      "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'");
                        return -1;
                    }
                    if (!is_extended(k) || pass)
                        continue;
                    if (q % 1000 != 0) {
                        snprintf(detail, sizeof(detail),
                                 "Invalid value: \"%s\": must be an integer", json_string_value(v));
                        reply_invalid(s, req, t, name, field, detail);
                        return -1;
                    }
                    json_t *lv = json_object_get(lim, k);
                    if (!lv || fair_quantity_parse_milli(json_string_value(lv), &ql, NULL) != 0 ||
                        ql != q) {
                        snprintf(detail, sizeof(detail),
                                 "Invalid value: \"%s\": must be equal to %s limit of %s",
                                 json_string_value(v), k, lv ? json_string_value(lv) : "0");
                        reply_invalid(s, req, t, name, field, detail);
                        return -1;
                    }
                }
            }
            static const char *const qos[] = {"cpu", "memory", NULL};
            for (size_t qi = 0; qos[qi]; qi++) {
                json_t *l = json_object_get(lim, qos[qi]);
                json_t *r = json_object_get(rq, qos[qi]);
                if (l || r)
                    any = 1;
                if (!l || !r || !json_equal(l, r))
                    guaranteed = 0;
            }
        }
    }
    json_object_set_new(json_object_get(pod, "status"), "qosClass",
                        json_string(!any         ? "BestEffort"
                                    : guaranteed ? "Guaranteed"
                                                 : "Burstable"));
    return 0;
}

/* The label the real API server puts on every namespace, on create and on
 * every update (whatever the request says): kubernetes.io/metadata.name
 * set to its name (Kubernetes 1.21 and later). */
void fk_namespace_name_label(json_t *ns, const char *name)
{
    json_t *meta = json_object_get(ns, "metadata");
    if (!json_is_object(meta) || !name)
        return;
    json_t *labels = json_object_get(meta, "labels");
    if (!json_is_object(labels)) {
        labels = json_object();
        json_object_set_new(meta, "labels", labels);
    }
    if (labels)
        json_object_set_new(labels, "kubernetes.io/metadata.name", json_string(name));
}

void fk_pod_defaults(struct fk_server *s, json_t *pod)
{
    json_t *spec = json_object_get(pod, "spec");
    if (!json_object_get(spec, "schedulerName"))
        json_object_set_new(spec, "schedulerName", json_string("default-scheduler"));
    if (!json_object_get(spec, "restartPolicy"))
        json_object_set_new(spec, "restartPolicy", json_string("Always"));
    if (!json_object_get(spec, "terminationGracePeriodSeconds"))
        json_object_set_new(spec, "terminationGracePeriodSeconds", json_integer(s->grace_seconds));
    /* The pod strategy resets status on create. */
    json_object_set_new(pod, "status",
                        json_pack("{s:s,s:s}", "phase", "Pending", "qosClass", "BestEffort"));
}

static void handle_create(struct fk_server *s, struct evhttp_request *req, const struct route *r)
{
    const struct fk_type *t = &s->types[r->type];
    json_t *obj = fk_read_body(s, req);
    char key[600];
    if (!obj)
        return;
    if (check_kind(s, req, t, obj))
        goto out;
    json_t *meta = meta_of(obj);
    const char *bns = json_string_value(json_object_get(meta, "namespace"));
    if (t->namespaced) {
        if (bns && *bns && strcmp(bns, r->ns) != 0) {
            fk_reply(s, req, 400,
                     fk_status(400, "BadRequest",
                               "the namespace of the provided object does not match the "
                               "namespace sent on the request"));
            goto out;
        }
        if (!fk_get(s, FK_NAMESPACES, r->ns)) {
            reply_not_found(s, req, &s->types[FK_NAMESPACES], r->ns);
            goto out;
        }
        json_object_set_new(meta, "namespace", json_string(r->ns));
    } else {
        json_object_del(meta, "namespace");
    }
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    if (rv && *rv) {
        fk_reply(s, req, 500,
                 fk_status(500, "InternalError",
                           "resourceVersion should not be set on objects to be created"));
        goto out;
    }
    const char *name = json_string_value(json_object_get(meta, "name"));
    const char *gen = json_string_value(json_object_get(meta, "generateName"));
    char namebuf[300];
    if ((!name || !*name) && gen && *gen) {
        int tries = 0;
        do {
            char suffix[6];
            fk_random_alnum(suffix, sizeof(suffix));
            snprintf(namebuf, sizeof(namebuf), "%.58s%s", gen, suffix);
            if (fk_key(t, r->ns, namebuf, key, sizeof(key)))
                break;
        } while (fk_get(s, r->type, key) && ++tries < 8);
        json_object_set_new(meta, "name", json_string(namebuf));
        name = json_string_value(json_object_get(meta, "name"));
    }
    if (!name || !*name) {
        reply_invalid(s, req, t, "", "metadata.name",
                      "Required value: name or generateName is required");
        goto out;
    }
    if (!valid_name(name, r->type == FK_NAMESPACES)) {
        reply_invalid(s, req, t, name, "metadata.name",
                      "Invalid value: a lowercase RFC 1123 name must consist of lower case "
                      "alphanumeric characters, '-' or '.', and must start and end with an "
                      "alphanumeric character");
        goto out;
    }
    if (r->type == FK_PODS) {
        json_t *spec = json_object_get(obj, "spec");
        json_t *cs = json_object_get(spec, "containers");
        if (!json_is_array(cs) || json_array_size(cs) == 0) {
            reply_invalid(s, req, t, name, "spec.containers", "Required value");
            goto out;
        }
    }
    if (r->type == FK_PVCS) {
        char field[128], detail[160];
        if (selector_invalid(json_object_get(json_object_get(obj, "spec"), "selector"),
                             "spec.selector", field, sizeof field, detail, sizeof detail)) {
            reply_invalid(s, req, t, name, field, detail);
            goto out;
        }
    }
    if (fk_key(t, r->ns, name, key, sizeof(key))) {
        reply_invalid(s, req, t, name, "metadata.name", "Invalid value: too long");
        goto out;
    }
    if (fk_get(s, r->type, key)) {
        char q[160];
        json_t *st = fk_status(409, "AlreadyExists", "%s \"%s\" already exists",
                               qualified(t, q, sizeof(q)), name);
        fk_reply(s, req, 409, status_details(st, name, t->group, t->plural));
        goto out;
    }
    char uid[40], ts[32];
    fk_uuid(uid, sizeof(uid));
    fk_now_rfc3339(ts, sizeof(ts));
    json_object_set_new(meta, "uid", json_string(uid));
    json_object_set_new(meta, "creationTimestamp", json_string(ts));
    json_object_del(meta, "deletionTimestamp");
    json_object_del(meta, "deletionGracePeriodSeconds");
    if (t->generation)
        json_object_set_new(meta, "generation", json_integer(1));
    else
        json_object_del(meta, "generation");
    switch (r->type) {
    case FK_PODS:
        fk_pod_defaults(s, obj);
        if (pod_resources(s, req, t, name, obj) != 0)
            goto out;
        break;
    case FK_NAMESPACES:
        json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Active"));
        fk_namespace_name_label(obj, name);
        break;
    case FK_PVS:
    case FK_PVCS: /* defaulted to Pending; no binder changes it */
        json_object_set_new(obj, "status", json_pack("{s:s}", "phase", "Pending"));
        break;
    case FK_PROJECTS:
    case FK_QUEUES:
    case FK_SP_PODGROUPS:
    case FK_VC_PODGROUPS:
    case FK_JOBS:
        json_object_del(obj, "status"); /* a status subresource */
        break;
    case FK_CRDS: {
        json_t *names = json_object_get(json_object_get(obj, "spec"), "names");
        json_object_set_new(obj, "status",
                            json_pack("{s:O,s:[{s:s,s:s,s:s},{s:s,s:s,s:s}],s:[]}", "acceptedNames",
                                      names ? names : json_null(), "conditions", "type",
                                      "NamesAccepted", "status", "True", "reason", "NoConflicts",
                                      "type", "Established", "status", "True", "reason",
                                      "InitialNamesAccepted", "storedVersions"));
        break;
    }
    default:
        break;
    }
    json_t *stored = fk_put(s, r->type, key, obj, FK_ADDED);
    obj = NULL;
    fk_reply(s, req, 201, json_incref(stored));
out:
    json_decref(obj);
}

/* Top-level fields other than metadata, status, kind and apiVersion. */
static int spec_differs(const json_t *a, const json_t *b)
{
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)a, k, v)
    {
        if (!strcmp(k, "metadata") || !strcmp(k, "status") || !strcmp(k, "kind") ||
            !strcmp(k, "apiVersion"))
            continue;
        json_t *w = json_object_get(b, k);
        if (!w || !json_equal(v, w))
            return 1;
    }
    json_object_foreach((json_t *)b, k, v)
    {
        if (!strcmp(k, "metadata") || !strcmp(k, "status") || !strcmp(k, "kind") ||
            !strcmp(k, "apiVersion"))
            continue;
        if (!json_object_get(a, k))
            return 1;
    }
    return 0;
}

static int pod_spec_change_allowed(const json_t *old, const json_t *nw)
{
    static const char *const mutable_fields[] = {"schedulingGates", "tolerations",
                                                 "activeDeadlineSeconds", NULL};
    json_t *a = json_copy(json_object_get(old, "spec"));
    json_t *b = json_copy(json_object_get(nw, "spec"));
    int ok = 0;
    if (a && b) {
        for (size_t i = 0; mutable_fields[i]; i++) {
            json_object_del(a, mutable_fields[i]);
            json_object_del(b, mutable_fields[i]);
        }
        ok = json_equal(a, b);
    }
    json_decref(a);
    json_decref(b);
    return ok;
}

enum { MODE_MAIN, MODE_STATUS };

/* Applies an update (PUT body or patched object, taken) to key. */
static void apply_update(struct fk_server *s, struct evhttp_request *req, const struct route *r,
                         const char *key, json_t *nw, int mode)
{
    const struct fk_type *t = &s->types[r->type];
    json_t *old = fk_get(s, r->type, key);
    json_t *res = NULL;
    if (!old) {
        reply_not_found(s, req, t, r->name);
        goto out;
    }
    if (check_kind(s, req, t, nw))
        goto out;
    json_t *nmeta = meta_of(nw);
    const char *nname = json_string_value(json_object_get(nmeta, "name"));
    if (nname && strcmp(nname, r->name) != 0) {
        fk_reply(s, req, 400,
                 fk_status(400, "BadRequest",
                           "the name of the object (%s) does not match the name on the URL (%s)",
                           nname, r->name));
        goto out;
    }
    const char *nrv = json_string_value(json_object_get(nmeta, "resourceVersion"));
    const char *orv = fk_meta_str(old, "resourceVersion");
    if (nrv && *nrv && strcmp(nrv, orv) != 0) {
        reply_conflict(s, req, t, r->name);
        goto out;
    }
    json_t *ometa = json_object_get(old, "metadata");
    if (mode == MODE_STATUS) {
        res = json_deep_copy(old);
        if (!res)
            goto oom;
        json_t *st = json_object_get(nw, "status");
        if (st)
            json_object_set(res, "status", st);
        else
            json_object_del(res, "status");
    } else {
        res = json_incref(nw);
        json_t *meta = meta_of(res);
        static const char *const keep[] = {"name",
                                           "namespace",
                                           "uid",
                                           "creationTimestamp",
                                           "deletionTimestamp",
                                           "deletionGracePeriodSeconds",
                                           "generation",
                                           NULL};
        for (size_t i = 0; keep[i]; i++) {
            json_t *v = json_object_get(ometa, keep[i]);
            if (v)
                json_object_set(meta, keep[i], v);
            else
                json_object_del(meta, keep[i]);
        }
        if (t->has_status) {
            json_t *st = json_object_get(old, "status");
            if (st)
                json_object_set(res, "status", st);
            else
                json_object_del(res, "status");
        }
        if (r->type == FK_NAMESPACES)
            fk_namespace_name_label(res, r->name);
        if (r->type == FK_PODS && !pod_spec_change_allowed(old, res)) {
            reply_invalid(s, req, t, r->name, "spec",
                          "Forbidden: pod updates may not change fields other than "
                          "`spec.containers[*].image`, `spec.activeDeadlineSeconds`, "
                          "`spec.tolerations` (only additions to existing tolerations) or "
                          "`spec.schedulingGates`");
            goto out;
        }
        if (t->generation && spec_differs(old, res)) {
            json_int_t g = json_integer_value(json_object_get(ometa, "generation"));
            json_object_set_new(meta, "generation", json_integer(g + 1));
        }
    }
    if (json_object_get(ometa, "deletionTimestamp")) {
        /* No new finalizers on an object being deleted. */
        json_t *of = json_object_get(ometa, "finalizers");
        size_t fi;
        json_t *fv;
        json_array_foreach(json_object_get(json_object_get(res, "metadata"), "finalizers"), fi, fv)
        {
            size_t oj;
            json_t *ov;
            int had = 0;
            json_array_foreach(of, oj, ov) had |= json_equal(ov, fv);
            if (!had) {
                reply_invalid(s, req, t, r->name, "metadata.finalizers",
                              "Forbidden: no new finalizers can be added if the object is being "
                              "deleted");
                goto out;
            }
        }
    }
    json_object_set_new(meta_of(res), "resourceVersion", json_string(orv));
    if (json_equal(res, old)) {
        /* A no-op update neither bumps the rv nor makes an event. */
        fk_reply(s, req, 200, json_incref(old));
        goto out;
    }
    /* An object marked for deletion goes once its finalizers are gone. */
    json_t *fins = json_object_get(json_object_get(res, "metadata"), "finalizers");
    if (json_object_get(ometa, "deletionTimestamp") && json_array_size(fins) == 0 &&
        json_integer_value(json_object_get(ometa, "deletionGracePeriodSeconds")) == 0) {
        json_t *stored = fk_put(s, r->type, key, res, FK_MODIFIED);
        res = NULL;
        (void)stored;
        json_t *fin = fk_remove(s, r->type, key);
        fk_reply(s, req, 200, fin);
        goto out;
    }
    json_t *stored = fk_put(s, r->type, key, res, FK_MODIFIED);
    res = NULL;
    fk_reply(s, req, 200, json_incref(stored));
    goto out;
oom:
    fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
out:
    json_decref(res);
    json_decref(nw);
}

static void handle_patch(struct fk_server *s, struct evhttp_request *req, const struct route *r,
                         const char *key, int mode)
{
    const struct fk_type *t = &s->types[r->type];
    const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
    enum { MERGE, STRATEGIC, JSONPATCH } kind;
    if (ct && !strncmp(ct, "application/merge-patch+json", 28))
        kind = MERGE;
    else if (ct && !strncmp(ct, "application/json-patch+json", 27))
        kind = JSONPATCH;
    else if (ct && !strncmp(ct, "application/strategic-merge-patch+json", 38) && t->builtin)
        kind = STRATEGIC; /* custom resources do not take it, as in the real server */
    else {
        fk_reply(s, req, 415,
                 fk_status(415, "UnsupportedMediaType",
                           "the body of the request was in an unknown format - accepted media "
                           "types include: application/json-patch+json, "
                           "application/merge-patch+json%s",
                           t->builtin ? ", application/strategic-merge-patch+json" : ""));
        return;
    }
    json_t *old = fk_get(s, r->type, key);
    if (!old) {
        reply_not_found(s, req, t, r->name);
        return;
    }
    json_t *res = NULL;
    if (kind == JSONPATCH) {
        struct evbuffer *in = evhttp_request_get_input_buffer(req);
        size_t len = evbuffer_get_length(in);
        const char *data = (const char *)evbuffer_pullup(in, -1);
        json_error_t jerr;
        json_t *ops = json_loadb(data ? data : "", len, 0, &jerr);
        if (!ops || !json_depth_ok(ops, 0)) {
            json_decref(ops);
            fk_reply(s, req, 400,
                     fk_status(400, "BadRequest", "invalid JSON patch: %s", jerr.text));
            return;
        }
        char err[300];
        res = json_deep_copy(old);
        if (res && fk_json_patch(res, ops, err, sizeof(err)) != 0) {
            json_decref(ops);
            json_decref(res);
            reply_invalid(s, req, t, r->name, "patch", err);
            return;
        }
        json_decref(ops);
    } else {
        json_t *patch = fk_read_body(s, req);
        if (!patch)
            return;
        res = kind == MERGE ? fk_merge_patch(json_deep_copy(old), patch)
                            : fk_strategic_merge_patch(json_deep_copy(old), patch);
        json_decref(patch);
    }
    if (!res) {
        fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
        return;
    }
    apply_update(s, req, r, key, res, mode);
}

static void handle_delete(struct fk_server *s, struct evhttp_request *req, const struct route *r,
                          const char *key, struct evkeyvalq *q)
{
    const struct fk_type *t = &s->types[r->type];
    json_t *opts = NULL;
    json_t *obj = fk_get(s, r->type, key);
    if (!obj) {
        reply_not_found(s, req, t, r->name);
        return;
    }
    if (evbuffer_get_length(evhttp_request_get_input_buffer(req)) > 0) {
        opts = fk_read_body(s, req);
        if (!opts)
            return;
    }
    int bad = 0;
    long grace = query_long(q, "gracePeriodSeconds", -1, &bad);
    json_t *g = json_object_get(opts, "gracePeriodSeconds");
    if (json_is_integer(g))
        grace = (long)json_integer_value(g);
    if (bad || grace < -1) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "invalid gracePeriodSeconds"));
        goto out;
    }
    json_t *pre = json_object_get(opts, "preconditions");
    const char *puid = json_string_value(json_object_get(pre, "uid"));
    const char *prv = json_string_value(json_object_get(pre, "resourceVersion"));
    if (puid && strcmp(puid, fk_meta_str(obj, "uid")) != 0) {
        fk_reply(s, req, 409,
                 fk_status(409, "Conflict",
                           "Precondition failed: UID in precondition: %s, UID in object meta: %s",
                           puid, fk_meta_str(obj, "uid")));
        goto out;
    }
    if (prv && strcmp(prv, fk_meta_str(obj, "resourceVersion")) != 0) {
        fk_reply(s, req, 409,
                 fk_status(409, "Conflict",
                           "Precondition failed: ResourceVersion in precondition: %s, "
                           "ResourceVersion in object meta: %s",
                           prv, fk_meta_str(obj, "resourceVersion")));
        goto out;
    }
    if (r->type == FK_NAMESPACES) {
        /* Simplified namespace lifecycle: its objects go right away. */
        for (int ti = 0; ti < FK_NTYPES; ti++) {
            if (!s->types[ti].namespaced)
                continue;
            size_t n;
            char **keys = fk_sorted_keys(s, ti, &n);
            char prefix[300];
            snprintf(prefix, sizeof(prefix), "%s/", r->name);
            size_t pl = strlen(prefix);
            /* Copy the matching keys: removing invalidates the sorted array. */
            size_t cnt = 0;
            char **doomed = fair_calloc(n ? n : 1, sizeof(char *));
            for (size_t i = 0; doomed && i < n; i++)
                if (strncmp(keys[i], prefix, pl) == 0)
                    doomed[cnt++] = fair_strdup(keys[i]);
            for (size_t i = 0; i < cnt; i++) {
                if (doomed[i])
                    json_decref(fk_remove(s, ti, doomed[i]));
                fair_free(doomed[i]);
            }
            fair_free(doomed);
        }
    }
    if (r->type == FK_PODS && grace < 0)
        grace = (long)json_integer_value(
            json_object_get(json_object_get(obj, "spec"), "terminationGracePeriodSeconds"));
    if (grace < 0)
        grace = 0;
    fk_reply(s, req, 200, fk_delete_object(s, r->type, key, grace));
out:
    json_decref(opts);
}

static void handle_eviction(struct fk_server *s, struct evhttp_request *req, const struct route *r,
                            const char *key)
{
    const struct fk_type *t = &s->types[FK_PODS];
    json_t *body = fk_read_body(s, req);
    if (!body)
        return;
    const char *kind = json_string_value(json_object_get(body, "kind"));
    const char *bname = fk_meta_str(body, "name");
    if (kind && strcmp(kind, "Eviction") != 0) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "expected kind Eviction, got %s", kind));
        goto out;
    }
    if (*bname && strcmp(bname, r->name) != 0) {
        fk_reply(
            s, req, 400,
            fk_status(400, "BadRequest", "name in URL does not match name in Eviction object"));
        goto out;
    }
    json_t *pod = fk_get(s, FK_PODS, key);
    if (!pod) {
        reply_not_found(s, req, t, r->name);
        goto out;
    }
    long grace = -1;
    json_t *g = json_object_get(json_object_get(body, "deleteOptions"), "gracePeriodSeconds");
    if (json_is_integer(g))
        grace = (long)json_integer_value(g);
    if (grace < 0)
        grace = (long)json_integer_value(
            json_object_get(json_object_get(pod, "spec"), "terminationGracePeriodSeconds"));
    if (grace < 0)
        grace = 0;
    const char *phase = fk_path_str(pod, "status.phase");
    int ignore_pdb = !strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") ||
                     !strcmp(phase, "Pending") ||
                     json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp");
    if (!ignore_pdb) {
        json_t *pdb = NULL;
        int npdb = 0;
        size_t n;
        char **keys = fk_sorted_keys(s, FK_PDBS, &n);
        for (size_t i = 0; i < n; i++) {
            json_t *p = fk_get(s, FK_PDBS, keys[i]);
            if (strcmp(fk_meta_str(p, "namespace"), r->ns) != 0)
                continue;
            if (fk_label_selector_matches(json_object_get(json_object_get(p, "spec"), "selector"),
                                          pod)) {
                pdb = p;
                npdb++;
            }
        }
        if (npdb > 1) {
            fk_reply(s, req, 500,
                     fk_status(500, "InternalError",
                               "This pod has more than one PodDisruptionBudget, which the "
                               "eviction subresource does not support."));
            goto out;
        }
        if (pdb) {
            long expected, healthy, desired;
            fk_pdb_counts(s, pdb, &expected, &healthy, &desired);
            /* As in pkg/registry/core/pod/storage/eviction.go: an unready
             * pod may go while the budget is met (IfHealthyBudget), a ready
             * one only when a disruption is allowed. */
            int allowed = healthy - desired > 0;
            if (!fk_pod_ready(pod) && desired > 0 && healthy >= desired)
                allowed = 1;
            const char *uepp = fk_path_str(pdb, "spec.unhealthyPodEvictionPolicy");
            if (!fk_pod_ready(pod) && !strcmp(uepp, "AlwaysAllow"))
                allowed = 1;
            if (!allowed) {
                json_t *st = fk_status(429, "TooManyRequests",
                                       "Cannot evict pod as it would violate the pod's "
                                       "disruption budget.");
                char cause[300];
                snprintf(cause, sizeof(cause),
                         "The disruption budget %s needs %ld healthy pods and has %ld currently",
                         fk_meta_str(pdb, "name"), desired, healthy);
                json_t *det = json_pack("{s:[{s:s,s:s}]}", "causes", "reason", "DisruptionBudget",
                                        "message", cause);
                if (st && det)
                    json_object_set_new(st, "details", det);
                else
                    json_decref(det);
                fk_reply(s, req, 429, st);
                goto out;
            }
        }
    }
    /* The eviction marks the pod first (PodDisruptionConditions). */
    json_t *marked = json_deep_copy(pod);
    if (marked) {
        json_t *status = json_object_get(marked, "status");
        if (!json_is_object(status)) {
            status = json_object();
            json_object_set_new(marked, "status", status);
        }
        json_t *conds = json_object_get(status, "conditions");
        if (!json_is_array(conds)) {
            conds = json_array();
            json_object_set_new(status, "conditions", conds);
        }
        char ts[32];
        fk_now_rfc3339(ts, sizeof(ts));
        size_t ci;
        json_t *c;
        json_array_foreach(conds, ci, c)
        {
            if (!strcmp(fk_path_str(c, "type"), "DisruptionTarget")) {
                json_array_remove(conds, ci);
                break;
            }
        }
        json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "DisruptionTarget",
                                               "status", "True", "reason", "EvictionByEvictionAPI",
                                               "message", "Eviction API: evicting",
                                               "lastTransitionTime", ts));
        fk_put(s, FK_PODS, key, marked, FK_MODIFIED);
    }
    json_decref(fk_delete_object(s, FK_PODS, key, grace));
    fk_reply(s, req, 201, fk_status(201, "", "%s", ""));
out:
    json_decref(body);
}

static void handle_binding(struct fk_server *s, struct evhttp_request *req, const struct route *r,
                           const char *key)
{
    const struct fk_type *t = &s->types[FK_PODS];
    json_t *body = fk_read_body(s, req);
    if (!body)
        return;
    json_t *pod = fk_get(s, FK_PODS, key);
    const char *node = fk_path_str(body, "target.name");
    if (!pod) {
        reply_not_found(s, req, t, r->name);
        goto out;
    }
    if (!*node) {
        reply_invalid(s, req, &(struct fk_type){.kind = "Binding", .group = ""}, r->name,
                      "target.name", "Required value");
        goto out;
    }
    const char *cur = fk_path_str(pod, "spec.nodeName");
    const char *buid = fk_meta_str(body, "uid");
    const char *brv = fk_meta_str(body, "resourceVersion");
    if ((*buid && strcmp(buid, fk_meta_str(pod, "uid")) != 0) ||
        (*brv && strcmp(brv, fk_meta_str(pod, "resourceVersion")) != 0)) {
        reply_conflict(s, req, t, r->name);
        goto out;
    }
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp")) {
        fk_reply(s, req, 409,
                 status_details(fk_status(409, "Conflict",
                                          "Operation cannot be fulfilled on pods/binding \"%s\": "
                                          "pod %s is being deleted, cannot be assigned to a host",
                                          r->name, r->name),
                                r->name, "", "pods/binding"));
        goto out;
    }
    if (*cur) {
        fk_reply(s, req, 409,
                 status_details(fk_status(409, "Conflict",
                                          "Operation cannot be fulfilled on pods/binding \"%s\": "
                                          "pod %s is already assigned to node \"%s\"",
                                          r->name, r->name, cur),
                                r->name, "", "pods/binding"));
        goto out;
    }
    if (json_array_size(json_object_get(json_object_get(pod, "spec"), "schedulingGates")) > 0) {
        fk_reply(s, req, 409,
                 fk_status(409, "Conflict",
                           "Operation cannot be fulfilled on pods/binding \"%s\": pod %s has "
                           "non-empty .spec.schedulingGates",
                           r->name, r->name));
        goto out;
    }
    json_t *nw = json_deep_copy(pod);
    if (!nw) {
        fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
        goto out;
    }
    json_t *spec = json_object_get(nw, "spec");
    json_object_set_new(spec, "nodeName", json_string(node));
    /* Like setPodHostAndAnnotations: the Binding's annotations are copied
     * onto the pod. */
    json_t *banns = json_object_get(json_object_get(body, "metadata"), "annotations");
    if (json_is_object(banns) && json_object_size(banns) > 0) {
        json_t *meta = meta_of(nw);
        json_t *anns = json_object_get(meta, "annotations");
        if (!json_is_object(anns)) {
            anns = json_object();
            json_object_set_new(meta, "annotations", anns);
        }
        const char *ak;
        json_t *av;
        json_object_foreach(banns, ak, av)
        {
            if (json_is_string(av))
                json_object_set(anns, ak, av);
        }
    }
    json_t *status = json_object_get(nw, "status");
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(nw, "status", status);
    }
    char ts[32];
    fk_now_rfc3339(ts, sizeof(ts));
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(status, "conditions", conds);
    }
    /* As podutil.UpdatePodCondition: the PodScheduled condition is
     * replaced (reason and message of an earlier False go), and its
     * lastTransitionTime moves only when the status changes. */
    json_t *sched = json_pack("{s:s,s:s,s:s}", "type", "PodScheduled", "status", "True",
                              "lastTransitionTime", ts);
    size_t ci;
    json_t *c;
    bool replaced = false;
    json_array_foreach(conds, ci, c)
    {
        if (strcmp(fk_path_str(c, "type"), "PodScheduled") != 0)
            continue;
        json_t *lt = json_object_get(c, "lastTransitionTime");
        if (strcmp(fk_path_str(c, "status"), "True") == 0 && json_is_string(lt))
            json_object_set(sched, "lastTransitionTime", lt);
        json_array_set_new(conds, ci, sched);
        replaced = true;
        break;
    }
    if (!replaced)
        json_array_append_new(conds, sched);
    fk_put(s, FK_PODS, key, nw, FK_MODIFIED);
    fk_reply(s, req, 201, fk_status(201, "", "%s", ""));
out:
    json_decref(body);
}

/* DELETE on a collection (deletecollection): deletes every object that
 * matches the selectors, each as a single DELETE would (graceful for bound
 * pods), and answers with the list of what it deleted. */
static void handle_delete_collection(struct fk_server *s, struct evhttp_request *req,
                                     const struct route *r, struct evkeyvalq *q)
{
    const struct fk_type *t = &s->types[r->type];
    struct fk_selector labels, fields;
    char err[256];
    char **doomed = NULL;
    size_t cnt = 0;
    json_t *items = NULL;
    memset(&labels, 0, sizeof(labels));
    memset(&fields, 0, sizeof(fields));
    if (fk_selector_parse(evhttp_find_header(q, "labelSelector"), 0, &labels, err, sizeof(err)) ||
        fk_selector_parse(evhttp_find_header(q, "fieldSelector"), 1, &fields, err, sizeof(err)) ||
        fk_selector_check_fields(&fields, r->type, err, sizeof(err))) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "%s", err));
        goto out;
    }
    int bad = 0;
    long grace = query_long(q, "gracePeriodSeconds", -1, &bad);
    if (bad) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "invalid gracePeriodSeconds"));
        goto out;
    }
    size_t n;
    char **keys = fk_sorted_keys(s, r->type, &n);
    /* Copy the matching keys first: deleting invalidates the key array. */
    doomed = fair_calloc(n ? n : 1, sizeof(char *));
    items = json_array();
    if (!doomed || !items)
        goto oom;
    for (size_t i = 0; i < n; i++) {
        json_t *obj = fk_get(s, r->type, keys[i]);
        if (r->ns && t->namespaced && strcmp(fk_meta_str(obj, "namespace"), r->ns) != 0)
            continue;
        if (!fk_selector_match(&labels, obj) || !fk_selector_match(&fields, obj))
            continue;
        if (!(doomed[cnt] = fair_strdup(keys[i])))
            goto oom;
        cnt++;
    }
    for (size_t i = 0; i < cnt; i++) {
        json_t *obj = fk_get(s, r->type, doomed[i]);
        if (!obj)
            continue;
        long g = grace;
        if (g < 0 && r->type == FK_PODS)
            g = (long)json_integer_value(
                json_object_get(json_object_get(obj, "spec"), "terminationGracePeriodSeconds"));
        json_t *res = fk_delete_object(s, r->type, doomed[i], g < 0 ? 0 : g);
        if (res) {
            json_object_del(res, "kind");
            json_object_del(res, "apiVersion");
            json_array_append_new(items, res);
        }
    }
    char rvbuf[32], lk[96];
    snprintf(rvbuf, sizeof(rvbuf), "%" PRIu64, s->rv);
    snprintf(lk, sizeof(lk), "%sList", t->kind);
    fk_reply(s, req, 200,
             json_pack("{s:s,s:s,s:{s:s},s:O}", "kind", lk, "apiVersion", t->api_version,
                       "metadata", "resourceVersion", rvbuf, "items", items));
    goto out;
oom:
    fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
out:
    for (size_t i = 0; doomed && i < cnt; i++)
        fair_free(doomed[i]);
    fair_free(doomed);
    json_decref(items);
    fk_selector_release(&labels);
    fk_selector_release(&fields);
}

/* ---- /fake/ endpoints ---- */

static void handle_fake(struct fk_server *s, struct evhttp_request *req, const char *what,
                        struct evkeyvalq *q, int method)
{
    int bad = 0;
    if (!strcmp(what, "state") && method == EVHTTP_REQ_GET) {
        const char *only = evhttp_find_header(q, "resource");
        char rvbuf[32];
        snprintf(rvbuf, sizeof(rvbuf), "%" PRIu64, s->rv);
        json_t *objs = json_object();
        for (int i = 0; i < FK_NTYPES; i++) {
            if (only && strcmp(only, s->types[i].plural) != 0)
                continue;
            json_t *arr = json_array();
            size_t n;
            char **keys = fk_sorted_keys(s, i, &n);
            for (size_t k = 0; k < n; k++)
                json_array_append(arr, fk_get(s, i, keys[k]));
            /* Two groups' podgroups: the second by "plural.group". */
            if (json_object_get(objs, s->types[i].plural)) {
                char k2[200];
                snprintf(k2, sizeof(k2), "%s.%s", s->types[i].plural, s->types[i].group);
                json_object_set_new(objs, k2, arr);
            } else {
                json_object_set_new(objs, s->types[i].plural, arr);
            }
        }
        reply_json(s, req, 200, json_pack("{s:s,s:o}", "resourceVersion", rvbuf, "objects", objs),
                   0);
        return;
    }
    if (!strcmp(what, "stats") && method == EVHTTP_REQ_GET) {
        json_t *st = json_pack("{s:I,s:I,s:I,s:I,s:I,s:i,s:I,s:I,s:I}", "resourceVersion",
                               (json_int_t)s->rv, "watchers", (json_int_t)s->nwatchers, "requests",
                               (json_int_t)s->requests, "historyFloor", (json_int_t)s->hist_floor,
                               "historyLength", (json_int_t)s->hist_len, "latencyMs", s->latency_ms,
                               "pods", (json_int_t)json_object_size(s->types[FK_PODS].objects),
                               "tokenReviews", (json_int_t)s->token_reviews, "subjectAccessReviews",
                               (json_int_t)s->access_reviews);
        reply_json(s, req, 200, st, 0);
        return;
    }
    if (method != EVHTTP_REQ_POST) {
        reply_json(s, req, 405, fk_status(405, "MethodNotAllowed", "use POST on /fake/%s", what),
                   0);
        return;
    }
    if (fk_auth_fake(s, req, what, q))
        return;
    if (!strcmp(what, "drop-watches")) {
        const char *mode = evhttp_find_header(q, "mode");
        int abrupt = !(mode && !strcmp(mode, "end"));
        size_t n = fk_watch_drop_all(s, abrupt);
        FAIR_INFO("fakekube", "msg=\"dropped watches\" count=%zu abrupt=%d", n, abrupt);
        reply_json(s, req, 200, json_pack("{s:I}", "dropped", (json_int_t)n), 0);
    } else if (!strcmp(what, "stall-watches")) {
        /* The open watches (of ?resource=PLURAL, else all) hang: the
         * connection stays, nothing more is sent. */
        const char *res = evhttp_find_header(q, "resource");
        int type = -1;
        for (int i = 0; res && i < FK_NTYPES; i++)
            if (!strcmp(s->types[i].plural, res))
                type = i;
        if (res && type < 0) {
            reply_json(s, req, 400, fk_status(400, "BadRequest", "no resource %s", res), 0);
            return;
        }
        size_t n = fk_watch_stall(s, type);
        FAIR_INFO("fakekube", "msg=\"stalled watches\" count=%zu resource=%s", n, res ? res : "*");
        reply_json(s, req, 200, json_pack("{s:I}", "stalled", (json_int_t)n), 0);
    } else if (!strcmp(what, "fail")) {
        long code = query_long(q, "code", 500, &bad);
        long count = query_long(q, "count", 1, &bad);
        long ra = query_long(q, "retryAfter", 1, &bad);
        const char *prefix = evhttp_find_header(q, "prefix");
        const char *verb = evhttp_find_header(q, "verb");
        if (bad || (code != 500 && code != 429 && code != 503 && code != 409 && code != 403) ||
            s->nfaults == FK_MAX_FAULTS ||
            (prefix && strlen(prefix) >= sizeof(s->faults[0].prefix)) ||
            (verb && strlen(verb) >= sizeof(s->faults[0].verb))) {
            reply_json(
                s, req, 400,
                fk_status(400, "BadRequest",
                          "fail needs code=500|429|503|409|403, count>=0, retryAfter>=0, at most "
                          "%d rules",
                          FK_MAX_FAULTS),
                0);
            return;
        }
        struct fk_fault *f = &s->faults[s->nfaults++];
        memset(f, 0, sizeof(*f));
        f->code = (int)code;
        f->remaining = count;
        f->retry_after = (int)ra;
        snprintf(f->prefix, sizeof(f->prefix), "%s", prefix ? prefix : "");
        snprintf(f->verb, sizeof(f->verb), "%s", verb ? verb : "");
        reply_json(s, req, 200, json_pack("{s:i}", "rules", (int)s->nfaults), 0);
    } else if (!strcmp(what, "latency")) {
        long ms = query_long(q, "ms", 0, &bad);
        if (bad || ms > 60000) {
            reply_json(s, req, 400, fk_status(400, "BadRequest", "latency needs 0 <= ms <= 60000"),
                       0);
            return;
        }
        s->latency_ms = (int)ms;
        reply_json(s, req, 200, json_pack("{s:i}", "latencyMs", s->latency_ms), 0);
    } else if (!strcmp(what, "expire-continue")) {
        long count = query_long(q, "count", 1, &bad);
        if (bad || count < 0) {
            reply_json(s, req, 400, fk_status(400, "BadRequest", "expire-continue needs count>=0"),
                       0);
            return;
        }
        s->expire_continue = count;
        reply_json(s, req, 200, json_pack("{s:I}", "expireContinue", (json_int_t)count), 0);
    } else if (!strcmp(what, "compact")) {
        fk_hist_compact(s);
        reply_json(s, req, 200, json_pack("{s:I}", "historyFloor", (json_int_t)s->hist_floor), 0);
    } else if (!strcmp(what, "persist")) {
        int rc = fk_persist(s, 0);
        reply_json(s, req, rc ? 500 : 200, json_pack("{s:b}", "persisted", rc == 0), 0);
    } else if (!strcmp(what, "reset")) {
        s->nfaults = 0;
        s->latency_ms = 0;
        s->review_latency_ms = 0;
        s->review_hold = 0;
        fk_release_held(s);
        s->expire_continue = 0;
        reply_json(s, req, 200, json_pack("{s:b}", "reset", 1), 0);
    } else {
        reply_json(s, req, 404, fk_status(404, "NotFound", "no fake endpoint %s", what), 0);
    }
}

/* GET, PUT and PATCH of one object (mode MODE_MAIN) or of its status
 * subresource (MODE_STATUS). false: another method, left unanswered. */
static bool handle_read_write(struct fk_server *s, struct evhttp_request *req,
                              const struct fk_type *t, const struct route *r, const char *key,
                              int method, int mode)
{
    if (method == EVHTTP_REQ_GET) {
        json_t *obj = fk_get(s, r->type, key);
        if (obj)
            fk_reply(s, req, 200, json_incref(obj));
        else
            reply_not_found(s, req, t, r->name);
    } else if (method == EVHTTP_REQ_PUT) {
        json_t *body = fk_read_body(s, req);
        if (body)
            apply_update(s, req, r, key, body, mode);
    } else if (method == EVHTTP_REQ_PATCH) {
        handle_patch(s, req, r, key, mode);
    } else {
        return false;
    }
    return true;
}

static const char *method_name(int m)
{
    switch (m) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    default:
        return "OTHER";
    }
}

/* Returns 1 when a fault rule answered the request. */
static int apply_fault(struct fk_server *s, struct evhttp_request *req, const char *path,
                       int method)
{
    for (size_t i = 0; i < s->nfaults; i++) {
        struct fk_fault *f = &s->faults[i];
        if (f->remaining <= 0)
            continue;
        /* A prefix ending in '$' is the whole path. */
        size_t plen = strlen(f->prefix);
        bool whole = plen && f->prefix[plen - 1] == '$';
        if (plen && (whole ? strlen(path) != plen - 1 || strncmp(path, f->prefix, plen - 1)
                           : strncmp(path, f->prefix, plen)) != 0)
            continue;
        if (f->verb[0] && strcasecmp(f->verb, method_name(method)) != 0)
            continue;
        f->remaining--;
        int code = f->code;
        int ra = f->retry_after;
        if (f->remaining == 0) {
            memmove(&s->faults[i], &s->faults[i + 1], (s->nfaults - i - 1) * sizeof(*f));
            s->nfaults--;
        }
        if (code == 429) {
            char rab[16];
            snprintf(rab, sizeof(rab), "%d", ra);
            evhttp_add_header(evhttp_request_get_output_headers(req), "Retry-After", rab);
            json_t *st =
                fk_status(429, "TooManyRequests", "Too many requests, please try again later.");
            json_t *det = json_pack("{s:i}", "retryAfterSeconds", ra);
            if (st && det)
                json_object_set_new(st, "details", det);
            else
                json_decref(det);
            fk_reply(s, req, 429, st);
        } else if (code == 503) {
            fk_reply(s, req, 503, fk_status(503, "ServiceUnavailable", "injected fault"));
        } else if (code == 403) {
            fk_reply(s, req, 403,
                     fk_status(403, "Forbidden", "forbidden: exceeded quota: injected fault"));
        } else if (code == 409) {
            fk_reply(s, req, 409,
                     fk_status(409, "Conflict", "Operation cannot be fulfilled: injected fault"));
        } else {
            fk_reply(s, req, 500,
                     fk_status(500, "InternalError", "Internal error occurred: injected fault"));
        }
        return 1;
    }
    return 0;
}

static void handle_discovery(struct fk_server *s, struct evhttp_request *req, char **seg, int n)
{
    if (n == 1 && !strcmp(seg[0], "api")) {
        fk_reply(s, req, 200, json_pack("{s:s,s:[s]}", "kind", "APIVersions", "versions", "v1"));
        return;
    }
    if (n == 1 && !strcmp(seg[0], "apis")) {
        json_t *groups = json_array();
        for (int i = 0; i < FK_NTYPES; i++) {
            const struct fk_type *t = &s->types[i];
            if (!t->group[0] || !fk_type_served(s, i))
                continue;
            int dup = 0;
            for (int j = 0; j < i; j++)
                dup |= !strcmp(s->types[j].group, t->group);
            if (dup)
                continue;
            json_array_append_new(groups,
                                  json_pack("{s:s,s:[{s:s,s:s}],s:{s:s,s:s}}", "name", t->group,
                                            "versions", "groupVersion", t->api_version, "version",
                                            t->version, "preferredVersion", "groupVersion",
                                            t->api_version, "version", t->version));
        }
        fk_reply(s, req, 200,
                 json_pack("{s:s,s:s,s:o}", "kind", "APIGroupList", "apiVersion", "v1", "groups",
                           groups));
        return;
    }
    const char *gv = NULL;
    char gvbuf[200];
    if (n == 2 && !strcmp(seg[0], "api")) {
        gv = seg[1];
    } else if (n == 3 && !strcmp(seg[0], "apis")) {
        snprintf(gvbuf, sizeof(gvbuf), "%s/%s", seg[1], seg[2]);
        gv = gvbuf;
    }
    json_t *res = json_array();
    for (int i = 0; gv && i < FK_NTYPES; i++) {
        const struct fk_type *t = &s->types[i];
        if (strcmp(t->api_version, gv) != 0 || !fk_type_served(s, i))
            continue;
        json_array_append_new(res, json_pack("{s:s,s:b,s:s,s:[s,s,s,s,s,s,s]}", "name", t->plural,
                                             "namespaced", t->namespaced, "kind", t->kind, "verbs",
                                             "create", "delete", "get", "list", "patch", "update",
                                             "watch"));
        if (t->has_status)
            json_array_append_new(res, json_pack("{s:s+,s:b,s:s,s:[s,s,s]}", "name", t->plural,
                                                 "/status", "namespaced", t->namespaced, "kind",
                                                 t->kind, "verbs", "get", "patch", "update"));
    }
    if (!gv || json_array_size(res) == 0) {
        json_decref(res);
        fk_reply(s, req, 404,
                 fk_status(404, "NotFound", "the server could not find the requested resource"));
        return;
    }
    fk_reply(s, req, 200,
             json_pack("{s:s,s:s,s:s,s:o}", "kind", "APIResourceList", "apiVersion", "v1",
                       "groupVersion", gv, "resources", res));
}

/* Small responses over TLS go out as several records; without TCP_NODELAY
 * Nagle and the client's delayed ACK add 40 ms to each request. evhttp
 * 2.1 has no per-connection hook, so this runs per request (one syscall). */
static void set_nodelay(struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    }
}

void fk_api_handle(struct evhttp_request *req, void *arg)
{
    struct fk_server *s = arg;
    struct evkeyvalq q;
    char path[2048];
    char *seg[MAX_SEGS];
    TAILQ_INIT(&q);
    s->requests++;
    set_nodelay(req);
    int method = evhttp_request_get_command(req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *p = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *qs = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!p || strlen(p) >= sizeof(path)) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "bad request path"));
        return;
    }
    snprintf(path, sizeof(path), "%s", p);
    FAIR_DEBUG("fakekube", "msg=request method=%s path=%s query=\"%s\"", method_name(method), path,
               qs ? qs : "");
    if (qs && evhttp_parse_query_str(qs, &q) != 0) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "bad query string"));
        goto out;
    }
    if (!strcmp(path, "/healthz") || !strcmp(path, "/readyz") || !strcmp(path, "/livez")) {
        evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain");
        struct evbuffer *b = evbuffer_new();
        if (b) {
            evbuffer_add(b, "ok", 2);
            evhttp_send_reply(req, 200, "OK", b);
            evbuffer_free(b);
        }
        goto out;
    }
    const char *auth = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!auth || strncmp(auth, "Bearer ", 7) != 0 || strcmp(auth + 7, s->token) != 0) {
        reply_json(s, req, 401, fk_status(401, "Unauthorized", "Unauthorized"), 0);
        goto out;
    }
    if (!strncmp(path, "/fake/", 6)) {
        handle_fake(s, req, path + 6, &q, method);
        goto out;
    }
    if (apply_fault(s, req, path, method))
        goto out;
    if (method == EVHTTP_REQ_POST || method == EVHTTP_REQ_PUT || method == EVHTTP_REQ_DELETE) {
        /* No Content-Type means JSON; another type is refused, as the
         * real server's input negotiation does (we do not read YAML). */
        const char *ct = evhttp_find_header(evhttp_request_get_input_headers(req), "Content-Type");
        if (ct && strncmp(ct, "application/json", 16) != 0 &&
            evbuffer_get_length(evhttp_request_get_input_buffer(req)) > 0) {
            fk_reply(s, req, 415,
                     fk_status(415, "UnsupportedMediaType",
                               "the body of the request was in an unknown format - accepted "
                               "media types include: application/json"));
            goto out;
        }
    }
    if (fk_auth_handle(s, req, path, method))
        goto out;
    if (!strcmp(path, "/version")) {
        fk_reply(s, req, 200,
                 json_pack("{s:s,s:s,s:s,s:s,s:s}", "major", "1", "minor", "31", "gitVersion",
                           "v1.31.0-fakekube", "platform", "linux/amd64", "goVersion", "none"));
        goto out;
    }
    int n = split_path(path, seg, MAX_SEGS);
    struct route r;
    if (n < 0 || parse_route(s, seg, n, &r) != 0) {
        if (n > 0 && n <= 3 && method == EVHTTP_REQ_GET &&
            (!strcmp(seg[0], "api") || !strcmp(seg[0], "apis"))) {
            handle_discovery(s, req, seg, n);
            goto out;
        }
        fk_reply(s, req, 404,
                 fk_status(404, "NotFound", "the server could not find the requested resource"));
        goto out;
    }
    const struct fk_type *t = &s->types[r.type];
    char key[600];
    if (r.name && fk_key(t, r.ns, r.name, key, sizeof(key))) {
        reply_not_found(s, req, t, r.name);
        goto out;
    }
    const char *wq = evhttp_find_header(&q, "watch");
    int watch = r.watch_path || (wq && (!strcmp(wq, "1") || !strcmp(wq, "true")));
    if (!r.name) {
        if (method == EVHTTP_REQ_GET && watch)
            fk_watch_start(s, req, r.type, t->namespaced ? r.ns : NULL, &q);
        else if (method == EVHTTP_REQ_GET)
            handle_list(s, req, &r, &q);
        else if (method == EVHTTP_REQ_POST && (r.ns || !t->namespaced))
            handle_create(s, req, &r);
        else if (method == EVHTTP_REQ_DELETE && r.type != FK_NAMESPACES)
            handle_delete_collection(s, req, &r, &q);
        else
            fk_reply(s, req, 405,
                     fk_status(405, "MethodNotAllowed",
                               "the server does not allow this method on the "
                               "requested resource"));
        goto out;
    }
    if (!r.sub) {
        if (method == EVHTTP_REQ_DELETE)
            handle_delete(s, req, &r, key, &q);
        else if (!handle_read_write(s, req, t, &r, key, method, MODE_MAIN))
            fk_reply(s, req, 405,
                     fk_status(405, "MethodNotAllowed",
                               "the server does not allow this method on the "
                               "requested resource"));
        goto out;
    }
    if (!strcmp(r.sub, "status") && t->has_status) {
        if (!handle_read_write(s, req, t, &r, key, method, MODE_STATUS))
            fk_reply(s, req, 405,
                     fk_status(405, "MethodNotAllowed", "status: use GET, PUT or PATCH"));
        goto out;
    }
    if (r.type == FK_PODS && !strcmp(r.sub, "binding") && method == EVHTTP_REQ_POST) {
        handle_binding(s, req, &r, key);
        goto out;
    }
    if (r.type == FK_PODS && !strcmp(r.sub, "eviction") && method == EVHTTP_REQ_POST) {
        handle_eviction(s, req, &r, key);
        goto out;
    }
    fk_reply(s, req, 404,
             fk_status(404, "NotFound", "the server could not find the requested resource"));
out:
    evhttp_clear_headers(&q);
}
