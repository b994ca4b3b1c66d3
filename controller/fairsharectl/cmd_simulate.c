/* fairsharectl simulate: placeholder until its module lands; it says so and
 * exits with status 1 rather than pretending to work. */
#include <stdio.h>

#include "cmd.h"

int fair_cmd_simulate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "fairsharectl simulate: not built yet\n");
    return 1;
}
