/* Kubernetes resource quantities ("0.5", "500m", "16Gi", "1e3") parsed
 * exactly into integers. The grammar is apimachinery's:
 *   quantity := [+-] number suffix
 *   number   := digits | digits '.' digits? | '.' digits
 *   suffix   := '' | m | k | M | G | T | P | E | Ki | Mi | Gi | Ti | Pi | Ei
 *             | (e|E) [+-]? digits
 * Like Kubernetes' MilliValue()/Value(), a result with a fractional part is
 * rounded up (towards +infinity). Negative values parse; callers that
 * forbid them check the sign. Inputs longer than FAIR_QUANTITY_MAX_LEN
 * and results outside int64 are rejected with FAIR_ERANGE. */
#ifndef FAIR_BASE_QUANTITY_H
#define FAIR_BASE_QUANTITY_H

#include <stdint.h>

#include "base/error.h"

#define FAIR_QUANTITY_MAX_LEN 64

/* value x 1000: for GPUs (milli-GPU) and CPUs (millicores). */
int fair_quantity_parse_milli(const char *s, int64_t *out, struct fair_error *err);
/* value: for memory (bytes) and counts. */
int fair_quantity_parse(const char *s, int64_t *out, struct fair_error *err);

/* Formats milli-units as the shortest exact decimal ("2.5", "0.25", "3"). */
void fair_milli_format(int64_t milli, char *out, size_t n);
/* Formats bytes with the largest binary suffix that is exact ("16Gi"). */
void fair_bytes_format(int64_t bytes, char *out, size_t n);

#endif
