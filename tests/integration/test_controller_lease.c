/* The controller keeps its Lease while it binds in bulk over a slow API
 * (finding 7 of issue 11): with 500 ms of latency on every answer and 300
 * pods that become schedulable at once, the binds fill the controller's
 * connections for seconds; leader election runs on a client of its own,
 * so the Lease's renewTime keeps moving and the controller neither steps
 * down nor exits while every pod is bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#define NPODS 300
#define LEASE_PATH "/apis/coordination.k8s.io/v1/namespaces/fairshare-system/leases/fairshare-test"

static void write_config(const struct fair_fake *fake, char *path, size_t n)
{
    /* Renew deadline 4 s: a renewal (a GET and a PUT, 1 s at 500 ms each)
     * fits four times; one queued behind the binds does not. */
    config_write(path, n, fake, "lease", CTL_LEASE("6s", "4s", "2s") "cycleInterval: 500ms\n");
}

/* The Lease's renewTime into out ("" when unreadable). */
static void renew_time(struct fair_fake *fake, char *out, size_t n)
{
    json_t *l = list(fake, LEASE_PATH);
    const char *rt = l ? fair_fake_json_str(l, "spec.renewTime") : NULL;
    snprintf(out, n, "%s", rt ? rt : "");
    json_decref(l);
}

static void test_lease_survives_bind_flood(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    memset(&c, 0, sizeof c);
    struct fair_fake_opts o = {.nodes = 40, .gpus_per_node = 8, .kubelet = 1, .grace_seconds = 1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"fairshare-system", "team-a", NULL};
    mk_namespaces(&fake, ns);
    mk_project(&fake, "a", "320", "[\"team-a\"]", NULL);
    /* The pods wait for their queue, which comes once the API is slow. */
    for (int i = 0; i < NPODS; i++) {
        char name[32];
        snprintf(name, sizeof name, "a-%03d", i);
        mk_pod(&fake, "team-a", name, "qa", "1");
    }
    c.identity = "replica-1";
    write_config(&fake, c.config, sizeof c.config);
    assert_int_equal(ctl_start_args(&c, &fake, "lease", NULL), 0);
    if (!WAIT_UNTIL(ctl_ready(&c) && ctl_metric(&c, "fairshare_leader") == 1, WAIT_MS)) {
        ctl_dump_log(&c, 40);
        fail_msg("controller not ready and leading");
    }
    char first[64], last[64], now[64];
    renew_time(&fake, first, sizeof first);
    assert_true(first[0]);
    snprintf(last, sizeof last, "%s", first);

    assert_int_equal(fair_fake_set_latency(&fake, 500), 0);
    mk_queue(&fake, "qa", "a", "320", 1);
    /* Every sample takes at least 500 ms (the latency): the loop watches
     * the Lease all through the flood of binds. */
    int renewals = 0, bound = 0;
    long long deadline = now_ms() + 120000;
    while (bound < NPODS || renewals < 3) {
        if (!ctl_alive(&c)) {
            ctl_dump_log(&c, 40);
            fail_msg("the controller exited after %d renewals, %d pods bound (lost its lease?)",
                     renewals, bound);
        }
        if (now_ms() > deadline) {
            ctl_dump_log(&c, 40);
            fail_msg("%d renewals, %d of %d pods bound after 120 s", renewals, bound, NPODS);
        }
        renew_time(&fake, now, sizeof now);
        if (now[0] && strcmp(now, last)) {
            renewals++;
            snprintf(last, sizeof last, "%s", now);
        }
        bound = count_pods(&fake, "team-a", 1);
        if (ctl_metric(&c, "fairshare_leader") != 1) {
            ctl_dump_log(&c, 40);
            fail_msg("the controller stopped leading after %d renewals", renewals);
        }
    }
    assert_true(ctl_metric(&c, "fairshare_binds_total") == NPODS);
    assert_int_equal(fair_fake_reset_faults(&fake), 0);
    stop_all(&fake, &c);
}

int main(void)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_lease_survives_bind_flood, tc_teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    curl_global_cleanup();
    return rc;
}
