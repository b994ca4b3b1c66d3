/* Telling people (see ctl/loop.h): Events on pods, sent at once or
 * queued at low priority with a few in flight; a pod condition set by a
 * patch of pods/status (DisruptionTarget for evict.c, PodScheduled here);
 * and why a pending pod waits, told by its condition and FailedScheduling
 * Events (docs/controller.md, "Telling people"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/log.h"
#include "ctl/loop.h"
#include "ctl/podmem.h"
#include "ctl/reasons.h"
#include "kube/client.h"
#include "kube/decode.h"

void fair_ctl_send_event(struct fair_ctl *c, const struct fair_kpod *p, const char *type,
                         const char *reason, const char *message)
{
    struct fair_error err = {0};
    struct req *r = fair_ctl_req_new(c, REQ_EVENT);
    if (!r)
        return;
    r->ns = dup0(p->meta.namespace_);
    r->name = dup0(p->meta.name);
    struct fair_kevent_ref ref = {.api_version = "v1",
                                  .kind = "Pod",
                                  .namespace_ = p->meta.namespace_,
                                  .name = p->meta.name,
                                  .uid = p->meta.uid};
    if (fair_kclient_event(c->kc, &ref, type, reason, message, c->cfg->scheduler_name,
                           fair_ctl_on_simple_done, r, &err)) {
        FAIR_WARN(COMP, "msg=\"event not sent\" pod=%s/%s err=\"%s\"", p->meta.namespace_,
                  p->meta.name, err.msg);
        fair_ctl_req_free(r);
    }
}

/* Sends queued Events while no bind waits for a slot and a slot is free. */
void fair_ctl_pump_events(struct fair_ctl *c)
{
    while (c->evq_head && c->nbindq == 0 && c->events_in_flight < MAX_EVENTS_IN_FLIGHT &&
           !c->stopping) {
        struct req *r = c->evq_head;
        c->evq_head = r->qnext;
        if (!c->evq_head)
            c->evq_tail = NULL;
        c->nevq--;
        r->qnext = NULL;
        r->kind = REQ_EVENT;
        r->event_slot = true;
        c->events_in_flight++;
        struct fair_error err = {0};
        struct fair_kevent_ref ref = {.api_version = "v1",
                                      .kind = "Pod",
                                      .namespace_ = r->ns,
                                      .name = r->name,
                                      .uid = r->uid};
        if (fair_kclient_event(c->kc, &ref, r->ev_type, r->ev_reason, r->message,
                               c->cfg->scheduler_name, fair_ctl_on_simple_done, r, &err)) {
            FAIR_WARN(COMP, "msg=\"event not sent\" pod=%s/%s err=\"%s\"", r->ns, r->name, err.msg);
            fair_ctl_req_free(r);
        }
    }
}

/* Queues a low-priority Event about a pod (type and reason: static
 * strings); see EVENT_QUEUE_MAX. */
void fair_ctl_queue_event(struct fair_ctl *c, const char *ns, const char *name, const char *uid,
                          const char *type, const char *reason, const char *message)
{
    if (c->nevq >= EVENT_QUEUE_MAX) {
        c->metrics.events_dropped++;
        return;
    }
    struct req *r = fair_ctl_req_new(c, REQ_QUEUED_EVENT);
    if (!r)
        return;
    r->ns = dup0(ns);
    r->name = dup0(name);
    r->uid = dup0(uid);
    r->message = dup0(message);
    r->ev_type = type;
    r->ev_reason = reason;
    if (!r->ns || !r->name || !r->uid || !r->message) {
        fair_ctl_req_free(r);
        return;
    }
    if (c->evq_tail)
        c->evq_tail->qnext = r;
    else
        c->evq_head = r;
    c->evq_tail = r;
    c->nevq++;
    fair_ctl_pump_events(c);
}

/* Patches one pod condition with a strategic merge patch on pods/status,
 * which merges conditions by type (a JSON merge patch would replace the
 * whole list, dropping the kubelet's). */
void fair_ctl_patch_condition(struct fair_ctl *c, const struct fair_kpod *p, int kind,
                              const char *type, const char *status, const char *reason,
                              const char *message)
{
    struct fair_error err = {0};
    struct fair_buf path;
    char ts[40];
    char *body = NULL;
    json_t *doc = NULL;
    fair_buf_init(&path, 4096);
    struct req *r = fair_ctl_req_new(c, kind);
    if (!r)
        goto out;
    r->uid = dup0(p->meta.uid);
    r->ns = dup0(p->meta.namespace_);
    r->name = dup0(p->meta.name);
    fair_time_format_rfc3339(wall(c), ts, sizeof ts);
    doc =
        json_pack("{s:{s:[{s:s, s:s, s:s, s:s, s:s}]}}", "status", "conditions", "type", type,
                  "status", status, "reason", reason, "message", message, "lastTransitionTime", ts);
    body = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    if (!body ||
        fair_kpath(&path, &fair_kres_pods, p->meta.namespace_, p->meta.name, "status", &err)) {
        fair_ctl_req_free(r);
        goto out;
    }
    if (fair_kclient_request(c->kc, "PATCH", fair_buf_str(&path),
                             "application/strategic-merge-patch+json", body, strlen(body), 0,
                             fair_ctl_on_simple_done, r, NULL, &err)) {
        FAIR_WARN(COMP, "msg=\"status patch not sent\" pod=%s/%s err=\"%s\"", p->meta.namespace_,
                  p->meta.name, err.msg);
        fair_ctl_req_free(r);
    }
out:
    free(body);
    json_decref(doc);
    fair_buf_release(&path);
}

/* Tells the owner of a pending pod why it waits: the PodScheduled=False
 * condition (only when its reason changes) and a FailedScheduling Event
 * (when the reason changes, or at most once per events.perPodInterval). */
int fair_ctl_tell_pending(struct fair_ctl *c, const struct fair_kpod *p, int why,
                          const char *message)
{
    int sent = 0;
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_ensure(&c->pods, p->meta.uid);
    if (!e)
        return 0;
    const char *reason = fair_ctl_why_reason(why);
    int64_t now = mono(c);
    bool cond_same = p->scheduled_condition_false && p->scheduled_reason &&
                     strcmp(p->scheduled_reason, reason) == 0;
    if (!cond_same && e->last_cond_why != why) {
        fair_ctl_patch_condition(c, p, REQ_POD_STATUS, "PodScheduled", "False", reason, message);
        e->last_cond_why = why;
        e->last_cond_ms = now;
        sent++;
    }
    if (e->last_event_why != why || now - e->last_event_ms >= c->cfg->event_interval_ms) {
        fair_ctl_send_event(c, p, "Warning", "FailedScheduling", message);
        e->last_event_why = why;
        e->last_event_ms = now;
        sent++;
    }
    return sent;
}
