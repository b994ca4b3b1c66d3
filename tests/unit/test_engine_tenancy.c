/* Tenancy of fractions on a shared GPU device (docs/fractions.md,
 * "Tenancy"): fractions of different Projects never share a device, unless
 * every project on it set spec.fractions.shareAcrossProjects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "engine/placement.h"
#include "test_engine_fixture.h"

#define G 1000

/* The bind of pod i in the last result, or NULL. */
/* The device that fits best (device 0, A's fraction there) is not B's:
 * B's fraction goes to another device; A's own goes beside A's. */
static void test_other_project_takes_another_device(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 2);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", 0, 1);
    ts_bound(t, a, 500, 0, 0x1, 0);
    int pb = ts_pod(t, b, 250);
    assert_int_equal(ts_run(t), 0);
    const struct fair_action *x = ts_bind_of(t, pb);
    assert_non_null(x);
    assert_int_equal(x->gpu_devices, 0x2);
    ts_apply(t, false);
    /* A's next fraction: device 0 (A's, fullest that fits), not device 1 (B's). */
    int pa = ts_pod(t, a, 250);
    assert_int_equal(ts_run(t), 0);
    x = ts_bind_of(t, pa);
    assert_non_null(x);
    assert_int_equal(x->gpu_devices, 0x1);
    ts_free(t);
}

/* The only device with room holds A's fraction: B's fraction stays
 * pending (no node fits), though 0.5 of the GPU is free. */
static void test_no_device_left_for_other_project(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 1);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", 0, 1);
    ts_bound(t, a, 500, 0, 0x1, 0);
    int pb = ts_pod(t, b, 250);
    assert_int_equal(ts_run(t), 0);
    assert_null(ts_bind_of(t, pb));
    assert_int_equal(t->res.pending_reasons[pb], FAIR_PENDING_NO_NODE_FITS);
    /* Same request from A: fits. */
    int pa = ts_pod(t, a, 250);
    assert_int_equal(ts_run(t), 0);
    assert_non_null(ts_bind_of(t, pa));
    assert_null(ts_bind_of(t, pb));
    /* A's fractions gone: the device is free for B. */
    t->npods = 0;
    pb = ts_pod(t, b, 250);
    assert_int_equal(ts_run(t), 0);
    assert_non_null(ts_bind_of(t, pb));
    ts_free(t);
}

/* Two projects' pending fractions in one cycle, one device: only one
 * project gets it, whatever fits by room. */
static void test_one_cycle_keeps_projects_apart(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 1);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", 0, 1);
    int p[4];
    p[0] = ts_pod(t, a, 250);
    p[1] = ts_pod(t, b, 250);
    p[2] = ts_pod(t, a, 250);
    p[3] = ts_pod(t, b, 250);
    assert_int_equal(ts_run(t), 0);
    int bound_a = 0, bound_b = 0;
    for (int i = 0; i < 4; i++)
        if (ts_bind_of(t, p[i])) {
            if (t->pods[p[i]].queue == a)
                bound_a++;
            else
                bound_b++;
        }
    assert_true(bound_a + bound_b >= 1);
    assert_true(bound_a == 0 || bound_b == 0);
    ts_free(t);
}

/* Opt-in: with both projects opted in they share the fullest device;
 * with only one of them, they do not (either way round). */
static void test_opt_in_needs_every_project(void **state)
{
    (void)state;
    static const struct {
        bool a, b, shared;
    } rows[] = {
        {true, true, true},
        {true, false, false},
        {false, true, false},
        {false, false, false},
    };
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++) {
        struct ts *t = ts_new();
        ts_node(t, "n0", 2);
        int a = ts_team(t, "a", 0, 1);
        int b = ts_team(t, "b", 0, 1);
        t->projects[t->queues[a].project].share_fractions = rows[r].a;
        t->projects[t->queues[b].project].share_fractions = rows[r].b;
        ts_bound(t, a, 500, 0, 0x1, 0);
        int pb = ts_pod(t, b, 250);
        assert_int_equal(ts_run(t), 0);
        const struct fair_action *x = ts_bind_of(t, pb);
        assert_non_null(x);
        assert_int_equal(x->gpu_devices, rows[r].shared ? 0x1 : 0x2);
        ts_free(t);
    }
}

/* A device that already holds two projects' fractions (bound before the
 * rule, or by hand) takes no new fraction of either until it is free. */
static void test_mixed_device_is_closed(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 2);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", 0, 1);
    ts_bound(t, a, 250, 0, 0x1, 0);
    ts_bound(t, b, 250, 0, 0x1, 0);
    int pa = ts_pod(t, a, 250);
    assert_int_equal(ts_run(t), 0);
    const struct fair_action *x = ts_bind_of(t, pa);
    assert_non_null(x);
    assert_int_equal(x->gpu_devices, 0x2);
    ts_free(t);
}

/* Whole GPUs are not affected: a whole-GPU pod of B takes the free device
 * next to A's fraction. */
static void test_whole_gpu_unaffected(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 2);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", 0, 1);
    ts_bound(t, a, 500, 0, 0x1, 0);
    int pb = ts_pod(t, b, G);
    assert_int_equal(ts_run(t), 0);
    const struct fair_action *x = ts_bind_of(t, pb);
    assert_non_null(x);
    assert_int_equal(x->gpu_devices, 0x2);
    ts_free(t);
}

/* The tenant key comes from the queue's project only; a pod without a
 * known queue is alone on its device. */
static void test_tenant_key(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 1);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", 0, 1);
    t->projects[t->queues[b].project].share_fractions = true;
    int pa = ts_pod(t, a, 250), pb = ts_pod(t, b, 250), px = ts_pod(t, -1, 250);
    struct fair_snapshot s;
    ts_snapshot(t, &s);
    assert_int_equal(fair_place_tenant(&s, &t->pods[pa]), t->queues[a].project);
    assert_int_equal(fair_place_tenant(&s, &t->pods[pb]), FAIR_TENANT_SHARED);
    assert_int_equal(fair_place_tenant(&s, &t->pods[px]), FAIR_TENANT_FOREIGN);
    ts_free(t);
}

/* Device choice on its own: a device of another key is skipped in either
 * view, a fully free one is open, the same key packs. */
static void test_pick_devices_tenant(void **state)
{
    (void)state;
    int16_t dev[3] = {500, 750, 1000};
    int32_t ten[3] = {1, 2, -4};
    uint64_t m = 0;
    assert_true(
        fair_place_pick_devices_tenant(dev, 3, 250, NULL, FAIR_PLACE_PACK, ten, NULL, 2, &m));
    assert_int_equal(m, 0x2);
    assert_true(
        fair_place_pick_devices_tenant(dev, 3, 250, NULL, FAIR_PLACE_PACK, ten, NULL, 1, &m));
    assert_int_equal(m, 0x1);
    assert_true(
        fair_place_pick_devices_tenant(dev, 3, 250, NULL, FAIR_PLACE_PACK, ten, NULL, 7, &m));
    assert_int_equal(m, 0x4);
    /* fut view: device 1 holds key 3 there (a reservation): not for 2. */
    int16_t fdev[3] = {500, 500, 1000};
    int32_t ften[3] = {1, 3, -1};
    assert_true(
        fair_place_pick_devices_tenant(dev, 3, 250, fdev, FAIR_PLACE_PACK, ten, ften, 2, &m));
    assert_int_equal(m, 0x4);
    /* A full device 2: nothing left for key 2. */
    dev[2] = 0;
    assert_false(
        fair_place_pick_devices_tenant(dev, 3, 250, fdev, FAIR_PLACE_PACK, ten, ften, 2, &m));
    assert_int_equal(m, 0);
}

/* Reclaim: B is owed the whole GPU (its guarantee); the GPU holds
 * borrowed fractions of A. Evicting one of them is no use to B (A keeps
 * the device), so both go; B's fractions bind once they are gone, and none
 * while A's are still terminating there. */
static void test_reclaim_frees_whole_device(void **state)
{
    (void)state;
    struct ts *t = ts_new();
    ts_node(t, "n0", 1);
    int a = ts_team(t, "a", 0, 1);
    int b = ts_team(t, "b", G, 1);
    ts_bound(t, a, 250, 0, 0x1, 0);
    ts_bound(t, a, 250, 0, 0x1, 0);
    ts_pod(t, b, 250);
    ts_pod(t, b, 750);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_EVICT, a), 2);
    ts_apply(t, true);
    /* Victims terminating: B still waits (they are on the device). */
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_BIND), 0);
    assert_int_equal(ts_count(t, FAIR_ACTION_EVICT), 0);
    ts_apply(t, false);
    size_t k = 0; /* the terminating pods are gone */
    for (size_t i = 0; i < t->npods; i++)
        if (!t->pods[i].terminating)
            t->pods[k++] = t->pods[i];
    t->npods = k;
    assert_int_equal(k, 2);
    assert_int_equal(ts_run(t), 0);
    assert_int_equal(ts_count_q(t, FAIR_ACTION_BIND, b), 2);
    ts_free(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_project_takes_another_device),
        cmocka_unit_test(test_no_device_left_for_other_project),
        cmocka_unit_test(test_one_cycle_keeps_projects_apart),
        cmocka_unit_test(test_opt_in_needs_every_project),
        cmocka_unit_test(test_mixed_device_is_closed),
        cmocka_unit_test(test_whole_gpu_unaffected),
        cmocka_unit_test(test_tenant_key),
        cmocka_unit_test(test_pick_devices_tenant),
        cmocka_unit_test(test_reclaim_frees_whole_device),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
