/* A JSON parser that builds jansson values for the fields a decoder reads
 * and skips everything else without allocating. Real pods carry 2-20 KB
 * of JSON of which the controller reads a few hundred bytes; building the
 * whole jansson tree costs most of the watch path's time, so watch events
 * are parsed through a filter per kind (decode.h's fair_ktype.filter).
 *
 * A filter is an array of fields ending with {NULL}: the object keys to
 * keep at one level. A field with sub == NULL keeps its whole value; with
 * sub set, the value's object keys are filtered by sub (and, when the
 * value is an array, each object element is). Keys not listed are skipped.
 *
 * Kept values are fully validated (strings: escapes and UTF-8, numbers:
 * the JSON grammar). Skipped values are scanned only for structure
 * (strings terminated, brackets balanced, depth within the limit), so some
 * malformed documents are accepted when the damage lies in skipped parts:
 * the parts the program uses are always well-formed. */
#ifndef FAIR_KUBE_JSONFILTER_H
#define FAIR_KUBE_JSONFILTER_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"

#define FAIR_JSON_MAX_DEPTH 64

struct fair_jfield {
    const char *key;
    const struct fair_jfield *sub; /* NULL: keep the whole value */
};

/* Parses s[0..len) into *out (a new reference). filter NULL keeps
 * everything (then the result equals json_loadb()'s). Returns 0,
 * FAIR_EPARSE (err gives the byte offset), FAIR_ERANGE (too deep) or
 * FAIR_ENOMEM. */
int fair_json_parse_filtered(const char *s, size_t len, const struct fair_jfield *filter,
                             json_t **out, struct fair_error *err);

#endif
