/* Fairshare's version and build information, one source for every
 * program: `fairshare-controller --version`, `fairsharectl version` and the
 * fairshare_build_info metric. The strings are generated at build time by
 * cmake/version.cmake from project(VERSION) in CMakeLists.txt, the git
 * commit ("unknown" without git, "-dirty" when tracked files differ) and
 * the date (SOURCE_DATE_EPOCH, else the commit's date, else the time of
 * configuration). They hold only [0-9A-Za-z.:+-]. */
#ifndef FAIR_BASE_VERSION_H
#define FAIR_BASE_VERSION_H

#include <stdio.h>

extern const char fair_version[];    /* "0.2.0" */
extern const char fair_git_commit[]; /* "aea2ff5c0d1e" or "unknown" */
extern const char fair_build_date[]; /* "2026-11-26T19:34:19Z" */
/* The User-Agent of the API requests, as kubectl's "kubectl/v1.27.0 (...)":
 * the controller's, and fairsharectl's (and any other client's). */
extern const char fair_user_agent_controller[]; /* "fairshare-controller/0.2.0 (aea2ff5c0d1e)" */
extern const char fair_user_agent_leader[];     /* the same, "... leader-election" */
extern const char fair_user_agent_cli[];        /* "fairshare/0.2.0 (aea2ff5c0d1e)" */

/* Prints "PROG VERSION (commit COMMIT, built DATE)\n" to f. */
void fair_version_print(FILE *f, const char *prog);

#endif
