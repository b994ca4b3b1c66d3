/* Watch streams: framing of newline-delimited JSON events and decoding of
 * one event ({"type": ..., "object": {...}}).
 *
 * The framer is fed bytes exactly as they arrive (any split into chunks)
 * and hands out each complete line, without the '\n'. A line longer than
 * max_event fails the stream with FAIR_ERANGE: the caller then drops the
 * watch and relists. Empty lines are skipped. Lines that complete within
 * one chunk are handed out without copying. */
#ifndef FAIR_KUBE_WATCH_H
#define FAIR_KUBE_WATCH_H

#include <jansson.h>
#include <stddef.h>

#include "base/buf.h"
#include "base/error.h"
#include "kube/jsonfilter.h"

#define FAIR_KWATCH_DEFAULT_MAX_EVENT ((size_t)4 << 20)

enum fair_kwatch_type {
    FAIR_KWATCH_ADDED,
    FAIR_KWATCH_MODIFIED,
    FAIR_KWATCH_DELETED,
    FAIR_KWATCH_BOOKMARK,
    FAIR_KWATCH_ERROR,
};

/* One event. object is borrowed (valid during the callback). For ERROR
 * events, code/reason/message come from the Status object (code 410:
 * the resourceVersion is too old; relist). */
struct fair_kwatch_event {
    enum fair_kwatch_type type;
    json_t *object;
    const char *resource_version; /* object's metadata.resourceVersion, or NULL */
    int code;                     /* ERROR only */
    const char *reason;           /* ERROR only; "" otherwise */
    const char *message;          /* ERROR only; "" otherwise */
};

/* Called with each complete line; a non-zero return stops the feed and is
 * returned by fair_kframer_feed(). */
typedef int (*fair_kframer_line_cb)(const char *line, size_t len, void *ctx);

struct fair_kframer {
    struct fair_buf partial; /* the incomplete last line */
    size_t max_event;
};

void fair_kframer_init(struct fair_kframer *f, size_t max_event);
void fair_kframer_release(struct fair_kframer *f);
/* Feeds n bytes. Returns 0, FAIR_ERANGE (line over max_event; err says
 * how long), FAIR_ENOMEM, or the callback's non-zero return. */
int fair_kframer_feed(struct fair_kframer *f, const char *data, size_t n, fair_kframer_line_cb cb,
                      void *ctx, struct fair_error *err);
/* Bytes of an incomplete line still held (a stream that ends with some
 * is truncated). */
size_t fair_kframer_pending(const struct fair_kframer *f);

/* Parses one line into *ev; *root_out receives the parsed document, which
 * owns ev->object and the strings (json_decref() it when done). Returns
 * FAIR_EPARSE for malformed JSON or an unknown type. */
int fair_kwatch_event_parse(const char *line, size_t len, struct fair_kwatch_event *ev,
                            json_t **root_out, struct fair_error *err);

/* The same, parsing the event's object through filter (the fields of the
 * object to keep, see kube/jsonfilter.h; NULL keeps everything). */
int fair_kwatch_event_parse_filtered(const char *line, size_t len, const struct fair_jfield *filter,
                                     struct fair_kwatch_event *ev, json_t **root_out,
                                     struct fair_error *err);

const char *fair_kwatch_type_name(enum fair_kwatch_type t);

#endif
