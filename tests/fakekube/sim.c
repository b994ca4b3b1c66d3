/* fakekube's simulated cluster: graceful pod deletion, a simulated kubelet
 * (bound pods become Running, and Succeeded after the duration in the
 * annotation sim.fairshare.dev/duration-seconds) and simulated GPU nodes.
 *
 * Pod states as the kubelet sees them: Pending+bound -(kubelet delay)->
 * Running -(duration)-> Succeeded. Timers carry the pod's key and uid and
 * re-check the pod when they fire, so a timer for a deleted or replaced
 * pod does nothing. */
#include "fakekube.h"

#include "base/alloc.h"
#include "base/clock.h"
#include "base/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define DURATION_ANNOTATION "sim.fairshare.dev/duration-seconds"
#define EXIT_CODE_ANNOTATION "sim.fairshare.dev/exit-code"
/* What the container runtime would put in the containers' env
 * NVIDIA_VISIBLE_DEVICES: the devices the (simulated) device plugin gave a
 * pod that asks for nvidia.com/gpu, as a comma-separated list of UUIDs. */
#define VISIBLE_ANNOTATION "sim.fairshare.dev/nvidia-visible-devices"

struct fk_timer {
    struct fk_timer *next, *prev;
    struct fk_server *srv;
    struct event *ev;
    int kind;
    int type;
    char key[600];
    char uid[40];
};

static void timer_unlink_free(struct fk_server *s, struct fk_timer *t)
{
    if (t->prev)
        t->prev->next = t->next;
    else
        s->timers = t->next;
    if (t->next)
        t->next->prev = t->prev;
    if (t->ev)
        event_free(t->ev);
    fair_free(t);
}

static int64_t now_ms(void)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

static void set_condition(json_t *status, const char *type, const char *value, const char *reason,
                          const char *ts)
{
    json_t *conds = json_object_get(status, "conditions");
    if (!json_is_array(conds)) {
        conds = json_array();
        json_object_set_new(status, "conditions", conds);
    }
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c)
    {
        if (strcmp(fk_path_str(c, "type"), type) == 0) {
            json_object_set_new(c, "status", json_string(value));
            json_object_set_new(c, "lastTransitionTime", json_string(ts));
            if (reason)
                json_object_set_new(c, "reason", json_string(reason));
            return;
        }
    }
    json_t *nc =
        json_pack("{s:s,s:s,s:s}", "type", type, "status", value, "lastTransitionTime", ts);
    if (nc && reason)
        json_object_set_new(nc, "reason", json_string(reason));
    json_array_append_new(conds, nc);
}

static long duration_seconds(const json_t *pod)
{
    const char *d = json_string_value(json_object_get(
        json_object_get(json_object_get(pod, "metadata"), "annotations"), DURATION_ANNOTATION));
    if (!d)
        return -1;
    char *end;
    long v = strtol(d, &end, 10);
    return (*end || v < 0 || v > 10L * 365 * 86400) ? -1 : v;
}

static void container_statuses(json_t *status, const json_t *pod, int running, int exit_code,
                               const char *ts)
{
    json_t *arr = json_array();
    size_t i;
    json_t *c;
    /* As a kubelet (and the real-plane fake kubelet) writes them: a
     * terminated container keeps its startedAt and gets finishedAt, both
     * in whole seconds. */
    const char *started = json_string_value(json_object_get(status, "startTime"));
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
    {
        json_t *state = running ? json_pack("{s:{s:s}}", "running", "startedAt", ts)
                                : json_pack("{s:{s:i,s:s,s:s,s:s}}", "terminated", "exitCode",
                                            exit_code, "reason", exit_code ? "Error" : "Completed",
                                            "startedAt", started ? started : ts, "finishedAt", ts);
        json_array_append_new(arr,
                              json_pack("{s:s,s:b,s:o,s:i,s:s}", "name", fk_path_str(c, "name"),
                                        "ready", running, "state", state, "restartCount", 0,
                                        "image", fk_path_str(c, "image")));
    }
    json_object_set_new(status, "containerStatuses", arr);
}

/* ---- the simulated device plugin ---- */

/* nvidia.com/gpu the pod asks for: the sum over containers of the limit
 * (the API server makes request == limit), else the request. */
static long pod_gpus(const json_t *pod)
{
    long total = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "spec"), "containers"), i, c)
    {
        const json_t *res = json_object_get(c, "resources");
        const json_t *v = json_object_get(json_object_get(res, "limits"), "nvidia.com/gpu");
        if (!v)
            v = json_object_get(json_object_get(res, "requests"), "nvidia.com/gpu");
        long n = json_is_integer(v)  ? (long)json_integer_value(v)
                 : json_is_string(v) ? strtol(json_string_value(v), NULL, 10)
                                     : 0;
        if (n > 0 && n < 1024)
            total += n;
    }
    return total;
}

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

/* The UUID of device i of node: distinct per node and per device. */
static void device_uuid(const char *node, long i, char *out, size_t n)
{
    snprintf(out, n, "GPU-%08x-0000-4000-8000-%012ld", name_hash(node), i);
}

static long device_index(const char *uuid)
{
    const char *dash = strrchr(uuid, '-');
    return dash ? strtol(dash + 1, NULL, 10) : -1;
}

/* Whether owner ("key uid") still holds its devices: the pod exists with
 * that uid and has not finished. */
static int owner_live(struct fk_server *s, const char *owner)
{
    char key[600];
    const char *sp = strchr(owner, ' ');
    if (!sp || (size_t)(sp - owner) >= sizeof key)
        return 0;
    memcpy(key, owner, (size_t)(sp - owner));
    key[sp - owner] = '\0';
    json_t *pod = fk_get(s, FK_PODS, key);
    if (!pod || strcmp(fk_meta_str(pod, "uid"), sp + 1))
        return 0;
    const char *phase = fk_path_str(pod, "status.phase");
    return strcmp(phase, "Succeeded") && strcmp(phase, "Failed");
}

/* The device map of node. The maps of all nodes are built once, in one
 * pass over the pods' annotations (at the first allocation after a
 * start or restart); a node seen later starts empty. Dead owners are
 * dropped here. */
static json_t *node_devices(struct fk_server *s, const char *node)
{
    if (!s->gpu_devs) {
        if (!(s->gpu_devs = json_object()))
            return NULL;
        size_t n;
        char **keys = fk_sorted_keys(s, FK_PODS, &n);
        for (size_t i = 0; keys && i < n; i++) {
            json_t *pod = fk_get(s, FK_PODS, keys[i]);
            const char *vis = json_string_value(
                json_object_get(json_object_get(json_object_get(pod, "metadata"), "annotations"),
                                VISIBLE_ANNOTATION));
            const char *pnode = fk_path_str(pod, "spec.nodeName");
            if (!vis || !*pnode)
                continue;
            json_t *pm = json_object_get(s->gpu_devs, pnode);
            if (!pm) {
                pm = json_object();
                if (!pm || json_object_set_new(s->gpu_devs, pnode, pm))
                    return NULL;
            }
            char owner[700], idx[24];
            snprintf(owner, sizeof owner, "%s %s", keys[i], fk_meta_str(pod, "uid"));
            for (const char *p = vis; *p;) {
                const char *end = strchr(p, ',');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                char one[128];
                snprintf(one, sizeof one, "%.*s", (int)(len < sizeof one ? len : sizeof one - 1),
                         p);
                snprintf(idx, sizeof idx, "%ld", device_index(one));
                json_object_set_new(pm, idx, json_string(owner));
                p += len + (end ? 1 : 0);
            }
        }
    }
    json_t *m = json_object_get(s->gpu_devs, node);
    if (!m) {
        m = json_object();
        if (!m || json_object_set_new(s->gpu_devs, node, m))
            return NULL;
    }
    const char *k;
    json_t *v, *tmp;
    json_object_foreach_safe(m, tmp, k, v)
    {
        if (!owner_live(s, json_string_value(v)))
            json_object_del(m, k);
    }
    return m;
}

/* As the device plugin's Allocate at the kubelet's admission: the pod gets
 * the lowest free devices of its node, named in VISIBLE_ANNOTATION; with
 * too few free, the kubelet refuses it (phase Failed, reason
 * UnexpectedAdmissionError, as a real kubelet does). Returns 0, or -1 when
 * refused (status set). */
static int allocate_devices(struct fk_server *s, const char *key, json_t *nw, json_t *status)
{
    long want = pod_gpus(nw);
    if (want <= 0)
        return 0;
    const char *node = fk_path_str(nw, "spec.nodeName");
    json_t *nobj = fk_get(s, FK_NODES, node);
    long ngpu = 0;
    json_t *alloc = json_object_get(json_object_get(nobj, "status"), "allocatable");
    const json_t *g = json_object_get(alloc, "nvidia.com/gpu");
    if (json_is_string(g))
        ngpu = strtol(json_string_value(g), NULL, 10);
    json_t *m = node_devices(s, node);
    char list[2048] = "", idx[24], uuid[64], owner[700];
    long got = 0;
    snprintf(owner, sizeof owner, "%s %s", key, fk_meta_str(nw, "uid"));
    for (long i = 0; m && i < ngpu && got < want && i < 64; i++) {
        snprintf(idx, sizeof idx, "%ld", i);
        if (json_object_get(m, idx))
            continue;
        device_uuid(node, i, uuid, sizeof uuid);
        size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s", got ? "," : "", uuid);
        got++;
    }
    if (!m || got < want) {
        char msg[300];
        snprintf(msg, sizeof msg,
                 "Allocate failed due to requested number of devices unavailable for "
                 "nvidia.com/gpu. Requested: %ld, Available: %ld, which is unexpected",
                 want, got);
        json_object_set_new(status, "phase", json_string("Failed"));
        json_object_set_new(status, "reason", json_string("UnexpectedAdmissionError"));
        json_object_set_new(status, "message", json_string(msg));
        return -1;
    }
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        char one[64];
        snprintf(one, sizeof one, "%.*s", (int)len, p);
        snprintf(idx, sizeof idx, "%ld", device_index(one));
        json_object_set_new(m, idx, json_string(owner));
        p += len + (end ? 1 : 0);
    }
    json_t *meta = json_object_get(nw, "metadata");
    json_t *ann = json_object_get(meta, "annotations");
    if (!json_is_object(ann)) {
        ann = json_object();
        json_object_set_new(meta, "annotations", ann);
    }
    json_object_set_new(ann, VISIBLE_ANNOTATION, json_string(list));
    return 0;
}

static void kubelet_run(struct fk_server *s, const char *key, json_t *pod)
{
    json_t *nw = json_deep_copy(pod);
    if (!nw)
        return;
    char ts[32];
    fk_now_rfc3339(ts, sizeof(ts));
    json_t *status = json_object_get(nw, "status");
    if (!json_is_object(status)) {
        status = json_object();
        json_object_set_new(nw, "status", status);
    }
    if (allocate_devices(s, key, nw, status)) {
        fk_put(s, FK_PODS, key, nw, FK_MODIFIED);
        return;
    }
    json_object_set_new(status, "phase", json_string("Running"));
    json_object_set_new(status, "startTime", json_string(ts));
    json_object_set_new(status, "hostIP", json_string("10.0.0.1"));
    json_object_set_new(status, "podIP", json_string("10.244.0.1"));
    set_condition(status, "Initialized", "True", NULL, ts);
    set_condition(status, "ContainersReady", "True", NULL, ts);
    set_condition(status, "Ready", "True", NULL, ts);
    container_statuses(status, nw, 1, 0, ts);
    fk_put(s, FK_PODS, key, nw, FK_MODIFIED);
}

static void kubelet_succeed(struct fk_server *s, const char *key, json_t *pod)
{
    json_t *nw = json_deep_copy(pod);
    if (!nw)
        return;
    char ts[32];
    fk_now_rfc3339(ts, sizeof(ts));
    json_t *status = json_object_get(nw, "status");
    /* sim.fairshare.dev/exit-code: "N" (N != 0) makes the pod fail instead. */
    const char *ec = json_string_value(json_object_get(
        json_object_get(json_object_get(nw, "metadata"), "annotations"), EXIT_CODE_ANNOTATION));
    int code = 0;
    if (ec) {
        char *end;
        long v = strtol(ec, &end, 10);
        if (!*end && v > 0 && v < 256)
            code = (int)v;
    }
    json_object_set_new(status, "phase", json_string(code ? "Failed" : "Succeeded"));
    set_condition(status, "Ready", "False", "PodCompleted", ts);
    set_condition(status, "ContainersReady", "False", "PodCompleted", ts);
    container_statuses(status, nw, 0, code, ts);
    fk_put(s, FK_PODS, key, nw, FK_MODIFIED);
}

static void timer_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct fk_timer *t = arg;
    struct fk_server *s = t->srv;
    json_t *obj = fk_get(s, t->type, t->key);
    if (obj && strcmp(fk_meta_str(obj, "uid"), t->uid) == 0) {
        json_t *meta = json_object_get(obj, "metadata");
        int deleting = json_object_get(meta, "deletionTimestamp") != NULL;
        const char *phase = fk_path_str(obj, "status.phase");
        switch (t->kind) {
        case FK_TIMER_FINALIZE:
            if (deleting && json_array_size(json_object_get(meta, "finalizers")) == 0) {
                json_decref(fk_remove(s, t->type, t->key));
            } else if (deleting &&
                       json_integer_value(json_object_get(meta, "deletionGracePeriodSeconds"))) {
                /* The kubelet's final delete (grace 0): the pod now goes
                 * as soon as an update removes its last finalizer. */
                json_t *nw = json_deep_copy(obj);
                if (nw) {
                    json_object_set_new(json_object_get(nw, "metadata"),
                                        "deletionGracePeriodSeconds", json_integer(0));
                    fk_put(s, t->type, t->key, nw, FK_MODIFIED);
                }
            }
            break;
        case FK_TIMER_RUN:
            if (!deleting && !strcmp(phase, "Pending") && *fk_path_str(obj, "spec.nodeName"))
                kubelet_run(s, t->key, obj);
            break;
        case FK_TIMER_SUCCEED:
            if (!strcmp(phase, "Running"))
                kubelet_succeed(s, t->key, obj);
            break;
        }
    }
    timer_unlink_free(s, t);
}

int fk_timer_add(struct fk_server *s, int kind, int type, const char *key, const char *uid,
                 long delay_ms)
{
    struct fk_timer *t = fair_calloc(1, sizeof(*t));
    if (!t)
        return -1;
    t->srv = s;
    t->kind = kind;
    t->type = type;
    snprintf(t->key, sizeof(t->key), "%s", key);
    snprintf(t->uid, sizeof(t->uid), "%s", uid);
    t->ev = evtimer_new(s->base, timer_cb, t);
    if (!t->ev) {
        fair_free(t);
        return -1;
    }
    if (delay_ms < 0)
        delay_ms = 0;
    struct timeval tv = {delay_ms / 1000, (delay_ms % 1000) * 1000};
    evtimer_add(t->ev, &tv);
    t->next = s->timers;
    if (s->timers)
        s->timers->prev = t;
    s->timers = t;
    return 0;
}

void fk_timers_release(struct fk_server *s)
{
    json_decref(s->gpu_devs);
    s->gpu_devs = NULL;
    while (s->timers)
        timer_unlink_free(s, s->timers);
}

static int node_exists(struct fk_server *s, const char *name)
{
    return fk_get(s, FK_NODES, name) != NULL;
}

void fk_sim_pod_written(struct fk_server *s, const char *key, const json_t *pod)
{
    if (!s->kubelet)
        return;
    const char *node = fk_path_str(pod, "spec.nodeName");
    if (!*node || json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
        return;
    const char *phase = fk_path_str(pod, "status.phase");
    const char *uid = fk_meta_str(pod, "uid");
    const struct fk_event *ev = fk_hist_at(s, s->rv); /* the write just made */
    if (!strcmp(phase, "Pending") && node_exists(s, node)) {
        /* Once per pod: on the write that bound it (or created it bound). */
        if (ev && (!ev->old || !*fk_path_str(ev->old, "spec.nodeName")))
            fk_timer_add(s, FK_TIMER_RUN, FK_PODS, key, uid, s->kubelet_delay_ms);
    } else if (!strcmp(phase, "Running")) {
        long d = duration_seconds(pod);
        /* Schedule once: on the write that made it Running, N s from now
         * (startTime has whole seconds only; after a restart it is all we
         * have, see fk_sim_resume). */
        int just_started =
            ev && ev->old && strcmp(fk_path_str(ev->old, "status.phase"), "Running") != 0;
        if (d >= 0 && just_started)
            fk_timer_add(s, FK_TIMER_SUCCEED, FK_PODS, key, uid, d * 1000);
    }
}

void fk_sim_resume(struct fk_server *s)
{
    size_t n;
    char **keys = fk_sorted_keys(s, FK_PODS, &n);
    for (size_t i = 0; i < n; i++) {
        json_t *pod = fk_get(s, FK_PODS, keys[i]);
        json_t *meta = json_object_get(pod, "metadata");
        const char *uid = fk_meta_str(pod, "uid");
        const char *dts = json_string_value(json_object_get(meta, "deletionTimestamp"));
        int64_t ms;
        if (dts && fair_time_parse_rfc3339(dts, &ms) == 0) {
            fk_timer_add(s, FK_TIMER_FINALIZE, FK_PODS, keys[i], uid, (long)(ms - now_ms()));
            continue;
        }
        if (!s->kubelet || !*fk_path_str(pod, "spec.nodeName"))
            continue;
        const char *phase = fk_path_str(pod, "status.phase");
        if (!strcmp(phase, "Pending")) {
            fk_timer_add(s, FK_TIMER_RUN, FK_PODS, keys[i], uid, s->kubelet_delay_ms);
        } else if (!strcmp(phase, "Running")) {
            long d = duration_seconds(pod);
            if (d >= 0 && fair_time_parse_rfc3339(fk_path_str(pod, "status.startTime"), &ms) == 0)
                fk_timer_add(s, FK_TIMER_SUCCEED, FK_PODS, keys[i], uid,
                             (long)(ms + d * 1000 - now_ms()));
        }
    }
}

int fk_sim_create_nodes(struct fk_server *s, int nodes, int gpus, const char *model)
{
    char ts[32], gpustr[16];
    fk_now_rfc3339(ts, sizeof(ts));
    snprintf(gpustr, sizeof(gpustr), "%d", gpus);
    for (int i = 0; i < nodes; i++) {
        char name[64], uid[40];
        snprintf(name, sizeof(name), "node-%04d", i);
        if (fk_get(s, FK_NODES, name))
            continue; /* kept from an earlier run of this state dir */
        fk_uuid(uid, sizeof(uid));
        json_t *res = json_pack("{s:s,s:s,s:s,s:s}", "cpu", "64", "memory", "512Gi", "pods", "110",
                                "nvidia.com/gpu", gpustr);
        json_t *node = json_pack(
            "{s:s,s:s,s:{s:s,s:s,s:s,s:{s:s,s:s,s:s,s:s}},s:{},s:{s:O,s:o,s:[{s:s,s:s,s:s,s:s,"
            "s:s}],s:{s:s,s:s}}}",
            "kind", "Node", "apiVersion", "v1", "metadata", "name", name, "uid", uid,
            "creationTimestamp", ts, "labels", "kubernetes.io/hostname", name,
            "nvidia.com/gpu.product", model, "nvidia.com/gpu.count", gpustr,
            "fairshare.dev/simulated", "true", "spec", "status", "capacity", res, "allocatable",
            res, "conditions", "type", "Ready", "status", "True", "reason", "KubeletReady",
            "lastHeartbeatTime", ts, "lastTransitionTime", ts, "nodeInfo", "kubeletVersion",
            "v1.31.0-fakekube", "architecture", "amd64");
        if (!node)
            return -1;
        fk_put(s, FK_NODES, name, node, FK_ADDED);
    }
    return 0;
}

json_t *fk_delete_object(struct fk_server *s, int type, const char *key, long grace)
{
    json_t *obj = fk_get(s, type, key);
    if (!obj)
        return NULL;
    json_t *meta = json_object_get(obj, "metadata");
    int has_finalizers = json_array_size(json_object_get(meta, "finalizers")) > 0;
    int graceful = 0;
    if (type == FK_PODS && grace > 0) {
        /* Unbound and terminal pods go at once (pod strategy). */
        const char *phase = fk_path_str(obj, "status.phase");
        graceful = *fk_path_str(obj, "spec.nodeName") && strcmp(phase, "Succeeded") != 0 &&
                   strcmp(phase, "Failed") != 0;
    }
    if (!graceful && !has_finalizers)
        return fk_remove(s, type, key);
    json_t *cur_dts = json_object_get(meta, "deletionTimestamp");
    if (!graceful)
        grace = 0;
    if (cur_dts) {
        /* A second delete may only shorten the grace period. */
        json_int_t cur = json_integer_value(json_object_get(meta, "deletionGracePeriodSeconds"));
        if (grace >= cur) {
            return json_incref(obj);
        }
        if (grace == 0 && !has_finalizers)
            return fk_remove(s, type, key);
    }
    json_t *nw = json_deep_copy(obj);
    if (!nw)
        return NULL;
    json_t *nmeta = json_object_get(nw, "metadata");
    char ts[32];
    int64_t when = now_ms() + grace * 1000;
    fair_time_format_rfc3339(when, ts, sizeof(ts));
    json_object_set_new(nmeta, "deletionTimestamp", json_string(ts));
    json_object_set_new(nmeta, "deletionGracePeriodSeconds", json_integer(grace));
    json_int_t g = json_integer_value(json_object_get(nmeta, "generation"));
    if (g > 0)
        json_object_set_new(nmeta, "generation", json_integer(g + 1));
    json_t *stored = fk_put(s, type, key, nw, FK_MODIFIED);
    if (graceful)
        fk_timer_add(s, FK_TIMER_FINALIZE, type, key, fk_meta_str(stored, "uid"), grace * 1000);
    return json_incref(stored);
}

/* ---- PodDisruptionBudgets: counts and a simulated disruption controller ---- */

int fk_pod_ready(const json_t *pod)
{
    if (strcmp(fk_path_str(pod, "status.phase"), "Running") != 0)
        return 0;
    if (json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
        return 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(pod, "status"), "conditions"), i, c)
    {
        if (strcmp(fk_path_str(c, "type"), "Ready") == 0)
            return strcmp(fk_path_str(c, "status"), "True") == 0;
    }
    return 0;
}

/* matchLabels and matchExpressions of a LabelSelector. */
int fk_label_selector_matches(const json_t *sel, const json_t *obj)
{
    if (!json_is_object(sel))
        return 0; /* a PDB without selector selects nothing in policy/v1... */
    const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(sel, "matchLabels"), k, v)
    {
        const char *lv = json_string_value(json_object_get(labels, k));
        if (!lv || !json_is_string(v) || strcmp(lv, json_string_value(v)) != 0)
            return 0;
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(sel, "matchExpressions"), i, e)
    {
        const char *key = fk_path_str(e, "key");
        const char *op = fk_path_str(e, "operator");
        const char *lv = json_string_value(json_object_get(labels, key));
        int in = 0;
        size_t j;
        json_t *val;
        json_array_foreach(json_object_get(e, "values"), j, val)
        {
            if (lv && json_is_string(val) && strcmp(lv, json_string_value(val)) == 0)
                in = 1;
        }
        if ((!strcmp(op, "In") && !in) || (!strcmp(op, "NotIn") && in) ||
            (!strcmp(op, "Exists") && !lv) || (!strcmp(op, "DoesNotExist") && lv))
            return 0;
    }
    return 1;
}

/* An int or a "N%" IntOrString, scaled on total (rounding up). */
static long int_or_percent(const json_t *v, long total, int *set)
{
    *set = 1;
    if (json_is_integer(v))
        return (long)json_integer_value(v);
    const char *sv = json_string_value(v);
    if (sv) {
        char *end;
        long p = strtol(sv, &end, 10);
        if (*end == '%')
            return (p * total + 99) / 100;
        if (!*end)
            return p;
    }
    *set = 0;
    return 0;
}

void fk_pdb_counts(struct fk_server *s, const json_t *pdb, long *expected, long *healthy,
                   long *desired)
{
    json_t *sel = json_object_get(json_object_get(pdb, "spec"), "selector");
    *expected = *healthy = 0;
    size_t np;
    char **pk = fk_sorted_keys(s, FK_PODS, &np);
    char prefix[300];
    snprintf(prefix, sizeof(prefix), "%s/", fk_meta_str(pdb, "namespace"));
    size_t pl = strlen(prefix);
    /* Keys are sorted: find the namespace's first key, stop after its last. */
    size_t lo = 0, hi = np;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(pk[mid], prefix) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    for (size_t i = lo; i < np && strncmp(pk[i], prefix, pl) == 0; i++) {
        json_t *p = fk_get(s, FK_PODS, pk[i]);
        if (!fk_label_selector_matches(sel, p))
            continue;
        const char *ph = fk_path_str(p, "status.phase");
        if (!strcmp(ph, "Succeeded") || !strcmp(ph, "Failed"))
            continue;
        (*expected)++;
        if (fk_pod_ready(p))
            (*healthy)++;
    }
    int set;
    json_t *spec = json_object_get(pdb, "spec");
    long d = int_or_percent(json_object_get(spec, "minAvailable"), *expected, &set);
    if (!set) {
        long mu = int_or_percent(json_object_get(spec, "maxUnavailable"), *expected, &set);
        d = set ? *expected - mu : 0;
    }
    *desired = d < 0 ? 0 : d;
}

void fk_pdb_sync(struct fk_server *s)
{
    size_t n;
    char **keys = fk_sorted_keys(s, FK_PDBS, &n);
    /* Copy the keys: writing a status may not reorder, but be safe. */
    for (size_t i = 0; i < n; i++) {
        json_t *pdb = fk_get(s, FK_PDBS, keys[i]);
        long expected, healthy, desired;
        fk_pdb_counts(s, pdb, &expected, &healthy, &desired);
        long allowed = healthy - desired > 0 ? healthy - desired : 0;
        json_int_t gen =
            json_integer_value(json_object_get(json_object_get(pdb, "metadata"), "generation"));
        json_t *old = json_object_get(pdb, "status");
        if (json_integer_value(json_object_get(old, "observedGeneration")) == gen &&
            json_integer_value(json_object_get(old, "disruptionsAllowed")) == allowed &&
            json_integer_value(json_object_get(old, "currentHealthy")) == healthy &&
            json_integer_value(json_object_get(old, "desiredHealthy")) == desired &&
            json_integer_value(json_object_get(old, "expectedPods")) == expected)
            continue;
        json_t *nw = json_deep_copy(pdb);
        if (!nw)
            return;
        char ts[32];
        fk_now_rfc3339(ts, sizeof(ts));
        json_object_set_new(nw, "status",
                            json_pack("{s:I,s:I,s:I,s:I,s:I,s:[{s:s,s:s,s:s,s:I,s:s}]}",
                                      "observedGeneration", gen, "disruptionsAllowed",
                                      (json_int_t)allowed, "currentHealthy", (json_int_t)healthy,
                                      "desiredHealthy", (json_int_t)desired, "expectedPods",
                                      (json_int_t)expected, "conditions", "type",
                                      "DisruptionAllowed", "status", allowed > 0 ? "True" : "False",
                                      "reason", allowed > 0 ? "SufficientPods" : "InsufficientPods",
                                      "observedGeneration", gen, "lastTransitionTime", ts));
        char key[600];
        snprintf(key, sizeof(key), "%s", keys[i]);
        fk_put(s, FK_PDBS, key, nw, FK_MODIFIED);
        keys = fk_sorted_keys(s, FK_PDBS, &n); /* unchanged set, but re-read */
    }
}

/* ---- simulated Job controller ---------------------------------------------- */

static long job_int(const json_t *spec, const char *field, long dflt)
{
    const json_t *v = json_object_get(spec, field);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (long)json_integer_value(v) : dflt;
}

static int owned_by(const json_t *pod, const char *uid)
{
    size_t i;
    const json_t *ref;
    json_array_foreach(json_object_get(json_object_get(pod, "metadata"), "ownerReferences"), i, ref)
    {
        const char *u = json_string_value(json_object_get(ref, "uid"));
        if (u && !strcmp(u, uid))
            return 1;
    }
    return 0;
}

/* A pod of job from its template, as the Job controller makes it: name
 * "<job>-<5 characters>", the template's labels plus job-name and
 * controller-uid, the Job as controller owner; limits without requests
 * give the requests, as the API server defaults them. */
static void job_pod(struct fk_server *s, const json_t *job)
{
    const char *ns = fk_meta_str(job, "namespace"), *name = fk_meta_str(job, "name");
    const char *uid = fk_meta_str(job, "uid");
    const json_t *tpl = json_object_get(json_object_get(job, "spec"), "template");
    const json_t *tmeta = json_object_get(tpl, "metadata");
    json_t *labels = json_deep_copy(json_object_get(tmeta, "labels"));
    if (!json_is_object(labels)) {
        json_decref(labels);
        labels = json_object();
    }
    json_object_set_new(labels, "job-name", json_string(name));
    json_object_set_new(labels, "controller-uid", json_string(uid));
    json_t *spec = json_deep_copy(json_object_get(tpl, "spec"));
    if (!json_is_object(spec)) {
        json_decref(spec);
        spec = json_object();
    }
    size_t ci;
    json_t *c;
    json_array_foreach(json_object_get(spec, "containers"), ci, c)
    {
        json_t *res = json_object_get(c, "resources");
        json_t *lim = json_object_get(res, "limits");
        if (!json_is_object(lim))
            continue;
        json_t *rq = json_object_get(res, "requests");
        if (!json_is_object(rq)) {
            rq = json_object();
            json_object_set_new(res, "requests", rq);
        }
        const char *k;
        json_t *v;
        json_object_foreach(lim, k, v)
        {
            if (!json_object_get(rq, k))
                json_object_set(rq, k, v);
        }
    }
    char pname[300], key[600], puid[40], ts[32];
    int tries = 0;
    do {
        char suffix[6];
        fk_random_alnum(suffix, sizeof(suffix));
        snprintf(pname, sizeof(pname), "%.57s-%s", name, suffix);
        if (fk_key(&s->types[FK_PODS], ns, pname, key, sizeof(key))) {
            json_decref(labels);
            json_decref(spec);
            return;
        }
    } while (fk_get(s, FK_PODS, key) && ++tries < 8);
    fk_uuid(puid, sizeof(puid));
    fk_now_rfc3339(ts, sizeof(ts));
    json_t *annotations = json_deep_copy(json_object_get(tmeta, "annotations"));
    json_t *meta = json_pack("{s:s,s:s,s:s,s:s,s:o,s:[{s:s,s:s,s:s,s:s,s:b,s:b}]}", "name", pname,
                             "namespace", ns, "uid", puid, "creationTimestamp", ts, "labels",
                             labels, "ownerReferences", "apiVersion", "batch/v1", "kind", "Job",
                             "name", name, "uid", uid, "controller", 1, "blockOwnerDeletion", 1);
    if (!meta) {
        json_decref(spec);
        json_decref(annotations);
        return;
    }
    if (json_is_object(annotations))
        json_object_set_new(meta, "annotations", annotations);
    else
        json_decref(annotations);
    json_t *pod = json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "v1", "kind", "Pod", "metadata",
                            meta, "spec", spec);
    if (!pod)
        return;
    fk_pod_defaults(s, pod);
    fk_put(s, FK_PODS, key, pod, FK_ADDED);
}

void fk_job_sync(struct fk_server *s)
{
    size_t n;
    char **keys = fk_sorted_keys(s, FK_JOBS, &n);
    for (size_t i = 0; i < n; i++) {
        char key[600];
        snprintf(key, sizeof(key), "%s", keys[i]);
        json_t *job = fk_get(s, FK_JOBS, key);
        if (!job || json_object_get(json_object_get(job, "metadata"), "deletionTimestamp"))
            continue;
        const char *uid = fk_meta_str(job, "uid");
        const json_t *spec = json_object_get(job, "spec");
        long par = job_int(spec, "parallelism", 1);
        long comp = job_int(spec, "completions", par);
        long active = 0, succeeded = 0, failed = 0;
        size_t np;
        char **pkeys = fk_sorted_keys(s, FK_PODS, &np);
        for (size_t k = 0; k < np; k++) {
            json_t *pod = fk_get(s, FK_PODS, pkeys[k]);
            if (!pod || !owned_by(pod, uid))
                continue;
            const char *phase =
                json_string_value(json_object_get(json_object_get(pod, "status"), "phase"));
            if (phase && !strcmp(phase, "Succeeded"))
                succeeded++;
            else if (phase && !strcmp(phase, "Failed"))
                failed++;
            else if (!json_object_get(json_object_get(pod, "metadata"), "deletionTimestamp"))
                active++;
        }
        long want = comp - succeeded < par ? comp - succeeded : par;
        for (long k = active; k < want; k++) {
            job_pod(s, job);
            active++;
            job = fk_get(s, FK_JOBS, key);
            if (!job)
                break;
        }
        if (!job)
            continue;
        json_t *st = json_pack("{s:I,s:I,s:I}", "active", (json_int_t)active, "succeeded",
                               (json_int_t)succeeded, "failed", (json_int_t)failed);
        if (st && succeeded >= comp)
            json_object_set_new(st, "conditions",
                                json_pack("[{s:s,s:s}]", "type", "Complete", "status", "True"));
        if (!st || json_equal(st, json_object_get(job, "status"))) {
            json_decref(st);
        } else {
            json_t *nw = json_deep_copy(job);
            if (!nw) {
                json_decref(st);
                return;
            }
            json_object_set_new(nw, "status", st);
            fk_put(s, FK_JOBS, key, nw, FK_MODIFIED);
        }
        keys = fk_sorted_keys(s, FK_JOBS, &n); /* re-read after the writes */
    }
}
