/* The scheduling cycle (see ctl/loop.h): the informers' objects into a
 * snapshot (with what this process did and has not seen yet), one engine
 * run, and its actions carried out: binds, evictions, the reasons pending
 * pods are told, statuses; and the ledger's samples of what runs. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/log.h"
#include "cache/informer.h"
#include "cache/store.h"
#include "ctl/index.h"
#include "ctl/loop.h"
#include "ctl/metrics.h"
#include "ctl/podmem.h"
#include "ctl/reasons.h"
#include "ctl/snapshot.h"
#include "ctl/tqstate.h"
#include "engine/engine.h"
#include "kube/decode.h"
#include "ledger/ledger.h"

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
        const struct fair_kpvc *pc =
            fair_ctl_volume_claim(vol, pod->meta.namespace_, pod->claims[i]);
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
        else if (patched_rv && fair_ctl_rv_number(pc->meta.resource_version) > patched_rv)
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
        const char *over = provisioning_over(c, vol, pod, e->op_node, &e->provision_ready,
                                             &e->provision_seen, e->provision_rv);
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

bool fair_ctl_all_synced(const struct fair_ctl *c)
{
    for (int i = 0; i < INF_COUNT; i++)
        if (!c->synced[i])
            return false;
    return true;
}

void fair_ctl_run_cycle(struct fair_ctl *c)
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

/* At a clean stop the leader knows which pods are alive right now: a last
 * reconcile moves the ledger's heartbeat to now, so their running time up
 * to the stop counts (a crash loses at most one sample period instead). */
void fair_ctl_ledger_final_heartbeat(struct fair_ctl *c)
{
    struct fair_ctl_snapshot s;
    struct fair_error err = {0};
    size_t n[INF_COUNT] = {0};
    if (!c->ledger || !c->leader_now || !fair_ctl_all_synced(c))
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
