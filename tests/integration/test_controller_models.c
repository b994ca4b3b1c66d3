/* GPU model pools and lending limits end to end (issue 15, items 1-2):
 * the controller over real HTTPS against the fake API server, with one
 * H100 node and one A100 node, a project guaranteed 8 H100s (through a
 * gpuModels alias) of which only 4 may be lent, and a team that names no
 * model. The team without a model fills the A100s and the lendable half
 * of the H100s; a pod of the owner that names A100 waits for the A100s
 * though H100s are free; the owner's pods that name H100 (annotation
 * fairshare.dev/gpu-model) start at once without an eviction; the status
 * shows lendable and the per-model figures; the ledger reports GPU-hours
 * by team and model. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#define H100 "NVIDIA-H100-80GB-HBM3"
#define A100 "NVIDIA-A100-SXM4-80GB"

static void create(struct fair_fake *f, const char *path, const char *body)
{
    must_create(f, path, body);
}

/* status.gpuModels.<model>.<field> of a Queue as text, compared with want. */
static bool queue_model_is(struct fair_fake *f, const char *queue, const char *model,
                           const char *field, const char *want)
{
    json_t *st = queue_status(f, queue);
    const char *v = st ? json_string_value(json_object_get(
                             json_object_get(json_object_get(st, "gpuModels"), model), field))
                       : NULL;
    bool ok = v && strcmp(v, want) == 0;
    json_decref(st);
    return ok;
}

/* Bound pods of ns on node. */
static int bound_on(struct fair_fake *f, const char *ns, const char *node)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    json_t *l = list(f, path);
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *nn = json_string_value(json_object_get(json_object_get(p, "spec"), "nodeName"));
        if (pod_live_bound(p) && nn && strcmp(nn, node) == 0)
            n++;
    }
    json_decref(l);
    return n;
}

/* The pod has PodScheduled=False (the controller said why it waits). */
static bool waiting(struct fair_fake *f, const char *ns, const char *name)
{
    char st[64] = "";
    char *r = pod_condition(f, ns, name, "PodScheduled", st);
    bool ok = r && strcmp(st, "False") == 0;
    free(r);
    return ok;
}

static void test_models_and_lending_limit(void **state)
{
    (void)state;
    static struct fair_fake fake;
    struct fair_fake_opts o = {
        .nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1, .gpu_model = H100};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    /* node-0001 is an A100 node. */
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request_ct(&fake, "PATCH", "/api/v1/nodes/node-0001",
                                          "application/merge-patch+json",
                                          "{\"metadata\":{\"labels\":{\"nvidia.com/gpu.product\":"
                                          "\"" A100 "\"}}}",
                                          &code, &resp),
                     0);
    free(resp);
    assert_int_equal(code, 200);
    const char *ns[] = {"team-a", "team-b", NULL};
    mk_namespaces(&fake, ns);
    /* a: 8 GPUs guaranteed, all H100 (alias), 4 of them never lent. */
    create(&fake, "/apis/fairshare.dev/v1alpha1/projects",
           "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":{\"name\":"
           "\"a\"},\"spec\":{\"namespaces\":[\"team-a\"],\"guaranteed\":{\"gpu\":8,\"gpu/H100\":8},"
           "\"lendingLimit\":{\"gpu\":4,\"gpu/H100\":4}}}");
    create(&fake, "/apis/fairshare.dev/v1alpha1/queues",
           "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":{\"name\":"
           "\"qa\"},\"spec\":{\"project\":\"a\",\"guaranteed\":{\"gpu\":8,\"gpu/H100\":8},"
           "\"lendingLimit\":{\"gpu\":4,\"gpu/H100\":4}}}");
    mk_project(&fake, "b", "8", "[\"team-b\"]", NULL);
    mk_queue(&fake, "qb", "b", "8", 1);
    static struct ctl c;
    memset(&c, 0, sizeof c);
    config_write(c.config, sizeof c.config, &fake, "models",
                 "reclaim:\n  overQuotaMinRuntime: 0s\ngpuModels:\n  H100: " H100 "\n  A100: " A100
                 "\n");
    assert_int_equal(ctl_start(&c, &fake, "models"), 0);
    if (!WAIT_UNTIL(ctl_ready(&c), WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready");
    }

    /* b (no model) asks for 16 GPUs: the 8 A100s, and the 4 lendable
     * H100s of a; the other 4 H100s stay free for a. */
    char name[64];
    for (int i = 0; i < 16; i++) {
        snprintf(name, sizeof name, "b-%02d", i);
        mk_pod(&fake, "team-b", name, "qb", "1");
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 12, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        json_t *st = queue_status(&fake, "qa");
        char *txt = st ? json_dumps(st, JSON_COMPACT) : NULL;
        fprintf(stderr, "qa status: %s\n", txt ? txt : "(none)");
        free(txt);
        json_decref(st);
        fail_msg("b should have 12 pods bound, has %d", count_pods(&fake, "team-b", 1));
    }
    assert_int_equal(bound_on(&fake, "team-b", "node-0001"), 8);
    assert_int_equal(bound_on(&fake, "team-b", "node-0000"), 4);
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "lendable", "4"), WAIT_MS));
    assert_true(WAIT_UNTIL(queue_gpu_is(&fake, "qa", "lent", "4"), WAIT_MS));
    assert_true(WAIT_UNTIL(queue_model_is(&fake, "qa", H100, "guaranteed", "8"), WAIT_MS));
    assert_true(WAIT_UNTIL(queue_model_is(&fake, "qa", H100, "lendable", "4"), WAIT_MS));
    assert_true(WAIT_UNTIL(queue_model_is(&fake, "qb", A100, "allocated", "8"), WAIT_MS));
    /* Still 12 a few cycles later: the kept half is not handed out. */
    nap(1500);
    assert_int_equal(count_pods(&fake, "team-b", 1), 12);

    /* A pod of a that names A100 (annotation, alias) waits for the full
     * A100 node, though 4 H100s are free for a. (b is within its fair
     * share, and reclaim is not per model: it is not evicted for it.) */
    mk_pod_full(&fake, "team-a", "a-x", "qa", "1", NULL, NULL,
                ",\"fairshare.dev/gpu-model\":\"A100\"", 0);
    assert_true(WAIT_UNTIL(waiting(&fake, "team-a", "a-x"), WAIT_MS));
    nap(1500);
    assert_int_equal(count_pods(&fake, "team-a", 1), 0);
    assert_int_equal(count_events(&fake, "Preempted", "team-b", NULL), 0);
    assert_int_equal(fair_fake_request(&fake, "DELETE", "/api/v1/namespaces/team-a/pods/a-x",
                                       "{\"gracePeriodSeconds\":0}", &code, NULL),
                     0);
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", -1) == 0, WAIT_MS));

    /* a's 4 pods that name H100 (by alias) start at once: no eviction. */
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "a-%02d", i);
        mk_pod_full(&fake, "team-a", name, "qa", "1", NULL, NULL,
                    ",\"fairshare.dev/gpu-model\":\"H100\"", 0);
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 4, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("a's pods were not bound: %d", count_pods(&fake, "team-a", 1));
    }
    assert_int_equal(bound_on(&fake, "team-a", "node-0000"), 4);
    assert_int_equal(count_events(&fake, "Preempted", "team-b", NULL), 0);
    assert_true(WAIT_UNTIL(queue_model_is(&fake, "qa", H100, "allocated", "4"), WAIT_MS));
    assert_int_equal(ctl_stop(&c), 0);

    /* The ledger: GPU-hours by team and model. */
    char cmd[1024];
    snprintf(cmd, sizeof cmd,
             "%s/fairsharectl report --db '%s' --from 2000-01-01 --to 2100-01-01 --by team,model "
             "--format json",
             FAIR_BIN_DIR, c.ledger);
    FILE *rp = popen(cmd, "r");
    assert_non_null(rp);
    json_error_t je;
    json_t *rep = json_loadf(rp, 0, &je);
    assert_int_equal(pclose(rp), 0);
    assert_non_null(rep);
    int seen = 0;
    json_t *row;
    size_t ri;
    json_array_foreach(json_object_get(rep, "rows"), ri, row)
    {
        const char *team = json_string_value(json_object_get(row, "team"));
        const char *model = json_string_value(json_object_get(row, "model"));
        json_int_t pods = json_integer_value(json_object_get(row, "pods"));
        assert_non_null(team);
        assert_non_null(model);
        if (!strcmp(team, "b") && !strcmp(model, A100))
            assert_int_equal(pods, 8), seen++;
        else if (!strcmp(team, "b") && !strcmp(model, H100))
            assert_int_equal(pods, 4), seen++;
        else if (!strcmp(team, "a") && !strcmp(model, H100))
            assert_int_equal(pods, 4), seen++;
        else
            fail_msg("unexpected row %s/%s", team, model);
    }
    assert_int_equal(seen, 3);
    json_decref(rep);
    assert_int_equal(fair_fake_stop(&fake), 0);
    fair_fake_release(&fake);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_models_and_lending_limit, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
