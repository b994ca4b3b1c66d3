/* Gangs from the ecosystem's PodGroups, end to end against the fake API
 * server (which serves them only once their CRDs exist, as a real one
 * does): a scheduler-plugins PodGroup with minMember 20 whose 20 one-GPU
 * pods cannot all fit on 16 GPUs gets none bound and says why at once; a
 * pod naming a PodGroup that does not exist waits; and of two running
 * 8-pod PodGroups (one Volcano, one scheduler-plugins) borrowing a team's
 * GPUs, one is preempted whole and the other is untouched. The PodGroups'
 * status is written back (phase, counts, Volcano's condition). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#define SP_API "/apis/scheduling.x-k8s.io/v1alpha1"
#define VC_API "/apis/scheduling.volcano.sh/v1beta1"

/* A minimal CustomResourceDefinition of one flavor's PodGroup. */
static void mk_podgroup_crd(struct fair_fake *f, bool volcano)
{
    char body[2048];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"apiextensions.k8s.io/v1\",\"kind\":\"CustomResourceDefinition\","
             "\"metadata\":{\"name\":\"podgroups.%s\"},\"spec\":{\"group\":\"%s\","
             "\"names\":{\"kind\":\"PodGroup\",\"listKind\":\"PodGroupList\","
             "\"plural\":\"podgroups\",\"singular\":\"podgroup\"},\"scope\":\"Namespaced\","
             "\"versions\":[{\"name\":\"%s\",\"served\":true,\"storage\":true,"
             "\"subresources\":{\"status\":{}},\"schema\":{\"openAPIV3Schema\":{\"type\":"
             "\"object\",\"x-kubernetes-preserve-unknown-fields\":true}}}]}}",
             volcano ? "scheduling.volcano.sh" : "scheduling.x-k8s.io",
             volcano ? "scheduling.volcano.sh" : "scheduling.x-k8s.io",
             volcano ? "v1beta1" : "v1alpha1");
    must_create(f, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body);
}

static void mk_podgroup(struct fair_fake *f, bool volcano, const char *ns, const char *name,
                        int min_member)
{
    char body[1024], path[256];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"%s\",\"kind\":\"PodGroup\",\"metadata\":{\"name\":\"%s\","
             "\"namespace\":\"%s\"},\"spec\":{\"minMember\":%d}}",
             volcano ? "scheduling.volcano.sh/v1beta1" : "scheduling.x-k8s.io/v1alpha1", name, ns,
             min_member);
    snprintf(path, sizeof path, "%s/namespaces/%s/podgroups", volcano ? VC_API : SP_API, ns);
    must_create(f, path, body);
}

/* A one-GPU pod of queue in PodGroup group (scheduler-plugins label, or
 * Volcano's annotation). */
static void mk_member(struct fair_fake *f, bool volcano, const char *ns, const char *name,
                      const char *queue, const char *group)
{
    char extra[256];
    snprintf(extra, sizeof extra, ",\"%s\":\"%s\"",
             volcano ? "scheduling.k8s.io/group-name" : "scheduling.x-k8s.io/pod-group", group);
    mk_pod_full(f, ns, name, queue, "1", NULL, volcano ? NULL : extra, volcano ? extra : NULL, 0);
}

/* The PodGroup's status field (malloc'd), or NULL. */
static char *podgroup_field(struct fair_fake *f, bool volcano, const char *ns, const char *name,
                            const char *field)
{
    char path[256];
    snprintf(path, sizeof path, "%s/namespaces/%s/podgroups/%s", volcano ? VC_API : SP_API, ns,
             name);
    json_t *g = list(f, path);
    const char *v = fair_fake_json_str(g, field);
    char *out = v ? strdup(v) : NULL;
    json_decref(g);
    return out;
}

static bool podgroup_phase_is(struct fair_fake *f, bool volcano, const char *ns, const char *name,
                              const char *want)
{
    char *p = podgroup_field(f, volcano, ns, name, "status.phase");
    bool ok = p && !strcmp(p, want);
    free(p);
    return ok;
}

/* Starts the fake with the given PodGroup CRDs, then the controller (which
 * looks for the CRDs when it starts). */
static void start_with_crds(struct fair_fake *fake, struct ctl *c, bool sp, bool vc,
                            const char *tag)
{
    struct fair_fake_opts o = {.nodes = 2, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(fake, &o), 0);
    if (sp)
        mk_podgroup_crd(fake, false);
    if (vc)
        mk_podgroup_crd(fake, true);
    memset(c, 0, sizeof *c);
    assert_int_equal(ctl_start(c, fake, tag), 0);
    if (!WAIT_UNTIL(ctl_ready(c), WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("controller not ready");
    }
}

static void teams(struct fair_fake *fake, const char *ga, const char *gb)
{
    const char *ns[] = {"team-a", "team-b", NULL};
    mk_namespaces(fake, ns);
    mk_project(fake, "a", ga, "[\"team-a\"]", NULL);
    mk_project(fake, "b", gb, "[\"team-b\"]", NULL);
    mk_queue(fake, "qa", "a", ga, 1);
    mk_queue(fake, "qb", "b", gb, 1);
}

static void test_min_member_20_on_16_gpus(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    start_with_crds(&fake, &c, true, false, "pg20");
    teams(&fake, "8", "8");
    /* The fake serves the PodGroups only now that their CRD exists. */
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request(&fake, "GET", VC_API "/podgroups", NULL, &code, &resp), 0);
    assert_int_equal(code, 404);
    free(resp);
    mk_podgroup(&fake, false, "team-a", "big", 20);
    char name[32];
    for (int i = 0; i < 20; i++) {
        snprintf(name, sizeof name, "big-%02d", i);
        mk_member(&fake, false, "team-a", name, "qa", "big");
    }
    /* A pod naming a PodGroup that does not exist waits, and says so. */
    mk_member(&fake, false, "team-a", "lost", "qa", "ghost");
    if (!WAIT_UNTIL(pod_condition_is(&fake, "team-a", "lost", "PodScheduled", "PodGroupNotFound"),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("no PodGroupNotFound condition");
    }
    assert_true(
        WAIT_UNTIL(count_events(&fake, "FailedScheduling", "team-a", "lost") >= 1, WAIT_MS));
    char *msg = event_message(&fake, "FailedScheduling", "team-a", "lost");
    assert_non_null(msg);
    assert_non_null(strstr(msg, "PodGroup team-a/ghost"));
    free(msg);
    /* The gang of 20 is larger than the cluster: it says so at once. */
    if (!WAIT_UNTIL(count_events(&fake, "FailedScheduling", "team-a", "big-19") >= 1, WAIT_MS)) {
        char *why = pod_condition(&fake, "team-a", "big-19", "PodScheduled", NULL);
        ctl_dump_log(&c, 40);
        fail_msg("no FailedScheduling event for big-19 (PodScheduled %s, %d bound)",
                 why ? why : "none", count_pods(&fake, "team-a", 1));
    }
    msg = event_message(&fake, "FailedScheduling", "team-a", "big-19");
    assert_non_null(msg);
    if (!strstr(msg, "gang too large: the 20 pods of gang team-a/big ask for 20 GPUs, more than "
                     "the 16 GPUs"))
        fail_msg("message: %s", msg);
    free(msg);
    assert_true(WAIT_UNTIL(podgroup_phase_is(&fake, false, "team-a", "big", "Pending"), WAIT_MS));
    /* Several cycles later, still none bound. */
    nap(1500);
    assert_int_equal(count_pods(&fake, "team-a", 1), 0);
    stop_all(&fake, &c);
}

/* Which PodGroup pod name belongs to, from its name ("vc-3" -> 'v'). */
static int group_of(const char *pod)
{
    return pod[0];
}

static void test_preempted_whole(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    start_with_crds(&fake, &c, true, true, "pgwhole");
    teams(&fake, "8", "0");
    mk_podgroup(&fake, true, "team-b", "train-vc", 8);
    mk_podgroup(&fake, false, "team-b", "train-sp", 8);
    char name[32];
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "vc-%d", i);
        mk_member(&fake, true, "team-b", name, "qb", "train-vc");
        snprintf(name, sizeof name, "sp-%d", i);
        mk_member(&fake, false, "team-b", name, "qb", "train-sp");
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-b", 1) == 16, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("B's two gangs not bound: %d", count_pods(&fake, "team-b", 1));
    }
    /* Both PodGroups' status written back once their pods run. */
    assert_true(
        WAIT_UNTIL(podgroup_phase_is(&fake, true, "team-b", "train-vc", "Running"), WAIT_MS));
    if (!WAIT_UNTIL(podgroup_phase_is(&fake, false, "team-b", "train-sp", "Running"), WAIT_MS)) {
        char *p = podgroup_field(&fake, false, "team-b", "train-sp", "status.phase");
        fail_msg("train-sp phase %s", p ? p : "(none)");
    }
    char *running = podgroup_field(&fake, false, "team-b", "train-sp", "status.running");
    (void)running;
    free(running);

    /* A comes back for its 8 guaranteed GPUs: one PodGroup goes whole. */
    for (int i = 0; i < 8; i++) {
        snprintf(name, sizeof name, "a-%d", i);
        mk_pod(&fake, "team-a", name, "qa", "1");
    }
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 8, WAIT_MS)) {
        ctl_dump_log(&c, 80);
        fail_msg("A's pods were not bound: %d", count_pods(&fake, "team-a", 1));
    }
    /* The evicted gang's bare pods come back as requeued copies ("-rq1"),
     * pending: the originals left are the other gang's. */
    assert_true(WAIT_UNTIL(count_original_pods(&fake, "team-b") == 8, WAIT_MS));
    json_t *pods = list(&fake, "/api/v1/namespaces/team-b/pods");
    assert_non_null(pods);
    size_t i;
    json_t *p;
    int first = 0, live = 0;
    json_array_foreach(json_object_get(pods, "items"), i, p)
    {
        const char *n = fair_fake_json_str(p, "metadata.name");
        if (strstr(n, "-rq")) {
            assert_false(pod_live_bound(p)); /* no room for a second gang */
            continue;
        }
        if (!first)
            first = group_of(n);
        /* all eight left are of one PodGroup, all bound */
        assert_int_equal(group_of(n), first);
        live += pod_live_bound(p);
    }
    json_decref(pods);
    assert_int_equal(live, 8);
    /* Exactly 8 evictions, no more: the other gang was never touched. */
    assert_int_equal(count_events(&fake, "Preempted", "team-b", NULL), 8);
    stop_all(&fake, &c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_min_member_20_on_16_gpus, tc_teardown),
        cmocka_unit_test_teardown(test_preempted_whole, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
