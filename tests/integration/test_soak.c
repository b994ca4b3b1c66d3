/* Soak: the controller under churn against the fake API server. Pods come
 * and go (the simulated kubelet completes them after their
 * sim.fairshare.dev/duration-seconds), nodes are added and removed, and a
 * fault is injected every few seconds in turn: watches dropped (abruptly
 * and cleanly), history compaction (410 Gone on the next watch), 500s, an
 * API server restart, and a kill -9 and restart of the controller. Then
 * churn stops, every queue is given more work than the cluster holds, and
 * the end state is checked against the server's:
 *  - no live pod is bound to a node that does not exist;
 *  - no pod was bound twice (at most one Scheduled Event per pod, and a
 *    bound pod's node never changes between observations);
 *  - each Queue's status.allocated equals the sum of the GPUs of its live
 *    bound pods on the server;
 *  - for every queue with pending pods, allocated equals fairShare, and the
 *    fair shares are the engine's (guarantees 8/8/4, one over-quota unit
 *    each of the 12 spare GPUs per project: 12/12/8 of 32);
 *  - the ledger passes `fairsharectl ledger check` (integrity_check) and
 *    its open intervals equal the live bound pods;
 *  - the controller exits cleanly (under ASan: no leak) and none of its
 *    runs, killed ones included, printed a sanitizer report.
 * SOAK_SECONDS sets the churn time (default 30); scripts/soak.sh runs the
 * long version. A summary line "soak: ..." is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#define NODES 4
#define GPUS 8
#define MAX_PODS 20000
#define FINAL_WAIT_MS 120000

static const char *const QUEUES[] = {"qa", "qb", "qc"};
static const char *const NSS[] = {"team-a", "team-b", "team-c"};

struct soak {
    struct fair_fake fake;
    struct ctl ctl;
    uint64_t rnd;
    long pods_created, create_retries, pods_gc;
    long faults[10];
    long nodes_added, nodes_removed;
    int extra_next;     /* next extra node number */
    char extra[16][32]; /* extra nodes now present */
    int nextra;
    /* Where each pod was first seen bound: a second, different node is a
     * double bind. */
    char (*seen_name)[80];
    char (*seen_node)[32];
    long nseen;
    long rebinds;
    long fake_unclean; /* fake API server exits with a non-zero status */
};

static unsigned rnd(struct soak *s, unsigned n)
{
    s->rnd = s->rnd * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((s->rnd >> 33) % n);
}

/* One request that may meet an injected 500 or a restarting server:
 * retried for up to 20 s. Returns the final HTTP status. */
static long req_retry(struct soak *s, const char *method, const char *path, const char *ct,
                      const char *body)
{
    long code = 0;
    long long deadline = now_ms() + 20000;
    for (;;) {
        char *resp = NULL;
        int rc = ct ? fair_fake_request_ct(&s->fake, method, path, ct, body, &code, &resp)
                    : fair_fake_request(&s->fake, method, path, body, &code, &resp);
        free(resp);
        if (rc == 0 && code < 500 && code != 429)
            return code;
        if (now_ms() > deadline)
            return code;
        s->create_retries++;
        nap(100);
    }
}

/* A JSON list that may meet faults: retried like req_retry. */
static json_t *list_retry(struct soak *s, const char *path)
{
    long long deadline = now_ms() + 20000;
    for (;;) {
        json_t *l = list(&s->fake, path);
        if (l || now_ms() > deadline)
            return l;
        nap(100);
    }
}

static void create_pod(struct soak *s, int q, int gpus, int duration_s)
{
    char body[2048], path[128], dur[96] = "";
    if (duration_s > 0)
        snprintf(dur, sizeof dur,
                 ",\"annotations\":{\"sim.fairshare.dev/duration-seconds\":\"%d\"}", duration_s);
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p-%ld\","
             "\"namespace\":\"%s\",\"labels\":{\"fairshare.dev/queue\":\"%s\"}%s},"
             "\"spec\":{\"schedulerName\":\"fairshare\",\"terminationGracePeriodSeconds\":0,"
             "\"containers\":[{\"name\":\"main\",\"image\":\"busybox\",\"resources\":{\"limits\":"
             "{\"nvidia.com/gpu\":\"%d\"}}}]}}",
             s->pods_created, NSS[q], QUEUES[q], dur, gpus);
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", NSS[q]);
    long code = req_retry(s, "POST", path, NULL, body);
    /* 409: an earlier try was created before its answer was lost. */
    if (code != 201 && code != 409)
        fail_msg("creating pod p-%ld: HTTP %ld", s->pods_created, code);
    s->pods_created++;
}

static void add_node(struct soak *s, const char *name)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"%s\",\"labels\":{"
             "\"kubernetes.io/hostname\":\"%s\",\"nvidia.com/gpu.product\":"
             "\"NVIDIA-H100-80GB-HBM3\",\"nvidia.com/gpu.count\":\"%d\"}},\"spec\":{},"
             "\"status\":{\"capacity\":{\"cpu\":\"64\",\"memory\":\"512Gi\",\"pods\":\"110\","
             "\"nvidia.com/gpu\":\"%d\"},\"allocatable\":{\"cpu\":\"64\",\"memory\":\"512Gi\","
             "\"pods\":\"110\",\"nvidia.com/gpu\":\"%d\"},\"conditions\":[{\"type\":\"Ready\","
             "\"status\":\"True\",\"reason\":\"KubeletReady\"}]}}",
             name, name, GPUS, GPUS, GPUS);
    long code = req_retry(s, "POST", "/api/v1/nodes", NULL, body);
    if (code != 201 && code != 409)
        fail_msg("adding node %s: HTTP %ld", name, code);
    s->nodes_added++;
}

/* Deletes (grace 0) the pods bound to node, or, with node NULL, the
 * finished pods (a Job controller's garbage collection). */
static long delete_pods(struct soak *s, const char *node)
{
    json_t *l = list_retry(s, "/api/v1/pods");
    long n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *nn = fair_fake_json_str(p, "spec.nodeName");
        const char *phase = fair_fake_json_str(p, "status.phase");
        bool hit = node ? (nn && !strcmp(nn, node))
                        : (phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed")));
        if (!hit)
            continue;
        char path[256];
        snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s",
                 fair_fake_json_str(p, "metadata.namespace"),
                 fair_fake_json_str(p, "metadata.name"));
        long code = req_retry(s, "DELETE", path, NULL, "{\"gracePeriodSeconds\":0}");
        if (code != 200 && code != 404)
            fail_msg("deleting %s: HTTP %ld", path, code);
        n++;
    }
    json_decref(l);
    return n;
}

/* Drains and deletes node: cordon, delete its pods, delete it, then delete
 * what the controller may have bound there before it saw the cordon. */
static void remove_node(struct soak *s, const char *node)
{
    char path[128];
    snprintf(path, sizeof path, "/api/v1/nodes/%s", node);
    req_retry(s, "PATCH", path, "application/merge-patch+json",
              "{\"spec\":{\"unschedulable\":true}}");
    nap(300);
    delete_pods(s, node);
    long code = req_retry(s, "DELETE", path, NULL, NULL);
    if (code != 200 && code != 404)
        fail_msg("deleting node %s: HTTP %ld", node, code);
    nap(300);
    delete_pods(s, node);
    s->nodes_removed++;
}

/* Records where every bound pod is; counts a pod seen on two nodes. */
static void observe_binds(struct soak *s)
{
    json_t *l = list(&s->fake, "/api/v1/pods");
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *nn = fair_fake_json_str(p, "spec.nodeName");
        const char *uid = fair_fake_json_str(p, "metadata.uid");
        if (!nn || !*nn || !uid)
            continue;
        long j;
        for (j = 0; j < s->nseen; j++)
            if (!strcmp(s->seen_name[j], uid))
                break;
        if (j == s->nseen) {
            if (s->nseen == MAX_PODS)
                continue;
            snprintf(s->seen_name[j], sizeof s->seen_name[j], "%s", uid);
            snprintf(s->seen_node[j], sizeof s->seen_node[j], "%s", nn);
            s->nseen++;
        } else if (strcmp(s->seen_node[j], nn) != 0) {
            fprintf(stderr, "soak: pod %s/%s moved from %s to %s\n",
                    fair_fake_json_str(p, "metadata.namespace"),
                    fair_fake_json_str(p, "metadata.name"), s->seen_node[j], nn);
            s->rebinds++;
        }
    }
    json_decref(l);
}

enum {
    F_DROP,
    F_COMPACT,
    F_500,
    F_ADD_NODE,
    F_CTL_KILL,
    F_API_RESTART,
    F_REMOVE_NODE,
    F_DROP_END,
    F_429,
    F_COUNT
};
static const char *const FAULT_NAMES[] = {"drop_watches", "compact_410", "http_500",
                                          "node_add",     "ctl_kill9",   "api_restart",
                                          "node_remove",  "watch_end",   "http_429"};

static void fault(struct soak *s, int f)
{
    char name[32];
    switch (f) {
    case F_DROP:
        fair_fake_drop_watches(&s->fake, 1);
        break;
    case F_COMPACT:
        /* Forget the history, then cut the watches: each comes back with
         * an old resourceVersion and gets 410 Gone, so relists. */
        fair_fake_compact(&s->fake);
        fair_fake_drop_watches(&s->fake, 1);
        break;
    case F_500:
        fair_fake_fail_next(&s->fake, 500, 4, NULL, "GET", 0);
        fair_fake_fail_next(&s->fake, 500, 3, "/apis/fairshare.dev", NULL, 0);
        fair_fake_fail_next(&s->fake, 503, 2, NULL, "POST", 0);
        break;
    case F_ADD_NODE:
        if (s->nextra < 16) {
            snprintf(name, sizeof name, "extra-%d", s->extra_next++);
            add_node(s, name);
            snprintf(s->extra[s->nextra++], sizeof s->extra[0], "%s", name);
        }
        break;
    case F_API_RESTART:
        /* The fake must exit cleanly too (under ASan: without leaks); its
         * shutdown leak of in-flight TLS connections is fixed. */
        if (fair_fake_stop(&s->fake) != 0) {
            s->fake_unclean++;
            fprintf(stderr, "soak: the fake API server did not exit cleanly; see %s\n",
                    s->fake.log_path);
        }
        assert_int_equal(s->fake_unclean, 0);
        assert_int_equal(fair_fake_restart(&s->fake), 0);
        break;
    case F_REMOVE_NODE:
        if (s->nextra > 0) {
            remove_node(s, s->extra[0]);
            memmove(s->extra[0], s->extra[1], sizeof s->extra[0] * (size_t)(s->nextra - 1));
            s->nextra--;
        } else {
            /* An original node: the fake makes it again at its next start. */
            remove_node(s, "node-0003");
        }
        break;
    case F_CTL_KILL:
        ctl_kill9(&s->ctl);
        assert_int_equal(ctl_start(&s->ctl, &s->fake, "soak"), 0);
        break;
    case F_DROP_END:
        fair_fake_drop_watches(&s->fake, 0);
        break;
    case F_429:
        fair_fake_fail_next(&s->fake, 429, 3, NULL, NULL, 1);
        break;
    }
    s->faults[f]++;
}

static double gpu_of(const json_t *st, const char *field)
{
    const char *v = json_string_value(json_object_get(json_object_get(st, field), "gpu"));
    return v ? strtod(v, NULL) : -1;
}

/* The server's live bound pods: GPUs per queue, count, and how many are on
 * a node the server does not have. Pending pods per queue too. */
struct census {
    double gpus[3];
    int pending[3];
    int bound, orphans;
};

static int queue_index(const char *q)
{
    for (int i = 0; i < 3; i++)
        if (q && !strcmp(q, QUEUES[i]))
            return i;
    return -1;
}

/* fair_fake_json_str splits at dots, which label keys contain: look those up whole. */
static const char *queue_label(const json_t *p)
{
    return json_string_value(json_object_get(
        json_object_get(json_object_get(p, "metadata"), "labels"), "fairshare.dev/queue"));
}

static bool take_census(struct soak *s, struct census *c)
{
    memset(c, 0, sizeof *c);
    json_t *pods = list(&s->fake, "/api/v1/pods");
    json_t *nodes = list(&s->fake, "/api/v1/nodes");
    if (!pods || !nodes) {
        json_decref(pods);
        json_decref(nodes);
        return false;
    }
    size_t i, j;
    json_t *p, *n;
    json_array_foreach(json_object_get(pods, "items"), i, p)
    {
        int q = queue_index(queue_label(p));
        const char *nn = fair_fake_json_str(p, "spec.nodeName");
        if (q < 0)
            continue;
        if (!nn || !*nn) {
            c->pending[q]++;
            continue;
        }
        if (!pod_live_bound(p))
            continue;
        bool found = false;
        json_array_foreach(json_object_get(nodes, "items"), j, n) found =
            found || !strcmp(fair_fake_json_str(n, "metadata.name") ?: "", nn);
        c->orphans += !found;
        c->bound++;
        /* Every pod here asks for whole GPUs in limits. */
        json_t *ctr = json_array_get(json_object_get(json_object_get(p, "spec"), "containers"), 0);
        const char *g = json_string_value(json_object_get(
            json_object_get(json_object_get(ctr, "resources"), "limits"), "nvidia.com/gpu"));
        c->gpus[q] += g ? strtod(g, NULL) : 0;
    }
    json_decref(pods);
    json_decref(nodes);
    return true;
}

static bool statuses_match(struct soak *s, struct census *c, double fair[3], double alloc[3])
{
    for (int q = 0; q < 3; q++)
        fair[q] = alloc[q] = -1;
    if (!take_census(s, c))
        return false;
    bool match = true;
    for (int q = 0; q < 3; q++) {
        json_t *st = queue_status(&s->fake, QUEUES[q]);
        fair[q] = gpu_of(st, "fairShare");
        alloc[q] = gpu_of(st, "allocated");
        json_decref(st);
        if (alloc[q] != c->gpus[q])
            match = false;
        if (c->pending[q] > 0 && alloc[q] != fair[q])
            match = false;
    }
    return match;
}

/* Cordons (or uncordons) every node. */
static void set_cordon(struct soak *s, bool on)
{
    json_t *l = list(&s->fake, "/api/v1/nodes");
    assert_non_null(l);
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(l, "items"), i, n)
    {
        char path[160];
        snprintf(path, sizeof path, "/api/v1/nodes/%s", fair_fake_json_str(n, "metadata.name"));
        long code = req_retry(s, "PATCH", path, "application/merge-patch+json",
                              on ? "{\"spec\":{\"unschedulable\":true}}"
                                 : "{\"spec\":{\"unschedulable\":null}}");
        if (code != 200)
            fail_msg("%s %s: HTTP %ld", on ? "cordoning" : "uncordoning", path, code);
    }
    json_decref(l);
}

/* Whether the controller has written a PodScheduled condition on each of
 * the pods created from index first on (more[q] per queue, in order). */
static bool all_told(struct soak *s, long first, const int more[3])
{
    long k = first;
    for (int q = 0; q < 3; q++)
        for (int i = 0; i < more[q]; i++, k++) {
            char name[32];
            snprintf(name, sizeof name, "p-%ld", k);
            char *why = pod_condition(&s->fake, NSS[q], name, "PodScheduled", NULL);
            bool told = why != NULL;
            free(why);
            if (!told)
                return false;
        }
    return true;
}

/* Open intervals of the ledger by `fairsharectl ledger check`; -1 when the
 * check fails. */
static long ledger_open_intervals(const struct ctl *c)
{
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/fairsharectl' ledger check --db '%s' 2>&1", FAIR_BIN_DIR,
             c->ledger);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    char line[512];
    long open_n = -1;
    bool ok = false;
    while (fgets(line, sizeof line, f)) {
        long total, o;
        if (!strncmp(line, "integrity: ok", 13))
            ok = true;
        if (sscanf(line, "intervals: %ld (%ld open)", &total, &o) == 2)
            open_n = o;
    }
    int st = pclose(f);
    return ok && st == 0 ? open_n : -1;
}

static int scheduled_twice(struct soak *s)
{
    json_t *l = list(&s->fake, "/api/v1/events");
    int dup = 0;
    size_t i, j;
    json_t *e, *e2;
    json_array_foreach(json_object_get(l, "items"), i, e)
    {
        if (strcmp(fair_fake_json_str(e, "reason") ?: "", "Scheduled"))
            continue;
        json_t *cnt = json_object_get(e, "count");
        if (json_is_integer(cnt) && json_integer_value(cnt) > 1)
            dup++;
        const char *uid = fair_fake_json_str(e, "involvedObject.uid");
        json_array_foreach(json_object_get(l, "items"), j, e2)
        {
            if (j <= i || strcmp(fair_fake_json_str(e2, "reason") ?: "", "Scheduled"))
                continue;
            const char *uid2 = fair_fake_json_str(e2, "involvedObject.uid");
            if (uid && uid2 && !strcmp(uid, uid2))
                dup++;
        }
    }
    json_decref(l);
    return dup;
}

/* Whether the log at path holds a sanitizer report; leak reports count
 * only when leaks is set. */
static bool log_has_sanitizer_report(const char *path, bool leaks)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    char line[1024];
    bool hit = false;
    while (fgets(line, sizeof line, f))
        if (strstr(line, "ERROR: AddressSanitizer") || strstr(line, "runtime error:") ||
            (leaks && (strstr(line, "LeakSanitizer") || strstr(line, "leaked in")))) {
            fprintf(stderr, "soak: %s: %s", path, line);
            hit = true;
        }
    fclose(f);
    return hit;
}

/* A failed assertion leaves test_soak() by longjmp: the controller must
 * not outlive the test (the fake has PR_SET_PDEATHSIG, the controller
 * started by test_controller_common.h has not). */
static struct soak *current;

static void kill_controller(void)
{
    if (current && current->ctl.pid)
        ctl_kill9(&current->ctl);
}

static void test_soak(void **state)
{
    (void)state;
    struct soak *s = calloc(1, sizeof *s);
    assert_non_null(s);
    current = s;
    atexit(kill_controller);
    s->seen_name = calloc(MAX_PODS, sizeof *s->seen_name);
    s->seen_node = calloc(MAX_PODS, sizeof *s->seen_node);
    assert_non_null(s->seen_name);
    assert_non_null(s->seen_node);
    const char *env = getenv("SOAK_SECONDS");
    long seconds = env ? strtol(env, NULL, 10) : 30;
    if (seconds < 5)
        seconds = 5;
    s->rnd = env && getenv("SOAK_SEED") ? strtoull(getenv("SOAK_SEED"), NULL, 10) : 1;

    struct fair_fake_opts o = {.nodes = NODES,
                               .gpus_per_node = GPUS,
                               .kubelet = 1,
                               .kubelet_delay_ms = 100,
                               .grace_seconds = 1,
                               .persist_ms = 500};
    assert_int_equal(fair_fake_start(&s->fake, &o), 0);
    const char *ns[] = {"team-a", "team-b", "team-c", NULL};
    mk_namespaces(&s->fake, ns);
    mk_project(&s->fake, "a", "8", "[\"team-a\"]", NULL);
    mk_project(&s->fake, "b", "8", "[\"team-b\"]", NULL);
    mk_project(&s->fake, "c", "4", "[\"team-c\"]", NULL);
    mk_queue(&s->fake, "qa", "a", "8", 1);
    mk_queue(&s->fake, "qb", "b", "8", 1);
    mk_queue(&s->fake, "qc", "c", "4", 1);
    assert_int_equal(ctl_start(&s->ctl, &s->fake, "soak"), 0);
    if (!WAIT_UNTIL(ctl_ready(&s->ctl), WAIT_MS)) {
        ctl_dump_log(&s->ctl, 40);
        fail_msg("controller not ready");
    }

    /* Churn. */
    long long t0 = now_ms(), end = t0 + seconds * 1000;
    /* Every fault at least once in the churn time, at most one per 3 s. */
    long long fault_every = (seconds * 1000 - 3000) / F_COUNT;
    fault_every = fault_every > 3000 ? 3000 : fault_every < 500 ? 500 : fault_every;
    long long next_fault = t0 + 2000, next_gc = t0 + 5000;
    int f = 0;
    while (now_ms() < end) {
        int q = (int)rnd(s, 3);
        create_pod(s, q, 1 + (int)rnd(s, 2), 1 + (int)rnd(s, 5));
        if (now_ms() >= next_fault) {
            fault(s, f);
            f = (f + 1) % F_COUNT;
            next_fault = now_ms() + fault_every;
        }
        if (now_ms() >= next_gc) {
            observe_binds(s);
            s->pods_gc += delete_pods(s, NULL);
            next_gc = now_ms() + 5000;
        }
        nap(100 + rnd(s, 150));
    }
    long long churn_ms = now_ms() - t0;

    /* Churn stops: faults off, the node set back to the first four (so the
     * fair shares are known), the controller alive. */
    fair_fake_reset_faults(&s->fake);
    while (s->nextra > 0)
        fault(s, F_REMOVE_NODE);
    json_t *n3 = list_retry(s, "/api/v1/nodes/node-0003");
    if (!n3)
        add_node(s, "node-0003");
    json_decref(n3);
    if (!ctl_alive(&s->ctl)) {
        ctl_dump_log(&s->ctl, 60);
        fail_msg("the controller died during churn");
    }
    /* Every queue wants more than its share: 14 + 14 + 10 long pods on
     * 32 GPUs. The nodes are cordoned until the controller has seen all of
     * them: the engine reclaims only up to a queue's guarantee, so a queue
     * that bound more than its fair share while it was the only one asking
     * (qa's 14 pods are created first) would keep it, and the fair shares
     * below would depend on timing. */
    set_cordon(s, true);
    const int more[3] = {14, 14, 10};
    long first_final = s->pods_created;
    for (int q = 0; q < 3; q++)
        for (int i = 0; i < more[q]; i++)
            create_pod(s, q, 1, 0);
    if (!WAIT_UNTIL(all_told(s, first_final, more), WAIT_MS)) {
        ctl_dump_log(&s->ctl, 60);
        fail_msg("the controller did not report on the final pods");
    }
    set_cordon(s, false);

    struct census c;
    double fair[3], alloc[3];
    long long t_settle = now_ms();
    bool settled = WAIT_UNTIL(statuses_match(s, &c, fair, alloc) && c.bound >= 32, FINAL_WAIT_MS);
    long long settle_ms = now_ms() - t_settle;
    observe_binds(s);
    if (!settled) {
        ctl_dump_log(&s->ctl, 80);
        fail_msg("not settled: allocated %g/%g/%g, fairShare %g/%g/%g, server %g/%g/%g, "
                 "pending %d/%d/%d",
                 alloc[0], alloc[1], alloc[2], fair[0], fair[1], fair[2], c.gpus[0], c.gpus[1],
                 c.gpus[2], c.pending[0], c.pending[1], c.pending[2]);
    }
    /* The engine's shares: guarantee plus a third each of the 12 spare. */
    assert_true(fair[0] == 12 && fair[1] == 12 && fair[2] == 8);
    assert_int_equal(c.orphans, 0);
    assert_int_equal(c.bound, 32);
    assert_int_equal(s->rebinds, 0);
    int dup = scheduled_twice(s);
    assert_int_equal(dup, 0);
    long open_n = -1;
    bool ledger_ok = WAIT_UNTIL((open_n = ledger_open_intervals(&s->ctl)) == c.bound, WAIT_MS);
    if (!ledger_ok)
        fail_msg("ledger: %ld open intervals, %d live bound pods", open_n, c.bound);

    printf("soak: seconds=%lld pods_created=%ld pods_gc=%ld bound_seen=%ld request_retries=%ld "
           "nodes_added=%ld nodes_removed=%ld",
           churn_ms / 1000, s->pods_created, s->pods_gc, s->nseen, s->create_retries,
           s->nodes_added, s->nodes_removed);
    for (int i = 0; i < F_COUNT; i++)
        printf(" %s=%ld", FAULT_NAMES[i], s->faults[i]);
    /* Since the controller's last restart (kill -9 resets its counters). */
    double conflicts = ctl_metric(&s->ctl, "fairshare_bind_conflicts_total");
    printf(" settle_ms=%lld final_alloc=%g/%g/%g fair=%g/%g/%g ledger_open=%ld rebinds=%ld "
           "dup_scheduled=%d bind_conflicts_last_run=%g\n",
           settle_ms, alloc[0], alloc[1], alloc[2], fair[0], fair[1], fair[2], open_n, s->rebinds,
           dup, conflicts);
    fflush(stdout);

    char log[400];
    snprintf(log, sizeof log, "%s", s->ctl.log);
    int rc = ctl_stop(&s->ctl);
    if (rc != 0)
        ctl_dump_log(&s->ctl, 60);
    assert_int_equal(rc, 0); /* a clean exit; under ASan, no leaks */
    assert_false(log_has_sanitizer_report(log, true));
    /* The fake: no memory error, no UB and a clean exit (no leak). */
    assert_false(log_has_sanitizer_report(s->fake.log_path, false));
    if (fair_fake_stop(&s->fake) != 0)
        s->fake_unclean++;
    assert_int_equal(s->fake_unclean, 0);
    fair_fake_release(&s->fake);
    free(s->seen_name);
    free(s->seen_node);
    current = NULL;
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_soak)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
