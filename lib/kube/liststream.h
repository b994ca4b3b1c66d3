/* A Kubernetes List ({"kind":..., "metadata":{...}, "items":[...]})
 * parsed as its bytes arrive, item by item, so that a page of any size is
 * read in memory bounded by one item's kept fields.
 *
 * Each item goes through a field filter (kube/jsonfilter.h) while it is
 * scanned: the bytes of the fields the filter keeps are copied, compacted,
 * into the item's buffer; the bytes of every other field (env,
 * managedFields, volumes, ...) are scanned for structure and dropped as
 * they go by, never held. When the item's closing bracket arrives, the
 * callback gets its kept JSON text (to parse with
 * fair_json_parse_filtered()). The filter here is a superset of the exact
 * one: a key written with escapes is matched after unescaping, and kept
 * values are copied verbatim; the exact parse that follows validates them.
 *
 * Limits: an item whose kept text passes max_item bytes, or whose kept
 * part nests past FAIR_JSON_MAX_DEPTH, is reported as oversized (its text
 * is not given) and the stream goes on with the next item. Alongside, a
 * second filter (the skeleton: the fields that identify the object) is
 * kept in at most FAIR_KLIST_MAX_SKELETON bytes, so that an oversized
 * item can still be named. The list's own fields (kind, apiVersion,
 * metadata) are kept in at most FAIR_KLIST_MAX_META bytes; object keys are
 * read in at most FAIR_KLIST_MAX_KEY bytes. Malformed JSON outside what an
 * item keeps (unbalanced brackets, a missing colon, a truncated stream)
 * fails the whole stream: item boundaries can no longer be trusted. */
#ifndef FAIR_KUBE_LISTSTREAM_H
#define FAIR_KUBE_LISTSTREAM_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "kube/jsonfilter.h"

#define FAIR_KLIST_MAX_META ((size_t)64 << 10)
#define FAIR_KLIST_MAX_SKELETON ((size_t)8 << 10)
#define FAIR_KLIST_MAX_KEY ((size_t)4096)

struct fair_kliststream; /* opaque */

/* One item, borrowed for the duration of the callback. */
struct fair_klist_item {
    const char *json; /* the kept fields as JSON text; NULL when oversized */
    size_t len;
    const char *skeleton; /* the skeleton filter's fields; NULL when they did not fit */
    size_t skeleton_len;
    size_t raw_len; /* the item's bytes in the stream */
    bool oversized; /* its kept fields passed max_item or the depth limit */
    size_t index;   /* 0 for the first item of the stream */
};

/* A non-zero return stops the stream; fair_kliststream_feed() returns it. */
typedef int (*fair_klist_item_cb)(const struct fair_klist_item *it, void *ctx);

/* filter: the fields of each item to keep (NULL keeps everything);
 * skeleton: the fields to keep alongside, within FAIR_KLIST_MAX_SKELETON
 * (NULL: none); both borrowed and must outlive the stream. max_item: the
 * cap on one item's kept text (0: 4 MiB). */
int fair_kliststream_new(const struct fair_jfield *filter, const struct fair_jfield *skeleton,
                         size_t max_item, fair_klist_item_cb cb, void *ctx,
                         struct fair_kliststream **out);
void fair_kliststream_free(struct fair_kliststream *ls);

/* Feeds the next n bytes (any split). Returns 0, FAIR_EPARSE (malformed;
 * err gives the byte offset), FAIR_ERANGE (the list's own fields or an
 * object key over its limit), FAIR_ENOMEM, or the callback's non-zero
 * return. After a failure the stream accepts nothing more. */
int fair_kliststream_feed(struct fair_kliststream *ls, const char *data, size_t n,
                          struct fair_error *err);

/* After the last byte: 0 when the document was complete, with *meta (may
 * be NULL) the list without its items as JSON text ({"kind":...,
 * "apiVersion":..., "metadata":{...}}), borrowed from ls; else
 * FAIR_EPARSE (truncated) or the earlier failure. */
int fair_kliststream_finish(struct fair_kliststream *ls, const char **meta, size_t *meta_len,
                            struct fair_error *err);

/* Items seen so far, and the largest capacity any of the stream's buffers
 * reached (bytes): what the stream held in memory at its peak. */
size_t fair_kliststream_items(const struct fair_kliststream *ls);
size_t fair_kliststream_peak(const struct fair_kliststream *ls);

#endif
