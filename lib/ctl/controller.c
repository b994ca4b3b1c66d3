/* The controller's loop (see controller.h): informer handlers mark the work
 * queue, a timer runs scheduling cycles, and the API requests of a cycle
 * complete later on the same loop. No call here blocks, except the ledger's
 * flush, which is one short SQLite transaction from its own timer. */
#include "ctl/controller.h"

#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/duration.h"
#include "base/log.h"
#include "base/version.h"
#include "base/quantity.h"
#include "cache/informer.h"
#include "cache/leader.h"
#include "cache/store.h"
#include "cache/workqueue.h"
#include "ctl/index.h"
#include "ctl/loop.h"
#include "ctl/metrics.h"
#include "ctl/podmem.h"
#include "ctl/reasons.h"
#include "ctl/snapshot.h"
#include "ctl/status.h"
#include "ctl/tqstate.h"
#include "engine/constraints.h"
#include "engine/engine.h"
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

/* A resourceVersion as a number, or 0 when it is not one. The API calls
 * them opaque; kube-scheduler's assume cache and ours read them as the
 * etcd revision they are, which grows with every write. */
static uint64_t rv_number(const char *s)
{
    if (!s || !*s || strlen(s) > 19)
        return 0;
    uint64_t v = 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    return v;
}

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
        uint64_t rv = rv_number(json_string_value(json_object_get(meta, "resourceVersion")));
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

/* ---- ledger samples and reconcile ---- */

static const char *project_team(const struct fair_ctl_snapshot *s, int32_t project)
{
    if (project < 0)
        return "";
    const struct fair_kproject *kp = s->kprojects[project];
    if (!kp) /* the project of queues that are gone */
        return s->snap.projects[project].q.name;
    return kp->team ? kp->team : kp->meta.name;
}

/* The ledger interval of bound pod i of s. */
static struct fair_ledger_interval_info interval_of(struct fair_ctl *c,
                                                    const struct fair_ctl_snapshot *s, size_t i)
{
    const struct fair_pod *p = &s->snap.pods[i];
    const struct fair_queue *q = &s->snap.queues[p->queue];
    const struct fair_kproject *kproj = q->project >= 0 ? s->kprojects[q->project] : NULL;
    const struct fair_node *node = &s->snap.nodes[p->node];
    return (struct fair_ledger_interval_info){
        .uid = p->uid,
        .namespace_ = p->namespace_,
        .pod = p->name,
        .queue = q->q.name,
        .project = q->project_name,
        .team = project_team(s, q->project),
        .cost_center = kproj && kproj->cost_center ? kproj->cost_center : "",
        .node = node->name,
        .gpu_model = node->gpu_model ? node->gpu_model : "",
        .gpu_milli = p->request.v[FAIR_RES_GPU],
        .inquota_milli = 0,
        .start_ms = p->started_ms ? p->started_ms : wall(c),
        .non_preemptible = !p->preemptible,
        .devices = p->gpu_devices,
        .gang = fair_ctl_snapshot_gang_name(s, i),
        .gang_size = p->gang_size,
        .creator = fair_ctl_creator_of(c, p),
        .lineage = s->kpods[i] ? lineage_of(s->kpods[i]) : NULL};
}

/* Whether snapshot pod i only holds its room while its claims' volumes
 * are made (bound in the snapshot, not on the server). */
static bool held_for_volumes(struct fair_ctl *c, const struct fair_ctl_snapshot *s, size_t i)
{
    const struct fair_kpod *k = s->kpods[i];
    const struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, s->snap.pods[i].uid);
    return k && !(k->node_name && *k->node_name) && e && e->op == FAIR_CTL_OP_PROVISIONING;
}

/* Returns the ledger's result: FAIR_EBUSY (locked by another process) is
 * retried at the next cycle. */
static int ledger_reconcile(struct fair_ctl *c, const struct fair_ctl_snapshot *s)
{
    struct fair_error err = {0};
    struct fair_ledger_interval_info *live = fair_calloc(s->snap.npods + 1, sizeof *live);
    if (!live)
        return FAIR_ENOMEM;
    size_t n = 0;
    for (size_t i = 0; i < s->snap.npods; i++) {
        const struct fair_pod *p = &s->snap.pods[i];
        if (p->state != FAIR_POD_BOUND || p->queue < 0 || p->request.v[FAIR_RES_GPU] <= 0 ||
            held_for_volumes(c, s, i))
            continue;
        live[n++] = interval_of(c, s, i);
    }
    size_t closed = 0, opened = 0;
    int rc = fair_ledger_reconcile(c->ledger, wall(c), live, n, &closed, &opened, &err);
    if (rc == FAIR_EBUSY) /* the ledger logs the streak; retried next cycle */
        FAIR_DEBUG(COMP, "msg=\"ledger reconcile: database locked\" err=\"%s\"", err.msg);
    else if (rc)
        FAIR_WARN(COMP, "msg=\"ledger reconcile failed\" err=\"%s\"", err.msg);
    else
        FAIR_INFO(COMP, "msg=\"ledger reconciled\" live=%zu closed=%zu opened=%zu", n, closed,
                  opened);
    fair_free(live);
    return rc;
}

static void ledger_sample(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                          const struct fair_result *res)
{
    struct fair_error err = {0};
    int64_t now = wall(c);
    if (c->last_sample_ms && now - c->last_sample_ms < c->cfg->ledger_sample_ms)
        return;
    struct fair_ledger_sample_row *rows = fair_calloc(s->snap.nqueues + 1, sizeof *rows);
    if (!rows)
        return;
    for (size_t i = 0; i < s->snap.nqueues; i++) {
        const struct fair_queue *q = &s->snap.queues[i];
        const struct fair_share_status *f = &res->queues[i];
        int64_t pend = f->demand.v[FAIR_RES_GPU] - f->allocated.v[FAIR_RES_GPU];
        rows[i] = (struct fair_ledger_sample_row){.queue = q->q.name,
                                                  .project = q->project_name,
                                                  .team = project_team(s, q->project),
                                                  .allocated = f->allocated.v[FAIR_RES_GPU],
                                                  .guaranteed = f->guaranteed.v[FAIR_RES_GPU],
                                                  .fair_share = f->fair_share.v[FAIR_RES_GPU],
                                                  .pending = pend > 0 ? pend : 0,
                                                  .lent = -1};
    }
    /* issue 15: with a lending limit somewhere, the ledger's lent is the
     * engine's (idle lendable guarantee only, spread over what is
     * borrowed, as the ledger would), not derived from the whole guarantee. */
    bool limited = false;
    for (size_t i = 0; i < s->snap.nqueues; i++)
        limited |=
            res->queues[i].lendable.v[FAIR_RES_GPU] < res->queues[i].guaranteed.v[FAIR_RES_GPU];
    for (size_t i = 0; limited && i < s->snap.nqueues; i++)
        rows[i].lent = res->queues[i].lent.v[FAIR_RES_GPU];
    if (fair_ledger_sample(c->ledger, now, rows, s->snap.nqueues, &err))
        FAIR_WARN(COMP, "msg=\"ledger sample failed\" err=\"%s\"", err.msg);
    c->last_sample_ms = now;
    fair_free(rows);
}

/* ---- the cycle ---- */

/* The evictions that count for pod. A controller owner's count is shared
 * by all its pods: a Job of 16 pods, 3 of them evicted, has 3 against 16
 * slots, not 3 against each pod (which would put all 16 at the bound). So
 * an owner's count is spread over its live pods, rounded up: a one-pod
 * Job keeps its whole count. */
static int32_t owner_evictions(const struct fair_ctl *c, const struct fair_kpod *pod)
{
    const char *lin = lineage_of(pod);
    int32_t n = fair_ctl_podmem_evictions(&c->pods, lin);
    if (n <= 0 || lin != pod->owner_uid)
        return n;
    int32_t w = fair_ctl_index_get(&c->owner_width, lin);
    return w > 1 ? (n + w - 1) / w : n;
}

/* c->owner_width for this snapshot. Failure only loses the spreading. */
static void count_owner_width(struct fair_ctl *c, size_t npods)
{
    fair_ctl_index_init(&c->owner_width);
    const struct fair_kpod *const *pods = (const struct fair_kpod *const *)c->arr[INF_PODS];
    for (size_t i = 0; i < npods; i++) {
        const struct fair_kpod *p = pods[i];
        if (!p->owner_uid || !*p->owner_uid || p->phase == FAIR_KPOD_SUCCEEDED ||
            p->phase == FAIR_KPOD_FAILED)
            continue;
        int32_t w = fair_ctl_index_get(&c->owner_width, p->owner_uid);
        if (fair_ctl_index_put(&c->owner_width, p->owner_uid, w < 0 ? 1 : w + 1))
            break;
    }
}

/* Why the room held for pod on node while its claims' volumes are made
 * or bound can go (NULL: it stays). The pod is bound (by someone else); a
 * claim is gone, being deleted or names another node; a claim seen on its
 * way to the node (in *seen: naming it, or with a volume prebound) is no
 * longer, unbound: its provisioner gave up there and cleared the
 * annotation for a new choice, as kube-scheduler's PreBind then fails
 * ("provisioning failed"), or its prebound volume went to another claim;
 * or every claim is bound to a volume this controller has seen: *ready,
 * and the pod is bound to the node in this cycle (fair_ctl_bind_provisioned()),
 * before the room can go to anyone else. A claim not yet seen so (the
 * watch has not brought our patch) keeps the hold, up to
 * volumeBindTimeout, unless its resourceVersion is newer than the highest
 * our selected-node patches of the pod's claims were answered with
 * (patched_rv; 0: none known): then it changed after our patch and the
 * provisioner cleared it before the watch showed it to us. A patch
 * refused ends the hold (fair_ctl_on_simple_done()). */
static const char *provisioning_over(struct fair_ctl *c, const struct fair_ctl_volumes *vol,
                                     const struct fair_kpod *pod, const char *node, bool *ready,
                                     uint16_t *seen, uint64_t patched_rv)
{
    *ready = false;
    if (pod->node_name && *pod->node_name)
        return "the pod is bound";
    if (!c->inf[INF_PVCS] || !c->inf[INF_PVS])
        return "no volume informers";
    bool all = true;
    for (size_t i = 0; i < pod->nclaims; i++) {
        const struct fair_kpvc *pc = fair_ctl_volume_claim(vol, pod->meta.namespace_, pod->claims[i]);
        if (!pc || pc->meta.deletion_ms)
            return "a claim is gone";
        bool named = pc->selected_node && *pc->selected_node;
        if (named && node && strcmp(pc->selected_node, node))
            return "a claim names another node";
        uint16_t bit = i < 16 ? (uint16_t)(1u << i) : 0;
        if (named || pc->bound || fair_ctl_volume_prebound(vol, pc))
            *seen |= bit;
        else if (*seen & bit)
            return "a claim lost its selected-node or its prebound volume (provisioning failed, "
                   "or the volume went elsewhere)";
        else if (patched_rv && rv_number(pc->meta.resource_version) > patched_rv)
            return "a claim changed after our selected-node and names no node (provisioning "
                   "failed)";
        all &= pc->bound && pc->volume_name && fair_ctl_volume(vol, pc->volume_name) != NULL;
    }
    *ready = all;
    return NULL;
}

static void overlay(void *ctx, const struct fair_ctl_volumes *vol, const struct fair_kpod *pod,
                    struct fair_ctl_overlay *out)
{
    struct fair_ctl *c = ctx;
    memset(out, 0, sizeof *out);
    /* A requeued pod starts from its predecessors' count (its annotation,
     * written by the controller): a bare pod's lineage is its uid, new at
     * each requeue. */
    out->evictions = owner_evictions(c, pod);
    if (pod->requeue_count > out->evictions)
        out->evictions = pod->requeue_count;
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, pod->meta.uid);
    if (!e)
        return;
    if (e->op == FAIR_CTL_OP_PROVISIONING) {
        const char *over =
            provisioning_over(c, vol, pod, e->op_node, &e->provision_ready, &e->provision_seen,
                              e->provision_rv);
        if (over) {
            FAIR_INFO(COMP, "msg=\"room no longer held\" pod=%s/%s node=%s why=\"%s\"",
                      pod->meta.namespace_, pod->meta.name, e->op_node, over);
            fair_ctl_podmem_end(&c->pods, pod->meta.uid);
        }
    }
    out->hold_node = e->hold_node;
    out->volume_hold_expired = e->provision_expired;
    out->hold_since_ms = e->hold_since_ms;
    out->charge = e->charge.set ? &e->charge : NULL;
    if (e->op == FAIR_CTL_OP_BINDING || e->op == FAIR_CTL_OP_PROVISIONING) {
        out->kind =
            e->op == FAIR_CTL_OP_BINDING ? FAIR_CTL_OVERLAY_BINDING : FAIR_CTL_OVERLAY_PROVISIONING;
        out->node = e->op_node;
        out->gpu_devices = e->op_devices;
    } else if (e->op == FAIR_CTL_OP_EVICTING) {
        out->kind = FAIR_CTL_OVERLAY_EVICTING;
        out->noticed = e->notice_due_ms != 0;
    } else if (e->protect_until_ms && e->protect_until_ms > mono(c)) {
        out->kind = FAIR_CTL_OVERLAY_PROTECTED;
    }
}

static int by_name(const void *a, const void *b)
{
    const struct fair_kmeta *ma = *(const struct fair_kmeta *const *)a;
    const struct fair_kmeta *mb = *(const struct fair_kmeta *const *)b;
    if (ma->creation_ms != mb->creation_ms)
        return ma->creation_ms < mb->creation_ms ? -1 : 1;
    return strcmp(ma->name ? ma->name : "", mb->name ? mb->name : "");
}

/* Copies a store's object pointers into the scratch array i. */
static int collect(struct fair_ctl *c, int i, size_t *n_out)
{
    struct fair_store *st = fair_informer_store(c->inf[i]);
    size_t n = fair_store_len(st);
    if (fair_grow((void **)&c->arr[i], &c->arr_cap[i], n + 1, sizeof *c->arr[i]))
        return FAIR_ENOMEM;
    size_t pos = 0, k = 0;
    void *obj;
    while ((obj = fair_store_next(st, &pos)) && k < n)
        c->arr[i][k++] = obj;
    if (i == INF_PROJECTS || i == INF_QUEUES)
        qsort(c->arr[i], k, sizeof *c->arr[i], by_name); /* oldest first, then name */
    *n_out = k;
    return 0;
}

/* Nodes holding a pod the pods informer could not read (not finished, and
 * with no readable version in the store): what it holds is unknown, so the
 * node takes no new pods. Fills c->full_nodes; returns the count. */
static size_t collect_full_nodes(struct fair_ctl *c)
{
    struct fair_informer *inf = c->inf[INF_PODS];
    size_t n = 0, total = inf ? fair_informer_unreadable_count(inf) : 0;
    for (size_t i = 0; i < total && n < FAIR_INFORMER_MAX_UNREADABLE; i++) {
        const struct fair_informer_unreadable *u = fair_informer_unreadable_at(inf, i);
        const struct fair_kskeleton *k = &u->id;
        if (!k->node_name || !*k->node_name ||
            (k->phase && (!strcmp(k->phase, "Succeeded") || !strcmp(k->phase, "Failed"))))
            continue;
        if (k->uid && fair_store_get(fair_informer_store(inf), k->uid))
            continue; /* its last readable version is in the store: that counts */
        c->full_nodes[n++] = k->node_name;
    }
    return n;
}

/* Builds the snapshot of what the informers hold, n[i] objects collected
 * from informer i; binds sent and not yet seen count as running. */
static int build_snapshot(struct fair_ctl *c, const size_t n[INF_COUNT],
                          struct fair_ctl_snapshot *s, struct fair_error *err)
{
    size_t nfull = collect_full_nodes(c);
    c->metrics.nodes_blocked_unreadable = nfull;
    struct fair_ctl_snapshot_input in = {
        .scheduler_name = c->cfg->scheduler_name,
        .now_ms = wall(c),
        .reclaim_up_to = strcmp(c->cfg->reclaim_up_to, "Guarantee") == 0 ? FAIR_RECLAIM_GUARANTEE
                                                                         : FAIR_RECLAIM_FAIR_SHARE,
        .over_quota_threshold_pct = (int32_t)c->cfg->oq_threshold_pct,
        .over_quota_min_runtime_ms = c->cfg->oq_min_runtime_ms,
        .max_evictions = (int32_t)c->cfg->max_evictions,
        .hold_timeout_ms = c->cfg->hold_timeout_ms,
        .lend_max_runtime_ms = c->cfg->lend_max_runtime_ms,
        .min_fraction_milli = c->cfg->min_fraction_milli,
        .charge_other_schedulers = c->cfg->charge_other_schedulers,
        .reservation_namespace = c->cfg->reservations ? c->cfg->reservation_namespace : NULL,
        .nodes = (const struct fair_knode *const *)c->arr[INF_NODES],
        .nnodes = n[INF_NODES],
        .projects = (const struct fair_kproject *const *)c->arr[INF_PROJECTS],
        .nprojects = n[INF_PROJECTS],
        .queues = (const struct fair_kqueue *const *)c->arr[INF_QUEUES],
        .nqueues = n[INF_QUEUES],
        .pods = (const struct fair_kpod *const *)c->arr[INF_PODS],
        .npods = n[INF_PODS],
        .namespaces = (const struct fair_knamespace *const *)c->arr[INF_NAMESPACES],
        .nnamespaces = n[INF_NAMESPACES],
        .overlay = overlay,
        .overlay_ctx = c,
        .full_nodes = c->full_nodes,
        .nfull_nodes = nfull,
        .pvcs = (const struct fair_kpvc *const *)c->arr[INF_PVCS],
        .npvcs = n[INF_PVCS],
        .pvs = (const struct fair_kpv *const *)c->arr[INF_PVS],
        .npvs = n[INF_PVS],
        .scs = (const struct fair_ksc *const *)c->arr[INF_SCS],
        .nscs = n[INF_SCS]};
    if (fair_ctl_collect_podgroups(c))
        return fair_error_set(err, FAIR_ENOMEM, "out of memory (PodGroups)");
    in.podgroups = (const struct fair_kpodgroup *const *)c->pg_arr;
    in.npodgroups = c->npg;
    for (int i = 0; i < PG_COUNT; i++)
        in.podgroups_known[i] = c->pg[i].synced;
    /* issue 15: GPU model aliases (the config check validated them); kept
     * in c, since the snapshot points into them until the next cycle. */
    if (!c->gpu_aliases_parsed) {
        struct fair_error aerr = {0};
        if (fair_ctl_parse_gpu_models(c->cfg->gpu_models, c->gpu_aliases, &c->ngpu_aliases, &aerr))
            c->ngpu_aliases = 0;
        c->gpu_aliases_parsed = true;
    }
    in.gpu_aliases = c->gpu_aliases;
    in.ngpu_aliases = c->ngpu_aliases;
    count_owner_width(c, n[INF_PODS]);
    int rc = fair_ctl_tq_prepare(c->tq, c->ledger, in.now_ms, mono(c), &in)
                 ? fair_error_set(err, FAIR_ENOMEM, "out of memory (time-based quota)")
                 : fair_ctl_snapshot_build(&in, s, err);
    fair_ctl_index_release(&c->owner_width);
    return rc;
}

static bool all_synced(const struct fair_ctl *c)
{
    for (int i = 0; i < INF_COUNT; i++)
        if (!c->synced[i])
            return false;
    return true;
}

static void run_cycle(struct fair_ctl *c)
{
    struct fair_ctl_snapshot s;
    struct fair_result res;
    struct fair_error err = {0};
    int64_t *queue_alloc = NULL;
    bool have_snap = false, have_res = false;
    int64_t t0 = mono(c);
    struct timespec ts0, ts1;
    clock_gettime(CLOCK_MONOTONIC, &ts0); /* the histogram wants sub-ms precision */
    memset(&res, 0, sizeof res);
    size_t n[INF_COUNT] = {0};
    for (int i = 0; i < INF_COUNT; i++)
        if (collect(c, i, &n[i]))
            goto out;
    fair_ctl_pump_notices(c);
    fair_ctl_pump_requeues(c);
    fair_ctl_podmem_expire(&c->pods, t0, c->cfg->op_timeout_ms, c->cfg->volume_bind_timeout_ms);
    if (build_snapshot(c, n, &s, &err)) {
        FAIR_ERROR(COMP, "msg=\"snapshot failed\" err=\"%s\"", err.msg);
        goto out;
    }
    have_snap = true;
    struct timespec ts_snap, ts_eng;
    clock_gettime(CLOCK_MONOTONIC, &ts_snap);
    if (fair_engine_run(&s.snap, &res, &err)) {
        FAIR_ERROR(COMP, "msg=\"engine failed\" err=\"%s\"", err.msg);
        goto out;
    }
    have_res = true;
    clock_gettime(CLOCK_MONOTONIC, &ts_eng);
    /* A bound pod of ours first seen without a charge (bound before this
     * process and not in the ledger) is charged as it is now, once. A
     * charged pod of another scheduler (quota.chargeOtherSchedulers) gets
     * its ledger interval when first seen; its charge marks that. */
    for (size_t i = 0; i < s.snap.npods; i++) {
        const struct fair_pod *p = &s.snap.pods[i];
        const struct fair_kpod *kp = s.kpods[i];
        if (p->state != FAIR_POD_BOUND || p->queue < 0 || held_for_volumes(c, &s, i))
            continue;
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, p->uid);
        if (e && e->charge.set) {
            if (!e->charge.notice_set) /* a charge from the ledger: the notice now, once */
                fair_ctl_podmem_fix_notice(&c->pods, p->uid, kp->preemption_notice_ms);
            continue;
        }
        const struct fair_queue *q = &s.snap.queues[p->queue];
        if (fair_ctl_podmem_set_charge(&c->pods, p->uid, q->q.name, q->project_name, p->preemptible,
                                       p->request.v[FAIR_RES_GPU],
                                       fair_ctl_snapshot_gang_name(&s, i), p->gang_size,
                                       p->gpu_devices))
            FAIR_WARN(COMP, "msg=\"could not remember a pod's charge\" pod=%s/%s", p->namespace_,
                      p->name);
        fair_ctl_podmem_fix_notice(&c->pods, p->uid, kp->preemption_notice_ms);
        if (!is_ours(c, kp) && c->ledger && c->leader_now && p->request.v[FAIR_RES_GPU] > 0) {
            struct fair_ledger_interval_info info = interval_of(c, &s, i);
            struct fair_error lerr = {0};
            if (fair_ledger_interval_open(c->ledger, &info, &lerr))
                FAIR_WARN(COMP, "msg=\"ledger open failed\" pod=%s/%s err=\"%s\"", p->namespace_,
                          p->name, lerr.msg);
        }
    }
    /* Device annotations not honoured: told once per pod. */
    for (size_t i = 0; i < s.ndevices_ignored; i++) {
        const struct fair_kpod *kp = s.devices_ignored[i].pod;
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_ensure(&c->pods, kp->meta.uid);
        if (!e || e->told_devices)
            continue;
        e->told_devices = true;
        FAIR_WARN(COMP, "msg=\"device annotation ignored\" pod=%s/%s why=\"%s\"",
                  kp->meta.namespace_, kp->meta.name, s.devices_ignored[i].message);
        fair_ctl_send_event(c, kp, "Warning", "DevicesIgnored", s.devices_ignored[i].message);
    }
    /* Nodes held for pending pods go back into the next snapshot. */
    for (size_t i = 0; i < s.snap.npods && i < res.npods; i++) {
        const struct fair_pod *p = &s.snap.pods[i];
        if (p->state != FAIR_POD_PENDING || (res.hold_since_ms[i] <= 0 && p->hold_since_ms <= 0))
            continue;
        int32_t hn = res.hold_node[i];
        const char *node = hn >= 0 && (size_t)hn < s.snap.nnodes ? s.snap.nodes[hn].name : NULL;
        FAIR_DEBUG(COMP, "msg=\"hold\" pod=%s/%s node=%s since=%lld was=%d/%lld reason=%s",
                   p->namespace_, p->name, node ? node : "-", (long long)res.hold_since_ms[i],
                   p->hold_node, (long long)p->hold_since_ms,
                   fair_pending_reason_str((enum fair_pending_reason)res.pending_reasons[i]));
        if (fair_ctl_podmem_set_hold(&c->pods, p->uid, node, res.hold_since_ms[i]))
            FAIR_WARN(COMP, "msg=\"could not remember a held node\" pod=%s/%s", p->namespace_,
                      p->name);
    }
    if (c->need_reconcile && c->ledger)
        c->need_reconcile = ledger_reconcile(c, &s) == FAIR_EBUSY;

    /* Binds and evictions first. */
    queue_alloc = fair_calloc(s.snap.nqueues + 1, sizeof *queue_alloc);
    if (!queue_alloc)
        goto out;
    for (size_t i = 0; i < s.snap.nqueues; i++)
        queue_alloc[i] = res.queues[i].allocated.v[FAIR_RES_GPU];
    size_t binds = 0, evicts = 0;
    if (c->cfg->reservations)
        fair_ctl_resv_cycle(c, &s);
    for (size_t i = 0; i < res.nactions; i++) {
        const struct fair_action *a = &res.actions[i];
        if (a->pod < 0 || (size_t)a->pod >= s.snap.npods)
            continue;
        if (a->kind == FAIR_ACTION_BIND && a->node >= 0 && (size_t)a->node < s.snap.nnodes &&
            s.pod_select[a->pod]) {
            fair_ctl_select_node(c, &s, a); /* its claims first: bound once they are */
        } else if (a->kind == FAIR_ACTION_BIND && a->node >= 0 && (size_t)a->node < s.snap.nnodes) {
            fair_ctl_bind(c, &s, a, queue_alloc, -1);
            binds++;
        } else if (a->kind == FAIR_ACTION_EVICT) {
            fair_ctl_evict(c, &s, a);
            evicts++;
        }
    }

    binds += fair_ctl_bind_provisioned(c, &s, queue_alloc);
    fair_ctl_pump_binds(c);
    fair_ctl_unmark_stale(c, &s);

    /* Then tell the owners of pending pods why they wait. */
    int told = 0;
    size_t pending = 0;
    char msg[512];
    for (size_t i = 0; i < s.snap.npods && i < res.npods; i++) {
        if (s.snap.pods[i].state != FAIR_POD_PENDING || res.pending_reasons[i] == FAIR_PENDING_NONE)
            continue;
        int why = fair_ctl_effective_why(&s, &res, i);
        pending++;
        if (told >= MAX_TELLS_PER_CYCLE || c->nreqs >= MAX_REQS_OUTSTANDING)
            continue;
        fair_ctl_pending_message(&s, &res, i, msg, sizeof msg);
        told += fair_ctl_tell_pending(c, s.kpods[i], why, msg);
    }
    for (size_t i = 0; i < s.nrejected; i++) {
        pending++;
        if (told >= MAX_TELLS_PER_CYCLE || c->nreqs >= MAX_REQS_OUTSTANDING)
            continue;
        fair_ctl_rejected_message(&s.rejected[i], msg, sizeof msg);
        told += fair_ctl_tell_pending(c, s.rejected[i].pod,
                                      FAIR_CTL_WHY_CTL + (int)s.rejected[i].reason, msg);
    }
    c->more_work = told >= MAX_TELLS_PER_CYCLE; /* the rest next time */

    fair_ctl_write_statuses(c, &s, &res);
    fair_ctl_write_podgroup_statuses(c, &s, &res);
    fair_ctl_tq_alerts(c->tq, fair_ctl_budget_alert, c); /* sent by the leader only */
    if (c->ledger)
        ledger_sample(c, &s, &res);

    /* Metrics. */
    {
        const char **qn = fair_calloc(s.snap.nqueues + 1, sizeof *qn);
        const char **pn = fair_calloc(s.snap.nqueues + 1, sizeof *pn);
        if (qn && pn) {
            for (size_t i = 0; i < s.snap.nqueues; i++) {
                qn[i] = s.snap.queues[i].q.name;
                pn[i] = s.snap.queues[i].project_name;
            }
            fair_ctl_metrics_set_queues(&c->metrics, qn, pn, res.queues, s.snap.nqueues);
        }
        fair_free(qn);
        fair_free(pn);
    }
    c->metrics.pods_pending = pending;
    c->metrics.inflight = c->pods.inflight;
    if (fair_log_get_level() <= FAIR_LOG_DEBUG) {
        struct timespec ts_end;
        clock_gettime(CLOCK_MONOTONIC, &ts_end);
#define MS(a, b)                                                                                   \
    ((double)((b).tv_sec - (a).tv_sec) * 1e3 + (double)((b).tv_nsec - (a).tv_nsec) / 1e6)
        FAIR_DEBUG(COMP,
                   "msg=\"cycle\" pods=%zu pending=%zu binds=%zu queued=%zu evictions=%zu "
                   "snapshot_ms=%.2f engine_ms=%.2f rest_ms=%.2f",
                   s.snap.npods, pending, binds, c->nbindq, evicts, MS(ts0, ts_snap),
                   MS(ts_snap, ts_eng), MS(ts_eng, ts_end));
#undef MS
    }
out:
    fair_free(queue_alloc);
    if (have_res)
        fair_result_release(&res);
    if (have_snap)
        fair_ctl_snapshot_release(&s);
    clock_gettime(CLOCK_MONOTONIC, &ts1);
    fair_ctl_metrics_observe_cycle(&c->metrics, (double)(ts1.tv_sec - ts0.tv_sec) +
                                                    (double)(ts1.tv_nsec - ts0.tv_nsec) / 1e9);
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
    if (c->leader_now && all_synced(c))
        run_cycle(c);
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
    c->metrics.synced = all_synced(c);
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

/* At a clean stop the leader knows which pods are alive right now: a last
 * reconcile moves the ledger's heartbeat to now, so their running time up
 * to the stop counts (a crash loses at most one sample period instead). */
static void ledger_final_heartbeat(struct fair_ctl *c)
{
    struct fair_ctl_snapshot s;
    struct fair_error err = {0};
    size_t n[INF_COUNT] = {0};
    if (!c->ledger || !c->leader_now || !all_synced(c))
        return;
    for (int i = 0; i < INF_COUNT; i++)
        if (collect(c, i, &n[i]))
            return;
    if (build_snapshot(c, n, &s, &err)) {
        FAIR_WARN(COMP, "msg=\"no final ledger heartbeat\" err=\"%s\"", err.msg);
        return;
    }
    ledger_reconcile(c, &s);
    fair_ctl_snapshot_release(&s);
}

void fair_ctl_shutdown(struct fair_ctl *c, void (*done)(void *ctx), void *ctx)
{
    if (c->ledger) /* the last writes may wait, boundedly, for a lock to clear */
        fair_ledger_set_lock_wait(c->ledger, c->cfg->ledger_shutdown_wait_ms);
    fair_ctl_drop_bind_queue(c); /* planned binds not sent: never placed */
    ledger_final_heartbeat(c);
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
    return all_synced(c);
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
