/* MIG profile names to GPU shares (mig.h). The tables hold each GPU's
 * profiles as "<compute slices>g.<memory>gb"; a name matches one only
 * exactly, so a typo or an unknown GPU is an error and never a guess. */

#include "base/mig.h"

#include <stddef.h>
#include <string.h>

/* A GPU family: its compute slices and the profiles (base names) it
 * offers. A name in both families would be ambiguous; the one such name
 * (1g.24gb: H100-94GB and GH200 1/7, RTX PRO 6000 Blackwell 1/4) is listed
 * only in the 7-slice family (docs/fractions.md, "MIG"). */
struct mig_family {
    const char *gpus; /* for messages and docs only */
    int slices;
    const char *const *profiles;
};

/* A30-24GB; RTX PRO 6000 Blackwell (96 GB, but for its 1g.24gb). */
static const char *const four[] = {"1g.6gb", "2g.12gb", "4g.24gb", "2g.48gb", "4g.96gb", NULL};
/* A100-40GB; A100-80GB and H100-80GB; H100-94GB (NVL); GH200-96GB;
 * H200-141GB; GH200-144GB; B200-180GB; B300-288GB. */
static const char *const seven[] = {
    "1g.5gb",   "1g.10gb",  "2g.10gb",  "3g.20gb", "4g.20gb",  "7g.40gb", "1g.20gb",  "2g.20gb",
    "3g.40gb",  "4g.40gb",  "7g.80gb",  "1g.12gb", "1g.24gb",  "2g.24gb", "3g.47gb",  "4g.47gb",
    "7g.94gb",  "3g.48gb",  "4g.48gb",  "7g.96gb", "1g.18gb",  "1g.35gb", "2g.35gb",  "3g.71gb",
    "4g.71gb",  "7g.141gb", "1g.36gb",  "2g.36gb", "3g.72gb",  "4g.72gb", "7g.144gb", "1g.23gb",
    "1g.45gb",  "2g.45gb",  "3g.90gb",  "4g.90gb", "7g.180gb", "1g.34gb", "1g.67gb",  "2g.67gb",
    "3g.135gb", "4g.135gb", "7g.269gb", NULL};

static const struct mig_family families[] = {
    {"A30, RTX PRO 6000", 4, four},
    {"A100, H100, H200, GH200, B200, B300", 7, seven},
};

/* Suffixes after the base profile: media extensions and graphics. */
static const char *const suffixes[] = {"", "+me", "+me.all", "-me", "+gfx", NULL};

bool fair_mig_is_resource(const char *name)
{
    return name && !strncmp(name, FAIR_MIG_PREFIX, sizeof FAIR_MIG_PREFIX - 1);
}

int fair_mig_share_milli(const char *name, int64_t *milli, struct fair_error *err)
{
    *milli = 0;
    if (!fair_mig_is_resource(name))
        return fair_error_set(err, FAIR_EINVAL, "not a MIG resource (want %s<profile>)",
                              FAIR_MIG_PREFIX);
    if (strlen(name) > FAIR_MIG_NAME_MAX)
        return fair_error_set(err, FAIR_EINVAL, "MIG resource name longer than %d characters",
                              FAIR_MIG_NAME_MAX);
    const char *prof = name + sizeof FAIR_MIG_PREFIX - 1;
    /* The base ends at the first '+' or '-'; what follows is a suffix. */
    size_t blen = strcspn(prof, "+-");
    const char *suf = prof + blen;
    bool suf_ok = false;
    for (size_t i = 0; suffixes[i]; i++)
        if (!strcmp(suf, suffixes[i]))
            suf_ok = true;
    if (suf_ok)
        for (size_t f = 0; f < sizeof families / sizeof families[0]; f++)
            for (size_t i = 0; families[f].profiles[i]; i++) {
                const char *p = families[f].profiles[i];
                if (strlen(p) != blen || strncmp(p, prof, blen))
                    continue;
                int g = p[0] - '0'; /* every table entry starts "<digit>g." */
                int s = families[f].slices;
                *milli = ((int64_t)g * 1000 + s / 2) / s;
                return 0;
            }
    return fair_error_set(err, FAIR_EINVAL,
                          "unknown MIG profile \"%.*s\" (want <slices>g.<memory>gb as NVIDIA "
                          "names it, e.g. 1g.10gb or 3g.40gb+me; see docs/fractions.md)",
                          FAIR_MIG_NAME_MAX, prof);
}
