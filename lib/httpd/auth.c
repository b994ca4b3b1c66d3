/* TokenReview + SubjectAccessReview guard with a bounded cache (see
 * auth.h): a hash table of entries keyed by the token's SHA-256 and the
 * permission, decided entries on an LRU list, waiters on the entries under
 * review. */
#include "httpd/auth.h"

#include <event2/event.h>
#include <inttypes.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/log.h"
#include "kube/client.h"

#define COMP "httpauth"
#define DEFAULT_TIMEOUT_MS 5000
#define DEFAULT_CACHE_SIZE 4096
#define DEFAULT_MAX_IN_FLIGHT 64
#define WARN_EVERY_MS 60000
#define MAX_GROUPS 1024

static const char TOKENREVIEWS[] = "/apis/authentication.k8s.io/v1/tokenreviews";
static const char ACCESSREVIEWS[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

enum { REVIEWING, DECIDED };

struct entry;

struct waiter {
    struct fair_auth *a;
    struct entry *e;
    struct fair_httpd_req *req;
    struct waiter *prev, *next;
};

struct entry {
    unsigned char key[SHA256_DIGEST_LENGTH];
    const struct fair_auth_perm *perm;
    int state;
    /* DECIDED */
    int status; /* 0 allowed, 401, 403 */
    int64_t expires_ms;
    struct entry *lru_prev, *lru_next;
    /* REVIEWING */
    struct fair_kreq *kreq;
    struct event *timer;
    struct waiter *waiters;
    char user[256]; /* the TokenReview's username, for the 403's message */
    struct fair_auth *a;
    struct entry *hnext; /* hash chain */
};

struct fair_auth {
    struct event_base *base;
    struct fair_kclient *kc;
    char *ns;
    int64_t timeout_ms, allow_ttl_ms, deny_ttl_ms;
    size_t cache_size;
    int max_in_flight;
    const struct fair_clock *clock;
    struct entry **buckets;
    size_t nbuckets;                   /* a power of two */
    struct entry *lru_head, *lru_tail; /* decided entries, least recent first */
    int64_t warned_ms;
    uint64_t suppressed;
    struct fair_auth_stats st;
};

/* ---- the table ---- */

static size_t bucket_of(const struct fair_auth *a, const unsigned char *key,
                        const struct fair_auth_perm *perm)
{
    uint64_t h;
    memcpy(&h, key, sizeof h);
    h ^= (uint64_t)(uintptr_t)perm * 0x9e3779b97f4a7c15ULL;
    return (size_t)(h & (a->nbuckets - 1));
}

static struct entry *lookup(struct fair_auth *a, const unsigned char *key,
                            const struct fair_auth_perm *perm)
{
    for (struct entry *e = a->buckets[bucket_of(a, key, perm)]; e; e = e->hnext)
        if (e->perm == perm && memcmp(e->key, key, sizeof e->key) == 0)
            return e;
    return NULL;
}

static void lru_unlink(struct fair_auth *a, struct entry *e)
{
    if (e->lru_prev)
        e->lru_prev->lru_next = e->lru_next;
    else if (a->lru_head == e)
        a->lru_head = e->lru_next;
    if (e->lru_next)
        e->lru_next->lru_prev = e->lru_prev;
    else if (a->lru_tail == e)
        a->lru_tail = e->lru_prev;
    e->lru_prev = e->lru_next = NULL;
}

static void lru_append(struct fair_auth *a, struct entry *e)
{
    e->lru_prev = a->lru_tail;
    e->lru_next = NULL;
    if (a->lru_tail)
        a->lru_tail->lru_next = e;
    else
        a->lru_head = e;
    a->lru_tail = e;
}

/* Unlinks e from the table and the LRU list and frees it; it must have no
 * waiters and nothing in flight. */
static void entry_remove(struct fair_auth *a, struct entry *e)
{
    struct entry **p = &a->buckets[bucket_of(a, e->key, e->perm)];
    while (*p && *p != e)
        p = &(*p)->hnext;
    if (*p)
        *p = e->hnext;
    if (e->state == DECIDED) {
        lru_unlink(a, e);
        a->st.entries--;
    } else {
        a->st.in_flight--;
    }
    if (e->timer)
        event_free(e->timer);
    OPENSSL_cleanse(e->key, sizeof e->key);
    fair_free(e);
}

/* ---- answers ---- */

static void count(struct fair_auth *a, int status)
{
    if (status == 0)
        a->st.allowed++;
    else if (status == 401)
        a->st.unauthenticated++;
    else if (status == 403)
        a->st.forbidden++;
    else
        a->st.unavailable++;
}

static void answer(struct fair_auth *a, struct fair_httpd_req *req, int status, const char *msg)
{
    count(a, status);
    FAIR_DEBUG(COMP, "msg=decision path=%s status=%d", fair_httpd_req_path(req),
               status ? status : 200);
    fair_httpd_guard_done(req, status, msg);
}

/* Answers every waiter of e (the list is detached first: an allowed
 * request's handler runs inside fair_httpd_guard_done()). */
static void answer_waiters(struct fair_auth *a, struct entry *e, int status, const char *msg)
{
    struct waiter *w = e->waiters;
    e->waiters = NULL;
    while (w) {
        struct waiter *next = w->next;
        struct fair_httpd_req *req = w->req;
        fair_httpd_req_on_cancel(req, NULL, NULL);
        fair_free(w);
        answer(a, req, status, msg);
        w = next;
    }
}

static void warn_review(struct fair_auth *a, const char *what, const char *why)
{
    int64_t now = fair_mono_ms(a->clock);
    if (a->warned_ms && now - a->warned_ms < WARN_EVERY_MS) {
        a->suppressed++;
        return;
    }
    FAIR_WARN(COMP,
              "msg=\"%s failed; requests are answered 503 until the API server reviews "
              "tokens again (the controller's ServiceAccount needs create on tokenreviews and "
              "subjectaccessreviews)\" error=\"%s\" failures_since_last_line=%" PRIu64,
              what, why, a->suppressed);
    a->warned_ms = now;
    a->suppressed = 0;
}

/* The reviews failed: 503 to every waiter, nothing cached. */
static void entry_fail(struct fair_auth *a, struct entry *e, const char *msg)
{
    a->st.review_errors++;
    if (e->kreq) {
        fair_kreq_cancel(e->kreq);
        e->kreq = NULL;
    }
    answer_waiters(a, e, 503, msg);
    entry_remove(a, e);
}

static void perm_words(const struct fair_auth_perm *p, char *out, size_t n)
{
    if (p->group)
        snprintf(out, n, "%s %s.%s", p->verb, p->resource, p->group);
    else
        snprintf(out, n, "%s %s", p->verb, p->path);
}

#define MSG_401                                                                                    \
    "Unauthorized: the bearer token is not valid (expired, revoked, for another audience, or "     \
    "not a Kubernetes token)"

/* The message of a decision, into out[n]. */
static const char *decision_msg(const struct fair_auth *a, const struct entry *e, char *out,
                                size_t n)
{
    if (e->status == 0)
        return "";
    if (e->status == 401)
        return MSG_401;
    char what[200];
    perm_words(e->perm, what, sizeof what);
    snprintf(out, n, "forbidden: user \"%s\" may not %s%s%s%s%s", e->user, what,
             e->perm->group && a->ns ? " in namespace " : "", e->perm->group && a->ns ? a->ns : "",
             e->perm->hint ? "; " : "", e->perm->hint ? e->perm->hint : "");
    return out;
}

/* A decision: cached for its TTL (or dropped when that is 0), then every
 * waiter answered. */
static void entry_decide(struct fair_auth *a, struct entry *e, int status)
{
    int64_t ttl = status == 0 ? a->allow_ttl_ms : a->deny_ttl_ms;
    if (e->timer) {
        event_free(e->timer);
        e->timer = NULL;
    }
    e->kreq = NULL;
    struct waiter *w = e->waiters;
    e->waiters = NULL;
    e->status = status;
    e->state = DECIDED;
    a->st.in_flight--;
    a->st.entries++;
    e->expires_ms = fair_mono_ms(a->clock) + ttl;
    lru_append(a, e);
    /* Answer from a copy: e may be evicted below. */
    char buf[1024], copy[1024];
    snprintf(copy, sizeof copy, "%s", decision_msg(a, e, buf, sizeof buf));
    if (ttl <= 0)
        entry_remove(a, e);
    while (a->st.entries > a->cache_size && a->lru_head)
        entry_remove(a, a->lru_head);
    e = NULL;
    while (w) {
        struct waiter *next = w->next;
        struct fair_httpd_req *req = w->req;
        fair_httpd_req_on_cancel(req, NULL, NULL);
        fair_free(w);
        answer(a, req, status, copy);
        w = next;
    }
}

/* ---- the reviews ---- */

static void on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct entry *e = arg;
    struct fair_auth *a = e->a;
    char msg[256];
    snprintf(msg, sizeof msg,
             "the API server did not review the token within %" PRId64
             " ms (http.authTimeout); try again",
             a->timeout_ms);
    warn_review(a, "token or access review", "timeout");
    entry_fail(a, e, msg);
}

static void on_access_review(const struct fair_kresponse *resp, void *ctx)
{
    struct entry *e = ctx;
    struct fair_auth *a = e->a;
    e->kreq = NULL;
    json_t *allowed = json_object_get(json_object_get(resp->json, "status"), "allowed");
    if (resp->rc != 0 || !json_is_boolean(allowed)) {
        warn_review(a, "SubjectAccessReview", resp->rc ? resp->err.msg : "no status.allowed");
        entry_fail(a, e, "the API server could not review the access; try again");
        return;
    }
    entry_decide(a, e, json_is_true(allowed) ? 0 : 403);
}

/* Sends the SubjectAccessReview for the user the TokenReview named. */
static int send_access_review(struct fair_auth *a, struct entry *e, json_t *user)
{
    const struct fair_auth_perm *p = e->perm;
    json_t *spec = json_object();
    json_t *attrs = json_object();
    int rc = FAIR_ENOMEM;
    char *body = NULL;
    if (!spec || !attrs)
        goto out;
    json_t *v;
    if ((v = json_object_get(user, "username")) && json_is_string(v))
        json_object_set(spec, "user", v);
    if ((v = json_object_get(user, "uid")) && json_is_string(v))
        json_object_set(spec, "uid", v);
    if ((v = json_object_get(user, "groups")) && json_is_array(v) &&
        json_array_size(v) <= MAX_GROUPS)
        json_object_set(spec, "groups", v);
    if ((v = json_object_get(user, "extra")) && json_is_object(v))
        json_object_set(spec, "extra", v);
    json_object_set_new(attrs, "verb", json_string(p->verb));
    if (p->group) {
        if (a->ns)
            json_object_set_new(attrs, "namespace", json_string(a->ns));
        json_object_set_new(attrs, "group", json_string(p->group));
        json_object_set_new(attrs, "resource", json_string(p->resource));
        json_object_set(spec, "resourceAttributes", attrs);
    } else {
        json_object_set_new(attrs, "path", json_string(p->path));
        json_object_set(spec, "nonResourceAttributes", attrs);
    }
    json_t *doc = json_pack("{s:s,s:s,s:O}", "apiVersion", "authorization.k8s.io/v1", "kind",
                            "SubjectAccessReview", "spec", spec);
    body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!body)
        goto out;
    struct fair_error err = {0};
    a->st.access_reviews++;
    rc = fair_kclient_request(a->kc, "POST", ACCESSREVIEWS, "application/json", body, strlen(body),
                              FAIR_KREQ_NO_RETRY_429, on_access_review, e, &e->kreq, &err);
    if (rc)
        warn_review(a, "SubjectAccessReview", err.msg);
out:
    free(body);
    json_decref(spec);
    json_decref(attrs);
    return rc;
}

static void on_token_review(const struct fair_kresponse *resp, void *ctx)
{
    struct entry *e = ctx;
    struct fair_auth *a = e->a;
    e->kreq = NULL;
    json_t *status = json_object_get(resp->json, "status");
    if (resp->rc != 0 || !json_is_object(status)) {
        warn_review(a, "TokenReview", resp->rc ? resp->err.msg : "no status");
        entry_fail(a, e, "the API server could not review the token; try again");
        return;
    }
    json_t *user = json_object_get(status, "user");
    const char *name = json_string_value(json_object_get(user, "username"));
    if (!json_is_true(json_object_get(status, "authenticated")) || !name || !*name) {
        const char *why = json_string_value(json_object_get(status, "error"));
        FAIR_DEBUG(COMP, "msg=\"token refused\" error=\"%s\"", why ? why : "");
        entry_decide(a, e, 401);
        return;
    }
    snprintf(e->user, sizeof e->user, "%s", name);
    if (send_access_review(a, e, user) != 0)
        entry_fail(a, e, "the API server could not review the access; try again");
}

static int send_token_review(struct fair_auth *a, struct entry *e, const char *token, size_t len)
{
    json_t *doc = json_pack("{s:s,s:s,s:{s:s%}}", "apiVersion", "authentication.k8s.io/v1", "kind",
                            "TokenReview", "spec", "token", token, len);
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    if (!body)
        return FAIR_ENOMEM;
    struct fair_error err = {0};
    a->st.token_reviews++;
    int rc =
        fair_kclient_request(a->kc, "POST", TOKENREVIEWS, "application/json", body, strlen(body),
                             FAIR_KREQ_NO_RETRY_429, on_token_review, e, &e->kreq, &err);
    if (rc)
        warn_review(a, "TokenReview", err.msg);
    OPENSSL_cleanse(body, strlen(body));
    free(body);
    return rc;
}

/* ---- the guard ---- */

static void on_waiter_cancel(void *arg)
{
    struct waiter *w = arg;
    struct entry *e = w->e;
    if (w->prev)
        w->prev->next = w->next;
    else
        e->waiters = w->next;
    if (w->next)
        w->next->prev = w->prev;
    struct fair_httpd_req *req = w->req;
    fair_free(w);
    fair_httpd_guard_done(req, 503, "client went away"); /* only frees */
}

static int add_waiter(struct fair_auth *a, struct entry *e, struct fair_httpd_req *req)
{
    struct waiter *w = fair_calloc(1, sizeof *w);
    if (!w)
        return FAIR_ENOMEM;
    w->a = a;
    w->e = e;
    w->req = req;
    w->next = e->waiters;
    if (e->waiters)
        e->waiters->prev = w;
    e->waiters = w;
    fair_httpd_req_on_cancel(req, on_waiter_cancel, w);
    return 0;
}

/* The token of an Authorization header: "Bearer" (any case), spaces, then
 * visible ASCII. Returns its length, 0 when absent or malformed. */
static size_t bearer(const char *h, const char **tok)
{
    if (!h || strncasecmp(h, "Bearer", 6) != 0 || (h[6] != ' ' && h[6] != '\t'))
        return 0;
    const char *t = h + 6;
    while (*t == ' ' || *t == '\t')
        t++;
    size_t n = 0;
    while (t[n] > 0x20 && t[n] < 0x7f)
        n++;
    const char *rest = t + n;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    if (*rest || n == 0 || n > FAIR_AUTH_MAX_TOKEN)
        return 0;
    *tok = t;
    return n;
}

void fair_auth_guard(void *ctx, struct fair_httpd_req *req, const char *authorization,
                     const void *route_arg)
{
    struct fair_auth *a = ctx;
    const struct fair_auth_perm *perm = route_arg;
    if (!perm) {
        answer(a, req, 403, "forbidden: no permission is defined for this path");
        return;
    }
    /* Through the API server's service proxy the Authorization header
     * (the caller's credential for the API server) does not reach us, so
     * the token may come in X-Fairshare-Authorization instead, only when
     * there is no Authorization header. It is checked exactly like one. */
    const char *hdr = authorization;
    const char *hname = "Authorization";
    if (!hdr && (hdr = fair_httpd_req_header(req, FAIR_AUTH_ALT_HEADER)))
        hname = FAIR_AUTH_ALT_HEADER;
    const char *tok = NULL;
    size_t len = bearer(hdr, &tok);
    if (!len) {
        if (hdr) {
            char msg[160];
            snprintf(msg, sizeof msg,
                     "Unauthorized: malformed %s header (send \"%s: Bearer TOKEN\")", hname, hname);
            answer(a, req, 401, msg);
            return;
        }
        answer(a, req, 401,
               "Unauthorized: no bearer token (send \"Authorization: Bearer TOKEN\" with a "
               "Kubernetes token, e.g. kubectl create token; through the API server's service "
               "proxy send it as \"" FAIR_AUTH_ALT_HEADER ": Bearer TOKEN\")");
        return;
    }
    unsigned char key[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)tok, len, key);
    struct entry *e = lookup(a, key, perm);
    if (e && e->state == DECIDED && fair_mono_ms(a->clock) >= e->expires_ms) {
        entry_remove(a, e);
        e = NULL;
    }
    if (e && e->state == DECIDED) {
        a->st.cache_hits++;
        lru_unlink(a, e);
        lru_append(a, e);
        char buf[1024];
        answer(a, req, e->status, decision_msg(a, e, buf, sizeof buf));
        return;
    }
    if (e) { /* REVIEWING: wait with the others */
        if (add_waiter(a, e, req))
            answer(a, req, 503, "out of memory");
        return;
    }
    if (a->st.in_flight >= (uint64_t)a->max_in_flight) {
        answer(a, req, 503, "too many token reviews in flight; try again");
        return;
    }
    e = fair_calloc(1, sizeof *e);
    if (!e) {
        answer(a, req, 503, "out of memory");
        return;
    }
    memcpy(e->key, key, sizeof key);
    e->perm = perm;
    e->state = REVIEWING;
    e->a = a;
    size_t b = bucket_of(a, key, perm);
    e->hnext = a->buckets[b];
    a->buckets[b] = e;
    a->st.in_flight++;
    e->timer = evtimer_new(a->base, on_timeout, e);
    if (!e->timer || add_waiter(a, e, req)) {
        entry_remove(a, e);
        answer(a, req, 503, "out of memory");
        return;
    }
    struct timeval tv = {.tv_sec = (time_t)(a->timeout_ms / 1000),
                         .tv_usec = (suseconds_t)(a->timeout_ms % 1000) * 1000};
    evtimer_add(e->timer, &tv);
    if (send_token_review(a, e, tok, len) != 0)
        entry_fail(a, e, "the API server could not review the token; try again");
}

/* ---- lifecycle ---- */

int fair_auth_new(struct event_base *base, const struct fair_auth_options *o,
                  struct fair_auth **out, struct fair_error *err)
{
    *out = NULL;
    if (!o || !o->kc)
        return fair_error_set(err, FAIR_EINVAL, "auth: a kube client is required");
    struct fair_auth *a = fair_calloc(1, sizeof *a);
    if (!a)
        return fair_error_set(err, FAIR_ENOMEM, "auth: out of memory");
    a->base = base;
    a->kc = o->kc;
    a->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : DEFAULT_TIMEOUT_MS;
    a->allow_ttl_ms = o->allow_ttl_ms > 0 ? o->allow_ttl_ms : 0;
    a->deny_ttl_ms = o->deny_ttl_ms > 0 ? o->deny_ttl_ms : 0;
    a->cache_size = o->cache_size ? o->cache_size : DEFAULT_CACHE_SIZE;
    a->max_in_flight = o->max_in_flight > 0 ? o->max_in_flight : DEFAULT_MAX_IN_FLIGHT;
    a->clock = o->clock ? o->clock : fair_clock_system();
    a->nbuckets = 16;
    while (a->nbuckets < a->cache_size + (size_t)a->max_in_flight && a->nbuckets < (1u << 20))
        a->nbuckets <<= 1;
    a->buckets = fair_calloc(a->nbuckets, sizeof *a->buckets);
    if (!a->buckets || (o->namespace_ && !(a->ns = fair_strdup(o->namespace_)))) {
        fair_auth_free(a);
        return fair_error_set(err, FAIR_ENOMEM, "auth: out of memory");
    }
    *out = a;
    return 0;
}

void fair_auth_free(struct fair_auth *a)
{
    if (!a)
        return;
    for (size_t b = 0; a->buckets && b < a->nbuckets; b++) {
        while (a->buckets[b]) {
            struct entry *e = a->buckets[b];
            if (e->state == REVIEWING) {
                if (e->kreq)
                    fair_kreq_cancel(e->kreq);
                e->kreq = NULL;
                answer_waiters(a, e, 503, "the server is shutting down");
            }
            entry_remove(a, e);
        }
    }
    fair_free(a->buckets);
    fair_free(a->ns);
    fair_free(a);
}

void fair_auth_stats(const struct fair_auth *a, struct fair_auth_stats *out)
{
    *out = a->st;
}

int fair_auth_metrics(const struct fair_auth *a, struct fair_buf *out)
{
    const struct fair_auth_stats *s = &a->st;
    int rc = fair_buf_appendf(
        out,
        "# HELP fairshare_http_auth_requests_total Requests to authorised endpoints, by "
        "decision.\n"
        "# TYPE fairshare_http_auth_requests_total counter\n"
        "fairshare_http_auth_requests_total{decision=\"allowed\"} %" PRIu64 "\n"
        "fairshare_http_auth_requests_total{decision=\"unauthenticated\"} %" PRIu64 "\n"
        "fairshare_http_auth_requests_total{decision=\"forbidden\"} %" PRIu64 "\n"
        "fairshare_http_auth_requests_total{decision=\"unavailable\"} %" PRIu64 "\n"
        "# HELP fairshare_http_auth_cache_hits_total Decisions taken from the cache.\n"
        "# TYPE fairshare_http_auth_cache_hits_total counter\n"
        "fairshare_http_auth_cache_hits_total %" PRIu64 "\n"
        "# HELP fairshare_http_auth_reviews_total Reviews sent to the API server.\n"
        "# TYPE fairshare_http_auth_reviews_total counter\n"
        "fairshare_http_auth_reviews_total{kind=\"TokenReview\"} %" PRIu64 "\n"
        "fairshare_http_auth_reviews_total{kind=\"SubjectAccessReview\"} %" PRIu64 "\n"
        "# HELP fairshare_http_auth_review_errors_total Reviews that failed or timed out (503).\n"
        "# TYPE fairshare_http_auth_review_errors_total counter\n"
        "fairshare_http_auth_review_errors_total %" PRIu64 "\n"
        "# HELP fairshare_http_auth_reviews_in_flight Tokens under review now.\n"
        "# TYPE fairshare_http_auth_reviews_in_flight gauge\n"
        "fairshare_http_auth_reviews_in_flight %" PRIu64 "\n"
        "# HELP fairshare_http_auth_cache_entries Decisions cached now.\n"
        "# TYPE fairshare_http_auth_cache_entries gauge\n"
        "fairshare_http_auth_cache_entries %" PRIu64 "\n",
        s->allowed, s->unauthenticated, s->forbidden, s->unavailable, s->cache_hits,
        s->token_reviews, s->access_reviews, s->review_errors, s->in_flight, s->entries);
    return rc ? FAIR_ENOMEM : 0;
}
