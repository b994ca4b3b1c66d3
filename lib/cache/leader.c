/* Leader election on a coordination.k8s.io/v1 Lease (see leader.h for
 * the states). One attempt runs at a time: tick() starts it with a GET,
 * on_get() decides, and on_write() records the outcome. A separate
 * deadline timer makes a leader step down renew_deadline_ms after its last
 * successful renewal even if requests hang. */
#include "cache/leader.h"

#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/alloc.h"
#include "base/log.h"

#define COMP "leader"

struct fair_leader {
    struct fair_kclient *c;
    struct fair_leader_options opt;
    struct fair_leader_callbacks cb;
    char *ns, *name, *identity;
    struct event *tick_timer;
    struct event *deadline_timer;
    struct event *done_timer;
    struct fair_kreq *req; /* the request in flight, or NULL */
    struct call *req_call; /* its context, freed by its callback */
    bool busy;             /* an attempt is in flight */
    int64_t busy_since;
    uint64_t attempt; /* responses of older attempts are ignored */
    bool leading;
    bool started, stopping, lost;
    /* What we last saw of the Lease. */
    char *observed_holder;
    char *observed_record; /* holder|renewTime|acquireTime|transitions */
    int64_t observed_ms;   /* monotonic: when the record last changed */
    int64_t last_renew_ms; /* monotonic: our last successful write */
    json_t *lease;         /* the last Lease object we read or wrote */
    void (*done)(void *ctx);
    void *done_ctx;
};

/* Each request carries the attempt it belongs to; freed in its callback. */
struct call {
    struct fair_leader *l;
    uint64_t attempt;
};

/* Cancels the request in flight (its callback will not run). */
static void drop_inflight(struct fair_leader *l)
{
    if (l->req) {
        fair_kreq_cancel(l->req);
        fair_free(l->req_call);
    }
    l->req = NULL;
    l->req_call = NULL;
}

static void clear_inflight(struct fair_leader *l)
{
    l->req = NULL;
    l->req_call = NULL;
}

static int64_t mono(void)
{
    return fair_mono_ms(fair_clock_system());
}

static void micro_time(char *out, size_t n)
{
    int64_t ms = fair_now_ms(fair_clock_system());
    char s[40];
    fair_time_format_rfc3339(ms, s, sizeof s);
    size_t len = strlen(s);
    if (len && s[len - 1] == 'Z')
        s[len - 1] = '\0';
    snprintf(out, n, "%s.%03d000Z", s, (int)(ms % 1000));
}

static void arm(struct event *ev, int64_t ms)
{
    struct timeval tv = {(time_t)(ms / 1000), (suseconds_t)((ms % 1000) * 1000)};
    evtimer_add(ev, &tv);
}

static void set_leading(struct fair_leader *l, bool on)
{
    if (l->leading == on)
        return;
    l->leading = on;
    if (on) {
        FAIR_INFO(COMP, "msg=\"started leading\" lease=%s/%s identity=%s", l->ns, l->name,
                  l->identity);
        arm(l->deadline_timer, l->opt.renew_deadline_ms);
        if (l->cb.on_started_leading)
            l->cb.on_started_leading(l->cb.ctx);
    } else {
        FAIR_INFO(COMP, "msg=\"stopped leading\" lease=%s/%s identity=%s", l->ns, l->name,
                  l->identity);
        evtimer_del(l->deadline_timer);
        if (l->cb.on_stopped_leading)
            l->cb.on_stopped_leading(l->cb.ctx);
    }
}

/* Leadership lost (not stop()): like client-go's elector, we stop
 * campaigning; the program is expected to exit and restart. */
static void lose(struct fair_leader *l)
{
    evtimer_del(l->tick_timer);
    drop_inflight(l);
    l->busy = false;
    l->lost = true;
    set_leading(l, false);
}

static void observe(struct fair_leader *l, json_t *lease)
{
    json_t *spec = json_object_get(lease, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    const char *renew = json_string_value(json_object_get(spec, "renewTime"));
    const char *acq = json_string_value(json_object_get(spec, "acquireTime"));
    json_int_t tr = json_integer_value(json_object_get(spec, "leaseTransitions"));
    char rec[512];
    snprintf(rec, sizeof rec, "%s|%s|%s|%lld", holder ? holder : "", renew ? renew : "",
             acq ? acq : "", (long long)tr);
    if (!l->observed_record || strcmp(rec, l->observed_record)) {
        fair_free(l->observed_record);
        l->observed_record = fair_strdup(rec);
        l->observed_ms = mono();
        if (!l->observed_holder || strcmp(l->observed_holder, holder ? holder : "")) {
            fair_free(l->observed_holder);
            l->observed_holder = fair_strdup(holder ? holder : "");
            if (l->cb.on_new_leader)
                l->cb.on_new_leader(holder ? holder : "", l->cb.ctx);
        }
    }
    json_incref(lease);
    json_decref(l->lease);
    l->lease = lease;
}

static void on_write(const struct fair_kresponse *resp, void *ctx);

/* PUT (or POST when create) the Lease with us as holder. */
static void write_lease(struct fair_leader *l, bool create, bool release)
{
    char now[64];
    micro_time(now, sizeof now);
    json_t *obj;
    if (create) {
        obj = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{}}", "apiVersion", "coordination.k8s.io/v1",
                        "kind", "Lease", "metadata", "name", l->name, "namespace", l->ns, "spec");
    } else {
        obj = json_deep_copy(l->lease);
    }
    json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec)) {
        spec = json_object();
        json_object_set_new(obj, "spec", spec);
    }
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    bool ours = holder && !strcmp(holder, l->identity);
    if (release) {
        /* client-go's ReleaseOnCancel: empty holder, 1 s lease. */
        json_object_set_new(spec, "holderIdentity", json_string(""));
        json_object_set_new(spec, "leaseDurationSeconds", json_integer(1));
        json_object_set_new(spec, "renewTime", json_string(now));
    } else {
        if (!ours) {
            json_int_t tr = json_integer_value(json_object_get(spec, "leaseTransitions"));
            /* As client-go: every change of holder counts, even from an
             * empty (released) one. */
            json_object_set_new(spec, "leaseTransitions", json_integer(create ? 0 : tr + 1));
            json_object_set_new(spec, "acquireTime", json_string(now));
        }
        json_object_set_new(spec, "holderIdentity", json_string(l->identity));
        json_object_set_new(spec, "leaseDurationSeconds",
                            json_integer((l->opt.lease_ms + 999) / 1000));
        json_object_set_new(spec, "renewTime", json_string(now));
    }
    char *body = obj ? json_dumps(obj, JSON_COMPACT) : NULL;
    json_decref(obj);
    struct call *call = fair_calloc(1, sizeof *call);
    struct fair_buf p;
    fair_buf_init(&p, 4096);
    struct fair_error err = {0};
    int rc = FAIR_ENOMEM;
    if (body && call &&
        fair_kpath(&p, &fair_kres_leases, l->ns, create ? NULL : l->name, NULL, &err) == 0) {
        call->l = l;
        call->attempt = l->attempt;
        rc = fair_kclient_request(l->c, create ? "POST" : "PUT", fair_buf_str(&p), NULL, body,
                                  strlen(body), FAIR_KREQ_NO_RATE_LIMIT, on_write, call, &l->req,
                                  &err);
        if (!rc)
            l->req_call = call;
    }
    fair_buf_release(&p);
    free(body);
    if (rc) {
        fair_free(call);
        FAIR_WARN(COMP, "msg=\"cannot write lease\" error=\"%s\"", err.msg);
        l->busy = false;
    }
}

static void finish_stop(struct fair_leader *l)
{
    l->busy = false;
    arm(l->done_timer, 0);
}

static void on_get(const struct fair_kresponse *resp, void *ctx)
{
    struct call *call = ctx;
    struct fair_leader *l = call->l;
    bool stale = call->attempt != l->attempt;
    fair_free(call);
    clear_inflight(l);
    if (stale)
        return;
    if (l->stopping) { /* the GET before a release */
        if (resp->rc == 0 && json_is_object(resp->json)) {
            observe(l, resp->json);
            const char *holder = json_string_value(
                json_object_get(json_object_get(resp->json, "spec"), "holderIdentity"));
            if (holder && !strcmp(holder, l->identity)) {
                write_lease(l, false, true);
                if (l->busy)
                    return;
            }
        }
        finish_stop(l);
        return;
    }
    if (resp->rc == FAIR_ENOTFOUND) {
        write_lease(l, true, false);
        return;
    }
    if (resp->rc || !json_is_object(resp->json)) {
        FAIR_WARN(COMP, "msg=\"cannot read lease\" error=\"%s\"", resp->err.msg);
        l->busy = false;
        return;
    }
    observe(l, resp->json);
    json_t *spec = json_object_get(resp->json, "spec");
    const char *holder = json_string_value(json_object_get(spec, "holderIdentity"));
    json_int_t dur = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
    bool ours = holder && !strcmp(holder, l->identity);
    /* Expiry is judged on our own clock, from when we saw the record
     * change: clocks of different machines are never compared. */
    bool expired = !holder || !holder[0] || mono() >= l->observed_ms + (int64_t)dur * 1000;
    if (!ours && !expired) {
        l->busy = false;
        if (l->leading) /* someone else holds it now */
            lose(l);
        return;
    }
    write_lease(l, false, false);
}

static void on_write(const struct fair_kresponse *resp, void *ctx)
{
    struct call *call = ctx;
    struct fair_leader *l = call->l;
    bool stale = call->attempt != l->attempt;
    fair_free(call);
    clear_inflight(l);
    if (stale)
        return;
    if (l->stopping) {
        if (resp->rc)
            FAIR_WARN(COMP, "msg=\"cannot release lease\" error=\"%s\"", resp->err.msg);
        else
            FAIR_INFO(COMP, "msg=\"released lease\" lease=%s/%s", l->ns, l->name);
        finish_stop(l);
        return;
    }
    l->busy = false;
    if (resp->rc == 0 && json_is_object(resp->json)) {
        observe(l, resp->json);
        l->last_renew_ms = mono();
        if (l->leading)
            arm(l->deadline_timer, l->opt.renew_deadline_ms);
        set_leading(l, true);
        return;
    }
    if (resp->rc == FAIR_ECONFLICT) {
        /* Someone wrote it since we read it: re-read at once. */
        FAIR_DEBUG(COMP, "msg=\"lease conflict; re-reading\" lease=%s/%s", l->ns, l->name);
        arm(l->tick_timer, 0);
        return;
    }
    FAIR_WARN(COMP, "msg=\"cannot write lease\" error=\"%s\"", resp->err.msg);
}

static void start_get(struct fair_leader *l)
{
    drop_inflight(l);
    struct call *call = fair_calloc(1, sizeof *call);
    struct fair_error err = {0};
    l->attempt++;
    l->busy = true;
    l->busy_since = mono();
    if (!call) {
        l->busy = false;
        return;
    }
    call->l = l;
    call->attempt = l->attempt;
    struct fair_buf p;
    fair_buf_init(&p, 4096);
    int rc = fair_kpath(&p, &fair_kres_leases, l->ns, l->name, NULL, &err);
    if (!rc)
        rc = fair_kclient_request(l->c, "GET", fair_buf_str(&p), NULL, NULL, 0,
                                  FAIR_KREQ_NO_RATE_LIMIT, on_get, call, &l->req, &err);
    if (!rc)
        l->req_call = call;
    fair_buf_release(&p);
    if (rc) {
        fair_free(call);
        l->busy = false;
        FAIR_WARN(COMP, "msg=\"cannot read lease\" error=\"%s\"", err.msg);
    }
}

static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_leader *l = arg;
    if (l->stopping || l->lost)
        return;
    arm(l->tick_timer, l->opt.retry_ms);
    /* An attempt (a GET, then maybe a write: two round trips) runs until
     * it is answered; one that hangs past the renew deadline is abandoned
     * (its answer, if it ever comes, is ignored), as client-go bounds each
     * try by the renew deadline. Abandoning it after one retry period
     * instead would cancel every renewal once a round trip takes half a
     * retry period, and the cancelled transfer's connection with it. */
    if (l->busy && mono() - l->busy_since < l->opt.renew_deadline_ms)
        return;
    start_get(l);
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_leader *l = arg;
    if (l->leading && mono() - l->last_renew_ms >= l->opt.renew_deadline_ms) {
        FAIR_WARN(COMP,
                  "msg=\"could not renew the lease within the renew deadline\" "
                  "lease=%s/%s deadline_ms=%lld",
                  l->ns, l->name, (long long)l->opt.renew_deadline_ms);
        lose(l);
    } else if (l->leading) {
        arm(l->deadline_timer, l->last_renew_ms + l->opt.renew_deadline_ms - mono());
    }
}

static void on_done_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_leader *l = arg;
    void (*done)(void *) = l->done;
    l->done = NULL;
    if (done)
        done(l->done_ctx);
}

int fair_leader_new(struct fair_kclient *c, const struct fair_leader_options *opts,
                    const struct fair_leader_callbacks *cbs, struct fair_leader **out,
                    struct fair_error *err)
{
    *out = NULL;
    if (!opts || !opts->name)
        return fair_error_set(err, FAIR_EINVAL, "leader election: a Lease name is required");
    struct fair_leader *l = fair_calloc(1, sizeof *l);
    if (!l)
        return fair_error_set(err, FAIR_ENOMEM, "leader election: out of memory");
    l->c = c;
    l->opt = *opts;
    if (cbs)
        l->cb = *cbs;
    if (l->opt.lease_ms <= 0)
        l->opt.lease_ms = 15000;
    if (l->opt.renew_deadline_ms <= 0)
        l->opt.renew_deadline_ms = 10000;
    if (l->opt.retry_ms <= 0)
        l->opt.retry_ms = 2000;
    int rc = 0;
    if (l->opt.renew_deadline_ms >= l->opt.lease_ms ||
        l->opt.retry_ms >= l->opt.renew_deadline_ms) {
        rc = fair_error_set(err, FAIR_EINVAL,
                            "leader election: want retry (%lld ms) < renew "
                            "deadline (%lld ms) < lease duration (%lld ms)",
                            (long long)l->opt.retry_ms, (long long)l->opt.renew_deadline_ms,
                            (long long)l->opt.lease_ms);
        goto out;
    }
    char host[256] = "";
    const char *id = opts->identity;
    if (!id || !id[0])
        id = getenv("POD_NAME");
    if (!id || !id[0]) {
        if (gethostname(host, sizeof host - 1) != 0 || !host[0]) {
            rc = fair_error_set(err, FAIR_EINVAL, "leader election: no identity (set POD_NAME)");
            goto out;
        }
        id = host;
    }
    struct event_base *base = fair_kclient_base(c);
    l->ns = fair_strdup(opts->ns && opts->ns[0] ? opts->ns : fair_kclient_namespace(c));
    l->name = fair_strdup(opts->name);
    l->identity = fair_strdup(id);
    l->tick_timer = evtimer_new(base, on_tick, l);
    l->deadline_timer = evtimer_new(base, on_deadline, l);
    l->done_timer = evtimer_new(base, on_done_timer, l);
    if (!l->ns || !l->name || !l->identity || !l->tick_timer || !l->deadline_timer ||
        !l->done_timer)
        rc = fair_error_set(err, FAIR_ENOMEM, "leader election: out of memory");
out:
    if (rc) {
        fair_leader_free(l);
        return rc;
    }
    l->opt.ns = l->ns;
    l->opt.name = l->name;
    l->opt.identity = l->identity;
    *out = l;
    return 0;
}

int fair_leader_start(struct fair_leader *l, struct fair_error *err)
{
    if (l->started)
        return fair_error_set(err, FAIR_EBUSY, "leader election: already started");
    l->started = true;
    arm(l->tick_timer, 0);
    return 0;
}

void fair_leader_stop(struct fair_leader *l, void (*done)(void *ctx), void *ctx)
{
    l->done = done;
    l->done_ctx = ctx;
    if (l->stopping)
        return;
    l->stopping = true;
    evtimer_del(l->tick_timer);
    bool was_leading = l->leading;
    set_leading(l, false);
    if (!was_leading) {
        finish_stop(l);
        return;
    }
    /* Release: read the current version, then clear the holder. */
    start_get(l);
    if (!l->busy)
        finish_stop(l);
}

bool fair_leader_is_leader(const struct fair_leader *l)
{
    return l->leading;
}

const char *fair_leader_identity(const struct fair_leader *l)
{
    return l->identity;
}

void fair_leader_free(struct fair_leader *l)
{
    if (!l)
        return;
    drop_inflight(l);
    if (l->tick_timer)
        event_free(l->tick_timer);
    if (l->deadline_timer)
        event_free(l->deadline_timer);
    if (l->done_timer)
        event_free(l->done_timer);
    json_decref(l->lease);
    fair_free(l->observed_holder);
    fair_free(l->observed_record);
    fair_free(l->ns);
    fair_free(l->name);
    fair_free(l->identity);
    fair_free(l);
}
