/* Go-style durations ("90s", "5m", "1h30m", "250ms") as used by Kubernetes
 * fields such as Queue.spec.reclaimMinRuntime. Units: ns us ms s m h.
 * Negative durations and inputs over FAIR_DURATION_MAX_LEN are rejected. */
#ifndef FAIR_BASE_DURATION_H
#define FAIR_BASE_DURATION_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define FAIR_DURATION_MAX_LEN 64

/* Parses s into milliseconds (sub-millisecond parts round up). */
int fair_duration_parse_ms(const char *s, int64_t *out_ms, struct fair_error *err);
/* Formats milliseconds as "1h30m0s"-like text. */
void fair_duration_format_ms(int64_t ms, char *out, size_t n);

#endif
