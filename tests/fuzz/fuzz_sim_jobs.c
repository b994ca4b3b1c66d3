/* Fuzzes the simple jobs CSV of the simulator (name,queue,submit_s,
 * duration_s,gpu,cpu,memory[,priority,preemptible,gpu_model]; lib/sim/
 * trace.h's fair_sim_trace_parse_jobs) after a fixed two-node list, so that
 * gpu_model names meet interned models. Properties: failure carries a
 * message; jobs are sorted by submit time, have names, whole-GPU requests
 * are multiples of 1000 milli-GPU or a fraction below one GPU, queue
 * indexes are within the queue-name table.
 * fuzz-max-len: 8192 */
#include "sim/trace.h"

#include "fuzz.h"

static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\n"
                            "node-a,64000,262144,8,V100M16\n"
                            "node-b,64000,262144,8,T4\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fair_sim_limits lim = {.max_bytes = 64 * 1024, .max_line = 512, .max_rows = 300};
    struct fair_sim_trace t;
    struct fair_error err = {0};
    fair_sim_trace_init(&t);
    int rc = fair_sim_trace_parse_nodes(&t, "nodes.csv", nodes, sizeof nodes - 1, &lim, &err);
    if (rc != 0)
        fuzz_fail("fixed node list: %s", err.msg);
    rc = fair_sim_trace_parse_jobs(&t, "jobs.csv", (const char *)data, size, &lim, &err);
    if (rc != 0 && !err.msg[0])
        fuzz_fail("failure %d without a message", rc);
    for (size_t i = 0; rc == 0 && i < t.njobs; i++) {
        const struct fair_sim_job *j = &t.jobs[i];
        if (!j->name || j->gpu_milli < 0 || (j->gpu_milli > 1000 && j->gpu_milli % 1000 != 0))
            fuzz_fail("job %zu: gpu_milli %lld", i, (long long)j->gpu_milli);
        if (j->duration_ms < 0 || j->cpu_milli < 0 || j->memory_bytes < 0)
            fuzz_fail("job %zu has a negative field", i);
        if (i > 0 && t.jobs[i - 1].submit_ms > j->submit_ms)
            fuzz_fail("jobs %zu and %zu out of order", i - 1, i);
        if (j->queue >= 0 && (size_t)j->queue >= t.nqueue_names)
            fuzz_fail("job %zu names queue %d of %zu", i, j->queue, t.nqueue_names);
        if (t.nmodels < 64 && (j->model_mask >> t.nmodels))
            fuzz_fail("job %zu model mask beyond %zu models", i, t.nmodels);
    }
    if (rc == 0 && t.njobs > 300)
        fuzz_fail("%zu jobs over the cap", t.njobs);
    fair_sim_trace_release(&t);
    return 0;
}
