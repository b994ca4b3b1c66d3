/* Evictions (see ctl/loop.h): the engine's victims through the Eviction
 * API, their DisruptionTarget conditions and preemption notices, and the
 * requeue of bare pods once their eviction is accepted. */
#include <event2/event.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/duration.h"
#include "base/log.h"
#include "cache/store.h"
#include "ctl/loop.h"
#include "ctl/reasons.h"
#include "engine/engine.h"

/* ---- evictions ---- */

static void on_evict_done(const struct fair_kresponse *resp, void *ctx);

/* Whether the victim uid has had its evictions refused by a
 * PodDisruptionBudget for eviction.pdbMaxWait, in one run of refusals (none
 * further apart than that): then it goes by DELETE, which no budget stops,
 * as kube-scheduler's preemption treats budgets as best effort. The engine
 * chose it again after pdbBackoff, so no other victim would do. */
static bool pdb_overdue(struct fair_ctl *c, const char *uid)
{
    const struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, uid);
    int64_t now = mono(c), wait = c->cfg->pdb_max_wait_ms;
    return e && wait > 0 && e->pdb_since_ms && now - e->pdb_last_ms <= wait &&
           now - e->pdb_since_ms >= wait;
}

/* POST pods/NAME/eviction. A pod that was given a preemption notice asks
 * for its grace period less the notice already given (r->grace_s), so that
 * the GPUs are free after max(notice, grace), not after both. */
static void send_eviction(struct fair_ctl *c, struct req *r)
{
    struct fair_error err = {0};
    struct fair_buf path;
    char *body = NULL;
    json_t *doc = NULL;
    int rc;
    fair_buf_init(&path, 4096);
    r->kind = REQ_EVICT;
    r->pdb_override = pdb_overdue(c, r->uid);
    if (r->pdb_override) {
        /* A DELETE with the pod's uid as precondition, so that a pod made
         * again under the same name is not the one that goes. */
        doc = r->grace_s < 0 ? json_pack("{s:s, s:s, s:{s:s}}", "apiVersion", "v1", "kind",
                                         "DeleteOptions", "preconditions", "uid", r->uid)
                             : json_pack("{s:s, s:s, s:{s:s}, s:I}", "apiVersion", "v1", "kind",
                                         "DeleteOptions", "preconditions", "uid", r->uid,
                                         "gracePeriodSeconds", (json_int_t)r->grace_s);
        body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        rc = !body ? fair_error_set(&err, FAIR_ENOMEM, "out of memory")
                   : fair_kpath(&path, &fair_kres_pods, r->ns, r->name, NULL, &err);
        if (!rc)
            rc = fair_kclient_request(c->kc, "DELETE", fair_buf_str(&path), NULL, body,
                                      strlen(body), 0, on_evict_done, r, NULL, &err);
    } else if (r->grace_s < 0) {
        rc = fair_kclient_evict(c->kc, r->ns, r->name, on_evict_done, r, &err);
    } else {
        doc = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:I}}", "apiVersion", "policy/v1", "kind",
                        "Eviction", "metadata", "name", r->name, "namespace", r->ns,
                        "deleteOptions", "gracePeriodSeconds", (json_int_t)r->grace_s);
        body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
        rc = !body ? fair_error_set(&err, FAIR_ENOMEM, "out of memory")
                   : fair_kpath(&path, &fair_kres_pods, r->ns, r->name, "eviction", &err);
        if (!rc)
            rc = fair_kclient_request(c->kc, "POST", fair_buf_str(&path), NULL, body, strlen(body),
                                      FAIR_KREQ_NO_RETRY_429, on_evict_done, r, NULL, &err);
    }
    if (rc) {
        FAIR_WARN(COMP, "msg=\"eviction not sent\" pod=%s/%s err=\"%s\"", r->ns, r->name, err.msg);
        fair_ctl_podmem_end(&c->pods, r->uid);
        fair_ctl_req_free(r);
    }
    free(body);
    json_decref(doc);
    fair_buf_release(&path);
}

/* Sets the DisruptionTarget condition back to False: after a refused
 * eviction, or a notice cancelled because the pod it made room for is
 * gone. */
static void send_unmark(struct fair_ctl *c, const char *uid, const char *ns, const char *name,
                        bool cancelled)
{
    struct fair_kpod tmp = {
        .meta = {.uid = (char *)uid, .namespace_ = (char *)ns, .name = (char *)name}};
    if (cancelled)
        fair_ctl_patch_condition(
            c, &tmp, REQ_UNMARK, "DisruptionTarget", "False", "PreemptionCanceled",
            "the pod these GPUs were reclaimed for is gone or placed elsewhere; "
            "fairshare no longer evicts this pod");
    else
        fair_ctl_patch_condition(
            c, &tmp, REQ_UNMARK, "DisruptionTarget", "False", "EvictionBlocked",
            "a PodDisruptionBudget refused the eviction; fairshare chose another pod");
}

/* ---- requeue of bare pods ---- */

/* Whether key is written by the controller (not carried to a requeued
 * pod; the requeue annotations are written anew). */
static bool controller_annotation(const char *key)
{
    return !strcmp(key, FAIR_ANN_GPU_DEVICES) || !strcmp(key, FAIR_ANN_REQUEUE_COUNT) ||
           !strcmp(key, FAIR_ANN_REQUEUED_FROM) || !strcmp(key, FAIR_ANN_GPU_SLOT) ||
           !strcmp(key, FAIR_ANN_GPU_MEMORY_LIMIT) || !strcmp(key, FAIR_ANN_GPU_SM_LIMIT);
}

/* The name of the requeued pod: the first pod's name (the old name less a
 * "-rq<k>" that an earlier requeue added) and "-rq<n>", within the 253
 * characters of a DNS subdomain and ending in an alphanumeric. */
static void requeue_name(const char *old, int32_t count, int32_t n, char *out, size_t outlen)
{
    char suffix[24];
    snprintf(suffix, sizeof suffix, "-rq%d", (int)n);
    size_t len = strlen(old);
    if (count > 0) {
        /* Strip the suffix a requeue added: "-rq" and digits. */
        size_t k = len;
        while (k > 0 && old[k - 1] >= '0' && old[k - 1] <= '9')
            k--;
        if (k < len && k >= 3 && !strncmp(old + k - 3, "-rq", 3) && k - 3 > 0)
            len = k - 3;
    }
    size_t room = (outlen < 254 ? outlen - 1 : 253) - strlen(suffix); /* outlen >= 32 */
    if (len > room)
        len = room;
    while (len > 0 && (old[len - 1] == '-' || old[len - 1] == '.'))
        len--;
    snprintf(out, outlen, "%.*s%s", (int)len, old, suffix);
}

/* The pod to create when pod (its JSON as the API server returned it) is
 * evicted: same spec without the node, same labels and annotations less
 * the controller's, a name from requeue_name, and the requeue annotations.
 * Returns 0 and new strings, or FAIR_ENOMEM / FAIR_EINVAL. */
static int build_requeue(const json_t *pod, char **name_out, char **body_out)
{
    *name_out = *body_out = NULL;
    const json_t *md = json_object_get(pod, "metadata");
    const json_t *spec = json_object_get(pod, "spec");
    const char *old = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!json_is_object(spec) || !old || !ns || !*old)
        return FAIR_EINVAL;
    const json_t *anns = json_object_get(md, "annotations");
    int32_t count = 0;
    const char *cs = json_string_value(json_object_get(anns, FAIR_ANN_REQUEUE_COUNT));
    if (cs) {
        char *end;
        long long v = strtoll(cs, &end, 10);
        if (*cs && !*end && v > 0 && v < FAIR_REQUEUE_COUNT_MAX)
            count = (int32_t)v;
    }
    char name[254], num[24];
    requeue_name(old, count, count + 1, name, sizeof name);
    snprintf(num, sizeof num, "%d", (int)(count + 1));
    /* Every new value is stolen by its container at once (set_new steals
     * even when it fails), so one decref of out frees everything. */
    int bad = 0;
    json_t *out = json_object();
    json_t *nmd = json_object();
    json_t *nspec = json_deep_copy(spec);
    json_t *nanns = json_object();
    bad |= !out;
    if (out) {
        bad |= json_object_set_new(out, "metadata", nmd);
        bad |= json_object_set_new(out, "spec", nspec);
    } else {
        json_decref(nmd);
        json_decref(nspec);
    }
    if (bad) {
        json_decref(nanns);
        goto out;
    }
    if (json_object_set_new(nmd, "annotations", nanns)) {
        bad = 1; /* nanns is freed */
        goto out;
    }
    bad |= json_object_set_new(out, "apiVersion", json_string("v1"));
    bad |= json_object_set_new(out, "kind", json_string("Pod"));
    bad |= json_object_set_new(nmd, "name", json_string(name));
    bad |= json_object_set_new(nmd, "namespace", json_string(ns));
    const json_t *labels = json_object_get(md, "labels");
    if (json_is_object(labels))
        bad |= json_object_set_new(nmd, "labels", json_deep_copy(labels));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)anns, k, v)
    {
        if (!controller_annotation(k))
            bad |= json_object_set(nanns, k, v);
    }
    bad |= json_object_set_new(nanns, FAIR_ANN_REQUEUE_COUNT, json_string(num));
    bad |= json_object_set_new(nanns, FAIR_ANN_REQUEUED_FROM, json_string(old));
    if (bad)
        goto out;
    json_object_del(nspec, "nodeName");
    json_object_del(nspec, "ephemeralContainers"); /* refused on create */
    /* The Priority admission plugin computes these from the class and
     * refuses a pod that states other values (a class changed since). */
    if (json_object_get(nspec, "priorityClassName")) {
        json_object_del(nspec, "priority");
        json_object_del(nspec, "preemptionPolicy");
    }
    *body_out = json_dumps(out, JSON_COMPACT);
    *name_out = fair_strdup(name);
    bad = !*body_out || !*name_out;
    if (bad) {
        free(*body_out);
        fair_free(*name_out);
        *body_out = NULL;
        *name_out = NULL;
    }
out:
    json_decref(out);
    return bad ? FAIR_ENOMEM : 0;
}

/* Keeps the pod to create after r's eviction, built from the victim's
 * JSON (the answer to its DisruptionTarget patch); without it the pod is
 * not requeued and the Preempted Event says why. */
static void take_requeue(struct req *r, const struct fair_kresponse *resp)
{
    char *name = NULL, *body = NULL;
    bool built = !resp->rc && resp->json && !build_requeue(resp->json, &name, &body);
    bool small = built && strlen(body) <= REQUEUE_MAX_BYTES;
    /* json_dumps' memory is the C library's: the copy kept is ours. */
    if (small && (r->rq_body = fair_strdup(body))) {
        r->rq_name = name;
        free(body);
        return;
    }
    free(body);
    fair_free(name);
    const char *why = built && !small ? "not requeued: the pod is larger than 2 MiB"
                                      : "not requeued: its spec could not be read";
    FAIR_WARN(COMP, "msg=\"pod will not be requeued\" pod=%s/%s why=\"%s\" status=%ld", r->ns,
              r->name, why, resp->status);
    fair_free(r->rq_note);
    r->rq_note = dup0(why);
}

/* Whether a failed create may succeed if tried again: no answer (a
 * timeout, a connection lost; a create that did land is then 409 on the
 * next try, which counts as done), or an API server that is overloaded or
 * restarting. */
static bool requeue_transient(const struct fair_kresponse *resp)
{
    long s = resp->status;
    return s == 0 || s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

static void create_requeue(struct fair_ctl *c, struct req *r);

static void on_requeue_done(const struct fair_kresponse *resp, void *ctx)
{
    struct req *r = ctx;
    struct fair_ctl *c = r->c;
    if (!resp->rc || resp->rc == FAIR_ECONFLICT) {
        /* 409 AlreadyExists: created before (by this process, or by one
         * that was restarted): done. */
        c->metrics.requeues++;
        FAIR_INFO(COMP, "msg=\"requeued\" pod=%s/%s as=%s existed=%s tries=%d", r->ns, r->name,
                  r->rq_name, resp->rc ? "yes" : "no", r->tries);
        fair_ctl_req_free(r);
        return;
    }
    fair_ctl_note_api_error(c, resp);
    if (requeue_transient(resp) && r->tries < REQUEUE_TRIES && !c->stopping) {
        int64_t wait = REQUEUE_RETRY_MS;
        for (int i = 1; i < r->tries && wait < REQUEUE_RETRY_MAX_MS; i++)
            wait *= 2;
        if (wait > REQUEUE_RETRY_MAX_MS)
            wait = REQUEUE_RETRY_MAX_MS;
        c->metrics.requeue_retries++;
        FAIR_WARN(COMP,
                  "msg=\"requeue failed; trying again\" pod=%s/%s as=%s status=%ld try=%d "
                  "in_ms=%lld err=\"%s\"",
                  r->ns, r->name, r->rq_name, resp->status, r->tries, (long long)wait,
                  resp->err.msg);
        r->due_ms = mono(c) + wait;
        r->qnext = c->requeues;
        c->requeues = r;
        fair_ctl_arm_cycle(c, wait);
        return;
    }
    FAIR_WARN(COMP, "msg=\"requeue failed\" pod=%s/%s as=%s status=%ld tries=%d err=\"%s\"", r->ns,
              r->name, r->rq_name, resp->status, r->tries, resp->err.msg);
    char msg[760];
    snprintf(msg, sizeof msg,
             "fairshare could not create %s to requeue this evicted pod: %s (HTTP %ld, %d %s)",
             r->rq_name, resp->err.msg, resp->status, r->tries, r->tries == 1 ? "try" : "tries");
    fair_ctl_queue_event(c, r->ns, r->name, r->uid, "Warning", "RequeueFailed", msg);
    fair_ctl_req_free(r);
}

/* Sends r's create (again). */
static void create_requeue(struct fair_ctl *c, struct req *r)
{
    struct fair_error err = {0};
    r->tries++;
    if (fair_kclient_create(c->kc, &fair_kres_pods, r->ns, r->rq_body, on_requeue_done, r, &err)) {
        FAIR_WARN(COMP, "msg=\"requeue not sent\" pod=%s/%s err=\"%s\"", r->ns, r->name, err.msg);
        fair_ctl_req_free(r);
    }
}

/* Creates the requeued pod of an eviction that was accepted; the request
 * takes the eviction's body. */
static void send_requeue(struct fair_ctl *c, struct req *ev)
{
    struct req *r = fair_ctl_req_new(c, REQ_REQUEUE);
    if (!r)
        return;
    r->uid = dup0(ev->uid);
    r->ns = dup0(ev->ns);
    r->name = dup0(ev->name);
    r->rq_name = dup0(ev->rq_name);
    r->rq_body = ev->rq_body;
    ev->rq_body = NULL;
    if (!r->uid || !r->ns || !r->name || !r->rq_name) {
        FAIR_WARN(COMP, "msg=\"requeue not sent\" pod=%s/%s err=\"out of memory\"", ev->ns,
                  ev->name);
        fair_ctl_req_free(r);
        return;
    }
    create_requeue(c, r);
}

void fair_ctl_pump_requeues(struct fair_ctl *c)
{
    int64_t now = mono(c), next = -1;
    struct req **pp = &c->requeues;
    while (*pp) {
        struct req *r = *pp;
        if (now >= r->due_ms) {
            *pp = r->qnext;
            r->qnext = NULL;
            create_requeue(c, r);
            continue;
        }
        if (next < 0 || r->due_ms < next)
            next = r->due_ms;
        pp = &r->qnext;
    }
    if (next >= 0)
        fair_ctl_arm_cycle(c, next - now);
}

/* The DisruptionTarget=True patch, sent with the eviction or before it
 * (see fair_ctl_evict); an unmark that a refused eviction asked for while this
 * patch was in flight is sent now, so that it lands after it. Its answer
 * is the pod, from which a bare pod's requeue is built; an eviction that
 * waited for that is sent now. */
static void on_evict_mark_done(const struct fair_kresponse *resp, void *ctx)
{
    struct req *r = ctx;
    struct fair_ctl *c = r->c;
    if (resp->rc && resp->rc != FAIR_ENOTFOUND)
        fair_ctl_note_api_error(c, resp);
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
    if (e) {
        e->mark_inflight = false;
        if (e->unmark_due) {
            e->unmark_due = false;
            send_unmark(c, r->uid, r->ns, r->name, e->unmark_cancel);
        }
    }
    struct req *ev = r->evict_after;
    if (!ev && r->keep_spec) {
        /* A notice: its eviction waits in the notice list. */
        for (ev = c->notices; ev && strcmp(ev->uid, r->uid); ev = ev->qnext)
            ;
        if (ev && !ev->rq_body)
            take_requeue(ev, resp);
    } else if (ev) {
        take_requeue(ev, resp);
        send_eviction(c, ev);
    }
    fair_ctl_req_free(r);
}

static void on_evict_done(const struct fair_kresponse *resp, void *ctx)
{
    struct req *r = ctx;
    struct fair_ctl *c = r->c;
    if (resp->rc == FAIR_ETOOMANY) {
        /* A PodDisruptionBudget refuses: protect this pod for a while so
         * that the next cycle picks another victim. */
        fair_ctl_note_api_error(c, resp);
        c->metrics.evictions_blocked++;
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
        fair_ctl_podmem_end(&c->pods, r->uid);
        if (e) {
            int64_t now = mono(c);
            e->protect_until_ms = now + c->cfg->evict_backoff_ms;
            if (!e->pdb_since_ms || now - e->pdb_last_ms > c->cfg->pdb_max_wait_ms)
                e->pdb_since_ms = now; /* a new run of refusals */
            e->pdb_last_ms = now;
        }
        FAIR_INFO(COMP,
                  "msg=\"eviction refused by a PodDisruptionBudget; choosing another "
                  "victim\" pod=%s/%s",
                  r->ns, r->name);
        if (e && e->mark_inflight) {
            e->unmark_due = true; /* after the True patch lands */
            e->unmark_cancel = false;
        } else {
            send_unmark(c, r->uid, r->ns, r->name, false);
        }
        fair_ctl_mark_dirty(c);
        fair_ctl_req_free(r);
        return;
    }
    if (resp->rc) {
        if (resp->rc != FAIR_ENOTFOUND)
            fair_ctl_note_api_error(c, resp);
        FAIR_WARN(COMP, "msg=\"eviction failed\" pod=%s/%s status=%ld err=\"%s\"", r->ns, r->name,
                  resp->status, resp->err.msg);
        fair_ctl_podmem_end(&c->pods, r->uid);
        fair_ctl_mark_dirty(c);
        fair_ctl_req_free(r);
        return;
    }
    if (r->evict_reason == FAIR_EVICT_PREEMPT)
        c->metrics.preemptions_preempt++;
    else if (r->evict_reason == FAIR_EVICT_FAIR_SHARE)
        c->metrics.preemptions_fair_share++;
    else
        c->metrics.preemptions_reclaim++;
    if (fair_ctl_podmem_count_eviction(&c->pods, r->lineage))
        FAIR_WARN(COMP, "msg=\"eviction not counted (too many workloads tracked)\" pod=%s/%s",
                  r->ns, r->name);
    FAIR_INFO(COMP, "msg=\"evicted\" pod=%s/%s for_queue=%s for_pod=%s reason=%s", r->ns, r->name,
              r->for_queue, r->for_pod,
              fair_evict_reason_str((enum fair_evict_reason)r->evict_reason));
    /* A bare pod is created again now that its eviction was accepted
     * (once: its name is derived, so a second create is 409). */
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
    char after[400] = "";
    if (r->rq_body && !(e && e->requeued)) {
        send_requeue(c, r);
        snprintf(after, sizeof after, "; requeued as %s", r->rq_name);
    } else if (r->rq_note) {
        snprintf(after, sizeof after, "; %s", r->rq_note);
    }
    if (e)
        e->requeued = true;
    if (r->pdb_override) {
        c->metrics.pdb_overrides++;
        char d[32];
        fair_duration_format_ms(c->cfg->pdb_max_wait_ms, d, sizeof d);
        size_t n = strlen(after);
        snprintf(after + n, sizeof after - n,
                 "; deleted, since a PodDisruptionBudget refused its eviction for %s "
                 "(eviction.pdbMaxWait) and no other pod would free the GPUs",
                 d);
        FAIR_WARN(COMP, "msg=\"victim deleted despite a PodDisruptionBudget\" pod=%s/%s wait=%s",
                  r->ns, r->name, d);
    }
    char msg[1000];
    if (r->evict_reason == FAIR_EVICT_PREEMPT)
        snprintf(msg, sizeof msg,
                 "Preempted by fairshare: pod %s of the same queue %s has a higher priority%s",
                 r->for_pod, r->for_queue, after);
    else if (r->evict_reason == FAIR_EVICT_FAIR_SHARE)
        snprintf(msg, sizeof msg,
                 "Preempted by fairshare: this pod's queue was above its fair share and queue %s "
                 "below its own, so it took the GPUs back (for pod %s)%s",
                 r->for_queue, r->for_pod, after);
    else
        snprintf(msg, sizeof msg,
                 "Preempted by fairshare: queue %s reclaimed the GPUs it lent (for pod %s)%s",
                 r->for_queue, r->for_pod, after);
    fair_ctl_queue_event(c, r->ns, r->name, r->uid, "Normal", "Preempted", msg);
    fair_ctl_req_free(r); /* the pod stays EVICTING until it is gone */
}

/* Sends the DisruptionTarget=True patch of one victim (m: its request
 * context, freed here when it cannot be sent), dated since_ms (0: now).
 * Returns 0 when sent. */
static int send_mark(struct fair_ctl *c, struct req *m, const char *message, int64_t since_ms)
{
    struct fair_error err = {0};
    struct fair_buf path;
    char ts[40];
    int rc = -1;
    fair_buf_init(&path, 4096);
    fair_time_format_rfc3339(since_ms > 0 ? since_ms : wall(c), ts, sizeof ts);
    json_t *doc = json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type",
                            "DisruptionTarget", "status", "True", "reason",
                            FAIR_CTL_EVICTION_REASON, "message", message, "lastTransitionTime", ts);
    char *body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, m->uid);
    if (!body || fair_kpath(&path, &fair_kres_pods, m->ns, m->name, "status", &err) ||
        fair_kclient_request(c->kc, "PATCH", fair_buf_str(&path),
                             "application/strategic-merge-patch+json", body, strlen(body), 0,
                             on_evict_mark_done, m, NULL, &err)) {
        fair_ctl_req_free(m);
    } else {
        rc = 0;
        if (e) {
            e->mark_inflight = true;
            e->marked_here = true;
        }
    }
    free(body);
    json_decref(doc);
    fair_buf_release(&path);
    return rc;
}

/* DisruptionTarget=True conditions of ours that this process did not
 * write: a notice given before a restart or a change of leader, whose
 * eviction was never sent (notices live in memory). A bound pod of ours,
 * not being deleted, that this cycle did not choose again keeps running:
 * its condition goes back to False (PreemptionCanceled), with an Event,
 * instead of promising an eviction until the pod ends. One chosen again
 * is EVICTING by now and gets a new notice. */
void fair_ctl_unmark_stale(struct fair_ctl *c, const struct fair_ctl_snapshot *s)
{
    for (size_t i = 0; i < s->snap.npods; i++) {
        const struct fair_kpod *k = s->kpods[i];
        if (!k || !is_ours(c, k) || k->meta.deletion_ms || !k->node_name || !*k->node_name)
            continue;
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, k->meta.uid);
        if (!k->disruption_target) {
            if (e)
                e->stale_unmarked = false;
            continue;
        }
        if (!fair_ctl_told_of_eviction(k) ||
            (e && (e->op != FAIR_CTL_OP_NONE || e->marked_here || e->stale_unmarked)))
            continue;
        if (!e && !(e = fair_ctl_podmem_ensure(&c->pods, k->meta.uid)))
            continue;
        e->stale_unmarked = true;
        FAIR_INFO(COMP, "msg=\"preemption cancelled: a notice from before this process\" pod=%s/%s",
                  k->meta.namespace_, k->meta.name);
        fair_ctl_patch_condition(
            c, k, REQ_UNMARK, "DisruptionTarget", "False", "PreemptionCanceled",
            "the notice was given before fairshare restarted or changed leader, "
            "and the reclaim no longer needs this pod; fairshare does not evict it");
        fair_ctl_send_event(
            c, k, "Normal", "PreemptionCanceled",
            "Preemption cancelled: the notice was given before fairshare restarted or "
            "changed leader, and the reclaim no longer needs this pod; it keeps running");
        c->metrics.notices_cancelled++;
    }
}

/* Evicts one victim. Without a preemption notice, the DisruptionTarget=True
 * condition (reason PreemptionByScheduler, saying which queue and pod it
 * makes room for) and the eviction are sent at once, so that the reclaim
 * waits for one round trip, not two; a bare pod that will be requeued
 * waits for the condition's answer instead (it carries the spec to create
 * again). From Kubernetes 1.26 the eviction itself also sets a
 * DisruptionTarget condition, with the deletion, for a Job's
 * podFailurePolicy; ours adds the reason in words.
 *
 * With a notice (fairshare.dev/preemption-notice as it was at bind, at
 * most reclaim.maxPreemptionNotice), the condition and a PreemptionNotice
 * Event go now and the eviction waits in c->notices until the notice has
 * passed (fair_ctl_pump_notices), asking then for the grace period less the
 * notice. The pod is EVICTING all along, so the engine counts its room for
 * the pod it was chosen for and never chooses it again. */
void fair_ctl_evict(struct fair_ctl *c, const struct fair_ctl_snapshot *s,
                    const struct fair_action *a)
{
    const struct fair_pod *p = &s->snap.pods[a->pod];
    const struct fair_kpod *kp = s->kpods[a->pod];
    struct fair_ctl_podmem_entry *held = fair_ctl_podmem_get(&c->pods, p->uid);
    if (held && held->op == FAIR_CTL_OP_PROVISIONING) {
        /* A room held while a claim's volume is made is reclaimed like a
         * running pod's, but nothing runs: the hold just ends. The pod
         * waits for its volume, then for room on that node. */
        char msg[512];
        snprintf(msg, sizeof msg,
                 "the room held for it on node %s while its volume is made was reclaimed; once "
                 "the volume exists it waits for room there",
                 held->op_node ? held->op_node : "");
        FAIR_INFO(COMP, "msg=\"held room reclaimed\" pod=%s/%s node=%s", p->namespace_, p->name,
                  held->op_node ? held->op_node : "");
        fair_ctl_podmem_end(&c->pods, p->uid);
        /* Same reason as the hold's, new news: say it again. */
        held->last_cond_why = held->last_event_why = -1;
        if (kp)
            fair_ctl_tell_pending(c, kp, FAIR_CTL_WHY_CTL + FAIR_CTL_REASON_VOLUME, msg);
        return;
    }
    if (fair_ctl_podmem_begin(&c->pods, p->uid, FAIR_CTL_OP_EVICTING, NULL, 0, mono(c)))
        return;
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, p->uid);
    struct req *r = fair_ctl_req_new(c, REQ_EVICT);
    struct req *m = fair_ctl_req_new(c, REQ_EVICT_MARK);
    if (!r || !m || !e) {
        fair_ctl_req_free(r);
        fair_ctl_req_free(m);
        fair_ctl_podmem_end(&c->pods, p->uid);
        return;
    }
    const char *fq = a->for_queue >= 0 && (size_t)a->for_queue < s->snap.nqueues
                         ? s->snap.queues[a->for_queue].q.name
                         : "?";
    char forpod[600] = "?";
    const char *for_uid = "";
    if (a->for_pod >= 0 && (size_t)a->for_pod < s->snap.npods) {
        snprintf(forpod, sizeof forpod, "%s/%s", s->snap.pods[a->for_pod].namespace_,
                 s->snap.pods[a->for_pod].name);
        for_uid = s->snap.pods[a->for_pod].uid;
    }
    /* The notice: as fixed at bind (the annotation's later edits change
     * nothing), capped by the config. */
    int64_t notice =
        e->charge.set && e->charge.notice_set ? e->charge.notice_ms : kp->preemption_notice_ms;
    if (notice > c->cfg->max_notice_ms)
        notice = c->cfg->max_notice_ms;
    if (notice < 1000)
        notice = 0; /* the condition and the eviction are one round trip apart anyway */
    /* A notice of ours from before this process (a restart or a change of
     * leader: the snapshot's notice_since_ms, not written here, not set
     * back) has run since its condition's time: only the rest is owed, and
     * the condition keeps its time. */
    int64_t since = 0, left = notice;
    if (notice > 0 && p->notice_since_ms > 0 && !e->marked_here && !e->stale_unmarked &&
        p->notice_since_ms <= wall(c)) {
        since = p->notice_since_ms;
        left = notice - (wall(c) - since);
        if (left < 1000)
            left = 0;
    }
    /* Requeue: only bare pods, unless turned off or opted out. */
    bool requeue = false;
    char note[400] = "";
    if (kp->owner_uid && *kp->owner_uid)
        snprintf(note, sizeof note, "its owner %s/%s recreates it",
                 kp->owner_kind ? kp->owner_kind : "?", kp->owner_name ? kp->owner_name : "?");
    else if (!c->cfg->requeue_bare_pods)
        snprintf(note, sizeof note, "not requeued (reclaim.requeueBarePods is false)");
    else if (kp->requeue_opt_out)
        snprintf(note, sizeof note, "not requeued (opted out with %s: \"false\")",
                 FAIR_ANN_REQUEUE);
    else
        requeue = !e->requeued;
    r->uid = dup0(p->uid);
    r->ns = dup0(p->namespace_);
    r->name = dup0(p->name);
    r->for_queue = dup0(fq);
    r->for_pod = dup0(forpod);
    r->for_uid = dup0(for_uid);
    r->evict_reason = a->reason;
    r->lineage = dup0(lineage_of(kp));
    r->grace_s = -1;
    r->rq_note = *note ? dup0(note) : NULL;
    m->uid = dup0(p->uid);
    m->ns = dup0(p->namespace_);
    m->name = dup0(p->name);
    if (!r->uid || !r->ns || !r->name || !r->for_queue || !r->for_pod || !r->for_uid ||
        !r->lineage || (*note && !r->rq_note) || !m->uid || !m->ns || !m->name) {
        fair_ctl_podmem_end(&c->pods, p->uid);
        fair_ctl_req_free(r);
        fair_ctl_req_free(m);
        return;
    }
    char msg[900];
    int64_t grace = kp->grace_s >= 0 ? kp->grace_s : 30; /* the API server's default */
    if (notice > 0)
        r->grace_s = grace - notice / 1000 > 0 ? grace - notice / 1000 : 0;
    if (left > 0) {
        int64_t now = mono(c);
        char when[40], len[40], given[40] = "";
        fair_time_format_rfc3339(wall(c) + left, when, sizeof when);
        fair_duration_format_ms(notice, len, sizeof len);
        if (since)
            fair_time_format_rfc3339(since, given, sizeof given);
        r->due_ms = now + left;
        r->kind = REQ_NOTICE;
        r->qnext = c->notices;
        c->notices = r;
        e->notice_due_ms = r->due_ms;
        e->notice_ms = notice;
        e->op_start_ms = r->due_ms; /* inFlightTimeout runs from the eviction */
        m->keep_spec = requeue;
        c->metrics.notices++;
        snprintf(msg, sizeof msg,
                 "Fairshare reclaim: queue %s needs these GPUs (for pod %s); this pod will be "
                 "evicted at %s (preemption notice %s%s%s, counted in its grace period)",
                 fq, forpod, when, len, since ? ", given at " : "", given);
        if (send_mark(c, m, msg, since) && requeue)
            r->rq_note = dup0("not requeued: its spec could not be read");
        char in[40];
        fair_duration_format_ms(left, in, sizeof in);
        snprintf(msg, sizeof msg,
                 "Fairshare will evict this pod at %s, in %s: queue %s needs its GPUs for pod %s. "
                 "%s%s%sCheckpoint now; the notice counts as part of its termination grace period.",
                 when, in, fq, forpod, since ? "The notice given at " : "", given,
                 since ? " still runs (fairshare restarted or changed leader since). " : "");
        fair_ctl_send_event(c, kp, "Warning", "PreemptionNotice", msg);
        FAIR_INFO(COMP,
                  "msg=\"preemption notice\" pod=%s/%s notice_ms=%lld left_ms=%lld for_queue=%s "
                  "for_pod=%s",
                  r->ns, r->name, (long long)notice, (long long)left, fq, forpod);
        fair_ctl_arm_cycle(c, left);
        return;
    }
    if (since)
        FAIR_INFO(COMP, "msg=\"preemption notice from before this process served\" pod=%s/%s",
                  r->ns, r->name);
    snprintf(msg, sizeof msg, "Fairshare reclaim: queue %s needs these GPUs (for pod %s)", fq,
             forpod);
    if (requeue) {
        /* The condition's answer carries the spec; the eviction follows. */
        m->evict_after = r;
        if (send_mark(c, m, msg, since) == 0)
            return;
        fair_free(r->rq_note);
        r->rq_note = dup0("not requeued: its spec could not be read");
    } else {
        send_mark(c, m, msg, since); /* could not mark: evict anyway */
    }
    send_eviction(c, r);
}

/* Evictions under notice: sent once the notice has passed; cancelled
 * (DisruptionTarget back to False, an Event) when the pod they make room
 * for is gone, bound elsewhere or being deleted; dropped when the victim
 * itself is gone or no longer ours to evict (leadership lost). Runs at the
 * start of each cycle, and arms a cycle for the next due notice. */
void fair_ctl_pump_notices(struct fair_ctl *c)
{
    int64_t now = mono(c), next = -1;
    struct fair_store *pods = c->inf[INF_PODS] ? fair_informer_store(c->inf[INF_PODS]) : NULL;
    struct req *r = c->notices;
    while (r) {
        struct req *nx = r->qnext;
        struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&c->pods, r->uid);
        if (!e || e->op != FAIR_CTL_OP_EVICTING || !e->notice_due_ms) {
            fair_ctl_req_free(r);
            r = nx;
            continue;
        }
        const struct fair_kpod *owed =
            *r->for_uid && pods ? fair_store_get(pods, r->for_uid) : NULL;
        if (*r->for_uid &&
            (!owed || (owed->node_name && *owed->node_name) || owed->meta.deletion_ms)) {
            FAIR_INFO(COMP,
                      "msg=\"preemption cancelled: the pod it made room for is gone\" "
                      "pod=%s/%s for_pod=%s",
                      r->ns, r->name, r->for_pod);
            fair_ctl_podmem_end(&c->pods, r->uid);
            if (e->mark_inflight) {
                e->unmark_due = true;
                e->unmark_cancel = true;
            } else {
                send_unmark(c, r->uid, r->ns, r->name, true);
            }
            char msg[800];
            snprintf(msg, sizeof msg,
                     "Preemption cancelled: pod %s, for which queue %s reclaimed these GPUs, is "
                     "gone or placed elsewhere; this pod keeps running",
                     r->for_pod, r->for_queue);
            struct fair_kpod tmp = {.meta = {.uid = r->uid, .namespace_ = r->ns, .name = r->name}};
            fair_ctl_send_event(c, &tmp, "Normal", "PreemptionCanceled", msg);
            c->metrics.notices_cancelled++;
            fair_ctl_mark_dirty(c);
            fair_ctl_req_free(r);
        } else if (now >= r->due_ms) {
            /* Unlink first: send_eviction makes it a plain eviction. */
            struct req **pp = &c->notices;
            while (*pp != r)
                pp = &(*pp)->qnext;
            *pp = nx;
            r->qnext = NULL;
            e->notice_due_ms = 0;
            e->op_start_ms = now;
            send_eviction(c, r);
        } else if (next < 0 || r->due_ms < next) {
            next = r->due_ms;
        }
        r = nx;
    }
    if (next >= 0)
        fair_ctl_arm_cycle(c, next - now);
}
