/* Shared by the simulator's unit tests: a trace parsed from CSV text.
 * Include after <cmocka.h>. */
#ifndef FAIR_TEST_SIM_FIXTURE_H
#define FAIR_TEST_SIM_FIXTURE_H

#include <string.h>

#include "sim/trace.h"

/* Parses nodes (and jobs, unless NULL) into t; fails the test on error. */
static __attribute__((unused)) void load(struct fair_sim_trace *t, const char *nodes,
                                         const char *jobs)
{
    struct fair_error err = {0};
    fair_sim_trace_init(t);
    if (fair_sim_trace_parse_nodes(t, "nodes.csv", nodes, strlen(nodes), NULL, &err) ||
        (jobs && fair_sim_trace_parse_jobs(t, "jobs.csv", jobs, strlen(jobs), NULL, &err)))
        fail_msg("%s", err.msg);
}

#endif
