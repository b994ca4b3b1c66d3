/* fakekube's watch streams: an HTTP 200 chunked response that carries one
 * JSON event per line, as the real kube-apiserver sends them.
 *
 * Watcher states: STREAMING (in s->watchers) -> gone. A watcher leaves the
 * list when its timeoutSeconds passes (stream ended cleanly), when the
 * client closes the connection (fk_on_close), when it is dropped by the
 * fault endpoint, or when its output buffer passes FK_MAX_WATCH_BUFFER.
 * STREAMING -> STALLED (/fake/stall-watches): the connection stays open
 * and nothing more is sent, no event, no bookmark, no end at the timeout,
 * as a hung stream looks to the client; it leaves as above, except by its
 * timeout. */
#include "fakekube.h"

#include "base/alloc.h"
#include "base/log.h"

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct fk_watcher {
    struct fk_watcher *next, *prev;
    struct fk_server *srv;
    struct evhttp_request *req;
    struct evhttp_connection *evcon;
    int type;
    char *ns;   /* NULL: all namespaces */
    char *name; /* metadata.name=X field selector fast path; NULL: any */
    struct fk_selector labels, fields;
    uint64_t from; /* events at or before this rv are not sent */
    int bookmarks; /* allowWatchBookmarks=true */
    int stalled;   /* /fake/stall-watches: sends nothing more, never ends */
    struct event *bookmark_ev;
    struct event *timeout_ev;
};

static void watcher_unlink(struct fk_server *s, struct fk_watcher *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        s->watchers = w->next;
    if (w->next)
        w->next->prev = w->prev;
    s->nwatchers--;
}

static void watcher_free(struct fk_watcher *w)
{
    if (w->bookmark_ev)
        event_free(w->bookmark_ev);
    if (w->timeout_ev)
        event_free(w->timeout_ev);
    fk_selector_release(&w->labels);
    fk_selector_release(&w->fields);
    fair_free(w->ns);
    fair_free(w->name);
    fair_free(w);
}

static int matches(const struct fk_watcher *w, const json_t *obj)
{
    if (!obj)
        return 0;
    if (w->ns && strcmp(fk_meta_str(obj, "namespace"), w->ns) != 0)
        return 0;
    return fk_selector_match(&w->labels, obj) && fk_selector_match(&w->fields, obj);
}

static void send_data(struct fk_watcher *w, const char *data, size_t len)
{
    struct evbuffer *buf = evbuffer_new();
    if (!buf)
        return;
    evbuffer_add(buf, data, len);
    evhttp_send_reply_chunk(w->req, buf);
    evbuffer_free(buf);
}

static void send_json(struct fk_watcher *w, const char *etype, json_t *obj)
{
    json_t *wrap = json_pack("{s:s,s:O}", "type", etype, "object", obj);
    char *line = wrap ? json_dumps(wrap, JSON_COMPACT) : NULL;
    json_decref(wrap);
    if (!line)
        return;
    size_t len = strlen(line);
    struct evbuffer *buf = evbuffer_new();
    if (buf) {
        evbuffer_add(buf, line, len);
        evbuffer_add(buf, "\n", 1);
        evhttp_send_reply_chunk(w->req, buf);
        evbuffer_free(buf);
    }
    free(line);
}

/* Sends ev to w the way the watch cache does for filtered watches: an
 * object that starts matching is ADDED, one that stops matching DELETED. */
static void deliver(struct fk_watcher *w, const struct fk_event *ev)
{
    if (w->stalled || ev->type != w->type || ev->rv <= w->from)
        return;
    int now = matches(w, ev->obj);
    int before = ev->old ? matches(w, ev->old) : 0;
    if (ev->etype == FK_DELETED)
        now = 0;
    if (ev->etype == FK_ADDED)
        before = 0;
    if (ev->etype == FK_DELETED) {
        if (before || matches(w, ev->obj)) {
            if (ev->line)
                send_data(w, ev->line, ev->line_len);
        }
        return;
    }
    if (now && (before || ev->etype == FK_ADDED)) {
        if (ev->line)
            send_data(w, ev->line, ev->line_len);
    } else if (now && !before) {
        send_json(w, "ADDED", ev->obj);
    } else if (!now && before) {
        send_json(w, "DELETED", ev->obj);
    }
}

static size_t pending_output(struct fk_watcher *w)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(w->req);
    if (!evcon)
        return 0;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    return bev ? evbuffer_get_length(bufferevent_get_output(bev)) : 0;
}

static void end_watch(struct fk_server *s, struct fk_watcher *w)
{
    watcher_unlink(s, w);
    evhttp_send_reply_end(w->req);
    watcher_free(w);
}

static void close_abrupt(struct fk_server *s, struct fk_watcher *w)
{
    /* Calls fk_on_close, which unlinks and frees w. */
    evhttp_connection_free(w->evcon);
    for (struct fk_watcher *x = s->watchers; x; x = x->next) {
        if (x == w) { /* the close callback did not run */
            watcher_unlink(s, w);
            watcher_free(w);
            break;
        }
    }
}

void fk_watch_notify(struct fk_server *s, const struct fk_event *ev)
{
    struct fk_watcher *w = s->watchers, *next;
    for (; w; w = next) {
        next = w->next;
        deliver(w, ev);
        if (pending_output(w) > FK_MAX_WATCH_BUFFER) {
            /* Like the real server, give up on a watcher that does not
             * read: close its connection (fk_on_close frees w). */
            FAIR_WARN("fakekube", "msg=\"closing slow watcher\" resource=%s",
                      s->types[w->type].plural);
            close_abrupt(s, w);
        }
    }
}

static void bookmark_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fk_watcher *w = arg;
    struct fk_server *s = w->srv;
    const struct fk_type *t = &s->types[w->type];
    char rv[32];
    if (w->stalled)
        return;
    /* Everything up to the current rv has been sent to this watcher (or
     * did not match it); never below the rv the watch started from. */
    snprintf(rv, sizeof(rv), "%" PRIu64, s->rv > w->from ? s->rv : w->from);
    json_t *obj = json_pack("{s:s,s:s,s:{s:s}}", "kind", t->kind, "apiVersion", t->api_version,
                            "metadata", "resourceVersion", rv);
    if (obj)
        send_json(w, "BOOKMARK", obj);
    json_decref(obj);
}

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fk_watcher *w = arg;
    if (w->stalled)
        return; /* hung: only the client (or drop-watches) ends it */
    /* Like the watch cache, send a last bookmark before a timeout ends the
     * stream, so that the client can resume from it. */
    if (w->bookmarks)
        bookmark_cb(-1, 0, w);
    end_watch(w->srv, w);
}

static const char *query_get(struct evkeyvalq *q, const char *k)
{
    return q ? evhttp_find_header(q, k) : NULL;
}

static int truthy(const char *v)
{
    return v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0);
}

int fk_watch_start(struct fk_server *s, struct evhttp_request *req, int type, const char *ns,
                   struct evkeyvalq *query)
{
    char err[256];
    struct fk_watcher *w = NULL;
    const char *ls = query_get(query, "labelSelector");
    const char *fs = query_get(query, "fieldSelector");
    const char *rvs = query_get(query, "resourceVersion");
    const char *to = query_get(query, "timeoutSeconds");

    if (s->nwatchers >= s->max_watchers) {
        fk_reply(
            s, req, 429,
            fk_status(429, "TooManyRequests", "too many watches (limit %zu)", s->max_watchers));
        return 0;
    }
    w = fair_calloc(1, sizeof(*w));
    if (!w) {
        fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
        return 0;
    }
    w->srv = s;
    w->req = req;
    w->type = type;
    if (ns && !(w->ns = fair_strdup(ns)))
        goto oom;
    if (fk_selector_parse(ls, 0, &w->labels, err, sizeof(err)) != 0) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "unable to parse requirement: %s", err));
        goto fail;
    }
    if (fk_selector_parse(fs, 1, &w->fields, err, sizeof(err)) != 0 ||
        fk_selector_check_fields(&w->fields, type, err, sizeof(err)) != 0) {
        fk_reply(s, req, 400, fk_status(400, "BadRequest", "%s", err));
        goto fail;
    }
    long timeout = 0;
    if (to) {
        char *end;
        timeout = strtol(to, &end, 10);
        if (*end || timeout < 0 || timeout > 86400) {
            fk_reply(s, req, 400, fk_status(400, "BadRequest", "invalid timeoutSeconds: %s", to));
            goto fail;
        }
    }
    uint64_t from = 0;
    int replay_all = 1;
    if (rvs && *rvs && strcmp(rvs, "0") != 0) {
        char *end;
        unsigned long long v = strtoull(rvs, &end, 10);
        if (*end || end == rvs) {
            fk_reply(s, req, 400, fk_status(400, "BadRequest", "invalid resourceVersion: %s", rvs));
            goto fail;
        }
        from = v;
        replay_all = 0;
        w->from = v; /* a watch from a future rv starts there */
    }

    struct evkeyvalq *out = evhttp_request_get_output_headers(req);
    evhttp_add_header(out, "Content-Type", "application/json");
    evhttp_add_header(out, "Cache-Control", "no-cache, private");
    evhttp_send_reply_start(req, 200, "OK");
    w->evcon = evhttp_request_get_connection(req);
    evhttp_connection_set_closecb(w->evcon, fk_on_close, s);

    if (!replay_all && from < s->hist_floor) {
        /* The real server answers 200 and sends one ERROR event. */
        json_t *st = fk_status(410, "Expired", "too old resource version: %llu (%" PRIu64 ")",
                               (unsigned long long)from, s->hist_floor);
        send_json(w, "ERROR", st);
        json_decref(st);
        evhttp_send_reply_end(req);
        watcher_free(w);
        return 0;
    }

    w->next = s->watchers;
    if (s->watchers)
        s->watchers->prev = w;
    s->watchers = w;
    s->nwatchers++;

    if (replay_all) {
        /* rv "" or "0": synthetic ADDED events for the current state. */
        size_t n;
        char **keys = fk_sorted_keys(s, type, &n);
        for (size_t i = 0; keys && i < n; i++) {
            json_t *obj = fk_get(s, type, keys[i]);
            if (matches(w, obj))
                send_json(w, "ADDED", obj);
        }
    } else {
        for (uint64_t r = from + 1; r <= s->rv; r++) {
            const struct fk_event *ev = fk_hist_at(s, r);
            if (ev)
                deliver(w, ev);
        }
    }
    w->bookmarks = truthy(query_get(query, "allowWatchBookmarks"));
    if (w->bookmarks && s->bookmark_ms > 0) {
        w->bookmark_ev = event_new(s->base, -1, EV_PERSIST, bookmark_cb, w);
        struct timeval tv = {s->bookmark_ms / 1000, (s->bookmark_ms % 1000) * 1000};
        if (w->bookmark_ev)
            event_add(w->bookmark_ev, &tv);
    }
    if (timeout > 0) {
        w->timeout_ev = evtimer_new(s->base, timeout_cb, w);
        struct timeval tv = {timeout, 0};
        if (w->timeout_ev)
            evtimer_add(w->timeout_ev, &tv);
    }
    return 0;
oom:
    fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
fail:
    watcher_free(w);
    return 0;
}

void fk_on_close(struct evhttp_connection *evcon, void *arg)
{
    struct fk_server *s = arg;
    struct fk_watcher *w = s->watchers, *next;
    for (; w; w = next) {
        next = w->next;
        if (w->evcon != evcon)
            continue;
        watcher_unlink(s, w);
        /* On a client close, evhttp detached the request and left it to
         * us; when we free the connection ourselves, evhttp frees it. */
        if (evhttp_request_get_connection(w->req) == NULL)
            evhttp_request_free(w->req);
        watcher_free(w);
    }
    fk_deferred_cancel_conn(s, evcon);
}

size_t fk_watch_drop_all(struct fk_server *s, int abrupt)
{
    size_t n = 0;
    while (s->watchers) {
        struct fk_watcher *w = s->watchers;
        n++;
        if (abrupt) {
            close_abrupt(s, w);
        } else {
            end_watch(s, w);
        }
    }
    return n;
}

size_t fk_watch_stall(struct fk_server *s, int type)
{
    size_t n = 0;
    for (struct fk_watcher *w = s->watchers; w; w = w->next)
        if (!w->stalled && (type < 0 || w->type == type)) {
            w->stalled = 1;
            n++;
        }
    return n;
}

void fk_watch_release_all(struct fk_server *s)
{
    fk_watch_drop_all(s, 1);
}
