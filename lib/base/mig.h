/* NVIDIA MIG profiles as extended resources (the GPU operator's "mixed"
 * strategy: nvidia.com/mig-1g.10gb, nvidia.com/mig-3g.40gb+me, ...): which
 * share of one GPU a profile is, from its name alone (docs/fractions.md,
 * "MIG"). Pure and allocation-free, so that pod decoding and the engine's
 * callers can use it per pod event. */
#ifndef FAIR_BASE_MIG_H
#define FAIR_BASE_MIG_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

#define FAIR_MIG_PREFIX "nvidia.com/mig-"
/* Longest resource name read as a MIG profile (a Kubernetes resource
 * name's part after the prefix has at most 63 characters). */
#define FAIR_MIG_NAME_MAX 80

/* Whether name is an extended resource of the nvidia.com/mig- family. */
bool fair_mig_is_resource(const char *name);

/* The share of one GPU that one instance of MIG resource name is, in
 * milli-GPU (1000 = one GPU): compute slices of the profile over the
 * slices of its GPU, rounded to the nearest milli (1g.10gb: 1/7 = 143;
 * 3g.40gb: 3/7 = 429; 7g.80gb: 1000; A30 1g.6gb: 1/4 = 250). The GPU's
 * slice count comes from the profile's name (compute slices and memory
 * size), from NVIDIA's profile tables: A30 and RTX PRO 6000 profiles have
 * 4 slices, A100, H100, H200, GH200, B200 and B300 ones 7 (1g.24gb, a name
 * of both kinds, counts as 1/7). The name is "nvidia.com/mig-" then
 * "<g>g.<mem>gb", optionally followed by "+me", "+me.all", "-me" or
 * "+gfx". Returns 0, FAIR_EINVAL with a message for a name that does not
 * parse or a profile not in the tables. */
int fair_mig_share_milli(const char *name, int64_t *milli, struct fair_error *err);

#endif
