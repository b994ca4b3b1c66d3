/* Reflector + informer for one resource type (see informer.h for the
 * state machine). Transitions:
 *   start_list()      -> LISTING  (first page; on_list_page() pages on)
 *   apply_list()      -> WATCHING (the diff applied; start_watch())
 *   on_watch_done()   -> WATCHING again, or LISTING on 410/oversized events,
 *                        through WAITING (the backoff timer) on failures
 *   on_list_page() failure -> WAITING -> LISTING */
#include "cache/informer.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"

#define COMP "informer"

enum state { ST_IDLE, ST_LISTING, ST_WATCHING, ST_WAITING };
enum next { NEXT_LIST, NEXT_WATCH };

struct fair_informer {
    struct fair_kclient *c;
    struct fair_informer_options opt;
    char *ns, *label_selector, *field_selector;
    struct fair_informer_handlers h;
    struct fair_store *store;
    struct fair_store *relist; /* objects of the list in progress */
    char *rv;                  /* last resourceVersion seen */
    char *list_rv;             /* resourceVersion of the list in progress */
    char *continue_token;
    struct fair_kreq *req; /* the list page or watch in flight */
    struct event *timer;   /* backoff, or a deferred step */
    enum state state;
    enum next next;
    int64_t backoff_ms;     /* the next delay before jitter */
    int64_t watch_start_ms; /* monotonic */
    int64_t last_list_ms;
    uint64_t watch_events; /* events in the current watch */
    bool synced;
    bool unpaged; /* the next list asks for everything at once */
    uint32_t rng;
    struct fair_informer_stats stats;
};

static void start_list(struct fair_informer *inf);
static void start_watch(struct fair_informer *inf);

static int64_t mono(void)
{
    return fair_mono_ms(fair_clock_system());
}

static int set_str(char **dst, const char *src)
{
    char *n = src ? fair_strdup(src) : NULL;
    if (src && !n)
        return FAIR_ENOMEM;
    fair_free(*dst);
    *dst = n;
    return 0;
}

static const char *kind(const struct fair_informer *inf)
{
    return inf->opt.res->resource;
}

/* ---- scheduling ---------------------------------------------------------- */

static void on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_informer *inf = arg;
    if (inf->next == NEXT_LIST)
        start_list(inf);
    else
        start_watch(inf);
}

static void schedule(struct fair_informer *inf, enum next next, int64_t delay_ms)
{
    inf->state = ST_WAITING;
    inf->next = next;
    struct timeval tv = {(time_t)(delay_ms / 1000), (suseconds_t)((delay_ms % 1000) * 1000)};
    evtimer_add(inf->timer, &tv);
}

/* Exponential backoff with +-25% jitter, capped. */
static int64_t next_backoff(struct fair_informer *inf)
{
    int64_t d = inf->backoff_ms;
    inf->backoff_ms = d * 2 > inf->opt.backoff_cap_ms ? inf->opt.backoff_cap_ms : d * 2;
    inf->rng = inf->rng * 1103515245u + 12345u;
    int64_t span = d / 2; /* [-25%, +25%) */
    int64_t j = span ? (int64_t)((inf->rng >> 8) % (uint64_t)span) - span / 2 : 0;
    d += j;
    if (d > inf->opt.backoff_cap_ms)
        d = inf->opt.backoff_cap_ms;
    return d < 1 ? 1 : d;
}

static void backoff(struct fair_informer *inf, enum next next)
{
    int64_t d = next_backoff(inf);
    FAIR_INFO(COMP, "msg=\"retrying after backoff\" resource=%s next=%s delay_ms=%lld", kind(inf),
              next == NEXT_LIST ? "list" : "watch", (long long)d);
    schedule(inf, next, d);
}

/* ---- applying objects ---------------------------------------------------- */

static void upsert(struct fair_informer *inf, void *obj)
{
    struct fair_kmeta *m = fair_kobj_meta(obj);
    void *cur = m->uid ? fair_store_get(inf->store, m->uid) : NULL;
    if (cur) {
        const char *orv = fair_kobj_meta(cur)->resource_version;
        if (orv && m->resource_version && !strcmp(orv, m->resource_version)) {
            inf->opt.type->free(obj); /* the same version again: no event */
            return;
        }
    }
    void *old = NULL;
    int rc = fair_store_put_take(inf->store, obj, &old);
    if (rc) {
        FAIR_WARN(COMP, "msg=\"cannot store object\" resource=%s error=%s", kind(inf),
                  fair_strerror(rc));
        return;
    }
    if (old) {
        if (inf->h.on_update)
            inf->h.on_update(old, obj, inf->h.ctx);
        inf->opt.type->free(old);
    } else if (inf->h.on_add) {
        inf->h.on_add(obj, inf->h.ctx);
    }
}

static void remove_uid(struct fair_informer *inf, const char *uid)
{
    void *obj = uid ? fair_store_remove(inf->store, uid) : NULL;
    if (!obj)
        return;
    if (inf->h.on_delete)
        inf->h.on_delete(obj, inf->h.ctx);
    inf->opt.type->free(obj);
}

static void take_listed(void *obj, void *ctx)
{
    upsert(ctx, obj);
}

/* The list is complete: make the store equal to it. */
static void apply_list(struct fair_informer *inf)
{
    /* Deletions first: objects the list no longer has. */
    size_t pos = 0, n = 0, cap = 0;
    char **gone = NULL;
    void *o;
    while ((o = fair_store_next(inf->store, &pos))) {
        const char *uid = fair_kobj_meta(o)->uid;
        if (fair_store_get(inf->relist, uid))
            continue;
        void *g = gone;
        if (fair_grow(&g, &cap, n + 1, sizeof *gone) == 0) {
            gone = g;
            gone[n] = fair_strdup(uid);
            if (gone[n])
                n++;
        }
    }
    for (size_t i = 0; i < n; i++) {
        remove_uid(inf, gone[i]);
        fair_free(gone[i]);
    }
    fair_free(gone);
    fair_store_drain(inf->relist, take_listed, inf);
    fair_store_free(inf->relist);
    inf->relist = NULL;
    set_str(&inf->rv, inf->list_rv);
    inf->stats.lists++;
    inf->last_list_ms = mono();
    FAIR_INFO(COMP, "msg=\"listed\" resource=%s objects=%zu resourceVersion=%s", kind(inf),
              fair_store_len(inf->store), inf->rv ? inf->rv : "");
    if (!inf->synced) {
        inf->synced = true;
        if (inf->h.on_synced)
            inf->h.on_synced(inf->h.ctx);
    }
}

/* ---- list ------------------------------------------------------------------ */

static int request_page(struct fair_informer *inf);

static void on_list_page(const struct fair_kresponse *resp, void *ctx)
{
    struct fair_informer *inf = ctx;
    inf->req = NULL;
    if (resp->rc == FAIR_EGONE && inf->continue_token) {
        /* The continue token expired: list again in one piece, as
         * client-go does, so that a busy server cannot starve paging. */
        FAIR_INFO(COMP,
                  "msg=\"continue token expired; listing again without paging\" "
                  "resource=%s",
                  kind(inf));
        inf->stats.gone++;
        inf->unpaged = true;
        start_list(inf);
        return;
    }
    if (resp->rc || !json_is_object(resp->json)) {
        inf->stats.errors++;
        FAIR_WARN(COMP, "msg=\"list failed\" resource=%s error=\"%s\"", kind(inf),
                  resp->rc ? resp->err.msg : "not a JSON object");
        fair_store_free(inf->relist);
        inf->relist = NULL;
        backoff(inf, NEXT_LIST);
        return;
    }
    json_t *md = json_object_get(resp->json, "metadata");
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    const char *cont = json_string_value(json_object_get(md, "continue"));
    if (!inf->continue_token && set_str(&inf->list_rv, rv ? rv : ""))
        goto oom;
    json_t *items = json_object_get(resp->json, "items");
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        void *obj = NULL;
        struct fair_error err = {0};
        if (inf->opt.type->decode(it, &obj, &err)) {
            inf->stats.decode_errors++;
            FAIR_WARN(COMP,
                      "msg=\"skipping object that cannot be decoded\" resource=%s "
                      "error=\"%s\"",
                      kind(inf), err.msg);
            continue;
        }
        int rc = fair_store_put_take(inf->relist, obj, NULL);
        if (rc == FAIR_ENOMEM)
            goto oom;
    }
    if (cont && cont[0]) {
        if (set_str(&inf->continue_token, cont) || request_page(inf))
            goto oom;
        return;
    }
    set_str(&inf->continue_token, NULL);
    inf->unpaged = false;
    apply_list(inf);
    inf->backoff_ms = inf->opt.backoff_base_ms;
    start_watch(inf);
    return;
oom:
    inf->stats.errors++;
    fair_store_free(inf->relist);
    inf->relist = NULL;
    set_str(&inf->continue_token, NULL);
    backoff(inf, NEXT_LIST);
}

static int request_page(struct fair_informer *inf)
{
    struct fair_klist_opts o = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .limit = inf->unpaged ? 0 : inf->opt.page_size,
        .filter = inf->opt.type->filter,
        .continue_token = inf->continue_token,
    };
    struct fair_error err = {0};
    int rc =
        fair_kclient_list(inf->c, inf->opt.res, inf->ns, &o, on_list_page, inf, &inf->req, &err);
    if (rc)
        FAIR_WARN(COMP, "msg=\"cannot start list\" resource=%s error=\"%s\"", kind(inf), err.msg);
    return rc;
}

static void start_list(struct fair_informer *inf)
{
    inf->state = ST_LISTING;
    fair_store_free(inf->relist);
    inf->relist = NULL;
    set_str(&inf->continue_token, NULL);
    if (fair_store_new(inf->opt.type, &inf->relist) || request_page(inf)) {
        inf->stats.errors++;
        backoff(inf, NEXT_LIST);
    }
}

/* ---- watch ----------------------------------------------------------------- */

static void on_watch_event(const struct fair_kwatch_event *ev, void *ctx)
{
    struct fair_informer *inf = ctx;
    if (ev->type == FAIR_KWATCH_ERROR) {
        /* The server ends the stream after an ERROR; we do not wait. */
        fair_kreq_cancel(inf->req);
        inf->req = NULL;
        inf->stats.errors++;
        if (ev->code == 410) {
            inf->stats.gone++;
            FAIR_INFO(COMP, "msg=\"watch expired (410); relisting\" resource=%s message=\"%s\"",
                      kind(inf), ev->message);
            schedule(inf, NEXT_LIST, 0);
        } else {
            FAIR_WARN(COMP, "msg=\"watch error\" resource=%s code=%d message=\"%s\"", kind(inf),
                      ev->code, ev->message);
            backoff(inf, NEXT_WATCH);
        }
        return;
    }
    if (ev->type == FAIR_KWATCH_BOOKMARK) {
        inf->stats.bookmarks++;
        if (ev->resource_version)
            set_str(&inf->rv, ev->resource_version);
        return;
    }
    inf->watch_events++;
    inf->stats.events++;
    if (ev->type == FAIR_KWATCH_DELETED) {
        const char *uid =
            json_string_value(json_object_get(json_object_get(ev->object, "metadata"), "uid"));
        remove_uid(inf, uid);
    } else {
        void *obj = NULL;
        struct fair_error err = {0};
        if (inf->opt.type->decode(ev->object, &obj, &err)) {
            inf->stats.decode_errors++;
            FAIR_WARN(COMP,
                      "msg=\"skipping object that cannot be decoded\" resource=%s "
                      "error=\"%s\"",
                      kind(inf), err.msg);
        } else {
            upsert(inf, obj);
        }
    }
    if (ev->resource_version)
        set_str(&inf->rv, ev->resource_version);
}

static void on_watch_done(const struct fair_kresponse *resp, void *ctx)
{
    struct fair_informer *inf = ctx;
    inf->req = NULL;
    int64_t lasted = mono() - inf->watch_start_ms;
    if (lasted >= inf->opt.healthy_reset_ms)
        inf->backoff_ms = inf->opt.backoff_base_ms;
    switch (resp->rc) {
    case 0:
        if (lasted < 1000 && inf->watch_events == 0) {
            /* A server that ends every watch at once must not make us spin. */
            backoff(inf, NEXT_WATCH);
        } else {
            FAIR_DEBUG(COMP, "msg=\"watch ended; resuming\" resource=%s resourceVersion=%s",
                       kind(inf), inf->rv);
            start_watch(inf);
        }
        return;
    case FAIR_EGONE:
        inf->stats.gone++;
        FAIR_INFO(COMP, "msg=\"watch expired (410); relisting\" resource=%s", kind(inf));
        /* Relist at once, unless we just did (then back off). */
        if (mono() - inf->last_list_ms > inf->opt.backoff_base_ms)
            start_list(inf);
        else
            backoff(inf, NEXT_LIST);
        return;
    case FAIR_ERANGE:
    case FAIR_EPARSE:
        inf->stats.errors++;
        FAIR_WARN(COMP, "msg=\"bad watch stream; relisting\" resource=%s error=\"%s\"", kind(inf),
                  resp->err.msg);
        backoff(inf, NEXT_LIST);
        return;
    default:
        inf->stats.errors++;
        FAIR_WARN(COMP, "msg=\"watch failed\" resource=%s error=\"%s\"", kind(inf), resp->err.msg);
        backoff(inf, NEXT_WATCH);
        return;
    }
}

static void start_watch(struct fair_informer *inf)
{
    inf->state = ST_WATCHING;
    inf->watch_start_ms = mono();
    inf->watch_events = 0;
    struct fair_klist_opts o = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .resource_version = inf->rv,
        .timeout_s = inf->opt.watch_timeout_s,
        .filter = inf->opt.type->filter,
    };
    struct fair_error err = {0};
    inf->stats.watches++;
    if (fair_kclient_watch(inf->c, inf->opt.res, inf->ns, &o, on_watch_event, on_watch_done, inf,
                           &inf->req, &err)) {
        FAIR_WARN(COMP, "msg=\"cannot start watch\" resource=%s error=\"%s\"", kind(inf), err.msg);
        inf->stats.errors++;
        backoff(inf, NEXT_WATCH);
    }
}

/* ---- public ----------------------------------------------------------------- */

int fair_informer_new(struct fair_kclient *c, const struct fair_informer_options *opts,
                      const struct fair_informer_handlers *h, struct fair_informer **out,
                      struct fair_error *err)
{
    *out = NULL;
    if (!opts || !opts->res || !opts->type)
        return fair_error_set(err, FAIR_EINVAL, "informer: res and type are required");
    struct fair_informer *inf = fair_calloc(1, sizeof *inf);
    if (!inf)
        return fair_error_set(err, FAIR_ENOMEM, "informer: out of memory");
    inf->c = c;
    inf->opt = *opts;
    if (h)
        inf->h = *h;
    if (inf->opt.page_size <= 0)
        inf->opt.page_size = 500;
    if (inf->opt.watch_timeout_s <= 0)
        inf->opt.watch_timeout_s = 300;
    if (inf->opt.backoff_base_ms <= 0)
        inf->opt.backoff_base_ms = 800;
    if (inf->opt.backoff_cap_ms <= 0)
        inf->opt.backoff_cap_ms = 30000;
    if (inf->opt.healthy_reset_ms <= 0)
        inf->opt.healthy_reset_ms = 60000;
    inf->backoff_ms = inf->opt.backoff_base_ms;
    inf->rng = (uint32_t)(uintptr_t)inf ^ (uint32_t)mono();
    int rc = 0;
    if (set_str(&inf->ns, opts->ns) || set_str(&inf->label_selector, opts->label_selector) ||
        set_str(&inf->field_selector, opts->field_selector) ||
        fair_store_new(opts->type, &inf->store) ||
        !(inf->timer = evtimer_new(fair_kclient_base(c), on_timer, inf)))
        rc = fair_error_set(err, FAIR_ENOMEM, "informer: out of memory");
    inf->opt.ns = inf->opt.label_selector = inf->opt.field_selector = NULL;
    if (rc) {
        fair_informer_free(inf);
        return rc;
    }
    *out = inf;
    return 0;
}

int fair_informer_start(struct fair_informer *inf, struct fair_error *err)
{
    if (inf->state != ST_IDLE)
        return fair_error_set(err, FAIR_EBUSY, "informer %s: already started", kind(inf));
    schedule(inf, NEXT_LIST, 0);
    return 0;
}

void fair_informer_free(struct fair_informer *inf)
{
    if (!inf)
        return;
    fair_kreq_cancel(inf->req);
    if (inf->timer)
        event_free(inf->timer);
    fair_store_free(inf->store);
    fair_store_free(inf->relist);
    fair_free(inf->ns);
    fair_free(inf->label_selector);
    fair_free(inf->field_selector);
    fair_free(inf->rv);
    fair_free(inf->list_rv);
    fair_free(inf->continue_token);
    fair_free(inf);
}

bool fair_informer_has_synced(const struct fair_informer *inf)
{
    return inf->synced;
}

struct fair_store *fair_informer_store(struct fair_informer *inf)
{
    return inf->store;
}

const char *fair_informer_resource_version(const struct fair_informer *inf)
{
    return inf->rv ? inf->rv : "";
}

void fair_informer_get_stats(const struct fair_informer *inf, struct fair_informer_stats *out)
{
    *out = inf->stats;
}
