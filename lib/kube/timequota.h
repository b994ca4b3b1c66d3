/* Decoding of the time-based quota fields of a Project or Queue spec
 * (struct fair_ktime in kube/objects.h): usageHalfLife, budget and
 * schedule. Kept apart from decode.c so that these fields read as one
 * block; see docs/api.md for their meaning. */
#ifndef FAIR_KUBE_TIMEQUOTA_H
#define FAIR_KUBE_TIMEQUOTA_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kube/objects.h"

/* Reads spec (may be NULL). project: usageHalfLife and budget are allowed
 * (on a Queue they are a problem). *out is NULL when none of the fields is
 * set, else a new struct (fair_ktime_free). Problems with the values go
 * to problem ("spec.schedule[1].start: ..."; "" when none), and the
 * fields with a problem are left out. Returns 0 or FAIR_ENOMEM. */
int fair_ktime_decode(const json_t *spec, bool project, struct fair_ktime **out, char *problem,
                      size_t n);

#endif
