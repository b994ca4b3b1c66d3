/* Fuzzes fair_sim_config_parse (lib/sim/config.h): the Projects and Queues
 * file of `fairsharectl simulate --projects`, YAML read by base/yaml.h and
 * decoded by lib/kube.
 * Properties: failure carries a message and leaves nothing to release but
 * what release frees; success gives at least one Queue and at most
 * FAIR_SIM_MAX_QUEUES, every Project and Queue has a non-empty name,
 * names are unique per kind, every Queue names a Project of the file (its
 * index in range, the same name), guarantees are not negative, weights
 * are positive, limits are not below guarantees, and
 * fair_sim_config_queue() finds each Queue at its index.
 * fuzz-max-len: 8192 */
#include "sim/config.h"

#include "fuzz.h"

static void check_quota(const struct fair_quota *q, const char *what, size_t i)
{
    if (!q->name || !q->name[0])
        fuzz_fail("%s %zu has no name", what, i);
    if (q->over_quota_weight <= 0)
        fuzz_fail("%s %s: weight %lld", what, q->name, (long long)q->over_quota_weight);
    for (int r = 0; r < FAIR_RES_COUNT; r++) {
        if (q->guaranteed.v[r] < 0)
            fuzz_fail("%s %s: negative guarantee %lld", what, q->name,
                      (long long)q->guaranteed.v[r]);
        if (q->limit.v[r] < q->guaranteed.v[r])
            fuzz_fail("%s %s: limit %lld below the guarantee %lld", what, q->name,
                      (long long)q->limit.v[r], (long long)q->guaranteed.v[r]);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fair_sim_config c;
    struct fair_error err = {0};
    fair_sim_config_init(&c);
    int rc = fair_sim_config_parse(&c, "fuzz.yaml", (const char *)data, size, &err);
    if (rc != 0) {
        if (!err.msg[0])
            fuzz_fail("failure %d without a message", rc);
        fair_sim_config_release(&c);
        return 0;
    }
    if (c.nqueues < 1 || c.nqueues > FAIR_SIM_MAX_QUEUES)
        fuzz_fail("%zu queues", c.nqueues);
    for (size_t i = 0; i < c.nprojects; i++) {
        check_quota(&c.projects[i].q, "project", i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(c.projects[i].q.name, c.projects[j].q.name) == 0)
                fuzz_fail("project %s twice", c.projects[i].q.name);
    }
    for (size_t i = 0; i < c.nqueues; i++) {
        const struct fair_queue *q = &c.queues[i];
        check_quota(&q->q, "queue", i);
        for (size_t j = 0; j < i; j++)
            if (strcmp(q->q.name, c.queues[j].q.name) == 0)
                fuzz_fail("queue %s twice", q->q.name);
        if (q->project < 0 || (size_t)q->project >= c.nprojects)
            fuzz_fail("queue %s: project index %d of %zu", q->q.name, q->project, c.nprojects);
        if (!q->project_name || strcmp(q->project_name, c.projects[q->project].q.name) != 0)
            fuzz_fail("queue %s: project \"%s\" but index %d is %s", q->q.name,
                      q->project_name ? q->project_name : "(null)", q->project,
                      c.projects[q->project].q.name);
        if (fair_sim_config_queue(&c, q->q.name) != (int32_t)i)
            fuzz_fail("queue %s not found at %zu", q->q.name, i);
    }
    fair_sim_config_release(&c);
    return 0;
}
