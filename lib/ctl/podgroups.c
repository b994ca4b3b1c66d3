/* PodGroups (see ctl/loop.h): the optional CRDs of the coscheduling
 * plugin and of Volcano. Discovery asks whether each is served; once it
 * is, an informer reads its PodGroups, and each cycle takes them into the
 * snapshot (docs/controller.md, "From stores to snapshot"). */
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/log.h"
#include "cache/informer.h"
#include "cache/store.h"
#include "ctl/loop.h"
#include "kube/client.h"
#include "kube/decode.h"

/* The decoder of each flavor. */
static const struct fair_ktype *const pg_type[PG_COUNT] = {
    [FAIR_KPG_COSCHED] = &fair_ktype_sp_podgroup, [FAIR_KPG_VOLCANO] = &fair_ktype_vc_podgroup};

static void pg_discover(struct pgwatch *w);

static void pg_arm(struct pgwatch *w, int64_t ms)
{
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    event_add(w->timer, &tv);
}

static void on_pg_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    pg_discover(arg);
}

static void on_pg_synced(void *ctx)
{
    struct pgwatch *w = ctx;
    w->synced = true;
    FAIR_INFO(COMP, "msg=\"PodGroups synced\" group=%s", fair_ctl_pg_res[w->flavor]->group);
    fair_ctl_mark_dirty(w->c);
}

static void on_pg_add(void *obj, void *ctx)
{
    (void)obj;
    fair_ctl_mark_dirty(((struct pgwatch *)ctx)->c);
}

static void on_pg_update(void *old, void *new_, void *ctx)
{
    (void)old;
    (void)new_;
    fair_ctl_mark_dirty(((struct pgwatch *)ctx)->c);
}

/* Starts the informer of a served PodGroup resource. */
static int pg_start_informer(struct pgwatch *w, struct fair_error *err)
{
    struct fair_informer_options io = {.res = fair_ctl_pg_res[w->flavor],
                                       .type = pg_type[w->flavor]};
    struct fair_informer_handlers h = {.on_add = on_pg_add,
                                       .on_update = on_pg_update,
                                       .on_delete = on_pg_add,
                                       .on_synced = on_pg_synced,
                                       .ctx = w};
    int rc = fair_informer_new(w->c->kc, &io, &h, &w->inf, err);
    if (!rc && (rc = fair_informer_start(w->inf, err))) {
        fair_informer_free(w->inf);
        w->inf = NULL;
    }
    return rc;
}

/* Whether an APIResourceList names the PodGroup resource. */
static bool pg_listed(const json_t *list, const char *plural)
{
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(list, "resources"), i, r)
    {
        const char *name = json_string_value(json_object_get(r, "name"));
        if (name && !strcmp(name, plural))
            return true;
    }
    return false;
}

static void on_pg_discovered(const struct fair_kresponse *resp, void *ctx)
{
    struct pgwatch *w = ctx;
    const struct fair_kres *res = fair_ctl_pg_res[w->flavor];
    bool served = resp->rc == 0 && pg_listed(resp->json, res->resource);
    if (served) {
        struct fair_error err = {0};
        w->said_absent = false;
        FAIR_INFO(COMP, "msg=\"PodGroup CRD found; reading PodGroups\" group=%s version=%s",
                  res->group, res->version);
        if (!pg_start_informer(w, &err))
            return;
        FAIR_WARN(COMP, "msg=\"could not start the PodGroup informer\" group=%s err=\"%s\"",
                  res->group, err.msg);
        pg_arm(w, PG_RETRY_MS);
        return;
    }
    bool absent = resp->rc == 0 || resp->rc == FAIR_ENOTFOUND;
    if (!w->said_absent)
        FAIR_INFO(COMP,
                  "msg=\"%s; pods in such PodGroups wait (PodGroupNotFound); checking again "
                  "every %lld s\" group=%s version=%s resource=podgroups err=\"%s\"",
                  absent ? "PodGroup CRD not installed" : "PodGroup discovery failed",
                  (long long)(absent ? PG_RECHECK_MS : PG_RETRY_MS) / 1000, res->group,
                  res->version, absent ? "" : resp->err.msg);
    w->said_absent = true;
    pg_arm(w, absent ? PG_RECHECK_MS : PG_RETRY_MS);
}

/* Asks discovery whether w's PodGroup resource is served. */
static void pg_discover(struct pgwatch *w)
{
    const struct fair_kres *res = fair_ctl_pg_res[w->flavor];
    char path[200];
    struct fair_error err = {0};
    snprintf(path, sizeof path, "/apis/%s/%s", res->group, res->version);
    if (fair_kclient_request(w->c->kc, "GET", path, NULL, NULL, 0, 0, on_pg_discovered, w, NULL,
                             &err)) {
        FAIR_WARN(COMP, "msg=\"PodGroup discovery not sent\" group=%s err=\"%s\"", res->group,
                  err.msg);
        pg_arm(w, PG_RETRY_MS);
    }
}

int fair_ctl_podgroups_start(struct fair_ctl *c, struct fair_error *err)
{
    for (int i = 0; i < PG_COUNT; i++) {
        struct pgwatch *w = &c->pg[i];
        w->c = c;
        w->flavor = i;
        if (!(w->timer = evtimer_new(c->base, on_pg_timer, w)))
            return fair_error_set(err, FAIR_ENOMEM, "out of memory (PodGroup timer)");
        pg_discover(w);
    }
    return 0;
}

int fair_ctl_collect_podgroups(struct fair_ctl *c)
{
    size_t n = 0;
    for (int i = 0; i < PG_COUNT; i++)
        if (c->pg[i].inf)
            n += fair_store_len(fair_informer_store(c->pg[i].inf));
    if (fair_grow((void **)&c->pg_arr, &c->pg_arr_cap, n + 1, sizeof *c->pg_arr))
        return FAIR_ENOMEM;
    size_t k = 0;
    for (int i = 0; i < PG_COUNT; i++) {
        if (!c->pg[i].inf)
            continue;
        struct fair_store *st = fair_informer_store(c->pg[i].inf);
        size_t pos = 0;
        void *obj;
        while ((obj = fair_store_next(st, &pos)) && k < n)
            c->pg_arr[k++] = obj;
    }
    c->npg = k;
    return 0;
}

void fair_ctl_podgroups_free(struct fair_ctl *c)
{
    for (int i = 0; i < PG_COUNT; i++) {
        fair_informer_free(c->pg[i].inf);
        c->pg[i].inf = NULL;
        if (c->pg[i].timer)
            event_free(c->pg[i].timer);
        c->pg[i].timer = NULL;
    }
    fair_free(c->pg_arr);
    c->pg_arr = NULL;
}
