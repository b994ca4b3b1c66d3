/* Watch-stream framing (newline-delimited JSON, any chunking) and event
 * parsing (see watch.h). */
#include "kube/watch.h"

#include <string.h>

#include "base/alloc.h"

void fair_kframer_init(struct fair_kframer *f, size_t max_event)
{
    f->max_event = max_event ? max_event : FAIR_KWATCH_DEFAULT_MAX_EVENT;
    /* +1: the buffer must hold a line of exactly max_event bytes. */
    fair_buf_init(&f->partial, f->max_event + 1);
}

void fair_kframer_release(struct fair_kframer *f)
{
    fair_buf_release(&f->partial);
}

size_t fair_kframer_pending(const struct fair_kframer *f)
{
    return f->partial.len;
}

static int emit(const char *line, size_t len, fair_kframer_line_cb cb, void *ctx)
{
    /* Tolerate CRLF and blank keep-alive lines. */
    if (len && line[len - 1] == '\r')
        len--;
    if (len == 0)
        return 0;
    return cb(line, len, ctx);
}

int fair_kframer_feed(struct fair_kframer *f, const char *data, size_t n, fair_kframer_line_cb cb,
                      void *ctx, struct fair_error *err)
{
    int rc = 0;
    while (n > 0) {
        const char *nl = memchr(data, '\n', n);
        size_t take = nl ? (size_t)(nl - data) : n;
        if (f->partial.len + take > f->max_event)
            return fair_error_set(err, FAIR_ERANGE,
                                  "watch event larger than %zu bytes (limit); dropping the "
                                  "stream",
                                  f->max_event);
        if (!nl) {
            rc = fair_buf_append(&f->partial, data, take);
            if (rc)
                return fair_error_set(err, rc, "watch: cannot buffer %zu bytes", take);
            return 0;
        }
        if (f->partial.len == 0) {
            rc = emit(data, take, cb, ctx); /* no copy: the line is whole in this chunk */
        } else {
            rc = fair_buf_append(&f->partial, data, take);
            if (rc)
                return fair_error_set(err, rc, "watch: cannot buffer %zu bytes", take);
            rc = emit(f->partial.data, f->partial.len, cb, ctx);
            fair_buf_reset(&f->partial);
        }
        if (rc)
            return rc;
        data += take + 1;
        n -= take + 1;
    }
    return 0;
}

static const char *const type_names[] = {"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"};

const char *fair_kwatch_type_name(enum fair_kwatch_type t)
{
    return (unsigned)t < 5 ? type_names[t] : "?";
}

int fair_kwatch_event_parse(const char *line, size_t len, struct fair_kwatch_event *ev,
                            json_t **root_out, struct fair_error *err)
{
    return fair_kwatch_event_parse_filtered(line, len, NULL, ev, root_out, err);
}

int fair_kwatch_event_parse_filtered(const char *line, size_t len, const struct fair_jfield *filter,
                                     struct fair_kwatch_event *ev, json_t **root_out,
                                     struct fair_error *err)
{
    memset(ev, 0, sizeof *ev);
    ev->reason = ev->message = "";
    *root_out = NULL;
    const struct fair_jfield event_filter[] = {{"type", NULL}, {"object", filter}, {NULL, NULL}};
    json_t *root = NULL;
    struct fair_error pe = {0};
    int rc = fair_json_parse_filtered(line, len, event_filter, &root, &pe);
    if (rc)
        return fair_error_set(err, rc == FAIR_ENOMEM ? rc : FAIR_EPARSE, "watch event: %s", pe.msg);
    const char *type = json_string_value(json_object_get(root, "type"));
    json_t *obj = json_object_get(root, "object");
    int i;
    for (i = 0; type && i < 5; i++)
        if (!strcmp(type, type_names[i]))
            break;
    if (!type || i == 5 || !json_is_object(obj)) {
        json_decref(root);
        return fair_error_set(err, FAIR_EPARSE,
                              "watch event: want {\"type\": ADDED|MODIFIED|"
                              "DELETED|BOOKMARK|ERROR, \"object\": {...}}");
    }
    ev->type = (enum fair_kwatch_type)i;
    ev->object = obj;
    ev->resource_version =
        json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (ev->type == FAIR_KWATCH_ERROR) {
        json_t *c = json_object_get(obj, "code");
        ev->code = json_is_integer(c) ? (int)json_integer_value(c) : 0;
        const char *s = json_string_value(json_object_get(obj, "reason"));
        ev->reason = s ? s : "";
        s = json_string_value(json_object_get(obj, "message"));
        ev->message = s ? s : "";
    }
    *root_out = root;
    return 0;
}
