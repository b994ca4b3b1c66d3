/* The controller's loop (see controller.h): informer handlers mark the work
 * queue, a timer runs scheduling cycles, and the API requests of a cycle
 * complete later on the same loop. No call here blocks, except the ledger's
 * flush, which is one short SQLite transaction from its own timer. */
#include "ctl/controller.h"

#include <event2/event.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/log.h"
#include "base/version.h"
#include "cache/informer.h"
#include "cache/leader.h"
#include "cache/workqueue.h"
#include "ctl/loop.h"
#include "ctl/metrics.h"
#include "ctl/podmem.h"
#include "ctl/status.h"
#include "ctl/tqstate.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/decode.h"
#include "ledger/ledger.h"

/* PodGroups: the API resource of each flavor (ctl/loop.h). */
const struct fair_kres *const fair_ctl_pg_res[PG_COUNT] = {
    [FAIR_KPG_COSCHED] = &fair_kres_sp_podgroups, [FAIR_KPG_VOLCANO] = &fair_kres_vc_podgroups};

/* ---- small helpers ---- */

struct req *fair_ctl_req_new(struct fair_ctl *c, int kind)
{
    struct req *r = fair_calloc(1, sizeof *r);
    if (!r)
        return NULL;
    r->c = c;
    r->kind = kind;
    c->nreqs++;
    r->next = c->reqs;
    if (c->reqs)
        c->reqs->prev = r;
    c->reqs = r;
    return r;
}

void fair_ctl_req_free(struct req *r)
{
    if (!r)
        return;
    struct fair_ctl *c = r->c;
    c->nreqs--;
    if (r->bind_slot)
        c->binds_in_flight--;
    if (r->event_slot)
        c->events_in_flight--;
    if (r->prev)
        r->prev->next = r->next;
    else if (c->reqs == r)
        c->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    fair_free(r->uid);
    fair_free(r->ns);
    fair_free(r->name);
    fair_free(r->node);
    fair_free(r->devices);
    fair_free(r->queue);
    fair_free(r->project);
    fair_free(r->team);
    fair_free(r->cost_center);
    fair_free(r->gpu_model);
    fair_free(r->for_queue);
    fair_free(r->for_pod);
    fair_free(r->obj_kind);
    fair_free(r->message);
    fair_free(r->lineage);
    fair_free(r->gang);
    fair_free(r->creator);
    fair_free(r->for_uid);
    fair_free(r->rq_name);
    fair_free(r->rq_body);
    fair_free(r->rq_note);
    if (r->kind == REQ_RESV_WAIT) {
        struct req **pp = &c->resv_wait;
        while (*pp && *pp != r)
            pp = &(*pp)->qnext;
        if (*pp) {
            *pp = r->qnext;
            c->nresv_wait--;
        }
    }
    if (r->kind == REQ_NOTICE || r->kind == REQ_REQUEUE) {
        struct req **pp = r->kind == REQ_NOTICE ? &c->notices : &c->requeues;
        while (*pp && *pp != r)
            pp = &(*pp)->qnext;
        if (*pp)
            *pp = r->qnext;
    }
    fair_free(r);
}

void fair_ctl_note_api_error(struct fair_ctl *c, const struct fair_kresponse *resp)
{
    fair_ctl_metrics_api_error(&c->metrics, resp->status);
}

/* ---- cycle scheduling ---- */

void fair_ctl_arm_cycle(struct fair_ctl *c, int64_t delay_ms)
{
    if (c->stopping || !c->cycle_ev)
        return;
    int64_t now = mono(c);
    int64_t due = now + (delay_ms > 0 ? delay_ms : 0);
    if (c->cycle_due >= 0 && c->cycle_due <= due)
        return;
    struct timeval tv = {.tv_sec = (time_t)((due - now) / 1000),
                         .tv_usec = (suseconds_t)(((due - now) % 1000) * 1000)};
    evtimer_add(c->cycle_ev, &tv);
    c->cycle_due = due;
}

/* Something changed: a cycle soon, but not sooner than cycleMinInterval
 * after the last one, so that a burst of events makes one cycle. */
void fair_ctl_mark_dirty(struct fair_ctl *c)
{
    if (fair_workqueue_add(c->wq, CYCLE_KEY))
        FAIR_WARN(COMP, "msg=\"work queue full\"");
    /* At least as long as the last cycle took passes between cycles, so
     * that with a large cluster the loop still spends half its time on
     * I/O (answers to binds, watch events) rather than on cycles. */
    int64_t gap = c->cfg->cycle_min_interval_ms;
    if (c->last_cycle_cost_ms > gap)
        gap = c->last_cycle_cost_ms;
    /* While a plan is still being sent, most changes are our own binds
     * landing; a cycle could add little and would take the loop from
     * sending. New work waits a little longer (never past cycleInterval). */
    if (c->nbindq > 0) {
        int64_t slow = 4 * c->last_cycle_cost_ms;
        if (slow < BUSY_CYCLE_GAP_MS)
            slow = BUSY_CYCLE_GAP_MS;
        if (slow > gap)
            gap = slow;
    }
    int64_t wait = gap - (mono(c) - c->last_cycle_ms);
    fair_ctl_arm_cycle(c, wait > 0 ? wait : 0);
}

/* ---- ledger ---- */

/* When pod p's use of its GPUs ended, as far as the pod tells: its
 * containers' finishedAt when they have all stopped; else, for a pod
 * being deleted, its deletionTimestamp once that has passed (the API
 * server sets it to the moment of the final delete, which follows the
 * containers' stop); else now, when the controller sees the end. Never
 * after now; the ledger keeps it from going before the interval's start.
 * So an end seen late (a watch down, cut or hung, a leader taking over)
 * is still recorded when it happened. */
static int64_t pod_end_ms(const struct fair_kpod *p, int64_t now)
{
    int64_t end = now;
    if (p->finished_ms > 0)
        end = p->finished_ms;
    else if (p->meta.deletion_ms > 0 && p->meta.deletion_ms < now)
        end = p->meta.deletion_ms;
    return end < now ? end : now;
}

static void ledger_close(struct fair_ctl *c, const struct fair_kpod *p, enum fair_ledger_end why)
{
    if (!c->ledger || !c->leader_now || !p->meta.uid)
        return;
    struct fair_error err = {0};
    if (fair_ledger_interval_close(c->ledger, p->meta.uid, pod_end_ms(p, wall(c)), why, &err))
        FAIR_WARN(COMP, "msg=\"ledger close failed\" pod=%s/%s err=\"%s\"", p->meta.namespace_,
                  p->meta.name, err.msg);
}

/* ---- informer handlers ---- */

static void on_add(void *obj, void *ctx)
{
    (void)obj;
    fair_ctl_mark_dirty(ctx);
}

static void on_update(void *old, void *new_, void *ctx)
{
    (void)old;
    (void)new_;
    fair_ctl_mark_dirty(ctx);
}

static void on_delete(void *obj, void *ctx)
{
    (void)obj;
    fair_ctl_mark_dirty(ctx);
}

/* A deleted Queue or Project: forget what was last written for it. */
static void on_queue_delete(void *obj, void *ctx)
{
    struct fair_ctl *c = ctx;
    const struct fair_kmeta *m = obj;
    if (m->name)
        fair_ctl_status_forget(&c->status, "Queue", m->name);
    fair_ctl_mark_dirty(c);
}

static void on_project_delete(void *obj, void *ctx)
{
    struct fair_ctl *c = ctx;
    const struct fair_kmeta *m = obj;
    if (m->name)
        fair_ctl_status_forget(&c->status, "Project", m->name);
    fair_ctl_mark_dirty(c);
}

static void on_pod_update(void *old_, void *new_, void *ctx)
{
    struct fair_ctl *c = ctx;
    const struct fair_kpod *o = old_, *n = new_;
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, n->meta.uid);
    if (e && e->op == FAIR_CTL_OP_BINDING && n->node_name && *n->node_name) {
        /* The bind is visible now. What the pod was told while pending no
         * longer matters; its charge stays for as long as the pod. */
        fair_ctl_podmem_end(&c->pods, n->meta.uid);
        e->last_cond_why = e->last_event_why = -1;
        fair_ctl_podmem_set_hold(&c->pods, n->meta.uid, NULL, 0);
    }
    bool was_done = o->phase == FAIR_KPOD_SUCCEEDED || o->phase == FAIR_KPOD_FAILED;
    if (!was_done && (is_ours(c, n) || (e && e->charge.set))) {
        if (n->phase == FAIR_KPOD_SUCCEEDED)
            ledger_close(c, n, FAIR_LEDGER_COMPLETED);
        else if (n->phase == FAIR_KPOD_FAILED)
            ledger_close(c, n,
                         e && e->op == FAIR_CTL_OP_EVICTING ? FAIR_LEDGER_PREEMPTED
                                                            : FAIR_LEDGER_FAILED);
    }
    fair_ctl_mark_dirty(c);
}

static void on_pod_delete(void *obj, void *ctx)
{
    struct fair_ctl *c = ctx;
    const struct fair_kpod *p = obj;
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, p->meta.uid);
    bool done = p->phase == FAIR_KPOD_SUCCEEDED || p->phase == FAIR_KPOD_FAILED;
    if (!done && (is_ours(c, p) || (e && e->charge.set)) && p->node_name)
        ledger_close(c, p,
                     (e && e->op == FAIR_CTL_OP_EVICTING) || p->disruption_target
                         ? FAIR_LEDGER_PREEMPTED
                         : FAIR_LEDGER_DELETED);
    fair_ctl_podmem_remove(&c->pods, p->meta.uid);
    fair_ctl_mark_dirty(c);
}

static void on_synced(void *ctx);

/* ---- answers to simple requests (Events, conditions, status, patches) ---- */

void fair_ctl_on_simple_done(const struct fair_kresponse *resp, void *ctx)
{
    struct req *r = ctx;
    struct fair_ctl *c = r->c;
    if (resp->rc && resp->rc != FAIR_ENOTFOUND) {
        fair_ctl_note_api_error(c, resp);
        FAIR_DEBUG(COMP, "msg=\"request failed\" kind=%d obj=%s/%s status=%ld err=\"%s\"", r->kind,
                   r->ns ? r->ns : "", r->name ? r->name : "", resp->status, resp->err.msg);
    }
    if (r->kind == REQ_OBJ_STATUS) {
        if (resp->rc)
            fair_ctl_status_failed(&c->status, r->obj_kind, r->name);
        else
            c->metrics.status_writes++;
    } else if (r->kind == REQ_POD_STATUS && resp->rc) {
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
        if (e)
            e->last_cond_why = -1; /* write it again next time */
    } else if (r->kind == REQ_EVENT && !resp->rc) {
        c->metrics.events_sent++;
    } else if (r->kind == REQ_OBJ_PATCH && !resp->rc && r->uid && r->ns) {
        /* A claim took our selected-node: its resourceVersion then. */
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
        const json_t *meta = json_object_get(resp->json, "metadata");
        uint64_t rv =
            fair_ctl_rv_number(json_string_value(json_object_get(meta, "resourceVersion")));
        if (e && e->op == FAIR_CTL_OP_PROVISIONING && rv > e->provision_rv)
            e->provision_rv = rv;
    } else if (r->kind == REQ_OBJ_PATCH && resp->rc && r->uid) {
        /* The claim or volume was not given to the pod (a volume someone
         * else took meanwhile: a conflict): its room is not held for it,
         * as kube-scheduler's PreBind fails then. */
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
        if (e && e->op == FAIR_CTL_OP_PROVISIONING) {
            FAIR_INFO(COMP, "msg=\"room no longer held\" pod_uid=%s node=%s why=\"%s %s%s%s: %s\"",
                      r->uid, e->op_node, r->ns ? "claim" : "volume", r->ns ? r->ns : "",
                      r->ns ? "/" : "", r->name ? r->name : "", resp->err.msg);
            fair_ctl_podmem_end(&c->pods, r->uid);
        }
    }
    bool was_queued = r->event_slot;
    fair_ctl_req_free(r);
    if (was_queued)
        fair_ctl_pump_events(c);
}

static void on_cycle_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_ctl *c = arg;
    c->cycle_due = -1;
    if (c->stopping)
        return;
    /* Drain the work queue: every change so far is covered by this cycle. */
    char *key = NULL;
    while (fair_workqueue_get(c->wq, &key) == 0) {
        fair_workqueue_done(c->wq, key);
        fair_free(key);
        key = NULL;
    }
    int64_t t0 = mono(c);
    if (c->leader_now && fair_ctl_all_synced(c))
        fair_ctl_run_cycle(c);
    c->last_cycle_ms = mono(c);
    c->last_cycle_cost_ms = c->last_cycle_ms - t0;
    if (c->more_work) {
        c->more_work = false;
        int64_t gap = c->cfg->cycle_min_interval_ms;
        fair_ctl_arm_cycle(c, c->last_cycle_cost_ms > gap ? c->last_cycle_cost_ms : gap);
    }
    fair_ctl_arm_cycle(c, c->cfg->cycle_interval_ms);
}

static void on_flush_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fair_ctl *c = arg;
    struct fair_error err = {0};
    if (c->ledger) {
        /* Never waits for a lock (fair_ledger_set_lock_wait(0) at start): a
         * failed flush keeps its records and is retried with backoff; the
         * ledger logs the streak. */
        fair_ledger_flush(c->ledger, &err);
        int64_t ms = fair_ledger_retry_delay_ms(c->ledger, c->cfg->ledger_flush_ms);
        struct timeval tv = {.tv_sec = (time_t)(ms / 1000),
                             .tv_usec = (suseconds_t)(ms % 1000) * 1000};
        event_add(c->flush_ev, &tv);
        if (c->leader_now && mono(c) - c->last_prune_ms >= PRUNE_INTERVAL_MS) {
            int64_t deleted = 0;
            c->last_prune_ms = mono(c);
            if (fair_ledger_prune(c->ledger, wall(c), &deleted, &err))
                FAIR_WARN(COMP, "msg=\"ledger prune failed\" err=\"%s\"", err.msg);
        }
    }
}

/* ---- informers' sync, leadership ---- */

static void on_synced(void *ctx)
{
    struct fair_ctl *c = ctx;
    for (int i = 0; i < INF_COUNT; i++)
        c->synced[i] = c->inf[i] && fair_informer_has_synced(c->inf[i]);
    c->metrics.synced = fair_ctl_all_synced(c);
    if (c->metrics.synced) {
        FAIR_INFO(COMP, "msg=\"informers synced\"");
        fair_ctl_arm_cycle(c, 0);
    }
}

/* fair_ledger_preemptions callback. */
static int evictions_from_ledger(void *ctx, const char *lineage, int64_t count)
{
    struct fair_ctl *c = ctx;
    int rc = fair_ctl_podmem_restore_evictions(&c->pods, lineage, count);
    return rc == FAIR_ERANGE ? 0 : rc; /* past the cap: the rest count from 0 */
}

static void on_started_leading(void *ctx)
{
    struct fair_ctl *c = ctx;
    if (c->leader)
        FAIR_INFO(COMP, "msg=\"became the leader\" identity=%s", fair_leader_identity(c->leader));
    else
        FAIR_INFO(COMP, "msg=\"scheduling: leader election is off, so this replica acts "
                        "alone\"");
    c->leader_now = true;
    c->metrics.leader = true;
    /* How often each workload was evicted, by this process or by the
     * leaders before it (the ledger's preempted intervals): the eviction
     * bound (reclaim.maxEvictions) counts on from there. A read on the
     * writer's connection in WAL mode takes no lock that a writer holds. */
    struct fair_error lerr = {0};
    if (c->ledger && fair_ledger_preemptions(c->ledger, evictions_from_ledger, c, &lerr))
        FAIR_WARN(COMP,
                  "msg=\"could not read past evictions from the ledger; the eviction bound "
                  "counts from what this replica saw\" err=\"%s\"",
                  lerr.msg);
    c->need_reconcile = true;
    c->last_sample_ms = 0;
    fair_ctl_arm_cycle(c, 0);
}

static void on_stopped_leading(void *ctx)
{
    struct fair_ctl *c = ctx;
    c->leader_now = false;
    c->metrics.leader = false;
    fair_ctl_drop_bind_queue(c);
    fair_ctl_podmem_clear_ops(&c->pods);
    if (c->stopping)
        return;
    FAIR_ERROR(COMP, "msg=\"lost the leader lease; exiting so that a fresh replica takes over\"");
    c->exit_code = 1;
    event_base_loopbreak(c->base);
}

/* ---- lifecycle ---- */

int fair_ctl_new(struct event_base *base, const struct fair_ctl_options *o, struct fair_ctl **out,
                 struct fair_error *err)
{
    int rc = 0;
    struct fair_ctl *c = fair_calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return fair_error_set(err, FAIR_ENOMEM, "out of memory");
    c->base = base;
    c->cfg = o->cfg;
    c->clock = o->clock ? o->clock : fair_clock_system();
    c->cycle_due = -1;
    fair_kconfig_init(&c->kcfg);
    fair_ctl_podmem_init(&c->pods);
    fair_ctl_status_table_init(&c->status);
    fair_ctl_metrics_init(&c->metrics);
    {
        struct fair_ctl_tq_options tqo = {.time_zone = c->cfg->time_zone,
                                          .default_half_life_ms = c->cfg->usage_half_life_ms,
                                          .refresh_ms = c->cfg->usage_refresh_ms};
        if ((rc = fair_ctl_tq_new(&tqo, &c->tq, err)))
            goto out;
    }
    if ((o->kubeconfig && !(c->kubeconfig = fair_strdup(o->kubeconfig))) ||
        (o->identity && !(c->identity = fair_strdup(o->identity)))) {
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = fair_kconfig_load(c->kubeconfig, &c->kcfg, err)))
        goto out;
    struct fair_kclient_options kopt = {0};
    fair_kclient_options_default(&kopt);
    kopt.qps = (double)c->cfg->api_qps;
    kopt.burst = (int)(c->cfg->api_burst > 1000000 ? 1000000 : c->cfg->api_burst);
    kopt.request_timeout_ms = (long)c->cfg->api_timeout_ms;
    kopt.user_agent = fair_user_agent_controller;
    /* Each watch holds a connection for good: give requests their own 16. */
    kopt.max_host_connections = 16 + INF_COUNT + PG_COUNT + 1;
    kopt.clock = c->clock;
    if ((rc = fair_kclient_new(base, &c->kcfg, &kopt, &c->kc, err)))
        goto out;
    struct fair_workqueue_options wopt = {.clock = c->clock};
    if ((rc = fair_workqueue_new(&wopt, &c->wq))) {
        fair_error_set(err, rc, "work queue: %s", fair_strerror(rc));
        goto out;
    }
    c->cycle_ev = evtimer_new(base, on_cycle_timer, c);
    c->flush_ev = event_new(base, -1, EV_PERSIST, on_flush_timer, c);
    if (!c->cycle_ev || !c->flush_ev) {
        rc = fair_error_set(err, FAIR_ENOMEM, "out of memory (timers)");
        goto out;
    }
    static const struct {
        const struct fair_kres *res;
        const struct fair_ktype *type;
    } kinds[INF_COUNT] = {
        [INF_PROJECTS] = {&fair_kres_projects, &fair_ktype_project},
        [INF_QUEUES] = {&fair_kres_queues, &fair_ktype_queue},
        [INF_NODES] = {&fair_kres_nodes, &fair_ktype_node},
        [INF_PODS] = {&fair_kres_pods, &fair_ktype_pod},
        [INF_NAMESPACES] = {&fair_kres_namespaces, &fair_ktype_namespace},
        [INF_PVCS] = {&fair_kres_pvcs, &fair_ktype_pvc},
        [INF_PVS] = {&fair_kres_pvs, &fair_ktype_pv},
        [INF_SCS] = {&fair_kres_storageclasses, &fair_ktype_storageclass},
    };
    for (int i = 0; i < INF_COUNT; i++) {
        struct fair_informer_options io = {
            .res = kinds[i].res, .type = kinds[i].type, .stall_timeout_ms = c->cfg->watch_stall_ms};
        struct fair_informer_handlers h = {.on_add = on_add,
                                           .on_update = on_update,
                                           .on_delete = on_delete,
                                           .on_synced = on_synced,
                                           .ctx = c};
        if (i == INF_PODS) {
            h.on_update = on_pod_update;
            h.on_delete = on_pod_delete;
        } else if (i == INF_QUEUES) {
            h.on_delete = on_queue_delete;
        } else if (i == INF_PROJECTS) {
            h.on_delete = on_project_delete;
        }
        if ((rc = fair_informer_new(c->kc, &io, &h, &c->inf[i], err)))
            goto out;
    }
    if (c->cfg->leader_elect) {
        struct fair_leader_options lo = {.ns = c->cfg->lease_namespace,
                                         .name = c->cfg->lease_name,
                                         .identity = c->identity,
                                         .lease_ms = c->cfg->lease_duration_ms,
                                         .renew_deadline_ms = c->cfg->renew_deadline_ms,
                                         .retry_ms = c->cfg->retry_period_ms};
        struct fair_leader_callbacks cb = {.on_started_leading = on_started_leading,
                                           .on_stopped_leading = on_stopped_leading,
                                           .ctx = c};
        /* A client of its own (own curl multi handle, own connections) so
         * that renewals never wait behind binds for a connection or an
         * HTTP/2 stream; as kube-scheduler's leader-election client, its
         * requests time out at the renew deadline. */
        struct fair_kclient_options lkopt = kopt;
        lkopt.qps = -1;
        lkopt.max_host_connections = 2;
        if (lkopt.request_timeout_ms > c->cfg->renew_deadline_ms)
            lkopt.request_timeout_ms = (long)c->cfg->renew_deadline_ms;
        lkopt.user_agent = fair_user_agent_leader;
        if ((rc = fair_kclient_new(base, &c->kcfg, &lkopt, &c->lease_kc, err)) ||
            (rc = fair_leader_new(c->lease_kc, &lo, &cb, &c->leader, err)))
            goto out;
    }
    *out = c;
    c = NULL;
out:
    fair_ctl_free(c);
    return rc;
}

/* fair_ledger_open_intervals callback: an open interval is a bound pod's
 * charge, fixed when it was bound. */
static int charge_from_ledger(void *ctx, const struct fair_ledger_interval_info *in)
{
    struct fair_ctl *c = ctx;
    return fair_ctl_podmem_set_charge(&c->pods, in->uid, in->queue, in->project,
                                      !in->non_preemptible, in->gpu_milli, in->gang, in->gang_size,
                                      in->devices);
}

int fair_ctl_start(struct fair_ctl *c, struct fair_error *err)
{
    int rc = 0;
    if (c->cfg->ledger_path && *c->cfg->ledger_path) {
        struct fair_ledger_options lo;
        fair_ledger_options_init(&lo);
        lo.path = c->cfg->ledger_path;
        lo.sample_period_ms = c->cfg->ledger_sample_ms;
        lo.retention_ms = c->cfg->ledger_retention_ms;
        if ((rc = fair_ledger_open(&lo, &c->ledger, err)))
            return rc;
        /* What the pods bound before this process are charged as. */
        struct fair_error lerr = {0};
        if (fair_ledger_open_intervals(c->ledger, charge_from_ledger, c, &lerr))
            FAIR_WARN(COMP,
                      "msg=\"could not read the charges of bound pods from the ledger; they are "
                      "charged as first seen\" err=\"%s\"",
                      lerr.msg);
        fair_ledger_set_lock_wait(c->ledger, 0); /* the loop never waits for a lock */
        int64_t ms = c->cfg->ledger_flush_ms;
        struct timeval tv = {.tv_sec = (time_t)(ms / 1000),
                             .tv_usec = (suseconds_t)(ms % 1000) * 1000};
        event_add(c->flush_ev, &tv);
    }
    for (int i = 0; i < INF_COUNT; i++)
        if ((rc = fair_informer_start(c->inf[i], err)))
            return rc;
    if ((rc = fair_ctl_podgroups_start(c, err)))
        return rc;
    if (c->leader) {
        if ((rc = fair_leader_start(c->leader, err)))
            return rc;
    } else {
        on_started_leading(c);
    }
    c->started = true;
    fair_ctl_arm_cycle(c, c->cfg->cycle_interval_ms);
    return 0;
}

static void finish_shutdown(void *ctx)
{
    struct fair_ctl *c = ctx;
    struct fair_error err = {0};
    if (c->ledger) {
        if (fair_ledger_flush(c->ledger, &err))
            FAIR_WARN(COMP, "msg=\"final ledger flush failed\" err=\"%s\"", err.msg);
        else
            FAIR_INFO(COMP, "msg=\"ledger flushed\"");
    }
    if (c->shutdown_done)
        c->shutdown_done(c->shutdown_ctx);
}

void fair_ctl_shutdown(struct fair_ctl *c, void (*done)(void *ctx), void *ctx)
{
    if (c->ledger) /* the last writes may wait, boundedly, for a lock to clear */
        fair_ledger_set_lock_wait(c->ledger, c->cfg->ledger_shutdown_wait_ms);
    fair_ctl_drop_bind_queue(c); /* planned binds not sent: never placed */
    fair_ctl_ledger_final_heartbeat(c);
    c->stopping = true;
    c->shutdown_done = done;
    c->shutdown_ctx = ctx;
    if (c->cycle_ev)
        evtimer_del(c->cycle_ev);
    c->cycle_due = -1;
    if (c->leader && c->started) {
        fair_leader_stop(c->leader, finish_shutdown, c);
        return;
    }
    c->leader_now = false;
    finish_shutdown(c);
}

void fair_ctl_free(struct fair_ctl *c)
{
    if (!c)
        return;
    fair_leader_free(c->leader);
    for (int i = 0; i < INF_COUNT; i++)
        fair_informer_free(c->inf[i]);
    fair_ctl_podgroups_free(c);
    fair_kclient_free(c->kc);
    fair_kclient_free(c->lease_kc);
    while (c->reqs)
        fair_ctl_req_free(c->reqs); /* their callbacks will not run */
    fair_ledger_free(c->ledger);
    if (c->cycle_ev)
        event_free(c->cycle_ev);
    if (c->flush_ev)
        event_free(c->flush_ev);
    fair_workqueue_free(c->wq);
    for (int i = 0; i < INF_COUNT; i++)
        fair_free(c->arr[i]);
    fair_ctl_podmem_release(&c->pods);
    fair_ctl_status_table_release(&c->status);
    fair_ctl_tq_free(c->tq);
    fair_ctl_metrics_release(&c->metrics);
    fair_kconfig_release(&c->kcfg);
    fair_free(c->kubeconfig);
    fair_free(c->identity);
    fair_free(c);
}

bool fair_ctl_ready(const struct fair_ctl *c)
{
    return fair_ctl_all_synced(c);
}

bool fair_ctl_is_leader(const struct fair_ctl *c)
{
    return c->leader_now;
}

int fair_ctl_exit_code(const struct fair_ctl *c)
{
    return c->exit_code;
}

int fair_ctl_metrics_text(struct fair_ctl *c, struct fair_buf *out)
{
    c->metrics.inflight = c->pods.inflight;
    for (int i = 0; i < INF_COUNT && i < FAIR_CTL_INFORMERS; i++) {
        struct fair_informer_stats st;
        if (!c->inf[i])
            continue;
        fair_informer_get_stats(c->inf[i], &st);
        c->metrics.inf_oversized[i] = st.oversized;
        c->metrics.inf_undecodable[i] = st.decode_errors;
        c->metrics.inf_page_shrinks[i] = st.page_shrinks;
        c->metrics.inf_watch_stalls[i] = st.stalls;
    }
    int rc = fair_ctl_metrics_render(&c->metrics, out);
    return rc ? rc : fair_ctl_tq_metrics(c->tq, out);
}

struct fair_ledger *fair_ctl_ledger(struct fair_ctl *c)
{
    return c->ledger;
}

const struct fair_kconfig *fair_ctl_kconfig(const struct fair_ctl *c)
{
    return &c->kcfg;
}
