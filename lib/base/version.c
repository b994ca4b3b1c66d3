/* The version line every program prints (see version.h); the strings
 * themselves are generated into the build folder. */
#include "base/version.h"

void fair_version_print(FILE *f, const char *prog)
{
    fprintf(f, "%s %s (commit %s, built %s)\n", prog, fair_version, fair_git_commit,
            fair_build_date);
}
