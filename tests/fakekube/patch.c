/* fakekube's PATCH formats: RFC 7386 JSON merge patch, RFC 6902 JSON patch,
 * and Kubernetes' strategic merge patch for built-in types (a merge patch
 * whose lists of objects merge by their patch merge key, such as
 * conditions by "type" and containers by "name"). */
#include "fakekube.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *fk_merge_patch(json_t *target, const json_t *patch)
{
    if (!json_is_object(patch)) {
        json_decref(target);
        return json_deep_copy(patch);
    }
    if (!json_is_object(target)) {
        json_decref(target);
        target = json_object();
        if (!target)
            return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v)
    {
        if (json_is_null(v)) {
            json_object_del(target, k);
            continue;
        }
        json_t *cur = json_object_get(target, k);
        json_t *merged = fk_merge_patch(cur ? json_incref(cur) : NULL, v);
        if (!merged) {
            json_decref(target);
            return NULL;
        }
        json_object_set_new(target, k, merged);
    }
    return target;
}

/* ---- strategic merge patch ---- */

/* Patch merge keys of the lists in the built-in types we serve. */
static const char *merge_key(const char *field)
{
    static const char *const table[][2] = {
        {"conditions", "type"},
        {"containers", "name"},
        {"initContainers", "name"},
        {"ephemeralContainers", "name"},
        {"env", "name"},
        {"volumes", "name"},
        {"volumeMounts", "mountPath"},
        {"ports", "containerPort"},
        {"ownerReferences", "uid"},
        {"schedulingGates", "name"},
        {"imagePullSecrets", "name"},
        {"containerStatuses", "name"},
        {"initContainerStatuses", "name"},
        {"podIPs", "ip"},
        {"hostIPs", "ip"},
        {"taints", "key"},
        {"addresses", "type"},
        {"resourceClaims", "name"},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (strcmp(table[i][0], field) == 0)
            return table[i][1];
    return NULL;
}

static int is_directive(const json_t *o, const char *value)
{
    const char *d = json_string_value(json_object_get(o, "$patch"));
    return d && strcmp(d, value) == 0;
}

static json_t *smp(json_t *target, const json_t *patch);

/* Merges patch list p into target list t by key; takes t. */
static json_t *smp_list(json_t *t, const json_t *p, const char *key)
{
    if (!json_is_array(t)) {
        json_decref(t);
        t = json_array();
        if (!t)
            return NULL;
    }
    size_t i;
    json_t *pe;
    json_array_foreach(p, i, pe)
    {
        if (is_directive(pe, "replace")) {
            /* {"$patch":"replace"} in a list: the other elements replace it. */
            json_t *r = json_array();
            size_t j;
            json_t *e;
            json_array_foreach(p, j, e)
            {
                if (!is_directive(e, "replace"))
                    json_array_append_new(r, json_deep_copy(e));
            }
            json_decref(t);
            return r;
        }
    }
    json_array_foreach(p, i, pe)
    {
        const json_t *kv = json_object_get(pe, key);
        if (!json_is_object(pe) || !kv) {
            json_array_append_new(t, json_deep_copy(pe));
            continue;
        }
        size_t j;
        json_t *te;
        int found = -1;
        json_array_foreach(t, j, te)
        {
            if (json_equal(json_object_get(te, key), kv)) {
                found = (int)j;
                break;
            }
        }
        if (is_directive(pe, "delete")) {
            if (found >= 0)
                json_array_remove(t, (size_t)found);
            continue;
        }
        if (found >= 0) {
            json_t *merged = smp(json_incref(json_array_get(t, (size_t)found)), pe);
            if (!merged) {
                json_decref(t);
                return NULL;
            }
            json_array_set_new(t, (size_t)found, merged);
        } else {
            json_t *c = smp(NULL, pe);
            if (c)
                json_array_append_new(t, c);
        }
    }
    return t;
}

/* Takes target; returns the result (new reference) or NULL. */
static json_t *smp(json_t *target, const json_t *patch)
{
    if (!json_is_object(patch)) {
        json_decref(target);
        return json_deep_copy(patch);
    }
    if (!json_is_object(target) || is_directive(patch, "replace")) {
        json_decref(target);
        target = json_object();
        if (!target)
            return NULL;
    }
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)patch, k, v)
    {
        if (k[0] == '$')
            continue; /* directives */
        if (json_is_null(v)) {
            json_object_del(target, k);
            continue;
        }
        json_t *cur = json_object_get(target, k);
        const char *mk = merge_key(k);
        json_t *merged;
        if (json_is_array(v) && !strcmp(k, "finalizers")) {
            /* patchStrategy merge on a list of strings: a union. */
            merged = json_is_array(cur) ? json_copy(cur) : json_array();
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e)
            {
                size_t j;
                json_t *x;
                int have = 0;
                json_array_foreach(merged, j, x) have |= json_equal(x, e);
                if (!have)
                    json_array_append(merged, e);
            }
        } else if (json_is_array(v) && mk) {
            merged = smp_list(cur ? json_deep_copy(cur) : NULL, v, mk);
        } else if (json_is_object(v) && is_directive(v, "delete")) {
            json_object_del(target, k);
            continue;
        } else {
            merged = smp(cur ? json_incref(cur) : NULL, v);
        }
        if (!merged) {
            json_decref(target);
            return NULL;
        }
        json_object_set_new(target, k, merged);
    }
    return target;
}

json_t *fk_strategic_merge_patch(json_t *target, const json_t *patch)
{
    return smp(target, patch);
}

/* ---- RFC 6902 JSON patch ---- */

/* Splits pointer into its parent and last token (unescaped into last). */
static json_t *resolve_parent(json_t *doc, const char *ptr, char *last, size_t n)
{
    if (ptr[0] != '/')
        return NULL;
    json_t *cur = doc;
    const char *p = ptr + 1;
    for (;;) {
        char tok[256];
        size_t len = 0;
        while (*p && *p != '/') {
            char c = *p++;
            if (c == '~') {
                c = *p == '0' ? '~' : *p == '1' ? '/' : 0;
                if (!c)
                    return NULL;
                p++;
            }
            if (len + 1 >= sizeof(tok))
                return NULL;
            tok[len++] = c;
        }
        tok[len] = '\0';
        if (!*p) {
            if (len >= n)
                return NULL;
            memcpy(last, tok, len + 1);
            return cur;
        }
        p++; /* skip '/' */
        if (json_is_object(cur)) {
            cur = json_object_get(cur, tok);
        } else if (json_is_array(cur)) {
            char *end;
            long idx = strtol(tok, &end, 10);
            if (*end || idx < 0 || !len)
                return NULL;
            cur = json_array_get(cur, (size_t)idx);
        } else {
            return NULL;
        }
        if (!cur)
            return NULL;
    }
}

static int array_index(json_t *arr, const char *tok, int allow_end, size_t *out)
{
    if (allow_end && strcmp(tok, "-") == 0) {
        *out = json_array_size(arr);
        return 0;
    }
    char *end;
    long idx = strtol(tok, &end, 10);
    if (*end || !*tok || idx < 0)
        return -1;
    size_t max = json_array_size(arr) + (allow_end ? 1 : 0);
    if ((size_t)idx >= max)
        return -1;
    *out = (size_t)idx;
    return 0;
}

static json_t *get_ptr(json_t *doc, const char *ptr)
{
    if (ptr[0] == '\0')
        return doc;
    char last[256];
    json_t *parent = resolve_parent(doc, ptr, last, sizeof(last));
    if (json_is_object(parent))
        return json_object_get(parent, last);
    size_t i;
    if (json_is_array(parent) && array_index(parent, last, 0, &i) == 0)
        return json_array_get(parent, i);
    return NULL;
}

/* Removes and returns (new reference) the value at ptr. */
static json_t *take_ptr(json_t *doc, const char *ptr)
{
    char last[256];
    json_t *parent = resolve_parent(doc, ptr, last, sizeof(last));
    json_t *v = NULL;
    size_t i;
    if (json_is_object(parent)) {
        v = json_object_get(parent, last);
        if (v) {
            json_incref(v);
            json_object_del(parent, last);
        }
    } else if (json_is_array(parent) && array_index(parent, last, 0, &i) == 0) {
        v = json_incref(json_array_get(parent, i));
        json_array_remove(parent, i);
    }
    return v;
}

/* Adds value (taken) at ptr; replace=1 requires the target to exist. */
static int put_ptr(json_t *doc, const char *ptr, json_t *value, int replace)
{
    char last[256];
    json_t *parent = resolve_parent(doc, ptr, last, sizeof(last));
    size_t i;
    int rc = -1;
    if (json_is_object(parent)) {
        if (!replace || json_object_get(parent, last))
            rc = json_object_set_new(parent, last, value) == 0 ? 0 : -1;
        else
            json_decref(value);
        return rc;
    }
    if (json_is_array(parent) && array_index(parent, last, !replace, &i) == 0) {
        if (replace)
            return json_array_set_new(parent, i, value) == 0 ? 0 : -1;
        return json_array_insert_new(parent, i, value) == 0 ? 0 : -1;
    }
    json_decref(value);
    return -1;
}

int fk_json_patch(json_t *doc, const json_t *ops, char *err, size_t n)
{
    if (!json_is_array(ops)) {
        snprintf(err, n, "a JSON patch must be an array of operations");
        return -1;
    }
    size_t i;
    json_t *op;
    json_array_foreach(ops, i, op)
    {
        const char *o = json_string_value(json_object_get(op, "op"));
        const char *path = json_string_value(json_object_get(op, "path"));
        const char *from = json_string_value(json_object_get(op, "from"));
        json_t *value = json_object_get(op, "value");
        if (!o || !path) {
            snprintf(err, n, "operation %zu: missing op or path", i);
            return -1;
        }
        if (path[0] == '\0') {
            snprintf(err, n, "operation %zu: the whole document cannot be patched", i);
            return -1;
        }
        int rc = -1;
        if (!strcmp(o, "add") && value) {
            rc = put_ptr(doc, path, json_deep_copy(value), 0);
        } else if (!strcmp(o, "replace") && value) {
            rc = put_ptr(doc, path, json_deep_copy(value), 1);
        } else if (!strcmp(o, "remove")) {
            json_t *v = take_ptr(doc, path);
            rc = v ? 0 : -1;
            json_decref(v);
        } else if (!strcmp(o, "test") && value) {
            json_t *v = get_ptr(doc, path);
            rc = v && json_equal(v, value) ? 0 : -1;
            if (rc) {
                snprintf(err, n, "testing value %s failed", path);
                return -1;
            }
        } else if ((!strcmp(o, "move") || !strcmp(o, "copy")) && from) {
            json_t *v =
                !strcmp(o, "move") ? take_ptr(doc, from) : json_deep_copy(get_ptr(doc, from));
            rc = v ? put_ptr(doc, path, v, 0) : -1;
        } else {
            snprintf(err, n, "operation %zu: unknown op \"%s\" or missing value/from", i, o);
            return -1;
        }
        if (rc) {
            snprintf(err, n, "operation %zu (%s %s): path not found", i, o, path);
            return -1;
        }
    }
    return 0;
}
