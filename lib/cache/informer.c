/* Reflector + informer for one resource type (see informer.h for the
 * state machine). Transitions:
 *   start_list()      -> LISTING  (first page; on_list_done() pages on)
 *   on_list_done()    -> LISTING: the next page; the same page at half the
 *                        size (too large); the first page again (expired
 *                        continue token); WAITING -> LISTING (failure)
 *   apply_list()      -> WATCHING (the diff applied; start_watch())
 *   on_watch_done()   -> WATCHING again, or LISTING on 410/oversized events,
 *                        through WAITING (the backoff timer) on failures
 * The objects of a page are staged (page, page_unread) and committed to
 * the list in progress (relist, relist_unread) only when the page has
 * arrived whole, so a page that is retried smaller is not counted twice. */
#include "cache/informer.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"

#define COMP "informer"

enum state { ST_IDLE, ST_LISTING, ST_WATCHING, ST_WAITING };
enum next { NEXT_LIST, NEXT_WATCH };

/* A set of unreadable objects, by uid (linear: it is small). */
struct unread_set {
    struct fair_informer_unreadable *v;
    size_t n, cap;
};

struct fair_informer {
    struct fair_kclient *c;
    struct fair_informer_options opt;
    char *ns, *label_selector, *field_selector;
    struct fair_informer_handlers h;
    struct fair_store *store;
    struct fair_store *relist; /* objects of the list in progress */
    struct unread_set relist_unread;
    void **page; /* decoded objects of the page in flight */
    size_t npage, page_cap;
    struct unread_set page_unread;
    uint64_t page_oversized, page_decode_errors;
    int page_rc;              /* FAIR_ENOMEM while staging the page failed */
    struct unread_set unread; /* the current unreadable objects */
    long page_limit;          /* the current page size */
    int expired_in_row;       /* continue tokens expired without a list between */
    char *rv;                 /* last resourceVersion seen */
    char *list_rv;            /* resourceVersion of the list in progress */
    char *continue_token;
    struct fair_kreq *req; /* the list page or watch in flight */
    struct event *timer;   /* backoff, or a deferred step */
    enum state state;
    enum next next;
    int64_t backoff_ms;     /* the next delay before jitter */
    int64_t watch_start_ms; /* monotonic */
    int64_t last_list_ms;
    uint64_t watch_events;  /* events in the current watch */
    bool watch_established; /* the current watch delivered an event or a bookmark */
    bool synced;
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

/* ---- unreadable objects --------------------------------------------------- */

static void unread_entry_release(struct fair_informer_unreadable *u)
{
    fair_kskeleton_release(&u->id);
    fair_free(u->reason);
    u->reason = NULL;
}

static void us_clear(struct unread_set *s)
{
    for (size_t i = 0; i < s->n; i++)
        unread_entry_release(&s->v[i]);
    s->n = 0;
}

static void us_release(struct unread_set *s)
{
    us_clear(s);
    fair_free(s->v);
    s->v = NULL;
    s->cap = 0;
}

static long us_find(const struct unread_set *s, const char *uid)
{
    for (size_t i = 0; uid && i < s->n; i++)
        if (s->v[i].id.uid && !strcmp(s->v[i].id.uid, uid))
            return (long)i;
    return -1;
}

static void us_remove(struct unread_set *s, const char *uid)
{
    long i = us_find(s, uid);
    if (i < 0)
        return;
    unread_entry_release(&s->v[i]);
    s->v[i] = s->v[--s->n];
}

/* Takes *u (replacing an entry with the same uid); *u is emptied either
 * way. Returns FAIR_ENOMEM, or FAIR_ERANGE when the set is full. */
static int us_put_take(struct unread_set *s, struct fair_informer_unreadable *u)
{
    int rc = 0;
    long i = us_find(s, u->id.uid);
    if (i >= 0) {
        unread_entry_release(&s->v[i]);
        s->v[i] = *u;
        memset(u, 0, sizeof *u);
        return 0;
    }
    void *p = s->v;
    if (s->n >= FAIR_INFORMER_MAX_UNREADABLE)
        rc = FAIR_ERANGE;
    else if ((rc = fair_grow(&p, &s->cap, s->n + 1, sizeof *s->v)) == 0)
        s->v = p;
    if (rc) {
        unread_entry_release(u);
        return rc;
    }
    s->v[s->n++] = *u;
    memset(u, 0, sizeof *u);
    return 0;
}

/* Moves every entry of src into dst. */
static void us_move(struct fair_informer *inf, struct unread_set *dst, struct unread_set *src)
{
    for (size_t i = 0; i < src->n; i++)
        if (us_put_take(dst, &src->v[i]) == FAIR_ERANGE)
            FAIR_WARN(COMP,
                      "msg=\"too many unreadable objects; forgetting one\" resource=%s limit=%d",
                      kind(inf), FAIR_INFORMER_MAX_UNREADABLE);
    src->n = 0;
}

/* An unreadable entry for obj (a skeleton source: the object, its filtered
 * view or its skeleton; may be NULL). */
static int unread_make(const json_t *obj, const char *why, size_t bytes,
                       struct fair_informer_unreadable *u)
{
    memset(u, 0, sizeof *u);
    u->bytes = bytes;
    if (fair_kskeleton_decode(obj, &u->id) || !(u->reason = fair_strdup(why ? why : ""))) {
        unread_entry_release(u);
        return FAIR_ENOMEM;
    }
    return 0;
}

static void log_unreadable(struct fair_informer *inf, const struct fair_informer_unreadable *u)
{
    FAIR_WARN(COMP,
              "msg=\"skipping object that cannot be read; keeping its last readable version if "
              "any\" resource=%s object=%s%s%s uid=%s node=%s bytes=%zu error=\"%s\"",
              kind(inf), u->id.namespace_ ? u->id.namespace_ : "", u->id.namespace_ ? "/" : "",
              u->id.name ? u->id.name : "(unknown)", u->id.uid ? u->id.uid : "(unknown)",
              u->id.node_name ? u->id.node_name : "", u->bytes, u->reason ? u->reason : "");
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
        if (fair_store_get(inf->relist, uid) || us_find(&inf->relist_unread, uid) >= 0)
            continue; /* listed, or unreadable now: its last version stays */
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
    us_release(&inf->unread);
    inf->unread = inf->relist_unread;
    memset(&inf->relist_unread, 0, sizeof inf->relist_unread);
    set_str(&inf->rv, inf->list_rv);
    inf->stats.lists++;
    inf->last_list_ms = mono();
    FAIR_INFO(COMP,
              "msg=\"listed\" resource=%s objects=%zu unreadable=%zu resourceVersion=%s "
              "pageSize=%ld",
              kind(inf), fair_store_len(inf->store), inf->unread.n, inf->rv ? inf->rv : "",
              inf->page_limit);
    if (!inf->synced) {
        inf->synced = true;
        if (inf->h.on_synced)
            inf->h.on_synced(inf->h.ctx);
    }
}

/* ---- list ------------------------------------------------------------------ */

static int request_page(struct fair_informer *inf);

static void page_drop(struct fair_informer *inf)
{
    for (size_t i = 0; i < inf->npage; i++)
        inf->opt.type->free(inf->page[i]);
    inf->npage = 0;
    us_clear(&inf->page_unread);
    inf->page_oversized = inf->page_decode_errors = 0;
    inf->page_rc = 0;
}

/* Forgets the list in progress (not the store). */
static void list_drop(struct fair_informer *inf)
{
    page_drop(inf);
    fair_store_free(inf->relist);
    inf->relist = NULL;
    us_clear(&inf->relist_unread);
    set_str(&inf->continue_token, NULL);
}

static void stage_unreadable(struct fair_informer *inf, const json_t *src, const char *why,
                             size_t bytes)
{
    struct fair_informer_unreadable u;
    int rc = unread_make(src, why, bytes, &u);
    if (!rc)
        rc = us_put_take(&inf->page_unread, &u);
    if (rc == FAIR_ENOMEM)
        inf->page_rc = FAIR_ENOMEM;
}

/* One item of the page in flight. */
static void on_list_object(const struct fair_klist_object *o, void *ctx)
{
    struct fair_informer *inf = ctx;
    if (!o->object) {
        if (o->rc == FAIR_ERANGE)
            inf->page_oversized++;
        else
            inf->page_decode_errors++;
        stage_unreadable(inf, o->skeleton, o->why, o->bytes);
        return;
    }
    void *obj = NULL;
    struct fair_error err = {0};
    if (inf->opt.type->decode(o->object, &obj, &err)) {
        inf->page_decode_errors++;
        stage_unreadable(inf, o->object, err.msg, o->bytes);
        return;
    }
    void *p = inf->page;
    if (fair_grow(&p, &inf->page_cap, inf->npage + 1, sizeof *inf->page)) {
        inf->opt.type->free(obj);
        inf->page_rc = FAIR_ENOMEM;
        return;
    }
    inf->page = p;
    inf->page[inf->npage++] = obj;
}

/* The page arrived whole: its objects join the list in progress. */
static int page_commit(struct fair_informer *inf)
{
    int rc = 0;
    for (size_t i = 0; i < inf->npage; i++) {
        int prc = fair_store_put_take(inf->relist, inf->page[i], NULL);
        if (prc == FAIR_ENOMEM)
            rc = prc;
    }
    inf->npage = 0;
    for (size_t i = 0; i < inf->page_unread.n; i++)
        log_unreadable(inf, &inf->page_unread.v[i]);
    inf->stats.oversized += inf->page_oversized;
    inf->stats.decode_errors += inf->page_decode_errors;
    us_move(inf, &inf->relist_unread, &inf->page_unread);
    inf->page_oversized = inf->page_decode_errors = 0;
    return rc;
}

static size_t max_body(const struct fair_informer *inf)
{
    struct fair_kclient_options o;
    fair_kclient_get_options(inf->c, &o);
    return o.max_body;
}

static void on_list_done(const struct fair_kresponse *resp, void *ctx)
{
    struct fair_informer *inf = ctx;
    inf->req = NULL;
    if (resp->rc == FAIR_EGONE && inf->continue_token) {
        /* The continue token expired (etcd compacted past the list's
         * revision). Start again from the first page, still paged; a
         * second expiry in a row waits for the backoff first. */
        inf->stats.gone++;
        inf->expired_in_row++;
        FAIR_INFO(COMP,
                  "msg=\"continue token expired; listing again from the first page\" "
                  "resource=%s pageSize=%ld",
                  kind(inf), inf->page_limit);
        list_drop(inf);
        if (inf->expired_in_row > 1)
            backoff(inf, NEXT_LIST);
        else
            start_list(inf);
        return;
    }
    bool began = resp->status >= 200 && resp->status < 300;
    if ((resp->rc == FAIR_ERANGE || (resp->rc == FAIR_ETIMEDOUT && began)) && inf->page_limit > 1) {
        /* Too large to fetch in one piece (over the byte cap, or still
         * arriving at the request timeout): the same page, half as long. */
        page_drop(inf);
        inf->page_limit /= 2;
        inf->stats.page_shrinks++;
        FAIR_INFO(COMP,
                  "msg=\"list page too large; asking for fewer objects\" resource=%s "
                  "pageSize=%ld error=\"%s\"",
                  kind(inf), inf->page_limit, resp->err.msg);
        if (request_page(inf)) {
            inf->stats.errors++;
            list_drop(inf);
            backoff(inf, NEXT_LIST);
        }
        return;
    }
    if (resp->rc || inf->page_rc || !json_is_object(resp->json)) {
        inf->stats.errors++;
        FAIR_WARN(COMP, "msg=\"list failed\" resource=%s error=\"%s\"", kind(inf),
                  resp->rc       ? resp->err.msg
                  : inf->page_rc ? "out of memory"
                                 : "not a JSON object");
        list_drop(inf);
        backoff(inf, NEXT_LIST);
        return;
    }
    json_t *md = json_object_get(resp->json, "metadata");
    const char *rv = json_string_value(json_object_get(md, "resourceVersion"));
    const char *cont = json_string_value(json_object_get(md, "continue"));
    if (!inf->continue_token && set_str(&inf->list_rv, rv ? rv : ""))
        goto oom;
    if (page_commit(inf))
        goto oom;
    if (inf->page_limit < inf->opt.page_size && resp->received < max_body(inf) / 4) {
        /* A light page: grow back towards the configured size. */
        inf->page_limit =
            inf->page_limit * 2 > inf->opt.page_size ? inf->opt.page_size : inf->page_limit * 2;
    }
    if (cont && cont[0]) {
        if (set_str(&inf->continue_token, cont) || request_page(inf))
            goto oom;
        return;
    }
    set_str(&inf->continue_token, NULL);
    inf->expired_in_row = 0;
    apply_list(inf);
    inf->backoff_ms = inf->opt.backoff_base_ms;
    start_watch(inf);
    return;
oom:
    inf->stats.errors++;
    list_drop(inf);
    backoff(inf, NEXT_LIST);
}

static int request_page(struct fair_informer *inf)
{
    /* resourceVersion stays unset: every list is a consistent read (never
     * "0", which the watch cache may serve whole, ignoring limit). */
    struct fair_klist_opts o = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .limit = inf->page_limit,
        .filter = inf->opt.type->filter,
        .continue_token = inf->continue_token,
    };
    struct fair_error err = {0};
    int rc = fair_kclient_list_stream(inf->c, inf->opt.res, inf->ns, &o, on_list_object,
                                      on_list_done, inf, &inf->req, &err);
    if (rc)
        FAIR_WARN(COMP, "msg=\"cannot start list\" resource=%s error=\"%s\"", kind(inf), err.msg);
    return rc;
}

static void start_list(struct fair_informer *inf)
{
    inf->state = ST_LISTING;
    list_drop(inf);
    if (fair_store_new(inf->opt.type, &inf->relist) || request_page(inf)) {
        inf->stats.errors++;
        list_drop(inf);
        backoff(inf, NEXT_LIST);
    }
}

/* ---- watch ----------------------------------------------------------------- */

static void on_watch_event(const struct fair_kwatch_event *ev, void *ctx)
{
    struct fair_informer *inf = ctx;
    if (ev->type != FAIR_KWATCH_ERROR)
        inf->watch_established = true;
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
        us_remove(&inf->unread, uid);
    } else {
        void *obj = NULL;
        struct fair_error err = {0};
        if (inf->opt.type->decode(ev->object, &obj, &err)) {
            /* Unreadable now: its last readable version (if any) stays. */
            struct fair_informer_unreadable u;
            inf->stats.decode_errors++;
            if (unread_make(ev->object, err.msg, 0, &u) == 0) {
                log_unreadable(inf, &u);
                if (us_put_take(&inf->unread, &u) == FAIR_ERANGE)
                    FAIR_WARN(COMP,
                              "msg=\"too many unreadable objects; forgetting one\" resource=%s "
                              "limit=%d",
                              kind(inf), FAIR_INFORMER_MAX_UNREADABLE);
            }
        } else {
            us_remove(&inf->unread, fair_kobj_meta(obj)->uid);
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
    /* client-go backs off only when a watch cannot be established; one
     * that was, and ended or was cut, is resumed at once. */
    bool established = inf->watch_established;
    if (established || lasted >= inf->opt.healthy_reset_ms)
        inf->backoff_ms = inf->opt.backoff_base_ms;
    switch (resp->rc) {
    case 0:
        if (lasted < 1000 && !established) {
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
        if (resp->rc == FAIR_ETIMEDOUT) {
            /* The client's stall timer (or curl's low-speed limit): the
             * stream delivered nothing, not even a bookmark. */
            inf->stats.stalls++;
            FAIR_WARN(COMP,
                      "msg=\"watch delivered nothing; closed it, watching again\" resource=%s "
                      "stall_timeout_ms=%lld resourceVersion=%s error=\"%s\"",
                      kind(inf), (long long)inf->opt.stall_timeout_ms, inf->rv ? inf->rv : "",
                      resp->err.msg);
        } else {
            FAIR_WARN(COMP, "msg=\"watch failed\" resource=%s established=%d error=\"%s\"",
                      kind(inf), established, resp->err.msg);
        }
        if (established)
            start_watch(inf);
        else
            backoff(inf, NEXT_WATCH);
        return;
    }
}

static void start_watch(struct fair_informer *inf)
{
    inf->state = ST_WATCHING;
    inf->watch_start_ms = mono();
    inf->watch_events = 0;
    inf->watch_established = false;
    /* A random timeoutSeconds in [t, 2t), as client-go's reflector asks
     * (minWatchTimeout 5 min): the server ends the watch then. */
    inf->rng = inf->rng * 1103515245u + 12345u;
    long timeout_s =
        inf->opt.watch_timeout_s + (long)((inf->rng >> 8) % (uint32_t)inf->opt.watch_timeout_s);
    int64_t stall_ms = inf->opt.stall_timeout_ms;
    if (stall_ms > (int64_t)timeout_s * 1000)
        stall_ms = (int64_t)timeout_s * 1000;
    struct fair_klist_opts o = {
        .label_selector = inf->label_selector,
        .field_selector = inf->field_selector,
        .resource_version = inf->rv,
        .timeout_s = timeout_s,
        .stall_ms = stall_ms > 0 ? stall_ms : 0,
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
    if (inf->opt.watch_timeout_s > 43200)
        inf->opt.watch_timeout_s = 43200; /* twice that: half a day */
    if (inf->opt.stall_timeout_ms == 0)
        inf->opt.stall_timeout_ms = 180000;
    if (inf->opt.backoff_base_ms <= 0)
        inf->opt.backoff_base_ms = 800;
    if (inf->opt.backoff_cap_ms <= 0)
        inf->opt.backoff_cap_ms = 30000;
    if (inf->opt.healthy_reset_ms <= 0)
        inf->opt.healthy_reset_ms = 60000;
    inf->page_limit = inf->opt.page_size;
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
    list_drop(inf);
    fair_free(inf->page);
    us_release(&inf->page_unread);
    us_release(&inf->relist_unread);
    us_release(&inf->unread);
    fair_free(inf->ns);
    fair_free(inf->label_selector);
    fair_free(inf->field_selector);
    fair_free(inf->rv);
    fair_free(inf->list_rv);
    fair_free(inf->continue_token);
    fair_free(inf);
}

bool fair_informer_forget(struct fair_informer *inf, const char *uid)
{
    if (!inf || !uid || !fair_store_get(inf->store, uid))
        return false;
    FAIR_INFO(COMP, "msg=\"forgetting an object the server says is gone\" resource=%s uid=%s",
              kind(inf), uid);
    remove_uid(inf, uid);
    us_remove(&inf->unread, uid);
    return true;
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

long fair_informer_page_size(const struct fair_informer *inf)
{
    return inf->page_limit;
}

size_t fair_informer_unreadable_count(const struct fair_informer *inf)
{
    return inf->unread.n;
}

const struct fair_informer_unreadable *fair_informer_unreadable_at(const struct fair_informer *inf,
                                                                   size_t i)
{
    return i < inf->unread.n ? &inf->unread.v[i] : NULL;
}
