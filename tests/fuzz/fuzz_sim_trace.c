/* Fuzzes the simulator's trace loaders (lib/sim/trace.h) over a buffer:
 * the first byte picks what the rest is: a node list, a job list (either
 * format: OpenB pods or the simple jobs CSV), or both, split at the first
 * "\n\n" (nodes first, so that jobs share the nodes' GPU models).
 * Small limits (64 KiB, 256-byte lines, 200 rows) so that every cap is
 * hit. Properties: failure carries a message; a loaded trace holds at
 * most max_rows nodes and jobs, each job has a name, a non-negative
 * request, and jobs are sorted by submit time.
 * fuzz-max-len: 8192 */
#define _GNU_SOURCE /* memmem */
#include "sim/trace.h"

#include "fuzz.h"

static void check(const struct fair_sim_trace *t)
{
    if (t->nnodes > 200 || t->njobs > 200)
        fuzz_fail("%zu nodes, %zu jobs over the 200-row cap", t->nnodes, t->njobs);
    if (t->nmodels > FAIR_SIM_MAX_MODELS)
        fuzz_fail("%zu models", t->nmodels);
    for (size_t i = 0; i < t->nnodes; i++)
        if (!t->nodes[i].name || t->nodes[i].gpu_count < 0 || t->nodes[i].model >= (int)t->nmodels)
            fuzz_fail("node %zu is broken", i);
    for (size_t i = 0; i < t->njobs; i++) {
        const struct fair_sim_job *j = &t->jobs[i];
        if (!j->name || j->gpu_milli < 0 || j->cpu_milli < 0 || j->memory_bytes < 0 ||
            j->duration_ms < 0)
            fuzz_fail("job %zu is broken", i);
        if (i > 0 && t->jobs[i - 1].submit_ms > j->submit_ms)
            fuzz_fail("jobs %zu and %zu out of order", i - 1, i);
        if (j->queue >= 0 && (size_t)j->queue >= t->nqueue_names)
            fuzz_fail("job %zu names queue %d of %zu", i, j->queue, t->nqueue_names);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    struct fair_sim_limits lim = {.max_bytes = 64 * 1024, .max_line = 256, .max_rows = 200};
    const char *s = (const char *)data + 1;
    size_t n = size - 1;
    struct fair_sim_trace t;
    struct fair_error err = {0};
    int rc = 0;
    fair_sim_trace_init(&t);
    switch (data[0] % 3) {
    case 0:
        rc = fair_sim_trace_parse_nodes(&t, "nodes.csv", s, n, &lim, &err);
        break;
    case 1:
        rc = fair_sim_trace_parse_jobs(&t, "jobs.csv", s, n, &lim, &err);
        break;
    default: {
        const char *cut = memmem(s, n, "\n\n", 2);
        size_t k = cut ? (size_t)(cut - s) + 1 : n;
        rc = fair_sim_trace_parse_nodes(&t, "nodes.csv", s, k, &lim, &err);
        if (rc == 0 && cut)
            rc = fair_sim_trace_parse_jobs(&t, "jobs.csv", cut + 2, n - k - 1, &lim, &err);
    }
    }
    if (rc != 0 && !err.msg[0])
        fuzz_fail("failure %d without a message", rc);
    if (rc == 0)
        check(&t);
    fair_sim_trace_release(&t);
    return 0;
}
