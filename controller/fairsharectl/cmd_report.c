/* fairsharectl report: placeholder until its module lands; it says so and
 * exits with status 1 rather than pretending to work. */
#include <stdio.h>

#include "cmd.h"

int fair_cmd_report(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "fairsharectl report: not built yet\n");
    return 1;
}
