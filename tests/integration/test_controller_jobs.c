/* fakekube's simulated Job controller with the controller: a Job's pods
 * are created from its template (parallelism at a time, completions in
 * all), bound by Fairshare, and a deleted pod is recreated by the Job, not
 * requeued by Fairshare (its controller owner is the Job). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

static void post(struct fair_fake *f, const char *path, const char *body)
{
    long code = 0;
    char *resp = NULL;
    if (fair_fake_request_ct(f, "POST", path, "application/json", body, &code, &resp) != 0 ||
        code != 201) {
        fprintf(stderr, "POST %s -> %ld %s\n", path, code, resp ? resp : "");
        free(resp);
        fail_msg("could not create %s", path);
    }
    free(resp);
}

/* The name of a pod of ns bound to a node (malloc'd), or NULL. */
static char *a_bound_pod(struct fair_fake *f, const char *ns)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods", ns);
    json_t *l = list(f, path);
    char *out = NULL;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        if (!out && pod_live_bound(p))
            out = strdup(fair_fake_json_str(p, "metadata.name"));
    }
    json_decref(l);
    return out;
}

static bool pod_exists(struct fair_fake *f, const char *ns, const char *name)
{
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    long code = 0;
    char *resp = NULL;
    int rc = fair_fake_request(f, "GET", path, NULL, &code, &resp);
    free(resp);
    return rc == 0 && code == 200;
}

/* The Job's status.active and status.succeeded. */
static bool job_status_is(struct fair_fake *f, const char *ns, const char *name, long active,
                          long succeeded)
{
    char path[256];
    snprintf(path, sizeof path, "/apis/batch/v1/namespaces/%s/jobs/%s", ns, name);
    long code = 0;
    char *resp = NULL;
    if (fair_fake_request(f, "GET", path, NULL, &code, &resp) != 0 || code != 200) {
        free(resp);
        return false;
    }
    json_t *j = json_loads(resp, 0, NULL);
    free(resp);
    const json_t *st = json_object_get(j, "status");
    bool ok = json_integer_value(json_object_get(st, "active")) == active &&
              json_integer_value(json_object_get(st, "succeeded")) == succeeded;
    json_decref(j);
    return ok;
}

static void test_job_recreates_pods(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    start_all(&fake, &c, 2, 8, "jobs");
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "16", "[\"team-a\"]", "qa");
    mk_queue(&fake, "qa", "a", "16", 1);
    post(&fake, "/apis/batch/v1/namespaces/team-a/jobs",
         "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train\"},"
         "\"spec\":{\"parallelism\":3,\"completions\":5,\"template\":{\"metadata\":{"
         "\"labels\":{\"fairshare.dev/queue\":\"qa\"}},\"spec\":{\"schedulerName\":"
         "\"fairshare\",\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
         "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}");
    /* parallelism 3: three pods, all bound. */
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 3, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the Job's 3 pods were not bound (%d)", count_pods(&fake, "team-a", 1));
    }
    assert_true(WAIT_UNTIL(job_status_is(&fake, "team-a", "train", 3, 0), WAIT_MS));
    nap(500);
    assert_int_equal(count_pods(&fake, "team-a", -1), 3);
    /* Delete one: the Job makes a new one, which Fairshare binds; no
     * requeued copy appears. */
    char *victim = a_bound_pod(&fake, "team-a");
    assert_non_null(victim);
    char path[256];
    snprintf(path, sizeof path, "/api/v1/namespaces/team-a/pods/%s?gracePeriodSeconds=0", victim);
    long code = 0;
    char *resp = NULL;
    assert_int_equal(fair_fake_request(&fake, "DELETE", path, NULL, &code, &resp), 0);
    free(resp);
    assert_int_equal(code, 200);
    if (!WAIT_UNTIL(count_pods(&fake, "team-a", 1) == 3 && count_pods(&fake, "team-a", -1) == 3 &&
                        !pod_exists(&fake, "team-a", victim),
                    WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the deleted pod was not replaced (%d bound, %d in all)",
                 count_pods(&fake, "team-a", 1), count_pods(&fake, "team-a", -1));
    }
    free(victim);
    /* completions: pods that run 1 s each (the simulated kubelet ends
     * them); 2 at a time, 3 in all, then the Job is complete. */
    post(&fake, "/apis/batch/v1/namespaces/team-a/jobs",
         "{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"short\"},"
         "\"spec\":{\"parallelism\":2,\"completions\":3,\"template\":{\"metadata\":{"
         "\"labels\":{\"fairshare.dev/queue\":\"qa\"},\"annotations\":{"
         "\"sim.fairshare.dev/duration-seconds\":\"1\"}},\"spec\":{\"schedulerName\":"
         "\"fairshare\",\"restartPolicy\":\"Never\",\"containers\":[{\"name\":\"main\","
         "\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}}}}");
    if (!WAIT_UNTIL(job_status_is(&fake, "team-a", "short", 0, 3), 4 * WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("the Job did not complete 3 pods");
    }
    nap(500);
    /* 3 of train's, 3 of short's (Succeeded), no more. */
    assert_int_equal(count_pods(&fake, "team-a", -1), 6);
    stop_all(&fake, &c);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_job_recreates_pods, tc_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
