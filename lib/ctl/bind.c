/* Binds (see ctl/loop.h): the engine's placements through pods/binding,
 * a few at a time; fractions that wait for their reservation pod's device
 * (docs/fractions.md); pods whose claims are first given their node
 * (docs/engine.md, "Volumes"). */
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "cache/store.h"
#include "ctl/loop.h"
#include "ctl/reasons.h"
#include "ctl/volumes.h"
#include "engine/constraints.h"
#include "engine/engine.h"

/* ---- binds ---- */

static void on_bind_done(const struct fair_kresponse *resp, void *ctx)
{
    struct req *r = ctx;
    struct fair_ctl *c = r->c;
    if (resp->rc) {
        fair_ctl_note_api_error(c, resp);
        c->metrics.bind_errors++;
        if (resp->status == 409) {
            /* Conflict: the pod is already bound (or was replaced), so our
             * cache is behind the server. Binding it again next cycle would
             * only get 409 again until the watch catches up: keep the
             * operation in flight instead, so the pod counts as bound and is
             * not planned again until the informer shows it or
             * inFlightTimeout passes. */
            c->metrics.bind_conflicts++;
            FAIR_WARN(COMP,
                      "msg=\"bind conflict: the pod is already bound or was replaced; waiting "
                      "for the watch\" pod=%s/%s node=%s err=\"%s\"",
                      r->ns, r->name, r->node, resp->err.msg);
            struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
            if (e && e->op == FAIR_CTL_OP_BINDING)
                e->op_start_ms = mono(c);
        } else if (resp->status == 404) {
            /* The pod is gone: the store is behind the server (its watch
             * has not brought the deletion yet, or is down). Binding it
             * again would get 404 every cycle until the watch catches up:
             * forget it now, as its DELETED event would (the delete
             * handler ends its operation); if it still exists, the watch
             * or the next list brings it back. */
            FAIR_WARN(COMP,
                      "msg=\"bind: the pod is gone; forgetting it until the watch says "
                      "otherwise\" pod=%s/%s uid=%s node=%s",
                      r->ns, r->name, r->uid, r->node);
            fair_ctl_podmem_end(&c->pods, r->uid);
            fair_informer_forget(c->inf[INF_PODS], r->uid);
        } else {
            FAIR_WARN(COMP, "msg=\"bind failed\" pod=%s/%s node=%s status=%ld err=\"%s\"", r->ns,
                      r->name, r->node, resp->status, resp->err.msg);
            fair_ctl_podmem_end(&c->pods, r->uid);
        }
        fair_ctl_mark_dirty(c);
        fair_ctl_req_free(r);
        fair_ctl_pump_binds(c);
        return;
    }
    c->metrics.binds++;
    FAIR_INFO(COMP, "msg=\"bound\" pod=%s/%s node=%s gpus=\"%s\" queue=%s", r->ns, r->name, r->node,
              r->devices, r->queue);
    char msg[512];
    if (*r->devices)
        snprintf(msg, sizeof msg, "Bound %s/%s to node %s, GPUs %s (queue %s)", r->ns, r->name,
                 r->node, r->devices, r->queue);
    else
        snprintf(msg, sizeof msg, "Bound %s/%s to node %s (queue %s)", r->ns, r->name, r->node,
                 r->queue);
    fair_ctl_queue_event(c, r->ns, r->name, r->uid, "Normal", "Scheduled", msg);
    if (r->gpu_env_missing) {
        snprintf(msg, sizeof msg,
                 "the fairshare admission webhook did not see this pod (it was down or "
                 "unreachable, and its failurePolicy Ignore let the pod in): its containers get "
                 "NVIDIA_VISIBLE_DEVICES (GPU %s) only if they set it themselves from the "
                 "annotation " FAIR_ANN_GPU_DEVICES " (docs/fractions.md, \"The webhook\")",
                 r->devices);
        fair_ctl_queue_event(c, r->ns, r->name, r->uid, "Warning", "GPUEnvNotInjected", msg);
        c->metrics.gpu_env_missing++;
    }
    if (c->ledger && r->gpu_milli > 0 && c->leader_now) {
        struct fair_error err = {0};
        struct fair_ledger_interval_info info = {.uid = r->uid,
                                                 .namespace_ = r->ns,
                                                 .pod = r->name,
                                                 .queue = r->queue,
                                                 .project = r->project,
                                                 .team = r->team,
                                                 .cost_center = r->cost_center,
                                                 .node = r->node,
                                                 .gpu_model = r->gpu_model,
                                                 .gpu_milli = r->gpu_milli,
                                                 .inquota_milli = r->inquota_milli,
                                                 .start_ms = wall(c),
                                                 .non_preemptible = r->non_preemptible,
                                                 .devices = r->devmask,
                                                 .gang = r->gang,
                                                 .gang_size = r->gang_size,
                                                 .creator = r->creator,
                                                 .lineage = r->lineage};
        if (fair_ledger_interval_open(c->ledger, &info, &err))
            FAIR_WARN(COMP, "msg=\"ledger open failed\" pod=%s/%s err=\"%s\"", r->ns, r->name,
                      err.msg);
    }
    fair_ctl_req_free(r);
    fair_ctl_pump_binds(c);
}

/* Sends a planned bind: one POST pods/NAME/binding. The device set rides
 * on the Binding's annotations, which the API server copies onto the pod
 * in the same write (setPodHostAndAnnotations), so whatever starts the pod
 * on the node finds them, and a bind costs one request instead of two. */
static void start_bind(struct fair_ctl *c, struct req *r)
{
    struct fair_error err = {0};
    r->bind_slot = true;
    c->binds_in_flight++;
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
    if (e)
        e->op_start_ms = mono(c); /* in flight from now on */
    const char *ann[8];
    size_t nann = 0;
    if (*r->devices) {
        ann[2 * nann] = FAIR_ANN_GPU_DEVICES;
        ann[2 * nann++ + 1] = r->devices;
    }
    if (*r->devices && r->slot1 > 0) {
        ann[2 * nann] = FAIR_ANN_GPU_SLOT;
        ann[2 * nann++ + 1] = r->slot_s;
    }
    if (r->mem_limit_s[0]) {
        ann[2 * nann] = FAIR_ANN_GPU_MEMORY_LIMIT;
        ann[2 * nann++ + 1] = r->mem_limit_s;
    }
    if (r->sm_limit_s[0]) {
        ann[2 * nann] = FAIR_ANN_GPU_SM_LIMIT;
        ann[2 * nann++ + 1] = r->sm_limit_s;
    }
    r->kind = REQ_BIND;
    if (fair_kclient_bind(c->kc, r->ns, r->name, r->uid, r->node, ann, nann, on_bind_done, r,
                          &err)) {
        FAIR_WARN(COMP, "msg=\"bind not sent\" pod=%s/%s err=\"%s\"", r->ns, r->name, err.msg);
        fair_ctl_podmem_end(&c->pods, r->uid);
        fair_ctl_req_free(r);
    }
}

/* Sends queued binds while slots are free. Called after each cycle and
 * whenever a bind is answered, so that a large plan flows out at the
 * server's pace without a cycle per slot. */
void fair_ctl_pump_binds(struct fair_ctl *c)
{
    while (c->bindq_head && c->binds_in_flight < MAX_BINDS_IN_FLIGHT && !c->stopping) {
        struct req *r = c->bindq_head;
        c->bindq_head = r->qnext;
        if (!c->bindq_head)
            c->bindq_tail = NULL;
        c->nbindq--;
        r->qnext = NULL;
        start_bind(c, r);
    }
    fair_ctl_pump_events(c);
}

/* The pod's creator for the ledger: the value of the label that
 * ledger.creatorLabel names (borrowed), or NULL (none configured, or the
 * pod lacks it). Read at bind time, so a later edit of the label changes
 * nothing already charged. */
const char *fair_ctl_creator_of(const struct fair_ctl *c, const struct fair_pod *p)
{
    const char *key = c->cfg->ledger_creator_label;
    if (!key || !*key)
        return NULL;
    for (size_t i = 0; i < p->nlabels; i++)
        if (p->labels[i].key && strcmp(p->labels[i].key, key) == 0)
            return p->labels[i].value;
    return NULL;
}

/* Forgets the binds not sent yet (leadership lost, shutdown). */
void fair_ctl_drop_bind_queue(struct fair_ctl *c)
{
    while (c->resv_wait) {
        struct req *r = c->resv_wait;
        fair_ctl_podmem_end(&c->pods, r->uid);
        fair_ctl_req_free(r); /* unlinks it */
    }
    while (c->bindq_head) {
        struct req *r = c->bindq_head;
        c->bindq_head = r->qnext;
        fair_ctl_podmem_end(&c->pods, r->uid);
        fair_ctl_req_free(r);
    }
    c->bindq_tail = NULL;
    c->nbindq = 0;
}

/* ---- reservation pods (docs/fractions.md) ---- */

static void bindq_push(struct fair_ctl *c, struct req *r);

/* The reservation pod's name for slot of node: "fairshare-gpu-<slot>-<node>"
 * (cut to the 253 characters of a name). */
static void resv_name(const char *node, int slot, char *out, size_t n)
{
    snprintf(out, n, "fairshare-gpu-%d-%.200s", slot & 63, node);
    size_t len = strlen(out);
    while (len > 0 && (out[len - 1] == '-' || out[len - 1] == '.'))
        out[--len] = '\0';
}

static void on_resv_done(const struct fair_kresponse *resp, void *ctx)
{
    struct req *r = ctx;
    struct fair_ctl *c = r->c;
    if (resp->rc && resp->rc != FAIR_ENOTFOUND && resp->status != 409) {
        fair_ctl_note_api_error(c, resp);
        FAIR_WARN(COMP, "msg=\"reservation pod %s failed\" pod=%s/%s status=%ld err=\"%s\"",
                  r->kind == REQ_RESV_CREATE ? "create" : "delete", r->ns, r->name, resp->status,
                  resp->err.msg);
    } else if (!resp->rc) {
        FAIR_INFO(COMP, "msg=\"reservation pod %s\" pod=%s/%s node=%s",
                  r->kind == REQ_RESV_CREATE ? "created" : "deleted", r->ns, r->name,
                  r->node ? r->node : "");
    }
    fair_ctl_req_free(r);
}

/* Creates the reservation pod of slot on node: it asks the device plugin
 * for one GPU (nvidia.com/gpu: 1, so no whole-GPU pod can get it) and runs
 * fairshare-reserve, which writes the device it got into its annotation
 * fairshare.dev/reserved-device. An existing one answers 409: fine. Its
 * security context passes the "restricted" Pod Security Standard (non-root,
 * no privilege escalation, no capabilities, RuntimeDefault seccomp). */
static void resv_create(struct fair_ctl *c, const char *node, int slot)
{
    char name[254], slot_s[12];
    resv_name(node, slot, name, sizeof name);
    snprintf(slot_s, sizeof slot_s, "%d", slot);
    json_t *res =
        json_pack("{s:s, s:s, s:s}", "nvidia.com/gpu", "1", "cpu", "10m", "memory", "32Mi");
    json_t *body = json_pack(
        "{s:s, s:s, s:{s:s, s:s, s:{s:s, s:s}, s:{s:s}}, s:{s:s, s:s, s:i, s:b, s:[{s:s}], "
        "s:[{s:s, s:s, s:[s], s:[{s:s, s:{s:{s:s}}}, {s:s, s:{s:{s:s}}}], s:{s:O, s:O}, "
        "s:{s:b, s:b, s:b, s:{s:[s]}, s:{s:s}}}]}}",
        "apiVersion", "v1", "kind", "Pod", "metadata", "name", name, "namespace",
        c->cfg->reservation_namespace, "labels", FAIR_LABEL_RESERVATION, "true",
        "app.kubernetes.io/managed-by", "fairshare", "annotations", FAIR_ANN_GPU_SLOT, slot_s,
        "spec", "nodeName", node, "restartPolicy", "Always", "terminationGracePeriodSeconds", 5,
        "automountServiceAccountToken", 1, "tolerations", "operator", "Exists", "containers",
        "name", "reserve", "image", c->cfg->reservation_image, "command",
        "/usr/local/bin/fairshare-reserve", "env", "name", "POD_NAME", "valueFrom", "fieldRef",
        "fieldPath", "metadata.name", "name", "POD_NAMESPACE", "valueFrom", "fieldRef", "fieldPath",
        "metadata.namespace", "resources", "requests", res, "limits", res, "securityContext",
        "runAsNonRoot", 1, "allowPrivilegeEscalation", 0, "readOnlyRootFilesystem", 1,
        "capabilities", "drop", "ALL", "seccompProfile", "type", "RuntimeDefault");
    json_decref(res);
    if (body && c->cfg->reservation_sa && *c->cfg->reservation_sa)
        json_object_set_new(json_object_get(body, "spec"), "serviceAccountName",
                            json_string(c->cfg->reservation_sa));
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct req *r = text ? fair_ctl_req_new(c, REQ_RESV_CREATE) : NULL;
    struct fair_error err = {0};
    if (r && (!(r->ns = dup0(c->cfg->reservation_namespace)) || !(r->name = dup0(name)) ||
              !(r->node = dup0(node)) ||
              fair_kclient_create(c->kc, &fair_kres_pods, r->ns, text, on_resv_done, r, &err))) {
        FAIR_WARN(COMP, "msg=\"reservation pod not created\" node=%s slot=%d err=\"%s\"", node,
                  slot, err.msg);
        fair_ctl_req_free(r);
    }
    free(text);
}

static void resv_delete(struct fair_ctl *c, const struct fair_kpod *k)
{
    struct fair_error err = {0};
    struct req *r = fair_ctl_req_new(c, REQ_RESV_DELETE);
    if (r && (!(r->ns = dup0(k->meta.namespace_)) || !(r->name = dup0(k->meta.name)) ||
              !(r->node = dup0(k->node_name)) ||
              fair_kclient_delete(c->kc, &fair_kres_pods, r->ns, r->name, on_resv_done, r, &err))) {
        FAIR_WARN(COMP, "msg=\"reservation pod not deleted\" pod=%s/%s err=\"%s\"",
                  k->meta.namespace_, k->meta.name, err.msg);
        fair_ctl_req_free(r);
    }
}

/* The live reservation of slot on the node named node, or NULL. */
static const struct fair_ctl_reservation *resv_find(const struct fair_ctl_snapshot *s,
                                                    const char *node, int slot)
{
    for (size_t i = 0; i < s->nreservations; i++) {
        const struct fair_ctl_reservation *rv = &s->reservations[i];
        if (rv->slot == slot && rv->node >= 0 && !rv->finished && !rv->pod->meta.deletion_ms &&
            !strcmp(s->snap.nodes[rv->node].name, node))
            return rv;
    }
    return NULL;
}

/* One waiting bind: sent once its reservation reports a device; the
 * reservation is asked for while there is none; given up (the pod is
 * planned again) after inFlightTimeout. */
static void resv_wait_step(struct fair_ctl *c, const struct fair_ctl_snapshot *s, struct req *r)
{
    int64_t now = mono(c);
    const struct fair_ctl_reservation *rv = resv_find(s, r->node, r->slot1 - 1);
    if (rv && rv->pod->reserved_device) {
        char *dev = fair_strdup(rv->pod->reserved_device);
        if (!dev)
            return;
        fair_free(r->devices);
        r->devices = dev;
        /* Out of the wait list, into the bind queue. */
        struct req **pp = &c->resv_wait;
        while (*pp && *pp != r)
            pp = &(*pp)->qnext;
        if (*pp) {
            *pp = r->qnext;
            c->nresv_wait--;
        }
        r->qnext = NULL;
        r->kind = REQ_QUEUED_BIND;
        bindq_push(c, r);
        return;
    }
    if (now - r->wait_since_ms > c->cfg->op_timeout_ms) {
        FAIR_WARN(COMP,
                  "msg=\"no device from the reservation pod in time; the fraction is planned "
                  "again\" pod=%s/%s node=%s slot=%d",
                  r->ns, r->name, r->node, r->slot1 - 1);
        fair_ctl_podmem_end(&c->pods, r->uid);
        fair_ctl_req_free(r);
        fair_ctl_mark_dirty(c);
        return;
    }
    if (!rv && (r->resv_asked_ms == 0 || now - r->resv_asked_ms >= RESV_RECREATE_MS)) {
        r->resv_asked_ms = now;
        resv_create(c, r->node, r->slot1 - 1);
    }
}

/* Each cycle: waiting binds move on; reservations no fraction holds (the
 * last one ended), finished ones and ones without a valid slot are
 * deleted, unless a waiting bind wants them. */
void fair_ctl_resv_cycle(struct fair_ctl *c, const struct fair_ctl_snapshot *s)
{
    struct req *next;
    for (struct req *r = c->resv_wait; r; r = next) {
        next = r->qnext;
        resv_wait_step(c, s, r);
    }
    for (size_t i = 0; i < s->nreservations; i++) {
        const struct fair_ctl_reservation *rv = &s->reservations[i];
        if (rv->pod->meta.deletion_ms || !(rv->idle || rv->finished || rv->slot < 0))
            continue;
        bool wanted = false;
        for (struct req *r = c->resv_wait; r && !wanted && rv->node >= 0 && !rv->finished;
             r = r->qnext)
            wanted = r->slot1 - 1 == rv->slot && !strcmp(r->node, s->snap.nodes[rv->node].name);
        if (!wanted)
            resv_delete(c, rv->pod);
    }
}

/* On a node labelled fairshare.dev/gpu-isolation: hami-core, a fraction's
 * limits as HAMi-core reads them: CUDA_DEVICE_MEMORY_LIMIT in MiB with the
 * unit "m" (the pod's fairshare.dev/gpu-memory, else its fraction of the
 * node's nvidia.com/gpu.memory; not written when the node has no such
 * label), and CUDA_DEVICE_SM_LIMIT as a percentage, rounded up. */
static void hami_limits(const struct fair_knode *kn, const struct fair_kpod *kp, int64_t gpu,
                        struct req *r)
{
    bool hami = false;
    for (size_t i = 0; kn && i < kn->nlabels; i++)
        if (kn->labels[i].key && !strcmp(kn->labels[i].key, FAIR_LABEL_GPU_ISOLATION) &&
            kn->labels[i].value && !strcmp(kn->labels[i].value, "hami-core"))
            hami = true;
    if (!hami)
        return;
    int64_t node_mib = fair_ctl_node_gpu_mib(kn->labels, kn->nlabels);
    int64_t mib = kp && kp->gpu_memory_bytes > 0 ? (kp->gpu_memory_bytes + (1LL << 20) - 1) >> 20
                                                 : node_mib * gpu / FAIR_GPU_DEVICE_MILLI;
    if (node_mib > 0 && mib > 0)
        snprintf(r->mem_limit_s, sizeof r->mem_limit_s, "%lldm", (long long)mib);
    int64_t pct = (gpu * 100 + FAIR_GPU_DEVICE_MILLI - 1) / FAIR_GPU_DEVICE_MILLI;
    pct = pct < 1 ? 1 : pct > 100 ? 100 : pct;
    snprintf(r->sm_limit_s, sizeof r->sm_limit_s, "%lld", (long long)pct);
}

/* Commits one BIND of the plan: the pod counts as bound on its node from
 * now on (podmem overlay), and the requests go out as slots free up.
 * preemptible: what the pod is charged as; -1: as the snapshot says. */
void fair_ctl_bind(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                   const struct fair_action *a, int64_t *queue_alloc, int preemptible)
{
    const struct fair_pod *p = &s->snap.pods[a->pod];
    const bool pre = preemptible < 0 ? p->preemptible : preemptible != 0;
    const struct fair_node *node = &s->snap.nodes[a->node];
    char devices[200] = "";
    int64_t gpu = p->request.v[FAIR_RES_GPU];
    /* fairshare.dev/gpu-memory: placed as its fraction of the smallest GPU
     * (the most it can be), charged from now on as its fraction of this
     * node's GPU (nvidia.com/gpu.memory), when the node has the label. */
    const struct fair_kpod *kpm = s->kpods[a->pod];
    if (kpm && kpm->gpu_memory_bytes > 0 && gpu > 0 && gpu < FAIR_GPU_DEVICE_MILLI) {
        int64_t g = fair_ctl_memory_milli(kpm->gpu_memory_bytes,
                                          fair_ctl_node_gpu_mib(node->labels, node->nlabels),
                                          c->cfg->min_fraction_milli);
        if (g > 0 && g < gpu)
            gpu = g;
    }
    if (gpu > 0)
        fair_ctl_format_devices(a->gpu_devices, devices, sizeof devices);
    if (fair_ctl_podmem_begin(&c->pods, p->uid, FAIR_CTL_OP_BINDING, node->name, a->gpu_devices,
                              mono(c)))
        return; /* already in flight */
    struct req *r = fair_ctl_req_new(c, REQ_QUEUED_BIND);
    if (!r)
        goto fail;
    const struct fair_queue *q = p->queue >= 0 ? &s->snap.queues[p->queue] : NULL;
    const struct fair_kproject *kproj = q && q->project >= 0 ? s->kprojects[q->project] : NULL;
    int64_t inq = 0;
    if (q) {
        int64_t room = q->q.guaranteed.v[FAIR_RES_GPU] - queue_alloc[p->queue];
        inq = room <= 0 ? 0 : room < gpu ? room : gpu;
        queue_alloc[p->queue] += gpu;
    }
    r->uid = dup0(p->uid);
    r->ns = dup0(p->namespace_);
    r->name = dup0(p->name);
    r->node = dup0(node->name);
    r->devices = dup0(devices);
    r->queue = dup0(q ? q->q.name : "");
    r->project = dup0(q ? q->project_name : "");
    r->team = dup0(kproj && kproj->team ? kproj->team : r->project);
    r->cost_center = dup0(kproj ? kproj->cost_center : "");
    r->gpu_model = dup0(node->gpu_model);
    r->gpu_milli = gpu;
    r->inquota_milli = inq;
    r->non_preemptible = !pre;
    r->devmask = a->gpu_devices;
    /* A fraction (part of a GPU) that reached us without the webhook's
     * mark, while the webhook is deployed: told once, with the bind. */
    r->gpu_env_missing = strcmp(c->cfg->webhook_address, "0") != 0 && gpu % 1000 != 0 &&
                         !s->kpods[a->pod]->gpu_env_webhook;
    r->gang_size = p->gang_size;
    /* The gang as the snapshot resolved it (a PodGroup, or the annotation),
     * fixed in the charge with its size. */
    const char *gname = fair_ctl_snapshot_gang_name(s, (size_t)a->pod);
    r->gang = gname ? dup0(gname) : NULL;
    const char *creator = fair_ctl_creator_of(c, p);
    r->creator = creator ? dup0(creator) : NULL;
    r->lineage = dup0(lineage_of(s->kpods[a->pod]));
    if (!r->uid || !r->ns || !r->name || !r->node || !r->devices || !r->queue || !r->project ||
        !r->team || !r->cost_center || !r->gpu_model || (gname && !r->gang) ||
        (creator && !r->creator) || !r->lineage)
        goto fail;
    /* What the pod is charged as is fixed now: its labels and annotations
     * may change after the bind; this does not. */
    if (fair_ctl_podmem_set_charge(&c->pods, p->uid, r->queue, r->project, pre, gpu, r->gang,
                                   r->gang_size, a->gpu_devices))
        goto fail;
    fair_ctl_podmem_fix_notice(&c->pods, p->uid, s->kpods[a->pod]->preemption_notice_ms);
    /* Queued, not in flight yet: it must not expire while it waits. */
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, p->uid);
    if (e)
        e->op_start_ms = INT64_MAX / 2;
    if (gpu > 0 && gpu < FAIR_GPU_DEVICE_MILLI)
        hami_limits(s->knodes[a->node], s->kpods[a->pod], gpu, r);
    if (c->cfg->reservations && gpu > 0 && gpu < FAIR_GPU_DEVICE_MILLI && a->gpu_devices) {
        /* A fraction: bound once its GPU's reservation pod tells its device. */
        r->slot1 = __builtin_ctzll(a->gpu_devices) + 1;
        snprintf(r->slot_s, sizeof r->slot_s, "%d", r->slot1 - 1);
        r->kind = REQ_RESV_WAIT;
        r->wait_since_ms = mono(c);
        r->qnext = c->resv_wait;
        c->resv_wait = r;
        c->nresv_wait++;
        resv_wait_step(c, s, r);
        return;
    }
    bindq_push(c, r);
    return;
fail:
    fair_ctl_req_free(r);
    fair_ctl_podmem_end(&c->pods, p->uid);
}

/* Static claims (a WaitForFirstConsumer class without provisioner): as
 * the volume binder does, the smallest matching volume on the node is
 * prebound to each (its spec.claimRef, with the resourceVersion read, so a
 * volume someone else took meanwhile is not taken twice); the PV
 * controller then binds the claim, and the pod waits until it has, its
 * room held. Returns the volumes prebound, -1 when a claim found none
 * left (then the pod stays pending). */
static int prebind_static(struct fair_ctl *c, struct fair_ctl_snapshot *s,
                          const struct fair_action *a, const char **first)
{
    const struct fair_kpod *k = s->kpods[a->pod];
    const struct fair_node *node = &s->snap.nodes[a->node];
    struct fair_ctl_prebind pb[16];
    int n = fair_ctl_volumes_prebind(&s->vol, k, node, pb, 16);
    if (n < 0) {
        /* No volume left on the node this cycle (another pod took it):
         * the pod stays pending, its other claims untouched. */
        FAIR_INFO(COMP, "msg=\"no static volume left on the node\" node=%s pod=%s/%s", node->name,
                  k->meta.namespace_, k->meta.name);
        return -1;
    }
    int done = 0;
    for (int i = 0; i < n; i++) {
        const struct fair_kpvc *pc = pb[i].claim;
        const struct fair_kpv *pv = pb[i].pv;
        json_t *doc = json_pack("{s:{s:s?,s:{s:s}},s:{s:{s:s,s:s,s:s?,s:s?,s:s?}}}", "metadata",
                                "resourceVersion", pv->meta.resource_version, "annotations",
                                "pv.kubernetes.io/bound-by-controller", "yes", "spec", "claimRef",
                                "apiVersion", "v1", "kind", "PersistentVolumeClaim", "namespace",
                                pc->meta.namespace_, "name", pc->meta.name, "uid", pc->meta.uid);
        char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        json_decref(doc);
        struct fair_error err = {0};
        struct req *r = body ? fair_ctl_req_new(c, REQ_OBJ_PATCH) : NULL;
        if (!r || !(r->name = dup0(pv->meta.name)) || !(r->uid = dup0(k->meta.uid)) ||
            fair_kclient_merge_patch(c->kc, &fair_kres_pvs, NULL, pv->meta.name, NULL, body,
                                     fair_ctl_on_simple_done, r, &err)) {
            FAIR_WARN(COMP, "msg=\"volume not prebound\" pv=%s pvc=%s/%s err=\"%s\"", pv->meta.name,
                      pc->meta.namespace_, pc->meta.name, err.msg);
            fair_ctl_req_free(r);
        } else {
            FAIR_INFO(COMP, "msg=\"volume prebound\" pv=%s pvc=%s/%s node=%s pod=%s/%s",
                      pv->meta.name, pc->meta.namespace_, pc->meta.name, node->name,
                      k->meta.namespace_, k->meta.name);
            if (!done++)
                *first = pc->meta.name;
        }
        free(body);
    }
    return done;
}

/* A pod whose claims wait for their node (ctl/volumes.h): as the volume
 * binder does, the chosen node is written on them (selected-node), static
 * volumes there are prebound to the others, and the pod is not bound yet.
 * Their provisioner creates the volumes there (or the PV controller binds
 * them), while the pod's room is held; once the claims are bound, the pod
 * is bound (fair_ctl_bind_provisioned()). Claims on their way to the node already
 * (written before a restart, or before a hold timed out) hold the room
 * again. */
void fair_ctl_select_node(struct fair_ctl *c, struct fair_ctl_snapshot *s,
                          const struct fair_action *a)
{
    const char *first = NULL;
    int pre = prebind_static(c, s, a, &first);
    if (pre < 0)
        return;
    const struct fair_kpod *k = s->kpods[a->pod];
    const char *node = s->snap.nodes[a->node].name;
    const struct fair_kpvc *claims[16];
    size_t n = fair_ctl_volumes_to_select(&s->vol, k, claims, 16);
    json_t *doc =
        json_pack("{s:{s:{s:s}}}", "metadata", "annotations", FAIR_ANN_SELECTED_NODE, node);
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_decref(doc);
    size_t held = (size_t)pre;
    for (size_t i = 0; body && i < n; i++) {
        struct fair_error err = {0};
        struct req *r = fair_ctl_req_new(c, REQ_OBJ_PATCH);
        if (!r || !(r->ns = dup0(claims[i]->meta.namespace_)) ||
            !(r->name = dup0(claims[i]->meta.name)) || !(r->uid = dup0(k->meta.uid)) ||
            fair_kclient_merge_patch(c->kc, &fair_kres_pvcs, claims[i]->meta.namespace_,
                                     claims[i]->meta.name, NULL, body, fair_ctl_on_simple_done, r,
                                     &err)) {
            FAIR_WARN(COMP, "msg=\"selected-node not written\" pvc=%s/%s err=\"%s\"",
                      claims[i]->meta.namespace_, claims[i]->meta.name, err.msg);
            fair_ctl_req_free(r);
            continue;
        }
        FAIR_INFO(COMP, "msg=\"claim waits for its node\" pvc=%s/%s node=%s pod=%s/%s",
                  claims[i]->meta.namespace_, claims[i]->meta.name, node, k->meta.namespace_,
                  k->meta.name);
        if (!held++)
            first = claims[i]->meta.name;
    }
    free(body);
    if (!held &&
        (n = fair_ctl_volumes_selected(&s->vol, k, &s->snap.nodes[a->node], claims, 16)) > 0) {
        held = n;
        first = claims[0]->meta.name;
        FAIR_INFO(COMP,
                  "msg=\"claim on its way to the node already: room held\" pvc=%s/%s node=%s "
                  "pod=%s/%s",
                  claims[0]->meta.namespace_, first, node, k->meta.namespace_, k->meta.name);
    }
    /* As kube-scheduler assumes the pod on the node while its volumes are
     * made or bound, its room there is held (provisioning_over() ends it),
     * and its owner is told so. */
    if (held && !fair_ctl_podmem_begin(&c->pods, s->snap.pods[a->pod].uid, FAIR_CTL_OP_PROVISIONING,
                                       node, a->gpu_devices, mono(c))) {
        char msg[512];
        snprintf(msg, sizeof msg,
                 "waiting for the volume of claim \"%s\"%s on node %s to be made or bound; the "
                 "pod's room there is held meanwhile (up to volumeBindTimeout)",
                 first, held > 1 ? " and others" : "", node);
        fair_ctl_tell_pending(c, k, FAIR_CTL_WHY_CTL + FAIR_CTL_REASON_VOLUME, msg);
    }
}

/* The pods whose room was held while their claims' volumes were made, and
 * whose claims are bound now (provisioning_over()): bound to the held node
 * and devices, unless their volumes (resolved as for any pending pod,
 * ctl/volumes.h) keep them from it; then the pod waits, pending, for the
 * next cycle. Returns the binds issued. */
size_t fair_ctl_bind_provisioned(struct fair_ctl *c, struct fair_ctl_snapshot *s,
                                 int64_t *queue_alloc)
{
    size_t binds = 0;
    for (size_t i = 0; i < s->snap.npods; i++) {
        const struct fair_pod *p = &s->snap.pods[i];
        const struct fair_kpod *k = s->kpods[i];
        struct fair_ctl_podmem_entry *e = k ? fair_ctl_podmem_get(&c->pods, p->uid) : NULL;
        if (!e || e->op != FAIR_CTL_OP_PROVISIONING || !e->provision_ready ||
            p->state != FAIR_POD_BOUND || p->node < 0 || (size_t)p->node >= s->snap.nnodes)
            continue;
        const struct fair_node *n = &s->snap.nodes[p->node];
        struct fair_ctl_volume_verdict vol;
        if (fair_ctl_volumes_pod(&s->vol, k, &vol))
            continue; /* out of memory: the hold stays, tried next cycle */
        struct fair_action a = {.kind = FAIR_ACTION_BIND,
                                .pod = (int32_t)i,
                                .node = p->node,
                                .gpu_devices = e->op_devices};
        fair_ctl_podmem_end(&c->pods, p->uid);
        if (vol.wait || (vol.affinity && vol.affinity->required &&
                         !fair_node_affinity_match(vol.affinity, n))) {
            FAIR_INFO(COMP,
                      "msg=\"its volumes keep the pod from the held node\" pod=%s/%s node=%s "
                      "why=\"%s\"",
                      p->namespace_, p->name, n->name, vol.wait ? vol.message : "node affinity");
            continue;
        }
        /* Its GPUs are in queue_alloc already (held, it counted as bound),
         * and it is bound as what it is, not as a hold. */
        if (p->queue >= 0 && (size_t)p->queue < s->snap.nqueues)
            queue_alloc[p->queue] -= p->request.v[FAIR_RES_GPU];
        fair_ctl_bind(c, s, &a, queue_alloc, k->preemptible);
        binds++;
    }
    return binds;
}

static void bindq_push(struct fair_ctl *c, struct req *r)
{
    if (c->bindq_tail)
        c->bindq_tail->qnext = r;
    else
        c->bindq_head = r;
    c->bindq_tail = r;
    c->nbindq++;
}
