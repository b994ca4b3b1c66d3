/* The controller's pure helpers: Queue/Project status documents (written
 * only on change, rate-limited, transition times kept), Prometheus text,
 * per-pod memory of operations in flight, the string index, and pending
 * reasons in words. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "base/alloc.h"
#include "base/clock.h"
#include "base/version.h"
#include "ctl/index.h"
#include "ctl/metrics.h"
#include "ctl/podmem.h"
#include "ctl/reasons.h"
#include "ctl/status.h"

static struct fair_ctl_status_input input(struct fair_share_status *fig, int64_t mono)
{
    struct fair_ctl_status_input in = {.kind = "Queue",
                                       .name = "qa",
                                       .generation = 3,
                                       .figures = fig,
                                       .now_ms = 1795464000000 + mono,
                                       .mono_ms = mono,
                                       .min_interval_ms = 1000};
    in.conds[FAIR_CTL_COND_READY] = (struct fair_ctl_cond){true, "Active", "scheduling"};
    in.conds[FAIR_CTL_COND_INVALID] = (struct fair_ctl_cond){false, "Valid", ""};
    in.conds[FAIR_CTL_COND_OVERCOMMITTED] = (struct fair_ctl_cond){false, "WithinParent", ""};
    return in;
}

/* A Project's status carries the team reports group it by, so that the
 * Team column of kubectl get projects shows it even when spec.team is
 * left to its default (the project's name). */
static void test_project_status_has_team(void **state)
{
    (void)state;
    struct fair_ctl_status_table t;
    fair_ctl_status_table_init(&t);
    struct fair_share_status fig = {0};
    char *patch = NULL;
    struct fair_ctl_status_input in = input(&fig, 0);
    in.kind = "Project";
    in.name = "vision";
    in.team = "vision";
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    json_t *doc = json_loads(patch, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(json_object_get(doc, "status"), "team")),
                        "vision");
    json_decref(doc);
    fair_free(patch);
    fair_ctl_status_table_release(&t);
}

/* issue 15: status.lendable, status.gpuModels per pool, and a pool that
 * is gone is sent as null once (the status is a merge patch). */
static void test_status_gpu_models(void **state)
{
    (void)state;
    struct fair_ctl_status_table t;
    fair_ctl_status_table_init(&t);
    struct fair_share_status fig = {0};
    fig.guaranteed.v[FAIR_RES_GPU] = 8000;
    fig.lendable.v[FAIR_RES_GPU] = 4000;
    struct fair_model_status ms[2] = {{.guaranteed = 0, .allocated = 2000},
                                      {.guaranteed = 8000, .lendable = 4000, .fair_share = 8000}};
    const char *const names[2] = {"A100", "NVIDIA-H100-80GB-HBM3"};
    struct fair_ctl_status_input in = input(&fig, 0);
    in.models = ms;
    in.model_names = names;
    in.nmodels = 2;
    char *patch = NULL;
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    json_t *doc = json_loads(patch, 0, NULL);
    json_t *st = json_object_get(doc, "status");
    assert_string_equal(json_string_value(json_object_get(json_object_get(st, "lendable"), "gpu")),
                        "4");
    json_t *h = json_object_get(json_object_get(st, "gpuModels"), "NVIDIA-H100-80GB-HBM3");
    assert_string_equal(json_string_value(json_object_get(h, "guaranteed")), "8");
    assert_string_equal(json_string_value(json_object_get(h, "lendable")), "4");
    assert_string_equal(json_string_value(json_object_get(h, "fairShare")), "8");
    json_t *a = json_object_get(json_object_get(st, "gpuModels"), "A100");
    assert_string_equal(json_string_value(json_object_get(a, "allocated")), "2");
    json_decref(doc);
    free(patch);
    /* The A100 pool is gone: null once, then nothing more. */
    in = input(&fig, 5000);
    in.models = &ms[1];
    in.model_names = &names[1];
    in.nmodels = 1;
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    doc = json_loads(patch, 0, NULL);
    json_t *gm = json_object_get(json_object_get(doc, "status"), "gpuModels");
    assert_true(json_is_null(json_object_get(gm, "A100")));
    assert_non_null(json_object_get(gm, "NVIDIA-H100-80GB-HBM3"));
    json_decref(doc);
    free(patch);
    in = input(&fig, 10000);
    in.models = &ms[1];
    in.model_names = &names[1];
    in.nmodels = 1;
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch); /* the null entry dropped from the text */
    doc = json_loads(patch, 0, NULL);
    gm = json_object_get(json_object_get(doc, "status"), "gpuModels");
    assert_null(json_object_get(gm, "A100"));
    json_decref(doc);
    free(patch);
    in = input(&fig, 15000);
    in.models = &ms[1];
    in.model_names = &names[1];
    in.nmodels = 1;
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_null(patch); /* unchanged */
    fair_ctl_status_table_release(&t);
}

static void test_status_written_on_change_only(void **state)
{
    (void)state;
    struct fair_ctl_status_table t;
    fair_ctl_status_table_init(&t);
    struct fair_share_status fig = {0};
    fig.guaranteed.v[FAIR_RES_GPU] = 8000;
    fig.allocated.v[FAIR_RES_GPU] = 2500;
    fig.demand.v[FAIR_RES_GPU] = 4500;
    fig.fair_share.v[FAIR_RES_GPU] = 8000;
    fig.allocated.v[FAIR_RES_MEM] = 16LL << 30;
    fig.allocated.v[FAIR_RES_CPU] = 500;
    fig.pending_pods = 2;
    char *patch = NULL;
    struct fair_ctl_status_input in = input(&fig, 0);
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    json_error_t je;
    json_t *doc = json_loads(patch, 0, &je);
    assert_non_null(doc);
    json_t *st = json_object_get(doc, "status");
    assert_string_equal(json_string_value(json_object_get(json_object_get(st, "allocated"), "gpu")),
                        "2.5");
    assert_string_equal(json_string_value(json_object_get(json_object_get(st, "allocated"), "cpu")),
                        "0.5");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(st, "allocated"), "memory")), "16Gi");
    json_t *pend = json_object_get(st, "pending");
    assert_int_equal(json_integer_value(json_object_get(pend, "pods")), 2);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(pend, "resources"), "gpu")), "2");
    assert_int_equal(json_integer_value(json_object_get(st, "observedGeneration")), 3);
    assert_null(json_object_get(st, "team")); /* a Queue has none */
    json_t *conds = json_object_get(st, "conditions");
    assert_int_equal(json_array_size(conds), 3);
    const char *t0 =
        json_string_value(json_object_get(json_array_get(conds, 1), "lastTransitionTime"));
    char first_time[40];
    snprintf(first_time, sizeof first_time, "%s", t0);
    json_decref(doc);
    fair_free(patch);

    /* Same figures later: nothing to write. */
    in = input(&fig, 500);
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_null(patch);
    /* A change within the interval waits; after it, it is written. */
    fig.allocated.v[FAIR_RES_GPU] = 3000;
    in = input(&fig, 800);
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_null(patch);
    in = input(&fig, 1200);
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    /* The Invalid condition did not change: same transition time. */
    doc = json_loads(patch, 0, &je);
    conds = json_object_get(json_object_get(doc, "status"), "conditions");
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(conds, 1), "lastTransitionTime")),
        first_time);
    json_decref(doc);
    fair_free(patch);
    /* It turns invalid: new transition time, message carried. */
    in = input(NULL, 600000);
    in.conds[FAIR_CTL_COND_READY] = (struct fair_ctl_cond){false, "Invalid", "x"};
    in.conds[FAIR_CTL_COND_INVALID] =
        (struct fair_ctl_cond){true, "InvalidSpec", "project nope does not exist"};
    in.spec_guaranteed.v[FAIR_RES_GPU] = 1000;
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    assert_non_null(strstr(patch, "\"message\":\"project nope does not exist\""));
    assert_non_null(strstr(patch, "\"guaranteed\":{\"cpu\":\"0\",\"gpu\":\"1\""));
    doc = json_loads(patch, 0, &je);
    conds = json_object_get(json_object_get(doc, "status"), "conditions");
    /* Invalid changed status: a new time; Overcommitted did not. */
    assert_string_not_equal(
        json_string_value(json_object_get(json_array_get(conds, 1), "lastTransitionTime")),
        first_time);
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(conds, 2), "lastTransitionTime")),
        first_time);
    json_decref(doc);
    fair_free(patch);
    /* A failed write is written again next time. */
    fair_ctl_status_failed(&t, "Queue", "qa");
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    fair_free(patch);
    fair_ctl_status_forget(&t, "Queue", "qa");
    assert_int_equal(t.n, 0);
    fair_ctl_status_table_release(&t);
}

/* A new process (an empty table) keeps the lastTransitionTime the server
 * holds for a condition whose status is unchanged, and takes now for one
 * that changed, one the server does not have, or one stamped in the
 * future. */
static void test_status_transition_kept_across_restart(void **state)
{
    (void)state;
    struct fair_ctl_status_table t;
    fair_ctl_status_table_init(&t);
    struct fair_share_status fig = {0};
    struct fair_ctl_status_input in = input(&fig, 0);
    const struct fair_kcond seen[] = {
        {"Ready", true, 1700000000000},          /* unchanged: kept */
        {"Invalid", true, 1700000000000},        /* now False: now */
        {"Overcommitted", false, 1900000000000}, /* in the future: now */
    };
    in.seen = seen;
    in.nseen = 3;
    char *patch = NULL;
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    json_t *doc = json_loads(patch, 0, NULL);
    json_t *conds = json_object_get(json_object_get(doc, "status"), "conditions");
    char kept[40], now[40];
    fair_time_format_rfc3339(1700000000000, kept, sizeof kept);
    fair_time_format_rfc3339(in.now_ms, now, sizeof now);
    const char *want[] = {kept, now, now};
    for (size_t i = 0; i < 3; i++)
        assert_string_equal(
            json_string_value(json_object_get(json_array_get(conds, i), "lastTransitionTime")),
            want[i]);
    json_decref(doc);
    fair_free(patch);
    /* Later writes keep it too, while Ready holds. */
    fig.allocated.v[FAIR_RES_GPU] = 1000;
    in = input(&fig, 5000);
    assert_int_equal(fair_ctl_status_update(&t, &in, &patch), 0);
    assert_non_null(patch);
    assert_non_null(strstr(patch, kept));
    fair_free(patch);
    fair_ctl_status_table_release(&t);
}

static void test_metrics_text(void **state)
{
    (void)state;
    struct fair_ctl_metrics m;
    fair_ctl_metrics_init(&m);
    struct fair_share_status f[2] = {0};
    f[0].guaranteed.v[FAIR_RES_GPU] = 8000;
    f[0].allocated.v[FAIR_RES_GPU] = 2500;
    f[0].demand.v[FAIR_RES_GPU] = 3500;
    f[0].pending_pods = 1;
    f[1].fair_share.v[FAIR_RES_GPU] = 4000;
    const char *q[] = {"qa", "qb"}, *p[] = {"a", "b"};
    assert_int_equal(fair_ctl_metrics_set_queues(&m, q, p, f, 2), 0);
    fair_ctl_metrics_observe_cycle(&m, 0.0004);
    fair_ctl_metrics_observe_cycle(&m, 0.03);
    fair_ctl_metrics_api_error(&m, 429);
    fair_ctl_metrics_api_error(&m, 429);
    fair_ctl_metrics_api_error(&m, 0);
    m.preemptions_reclaim = 8;
    struct fair_buf b;
    fair_buf_init(&b, 1 << 20);
    assert_int_equal(fair_ctl_metrics_render(&m, &b), 0);
    const char *s = fair_buf_str(&b);
    const char *want[] = {"fairshare_queue_guaranteed_gpus{queue=\"qa\",project=\"a\"} 8\n",
                          "fairshare_queue_allocated_gpus{queue=\"qa\",project=\"a\"} 2.5\n",
                          "fairshare_queue_pending_gpus{queue=\"qa\",project=\"a\"} 1\n",
                          "fairshare_queue_pending_pods{queue=\"qa\",project=\"a\"} 1\n",
                          "fairshare_queue_fair_share_gpus{queue=\"qb\",project=\"b\"} 4\n",
                          "fairshare_preemptions_total{reason=\"reclaim\"} 8\n",
                          "fairshare_api_errors_total{code=\"429\"} 2\n",
                          "fairshare_api_errors_total{code=\"0\"} 1\n",
                          "fairshare_cycle_duration_seconds_bucket{le=\"0.001\"} 1\n",
                          "fairshare_cycle_duration_seconds_bucket{le=\"0.025\"} 1\n",
                          "fairshare_cycle_duration_seconds_bucket{le=\"0.05\"} 2\n",
                          "fairshare_cycle_duration_seconds_bucket{le=\"+Inf\"} 2\n",
                          "fairshare_cycle_duration_seconds_count 2\n",
                          "# TYPE fairshare_cycle_duration_seconds histogram\n",
                          "# TYPE fairshare_build_info gauge\n",
                          NULL};
    for (int i = 0; want[i]; i++)
        if (!strstr(s, want[i]))
            fail_msg("metrics lack: %s", want[i]);
    /* fairshare_build_info: one series, value 1, the build's own strings. */
    char info[256];
    snprintf(info, sizeof info,
             "\nfairshare_build_info{version=\"%s\",commit=\"%s\",build_date=\"%s\"} 1\n",
             fair_version, fair_git_commit, fair_build_date);
    assert_non_null(strstr(s, info));
    assert_null(strstr(strstr(s, info) + strlen(info), "fairshare_build_info{"));
    fair_buf_release(&b);
    fair_ctl_metrics_release(&m);
}

static void test_podmem(void **state)
{
    (void)state;
    struct fair_ctl_podmem m;
    fair_ctl_podmem_init(&m);
    assert_int_equal(fair_ctl_podmem_begin(&m, "u1", FAIR_CTL_OP_BINDING, "n1", 0x3, 100), 0);
    assert_int_equal(fair_ctl_podmem_begin(&m, "u1", FAIR_CTL_OP_EVICTING, NULL, 0, 101),
                     FAIR_EBUSY);
    assert_int_equal(fair_ctl_podmem_begin(&m, "u2", FAIR_CTL_OP_EVICTING, NULL, 0, 200), 0);
    assert_int_equal(m.inflight, 2);
    struct fair_ctl_podmem_entry *e = fair_ctl_podmem_get(&m, "u1");
    assert_string_equal(e->op_node, "n1");
    assert_int_equal(e->op_devices, 0x3);
    assert_int_equal(fair_ctl_podmem_expire(&m, 150, 100, 1000), 0);
    assert_int_equal(fair_ctl_podmem_expire(&m, 200, 100, 1000), 1); /* u1 is 100 ms old */
    assert_int_equal(fair_ctl_podmem_get(&m, "u1")->op, FAIR_CTL_OP_NONE);
    assert_int_equal(m.inflight, 1);
    for (int i = 0; i < 1000; i++) {
        char uid[16];
        snprintf(uid, sizeof uid, "x%d", i);
        assert_non_null(fair_ctl_podmem_ensure(&m, uid));
    }
    fair_ctl_podmem_remove(&m, "u2");
    assert_int_equal(m.inflight, 0);
    assert_null(fair_ctl_podmem_get(&m, "u2"));
    for (int i = 0; i < 1000; i += 2) {
        char uid[16];
        snprintf(uid, sizeof uid, "x%d", i);
        fair_ctl_podmem_remove(&m, uid);
    }
    assert_int_equal(m.n, 501);
    assert_non_null(fair_ctl_podmem_get(&m, "x999"));
    assert_null(fair_ctl_podmem_get(&m, "x998"));
    fair_ctl_podmem_begin(&m, "x1", FAIR_CTL_OP_BINDING, "n", 1, 0);
    fair_ctl_podmem_clear_ops(&m);
    assert_int_equal(m.inflight, 0);
    fair_ctl_podmem_release(&m);
}

static void test_index(void **state)
{
    (void)state;
    struct fair_ctl_index ix;
    fair_ctl_index_init(&ix);
    assert_int_equal(fair_ctl_index_get(&ix, "a"), -1);
    static char keys[5000][12];
    for (int i = 0; i < 5000; i++) {
        snprintf(keys[i], sizeof keys[i], "k%d", i);
        assert_int_equal(fair_ctl_index_put(&ix, keys[i], i), 0);
    }
    for (int i = 0; i < 5000; i += 3)
        assert_int_equal(fair_ctl_index_del(&ix, keys[i]), 1);
    assert_int_equal(fair_ctl_index_del(&ix, "k0"), 0);
    for (int i = 0; i < 5000; i++)
        assert_int_equal(fair_ctl_index_get(&ix, keys[i]), i % 3 == 0 ? -1 : i);
    assert_int_equal(fair_ctl_index_put(&ix, keys[1], 77), 0);
    assert_int_equal(fair_ctl_index_get(&ix, "k1"), 77);
    assert_int_equal(ix.count, 5000 - 1667);
    fair_ctl_index_release(&ix);
}

static void test_reasons(void **state)
{
    (void)state;
    assert_string_equal(fair_ctl_why_reason(FAIR_PENDING_OVER_LIMIT), "OverLimit");
    assert_string_equal(fair_ctl_why_reason(FAIR_PENDING_WAITING_RECLAIM), "WaitingForReclaim");
    assert_string_equal(
        fair_ctl_why_reason(FAIR_CTL_WHY_CTL + FAIR_CTL_REASON_NAMESPACE_NOT_ALLOWED),
        "NamespaceNotAllowed");
    /* A pending pod of queue qa (limit 4, holding 4) over its limit. */
    struct fair_queue q = {
        .q = {.name = "qa", .over_quota_weight = 1}, .project_name = "a", .project = 0};
    struct fair_project p = {.q = {.name = "a", .over_quota_weight = 1}};
    for (int r = 0; r < FAIR_RES_COUNT; r++)
        q.q.limit.v[r] = p.q.limit.v[r] = FAIR_UNLIMITED;
    q.q.limit.v[FAIR_RES_GPU] = 4000;
    struct fair_pod pod = {.uid = "u",
                           .namespace_ = "ns",
                           .name = "p",
                           .queue = 0,
                           .request = {{2000, 0, 0}},
                           .node = -1};
    struct fair_ctl_snapshot s = {0};
    s.snap.queues = &q;
    s.snap.nqueues = 1;
    s.snap.projects = &p;
    s.snap.nprojects = 1;
    s.snap.pods = &pod;
    s.snap.npods = 1;
    struct fair_share_status qs = {0}, ps = {0};
    qs.allocated_after.v[FAIR_RES_GPU] = 4000;
    uint8_t why = FAIR_PENDING_OVER_LIMIT;
    struct fair_result r = {.queues = &qs,
                            .nqueues = 1,
                            .projects = &ps,
                            .nprojects = 1,
                            .pending_reasons = &why,
                            .npods = 1};
    char msg[512];
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_string_equal(msg, "over the limit: queue qa may use at most 4 GPUs and has 4; this pod "
                             "asks for 2");
    /* No room, but the queue is owed its guarantee and victims terminate. */
    why = FAIR_PENDING_NO_NODE_FITS;
    q.q.guaranteed.v[FAIR_RES_GPU] = 8000;
    qs.guaranteed.v[FAIR_RES_GPU] = 8000;
    /* Within the guarantee, nothing terminating, no queue above its fair
     * share: a new node would let it run, so autoscalers are told. */
    assert_int_equal(fair_ctl_effective_why(&s, &r, 0), FAIR_CTL_WHY_UNSCHEDULABLE);
    assert_string_equal(fair_ctl_why_reason(FAIR_CTL_WHY_UNSCHEDULABLE), "Unschedulable");
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    if (!strstr(msg, "no node fits: no node has 2 free GPUs"))
        fail_msg("message: %s", msg);
    /* Above both its guarantee and its fair share: quota holds it back. */
    q.q.guaranteed.v[FAIR_RES_GPU] = 4000;
    qs.guaranteed.v[FAIR_RES_GPU] = 4000;
    qs.fair_share.v[FAIR_RES_GPU] = 5000;
    assert_int_equal(fair_ctl_effective_why(&s, &r, 0), FAIR_PENDING_NO_NODE_FITS);
    /* Within its fair share: a new node would help... */
    qs.fair_share.v[FAIR_RES_GPU] = 6000;
    assert_int_equal(fair_ctl_effective_why(&s, &r, 0), FAIR_CTL_WHY_UNSCHEDULABLE);
    /* ...unless a queue above its own fair share holds the room. */
    struct fair_share_status two[2];
    memset(two, 0, sizeof two);
    two[0] = qs;
    two[1].allocated_after.v[FAIR_RES_GPU] = 3000;
    two[1].fair_share.v[FAIR_RES_GPU] = 1000;
    r.queues = two;
    r.nqueues = 2;
    assert_int_equal(fair_ctl_effective_why(&s, &r, 0), FAIR_PENDING_NO_NODE_FITS);
    r.queues = &qs;
    r.nqueues = 1;
    qs.fair_share.v[FAIR_RES_GPU] = 0;
    q.q.guaranteed.v[FAIR_RES_GPU] = 8000;
    qs.guaranteed.v[FAIR_RES_GPU] = 8000;
    s.nterminating = 1;
    assert_int_equal(fair_ctl_effective_why(&s, &r, 0), FAIR_PENDING_WAITING_RECLAIM);
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_non_null(strstr(msg, "waiting for reclaim: pods of queues that borrowed GPUs are "
                                "terminating"));
    /* Held back by the bound on evictions, not by the fair share. */
    why = FAIR_PENDING_FAIR_SHARE;
    s.nterminating = 0;
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_non_null(strstr(msg, "at fair share: queue qa"));
    s.snap.max_evictions = 3;
    pod.evictions = 3;
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_non_null(strstr(msg, "evicted 3 times (reclaim.maxEvictions is 3)"));
    assert_non_null(strstr(msg, "within queue qa's guarantee (8 GPUs, 4 in use)"));
    /* Held back by reclaim.lendMaxRuntime: 4 + 2 GPUs would borrow. */
    pod.evictions = 0;
    qs.guaranteed.v[FAIR_RES_GPU] = 4000;
    s.snap.lend_max_runtime_ms = 3600000;
    pod.max_runtime_ms = 7200000;
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_non_null(strstr(msg, "not lent GPUs: reclaim.lendMaxRuntime is 3600s and this pod "
                                "declares a longer spec.activeDeadlineSeconds"));
    pod.max_runtime_ms = 0;
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_non_null(strstr(msg, "declares no spec.activeDeadlineSeconds"));
    /* Declared short enough: the fair share held it back. */
    pod.max_runtime_ms = 1800000;
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_non_null(strstr(msg, "at fair share: queue qa"));
    /* Pass 2 kept off the idle guarantee of another queue's lending
     * limit: the message names the keeper (queue qk: guaranteed 8,
     * lendable 2, 1 in use), not qa itself. */
    s.snap.lend_max_runtime_ms = 0;
    why = FAIR_PENDING_LENDING_KEPT;
    struct fair_queue qq[2] = {q, q};
    qq[1].q.name = "qk";
    s.snap.queues = qq;
    s.snap.nqueues = 2;
    two[0] = qs;
    memset(&two[1], 0, sizeof two[1]);
    two[1].guaranteed.v[FAIR_RES_GPU] = 8000;
    two[1].lendable.v[FAIR_RES_GPU] = 2000;
    two[1].allocated_after.v[FAIR_RES_GPU] = 1000;
    r.queues = two;
    r.nqueues = 2;
    assert_string_equal(fair_ctl_why_reason(FAIR_PENDING_LENDING_KEPT), "LendingLimit");
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    if (!strstr(msg, "lending limit: queue qa has 4 GPUs in use and its fair share is 0, and "
                     "the GPUs free now are kept for queue qk: ") ||
        strstr(msg, "queue qa,"))
        fail_msg("message: %s", msg);
    /* Once qk holds its keep, nothing names it. */
    two[1].allocated_after.v[FAIR_RES_GPU] = 6000;
    fair_ctl_pending_message(&s, &r, 0, msg, sizeof msg);
    assert_non_null(strstr(msg, "kept for the guarantee of a GPU model pool"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_status_written_on_change_only),
        cmocka_unit_test(test_status_transition_kept_across_restart),
        cmocka_unit_test(test_status_gpu_models),
        cmocka_unit_test(test_project_status_has_team),
        cmocka_unit_test(test_metrics_text),
        cmocka_unit_test(test_podmem),
        cmocka_unit_test(test_index),
        cmocka_unit_test(test_reasons),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
