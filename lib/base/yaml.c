/* YAML to jansson with limits (see yaml.h). An explicit stack of open
 * collections replaces recursion, so depth is bounded by max_depth. */
#include "base/yaml.h"
#include "base/alloc.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

void fair_yaml_limits_default(struct fair_yaml_limits *lim)
{
    if (!lim->max_bytes)
        lim->max_bytes = 1 << 20;
    if (!lim->max_depth)
        lim->max_depth = 32;
    if (!lim->max_nodes)
        lim->max_nodes = 100000;
    if (!lim->max_docs)
        lim->max_docs = 1000;
}

struct frame {
    json_t *value; /* object or array */
    char *key;     /* pending key in a mapping, owned */
};

static json_t *plain_scalar(const char *s, size_t len)
{
    if (len == 0 || strcmp(s, "~") == 0 || strcmp(s, "null") == 0 || strcmp(s, "Null") == 0 ||
        strcmp(s, "NULL") == 0)
        return json_null();
    if (strcmp(s, "true") == 0 || strcmp(s, "True") == 0 || strcmp(s, "TRUE") == 0)
        return json_true();
    if (strcmp(s, "false") == 0 || strcmp(s, "False") == 0 || strcmp(s, "FALSE") == 0)
        return json_false();
    const char *p = s;
    if (*p == '-' || *p == '+')
        p++;
    if (*p >= '0' && *p <= '9' && len < 20) {
        const char *q = p;
        while (*q >= '0' && *q <= '9')
            q++;
        if (*q == '\0' && !(p[0] == '0' && p[1] != '\0')) {
            errno = 0;
            long long v = strtoll(s, NULL, 10);
            if (errno == 0)
                return json_integer(v);
        }
    }
    return json_stringn(s, len);
}

/* Attaches v (taken) to the top frame, or makes it the document root. */
static int attach(struct frame *stack, int depth, json_t **root, json_t *v, const char *name,
                  const yaml_event_t *ev, struct fair_error *err)
{
    if (!v)
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
    if (depth == 0) {
        *root = v;
        return 0;
    }
    struct frame *top = &stack[depth - 1];
    if (json_is_array(top->value)) {
        if (json_array_append_new(top->value, v))
            return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
        return 0;
    }
    if (!top->key) {
        if (!json_is_string(v)) {
            json_decref(v);
            return fair_error_set(err, FAIR_EPARSE, "%s:%zu:%zu: mapping keys must be scalars",
                                  name, ev->start_mark.line + 1, ev->start_mark.column + 1);
        }
        top->key = fair_strdup(json_string_value(v));
        json_decref(v);
        return top->key ? 0 : fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
    }
    int rc = json_object_set_new(top->value, top->key, v);
    fair_free(top->key);
    top->key = NULL;
    return rc ? fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name) : 0;
}

int fair_yaml_parse(const char *name, const char *data, size_t len,
                    const struct fair_yaml_limits *limits, json_t **docs_out,
                    struct fair_error *err)
{
    struct fair_yaml_limits lim = {0};
    if (limits)
        lim = *limits;
    fair_yaml_limits_default(&lim);
    if (!name)
        name = "<yaml>";
    *docs_out = NULL;
    if (len > lim.max_bytes)
        return fair_error_set(err, FAIR_ERANGE, "%s: larger than %zu bytes", name, lim.max_bytes);

    int rc = 0;
    yaml_parser_t parser;
    yaml_event_t ev;
    int have_event = 0;
    struct frame *stack = fair_calloc((size_t)lim.max_depth, sizeof(*stack));
    json_t *docs = json_array();
    json_t *root = NULL;
    int depth = 0;
    size_t nodes = 0;
    if (!stack || !docs) {
        fair_free(stack);
        json_decref(docs);
        return fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
    }
    if (!yaml_parser_initialize(&parser)) {
        rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
        goto out_noparser;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
    for (;;) {
        if (!yaml_parser_parse(&parser, &ev)) {
            rc = fair_error_set(err, FAIR_EPARSE, "%s:%zu:%zu: %s", name,
                                parser.problem_mark.line + 1, parser.problem_mark.column + 1,
                                parser.problem ? parser.problem : "invalid YAML");
            goto out;
        }
        have_event = 1;
        if (ev.type == YAML_STREAM_END_EVENT)
            break;
        switch (ev.type) {
        case YAML_DOCUMENT_START_EVENT:
            root = NULL;
            break;
        case YAML_DOCUMENT_END_EVENT:
            if (root) {
                if (json_array_size(docs) >= lim.max_docs) {
                    rc = fair_error_set(err, FAIR_ERANGE, "%s: more than %zu documents", name,
                                        lim.max_docs);
                    goto out;
                }
                json_array_append_new(docs, root);
                root = NULL;
            }
            break;
        case YAML_ALIAS_EVENT:
            rc = fair_error_set(err, FAIR_EPARSE,
                                "%s:%zu:%zu: YAML aliases (*name) are not supported", name,
                                ev.start_mark.line + 1, ev.start_mark.column + 1);
            goto out;
        case YAML_SCALAR_EVENT: {
            if (++nodes > lim.max_nodes) {
                rc = fair_error_set(err, FAIR_ERANGE, "%s: more than %zu YAML nodes", name,
                                    lim.max_nodes);
                goto out;
            }
            const char *s = (const char *)ev.data.scalar.value;
            size_t n = ev.data.scalar.length;
            json_t *v = ev.data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s, n)
                                                                        : json_stringn(s, n);
            rc = attach(stack, depth, &root, v, name, &ev, err);
            if (rc)
                goto out;
            break;
        }
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT: {
            if (++nodes > lim.max_nodes) {
                rc = fair_error_set(err, FAIR_ERANGE, "%s: more than %zu YAML nodes", name,
                                    lim.max_nodes);
                goto out;
            }
            if (depth >= lim.max_depth) {
                rc = fair_error_set(err, FAIR_ERANGE, "%s:%zu:%zu: nested deeper than %d levels",
                                    name, ev.start_mark.line + 1, ev.start_mark.column + 1,
                                    lim.max_depth);
                goto out;
            }
            json_t *v = ev.type == YAML_SEQUENCE_START_EVENT ? json_array() : json_object();
            if (!v) {
                rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", name);
                goto out;
            }
            /* The parent (or the document root) takes one reference and
             * the stack frame holds a second until the collection ends. */
            json_incref(v);
            rc = attach(stack, depth, &root, v, name, &ev, err);
            if (rc) {
                json_decref(v);
                goto out;
            }
            stack[depth].value = v;
            stack[depth].key = NULL;
            depth++;
            break;
        }
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            fair_free(stack[depth].key);
            json_decref(stack[depth].value);
            stack[depth].key = NULL;
            stack[depth].value = NULL;
            break;
        default:
            break;
        }
        yaml_event_delete(&ev);
        have_event = 0;
    }
    *docs_out = docs;
    docs = NULL;
out:
    if (have_event)
        yaml_event_delete(&ev);
    yaml_parser_delete(&parser);
out_noparser:
    while (depth > 0) {
        depth--;
        fair_free(stack[depth].key);
        json_decref(stack[depth].value);
    }
    if (rc)
        json_decref(root); /* a document that was not finished */
    fair_free(stack);
    json_decref(docs);
    return rc;
}

int fair_read_file(const char *path, size_t max_bytes, char **data_out, size_t *len_out,
                   struct fair_error *err)
{
    int rc = 0;
    char *data = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return fair_error_set(err, FAIR_EIO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size > max_bytes) {
        rc = fair_error_set(err, FAIR_ERANGE, "%s: larger than %zu bytes", path, max_bytes);
        goto out;
    }
    size_t cap = 4096, len = 0;
    data = fair_malloc(cap);
    if (!data) {
        rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", path);
        goto out;
    }
    for (;;) {
        if (len + 1 >= cap) {
            if (cap > max_bytes + 1) {
                rc = fair_error_set(err, FAIR_ERANGE, "%s: larger than %zu bytes", path,
                                    max_bytes);
                goto out;
            }
            char *nd = fair_realloc(data, cap * 2);
            if (!nd) {
                rc = fair_error_set(err, FAIR_ENOMEM, "%s: out of memory", path);
                goto out;
            }
            data = nd;
            cap *= 2;
        }
        size_t n = fread(data + len, 1, cap - len - 1, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        rc = fair_error_set(err, FAIR_EIO, "%s: read failed", path);
        goto out;
    }
    if (len > max_bytes) {
        rc = fair_error_set(err, FAIR_ERANGE, "%s: larger than %zu bytes", path, max_bytes);
        goto out;
    }
    data[len] = '\0';
    *data_out = data;
    *len_out = len;
    data = NULL;
out:
    fair_free(data);
    fclose(f);
    return rc;
}

int fair_yaml_load_file(const char *path, const struct fair_yaml_limits *limits, json_t **docs_out,
                        struct fair_error *err)
{
    struct fair_yaml_limits lim = {0};
    if (limits)
        lim = *limits;
    fair_yaml_limits_default(&lim);
    char *data = NULL;
    size_t len = 0;
    int rc = fair_read_file(path, lim.max_bytes, &data, &len, err);
    if (rc)
        return rc;
    rc = fair_yaml_parse(path, data, len, &lim, docs_out, err);
    fair_free(data);
    return rc;
}
