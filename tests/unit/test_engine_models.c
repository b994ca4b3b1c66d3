/* GPU model pools and lending limits (docs/engine.md, "GPU model pools",
 * "Lending limit"): per-model guarantees, limits and fair shares; pods
 * that name no model kept off room that others' named pods are owed; a
 * guarantee of one model only; the part of a guarantee that may not be
 * lent stays free for its owner. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "test_engine_fixture.h"

#define G 1000

/* Two A100 nodes and two H100 nodes of 8 GPUs each. */
static void two_pools(struct ts *t)
{
    ts_node(t, "a100-0", 8);
    ts_node(t, "a100-1", 8);
    int h0 = ts_node(t, "h100-0", 8), h1 = ts_node(t, "h100-1", 8);
    t->nodes[h0].gpu_model = "H100";
    t->nodes[h1].gpu_model = "H100";
}

static void set_models(struct ts *t, int queue, struct fair_model_quota *m, size_t n)
{
    struct fair_queue *q = &t->queues[queue];
    q->q.models = m;
    q->q.nmodels = n;
    t->projects[q->project].q.models = m;
    t->projects[q->project].q.nmodels = n;
}

static int64_t on_model(const struct ts *t, int q, const char *model)
{
    int64_t a = 0;
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *x = &t->res.actions[i];
        if (x->kind == FAIR_ACTION_BIND && t->pods[x->pod].queue == q &&
            strcmp(t->nodes[x->node].gpu_model, model) == 0)
            a += t->pods[x->pod].request.v[FAIR_RES_GPU];
    }
    return a;
}

static int model_index(const struct ts *t, const char *model)
{
    for (size_t m = 0; m < t->res.nmodels; m++)
        if (strcmp(t->res.models[m], model) == 0)
            return (int)m;
    fail_msg("no pool %s", model);
    return -1;
}

static const struct fair_model_status *qmodel(const struct ts *t, int q, const char *model)
{
    return &t->res.queue_models[(size_t)q * t->res.nmodels + (size_t)model_index(t, model)];
}

/* Two teams guaranteed 8 H100 each, both asking for 16 H100: 8 each,
 * whoever comes first; the A100s stay free for them (nobody asks). */
static void test_model_guarantees_split_pool(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 8 * G, 1), y = ts_team(t, "y", 8 * G, 1);
    struct fair_model_quota mx[] = {{.model = "H100", .guaranteed = 8 * G}};
    struct fair_model_quota my[] = {{.model = "H100", .guaranteed = 8 * G}};
    set_models(t, x, mx, 1);
    set_models(t, y, my, 1);
    for (int i = 0; i < 16; i++) {
        t->pods[ts_pod(t, x, G)].gpu_model = "H100";
        t->pods[ts_pod(t, y, G)].gpu_model = "H100";
    }
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(on_model(t, x, "H100"), 8 * G);
    assert_int_equal(on_model(t, y, "H100"), 8 * G);
    assert_int_equal(on_model(t, x, "A100") + on_model(t, y, "A100"), 0);
    assert_int_equal(t->res.nmodels, 2);
    assert_string_equal(t->res.models[0], "A100");
    assert_string_equal(t->res.models[1], "H100");
    const struct fair_model_status *s = qmodel(t, x, "H100");
    assert_int_equal(s->capacity, 16 * G);
    assert_int_equal(s->guaranteed, 8 * G);
    assert_int_equal(s->fair_share, 8 * G);
    assert_int_equal(s->demand, 16 * G);
    assert_int_equal(t->res.cluster_models[1].guaranteed, 16 * G);
    ts_free(t);
}

/* A pod that names no model does not take room that another queue's
 * named pods are owed: y's unnamed pods fill the A100s, x (all of whose
 * guarantee is H100) gets every H100, in one cycle, without reclaim. */
static void test_unnamed_pods_avoid_owed_pool(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int y = ts_team(t, "y", 16 * G, 1); /* first by name order: no advantage */
    int x = ts_team(t, "x", 0, 1);
    struct fair_model_quota mx[] = {{.model = "H100", .guaranteed = 16 * G}};
    set_models(t, x, mx, 1);
    for (int i = 0; i < 16; i++)
        ts_pod(t, y, G); /* names no model */
    for (int i = 0; i < 16; i++)
        t->pods[ts_pod(t, x, G)].gpu_model = "H100";
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    assert_int_equal(on_model(t, y, "A100"), 16 * G);
    assert_int_equal(on_model(t, y, "H100"), 0);
    assert_int_equal(on_model(t, x, "H100"), 16 * G);
    /* The total guarantee is at least the models': x has 16. */
    assert_int_equal(t->res.queues[x].guaranteed.v[FAIR_RES_GPU], 16 * G);
    ts_free(t);
}

/* When the pool it could use is full and nobody is owed the other one, a
 * pod that names no model goes to the other pool. */
static void test_unnamed_pod_takes_free_pool(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 0, 1);
    struct fair_model_quota mx[] = {{.model = "H100", .guaranteed = 0}};
    set_models(t, x, mx, 1);
    for (int i = 0; i < 16; i++)
        ts_bound(t, x, G, i / 8, (uint64_t)1 << (i % 8), 0); /* A100s full */
    int p = ts_pod(t, x, 2 * G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(on_model(t, x, "H100"), 2 * G);
    assert_int_equal(t->res.pending_reasons[p], FAIR_PENDING_NONE);
    ts_free(t);
}

/* A guarantee of H100s only: no plain gpu guarantee, gpu/H100: 8. The
 * total guarantee is 8, the project's H100 guarantee 8; its pods that name
 * no model may run anywhere within the total (and borrow above it). */
static void test_guarantee_of_one_model_only(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 0, 1);
    struct fair_model_quota mx[] = {{.model = "H100", .guaranteed = 8 * G}};
    set_models(t, x, mx, 1);
    for (int i = 0; i < 4; i++)
        t->pods[ts_pod(t, x, G)].gpu_model = "H100";
    for (int i = 0; i < 4; i++)
        ts_pod(t, x, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.projects[0].guaranteed.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(t->res.project_models[model_index(t, "H100")].guaranteed, 8 * G);
    assert_int_equal(t->res.project_models[model_index(t, "A100")].guaranteed, 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 8);
    assert_true(on_model(t, x, "H100") >= 4 * G);
    ts_free(t);
}

/* Model limits: at most 4 H100 for x; its named pods above that wait
 * (OverLimit), its unnamed ones go to the A100s. */
static void test_model_limit(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 0, 1);
    struct fair_model_quota mx[] = {{.model = "H100", .limit = 4 * G, .has_limit = true}};
    set_models(t, x, mx, 1);
    int named[6];
    for (int i = 0; i < 6; i++) {
        named[i] = ts_pod(t, x, G);
        t->pods[named[i]].gpu_model = "H100";
    }
    for (int i = 0; i < 6; i++)
        ts_pod(t, x, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(on_model(t, x, "H100"), 4 * G);
    assert_int_equal(on_model(t, x, "A100"), 6 * G);
    int over = 0;
    for (int i = 0; i < 6; i++)
        over += t->res.pending_reasons[named[i]] == FAIR_PENDING_OVER_LIMIT;
    assert_int_equal(over, 2);
    ts_free(t);
}

/* Guarantees of a model above its pool: scaled, and said. */
static void test_model_overcommit(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 0, 1), y = ts_team(t, "y", 0, 1);
    struct fair_model_quota mx[] = {{.model = "H100", .guaranteed = 16 * G}};
    struct fair_model_quota my[] = {{.model = "H100", .guaranteed = 16 * G}};
    set_models(t, x, mx, 1);
    set_models(t, y, my, 1);
    assert_int_equal(ts_run(t), 0);
    bool said = false;
    for (size_t i = 0; i < t->res.nproblems; i++)
        said |= t->res.problems[i].kind == FAIR_PROBLEM_OVERCOMMITTED &&
                strstr(t->res.problems[i].message, "model H100") != NULL;
    assert_true(said);
    assert_int_equal(qmodel(t, x, "H100")->guaranteed, 8 * G);
    assert_int_equal(qmodel(t, y, "H100")->guaranteed, 8 * G);
    ts_free(t);
}

/* A model named twice, or a negative lending limit: the object is
 * invalid, its pods wait with InvalidQueue. */
static void test_invalid_model_quota(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 0, 1), y = ts_team(t, "y", 0, 1);
    struct fair_model_quota mx[] = {{.model = "H100"}, {.model = "H100"}};
    set_models(t, x, mx, 2);
    t->projects[t->queues[y].project].q.lending_set = 1u << FAIR_RES_GPU;
    t->projects[t->queues[y].project].q.lending_limit.v[FAIR_RES_GPU] = -1;
    int px = ts_pod(t, x, G), py = ts_pod(t, y, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.pending_reasons[px], FAIR_PENDING_INVALID_QUEUE);
    assert_int_equal(t->res.pending_reasons[py], FAIR_PENDING_INVALID_QUEUE);
    size_t invalid = 0;
    for (size_t i = 0; i < t->res.nproblems; i++)
        invalid += t->res.problems[i].kind == FAIR_PROBLEM_INVALID;
    assert_true(invalid >= 2);
    ts_free(t);
}

/* Lending limit on the total: a guaranteed 8 with lendingLimit 4 and no
 * demand; b (no guarantee) wants 16 of the 16 GPUs and gets 12, in pass 1
 * and pass 2 alike. a's next 4 pods start at once, with no eviction. */
static void test_lending_limit_total(void **state)
{
    (void)state;
    for (int limited = 0; limited < 2; limited++) {
        struct ts *t = ts_new();
        ts_node(t, "node-0", 8);
        ts_node(t, "node-1", 8);
        int a = ts_team(t, "a", 8 * G, 1), b = ts_team(t, "b", 0, 1);
        if (limited) {
            t->projects[0].q.lending_set = 1u << FAIR_RES_GPU;
            t->projects[0].q.lending_limit.v[FAIR_RES_GPU] = 4 * G;
        }
        for (int i = 0; i < 16; i++)
            ts_pod(t, b, G);
        assert_int_equal(ts_run(t), 0);
        assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, b), limited ? 12 : 16);
        /* The 4 held back say why: a's keep, not b's fair share alone. */
        assert_int_equal(ts_reason_count(t, FAIR_PENDING_LENDING_KEPT), limited ? 4 : 0);
        assert_int_equal(t->res.projects[0].lendable.v[FAIR_RES_GPU], limited ? 4 * G : 8 * G);
        ts_apply(t, false);
        assert_int_equal(ts_run(t), 0);
        /* Lent: at most the lendable part. */
        assert_int_equal(t->res.projects[0].lent.v[FAIR_RES_GPU], limited ? 4 * G : 8 * G);
        assert_int_equal(t->res.nactions, 0);
        for (int i = 0; i < 4; i++)
            ts_pod(t, a, G);
        assert_int_equal(ts_run(t), 0);
        if (limited) {
            assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, a), 4);
            assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
        } else {
            assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, a), 0);
            assert_true(ts_count(t, FAIR_ACTION_EVICT) > 0);
        }
        ts_free(t);
    }
}

/* Lending limit on a queue inside its project: the sibling queue does not
 * get the kept part either. */
static void test_lending_limit_queue(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "node-0", 8);
    int p = ts_project(t, "p", 8 * G, 1);
    int q1 = ts_queue(t, "q1", p, 6 * G, 1), q2 = ts_queue(t, "q2", p, 0, 1);
    t->queues[q1].q.lending_set = 1u << FAIR_RES_GPU;
    t->queues[q1].q.lending_limit.v[FAIR_RES_GPU] = 2 * G;
    for (int i = 0; i < 8; i++)
        ts_pod(t, q2, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, q2), 4);
    assert_int_equal(t->res.queues[q1].lendable.v[FAIR_RES_GPU], 2 * G);
    ts_free(t);
}

/* Lending limit per model: x's H100 guarantee may not be lent at all, so
 * y's pods that name no model stay off the H100s (pass 1 and 2). */
static void test_lending_limit_model(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 0, 1), y = ts_team(t, "y", 0, 1);
    struct fair_model_quota mx[] = {
        {.model = "H100", .guaranteed = 8 * G, .lending_limit = 0, .has_lending_limit = true}};
    set_models(t, x, mx, 1);
    for (int i = 0; i < 32; i++)
        ts_pod(t, y, G);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(on_model(t, y, "A100"), 16 * G);
    assert_int_equal(on_model(t, y, "H100"), 8 * G);
    assert_int_equal(qmodel(t, x, "H100")->lendable, 0);
    ts_free(t);
}

/* Without any quota naming a model, the pools do not exist and nothing
 * changes: pods that name H100 in their selector use the total only. */
static void test_no_model_quota_no_pools(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    two_pools(t);
    int x = ts_team(t, "x", 16 * G, 1);
    ts_team(t, "y", 0, 1);
    for (int i = 0; i < 16; i++)
        t->pods[ts_pod(t, x, G)].gpu_model = "H100";
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(t->res.nmodels, 0);
    assert_int_equal(on_model(t, x, "H100"), 16 * G);
    ts_free(t);
}

/* A gang that names a model is checked as a unit against the model limit:
 * 2 x 4 H100 over a limit of 4 waits whole (OverLimit); with a limit of 8
 * both members bind on H100 nodes. */
static void test_gang_model_limit(void **state)
{
    (void)state;
    for (int lim = 4; lim <= 8; lim += 4) {
        struct ts *t = ts_new();
        two_pools(t);
        int x = ts_team(t, "x", 0, 1);
        struct fair_model_quota mx[] = {{.model = "H100", .limit = lim * G, .has_limit = true}};
        set_models(t, x, mx, 1);
        int m[2];
        for (int i = 0; i < 2; i++) {
            m[i] = ts_pod(t, x, 4 * G);
            t->pods[m[i]].gang = "train";
            t->pods[m[i]].gang_size = 2;
            t->pods[m[i]].gpu_model = "H100";
        }
        assert_int_equal(ts_run(t), 0);
        if (lim == 4) {
            assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
            assert_int_equal(t->res.pending_reasons[m[0]], FAIR_PENDING_OVER_LIMIT);
            assert_int_equal(t->res.pending_reasons[m[1]], FAIR_PENDING_OVER_LIMIT);
        } else {
            assert_int_equal(on_model(t, x, "H100"), 8 * G);
        }
        ts_free(t);
    }
}

/* GPUs of queue q evicted from nodes of model `model`. */
static int64_t evicted_on(const struct ts *t, int q, const char *model)
{
    int64_t a = 0;
    for (size_t i = 0; i < t->res.nactions; i++) {
        const struct fair_action *x = &t->res.actions[i];
        if (x->kind == FAIR_ACTION_EVICT && t->pods[x->pod].queue == q &&
            strcmp(t->nodes[x->node].gpu_model, model) == 0)
            a += t->pods[x->pod].request.v[FAIR_RES_GPU];
    }
    return a;
}

/* One A100 node and one H100 node of 8 GPUs each. */
static void one_per_pool(struct ts *t)
{
    ts_node(t, "a100-0", 8);
    int h = ts_node(t, "h100-0", 8);
    t->nodes[h].gpu_model = "H100";
}

/* Reclaim per pool: a is guaranteed gpu/H100: 8; b (gpu: 8, no model)
 * holds the 8 H100s, within its total fair share (8 of 16) but above its
 * H100 share (0: a's guarantee is the whole pool). a's pods that name
 * H100 take the H100s back; b keeps its total share on the A100s. */
static void test_reclaim_in_pool(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    one_per_pool(t);
    int a = ts_team(t, "a", 0, 1), b = ts_team(t, "b", 8 * G, 1);
    struct fair_model_quota ma[] = {{.model = "H100", .guaranteed = 8 * G}};
    set_models(t, a, ma, 1);
    for (int i = 0; i < 8; i++)
        ts_bound(t, b, G, 1, (uint64_t)1 << i, 0);
    int first = -1;
    for (int i = 0; i < 8; i++) {
        int p = ts_pod(t, a, G);
        t->pods[p].gpu_model = "H100";
        if (first < 0)
            first = p;
    }
    assert_int_equal(ts_run(t), 0);
    /* The total alone would not allow it: b is within its fair share. */
    assert_int_equal(t->res.queues[b].fair_share.v[FAIR_RES_GPU], 8 * G);
    assert_int_equal(qmodel(t, b, "H100")->fair_share, 0);
    assert_int_equal(qmodel(t, a, "H100")->fair_share, 8 * G);
    assert_int_equal(evicted_on(t, b, "H100"), 8 * G);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(t->res.pending_reasons[first + i], FAIR_PENDING_WAITING_RECLAIM);
    ts_free(t);
}

/* The pool floor guards a victim's model guarantee: b is guaranteed
 * gpu/H100: 8, holds the 8 H100s and borrows the 8 A100s (above its
 * total fair share). a (gpu: 8, no model) is owed room on the total: its
 * pods that name H100 take nothing (b is within its H100 guarantee);
 * its pods that name no model take the A100s b borrows. */
static void test_reclaim_keeps_pool_guarantee(void **state)
{
    (void)state;
    for (int named = 1; named >= 0; named--) {
        struct ts *t = ts_new();
        one_per_pool(t);
        int a = ts_team(t, "a", 8 * G, 1), b = ts_team(t, "b", 0, 1);
        struct fair_model_quota mb[] = {{.model = "H100", .guaranteed = 8 * G}};
        set_models(t, b, mb, 1);
        for (int i = 0; i < 16; i++)
            ts_bound(t, b, G, i / 8, (uint64_t)1 << (i % 8), 0);
        int first = -1;
        for (int i = 0; i < 4; i++) {
            int p = ts_pod(t, a, G);
            if (named)
                t->pods[p].gpu_model = "H100";
            if (first < 0)
                first = p;
        }
        assert_int_equal(ts_run(t), 0);
        assert_true(t->res.queues[b].fair_share.v[FAIR_RES_GPU] < 16 * G);
        assert_int_equal(evicted_on(t, b, "H100"), 0);
        if (named) {
            assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
            assert_int_equal(t->res.pending_reasons[first], FAIR_PENDING_NO_NODE_FITS);
        } else {
            assert_int_equal(evicted_on(t, b, "A100"), 4 * G);
            assert_int_equal(t->res.pending_reasons[first], FAIR_PENDING_WAITING_RECLAIM);
        }
        ts_free(t);
    }
}

/* a is within its H100 guarantee (4 of 4 held): its further H100 pods
 * take nothing from b, which holds its own 4 H100s within its guarantee. */
static void test_no_reclaim_within_pool_guarantees(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    one_per_pool(t);
    int a = ts_team(t, "a", 0, 1), b = ts_team(t, "b", 0, 1);
    struct fair_model_quota ma[] = {{.model = "H100", .guaranteed = 4 * G}};
    struct fair_model_quota mb[] = {{.model = "H100", .guaranteed = 4 * G}};
    set_models(t, a, ma, 1);
    set_models(t, b, mb, 1);
    for (int i = 0; i < 8; i++)
        ts_bound(t, i < 4 ? a : b, G, 1, (uint64_t)1 << i, 0);
    for (int i = 0; i < 4; i++)
        t->pods[ts_pod(t, a, G)].gpu_model = "H100";
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    ts_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_guarantees_split_pool),
        cmocka_unit_test(test_unnamed_pods_avoid_owed_pool),
        cmocka_unit_test(test_unnamed_pod_takes_free_pool),
        cmocka_unit_test(test_guarantee_of_one_model_only),
        cmocka_unit_test(test_model_limit),
        cmocka_unit_test(test_model_overcommit),
        cmocka_unit_test(test_invalid_model_quota),
        cmocka_unit_test(test_lending_limit_total),
        cmocka_unit_test(test_lending_limit_queue),
        cmocka_unit_test(test_lending_limit_model),
        cmocka_unit_test(test_no_model_quota_no_pools),
        cmocka_unit_test(test_gang_model_limit),
        cmocka_unit_test(test_reclaim_in_pool),
        cmocka_unit_test(test_reclaim_keeps_pool_guarantee),
        cmocka_unit_test(test_no_reclaim_within_pool_guarantees),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
