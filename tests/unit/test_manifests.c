/* Checks the YAML under crds/ and config/: the CRDs pass the Kubernetes API
 * server's own schema rules (check_schema, each rule shown by a schema the
 * real server refused) and declare the names, columns, defaults and
 * validation docs/api.md promises; the RBAC grants exactly what the
 * controller uses; the Deployment is hardened; and the examples pass the
 * CRDs' own schemas (a small OpenAPI validator below, with the patterns
 * compiled by POSIX regcomp). */
#include <dirent.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "base/alloc.h"
#include "base/duration.h"
#include "base/quantity.h"
#include "base/yaml.h"

#define PATH_MAX_LEN 4096
#define MSG_MAX 2048

/* ---- loading ---------------------------------------------------------- */

static char g_src[PATH_MAX_LEN];

/* The source folder: FAIR_TEST_DATA_DIR without its "/tests/data". */
static const char *src_dir(void)
{
    if (!g_src[0]) {
        const char *data = FAIR_TEST_DATA_DIR;
        const char *suffix = "/tests/data";
        size_t n = strlen(data), m = strlen(suffix);
        assert_true(n > m && strcmp(data + n - m, suffix) == 0);
        assert_true(n - m < sizeof g_src);
        memcpy(g_src, data, n - m);
        g_src[n - m] = '\0';
    }
    return g_src;
}

static void src_path(char *out, size_t n, const char *rel)
{
    int w = snprintf(out, n, "%s/%s", src_dir(), rel);
    assert_true(w > 0 && (size_t)w < n);
}

static bool file_exists(const char *rel)
{
    char p[PATH_MAX_LEN];
    struct stat st;
    src_path(p, sizeof p, rel);
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* All documents of one file (new reference). */
static json_t *load(const char *rel)
{
    char p[PATH_MAX_LEN];
    json_t *docs = NULL;
    struct fair_error err = {0};
    src_path(p, sizeof p, rel);
    if (fair_yaml_load_file(p, NULL, &docs, &err) != 0)
        fail_msg("%s: %s", rel, err.msg);
    return docs;
}

/* Appends every document of every *.yaml in folder rel to all. */
static int load_dir(const char *rel, json_t *all)
{
    char p[PATH_MAX_LEN];
    src_path(p, sizeof p, rel);
    DIR *d = opendir(p);
    if (!d)
        fail_msg("cannot open %s", p);
    int files = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 6 || strcmp(e->d_name + n - 5, ".yaml") != 0)
            continue;
        char r[PATH_MAX_LEN];
        snprintf(r, sizeof r, "%s/%s", rel, e->d_name);
        json_t *docs = load(r);
        json_array_extend(all, docs);
        json_decref(docs);
        files++;
    }
    closedir(d);
    return files;
}

/* Copies the next '.'-separated part of *p into part and advances *p;
 * false at the end. */
static bool next_part(const char **p, char *part, size_t n)
{
    while (**p == '.')
        (*p)++;
    if (!**p)
        return false;
    size_t len = strcspn(*p, ".");
    assert_true(len < n);
    memcpy(part, *p, len);
    part[len] = '\0';
    *p += len;
    return true;
}

/* Borrowed: the value at a dotted path; numeric parts index arrays. */
static json_t *at(json_t *root, const char *dotted)
{
    char part[256];
    const char *p = dotted;
    json_t *cur = root;
    while (cur && next_part(&p, part, sizeof part)) {
        if (json_is_array(cur)) {
            char *end;
            long i = strtol(part, &end, 10);
            cur = *end ? NULL : json_array_get(cur, (size_t)i);
        } else {
            cur = json_object_get(cur, part);
        }
    }
    return cur;
}

static const char *str_at(json_t *root, const char *dotted)
{
    return json_string_value(at(root, dotted));
}

/* Borrowed: the document of this kind (and name, unless NULL). */
static json_t *find_doc(json_t *docs, const char *kind, const char *name)
{
    size_t i;
    json_t *d;
    json_array_foreach(docs, i, d)
    {
        const char *k = str_at(d, "kind"), *n = str_at(d, "metadata.name");
        if (k && strcmp(k, kind) == 0 && (!name || (n && strcmp(n, name) == 0)))
            return d;
    }
    return NULL;
}

static bool str_in_array(json_t *arr, const char *s)
{
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v)
    {
        if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
            return true;
    }
    return false;
}

/* ---- structural-schema walk --------------------------------------------- */

/* Options of check_schema (struct walk's rules). */
#define RULES_STATUS 1u /* the version has the status subresource */
#define RULES_HOUSE 2u  /* Fairshare's rules, which the server does not have */

struct walk {
    int errors;
    int properties;
    unsigned rules; /* RULES_* for check_schema */
    char first[MSG_MAX];
};

static void bad(struct walk *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void bad(struct walk *w, const char *fmt, ...)
{
    if (w->errors++ == 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->first, sizeof w->first, fmt, ap);
        va_end(ap);
    }
}

static bool value_has_type(json_t *v, const char *type)
{
    if (strcmp(type, "object") == 0)
        return json_is_object(v);
    if (strcmp(type, "array") == 0)
        return json_is_array(v);
    if (strcmp(type, "string") == 0)
        return json_is_string(v);
    if (strcmp(type, "integer") == 0)
        return json_is_integer(v);
    if (strcmp(type, "number") == 0)
        return json_is_number(v);
    if (strcmp(type, "boolean") == 0)
        return json_is_boolean(v);
    return false;
}

static void validate_value(struct walk *w, json_t *s, json_t *v, const char *path, bool structural);

#define SCHEMA_PATH_MAX 512

/* out = path + the printf-formatted tail; paths read as the server's
 * field paths do: properties[spec].items.anyOf[0].type */
static const char *sub_path(char *out, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static const char *sub_path(char *out, const char *path, const char *fmt, ...)
{
    char tail[SCHEMA_PATH_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tail, sizeof tail, fmt, ap);
    va_end(ap);
    /* Paths of our schemas are far shorter; a longer one is cut, which
     * only shortens a message. */
    size_t n = strlen(path);
    if (n >= SCHEMA_PATH_MAX)
        n = SCHEMA_PATH_MAX - 1;
    memmove(out, path, n);
    size_t m = strlen(tail);
    if (m > SCHEMA_PATH_MAX - 1 - n)
        m = SCHEMA_PATH_MAX - 1 - n;
    memcpy(out + n, tail, m);
    out[n + m] = '\0';
    return out;
}

static bool in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return true;
    return false;
}

#define IN_LIST(s, list) in_list(s, list, sizeof list / sizeof *list)

static const char *const schema_types[] = {"object",  "array",  "string",
                                           "integer", "number", "boolean"};

/* The exact int-or-string shape the server lets keep types inside a junctor:
 * [{type: integer}, {type: string}], in this order, with nothing else but
 * false flags (which the server cannot tell from absent ones). */
static bool is_type_only(json_t *branch, const char *type)
{
    const char *key;
    json_t *v;
    json_object_foreach(branch, key, v)
    {
        if (strcmp(key, "type") == 0 ? !json_is_string(v) || strcmp(json_string_value(v), type)
                                     : !json_is_false(v))
            return false;
    }
    return json_is_object(branch) && json_object_get(branch, "type");
}

static bool is_int_or_string_pair(json_t *any)
{
    return json_array_size(any) == 2 && is_type_only(json_array_get(any, 0), "integer") &&
           is_type_only(json_array_get(any, 1), "string");
}

/* The API server checks a schema in steps (validateCustomResourceDefinitionValidation)
 * and lists what each found; a step can hide the next, so each has its own
 * walk, and check_schema adds up what the server would list. */
struct schema_check {
    struct walk *w;         /* the result; the house rules go straight here */
    struct walk api;        /* ValidateCustomResourceDefinitionOpenAPISchema, the root */
    struct walk structural; /* ValidateStructural: left out if NewStructural fails */
    struct walk defaults;   /* ValidateDefaults: left out if ValidateStructural found any */
    bool unconvertible;     /* a keyword NewStructural cannot convert */
};

/* x-kubernetes-list-type, -list-map-keys and -map-type
 * (ValidateCustomResourceDefinitionOpenAPISchema, validateMapListKeysMapSet). */
static void check_list_and_map_types(struct schema_check *sc, json_t *s, const char *path)
{
    char sub[SCHEMA_PATH_MAX];
    const char *type = json_string_value(json_object_get(s, "type"));
    json_t *mt = json_object_get(s, "x-kubernetes-map-type");
    if (mt && (!type || strcmp(type, "object") != 0))
        bad(&sc->api, "%s: must be object when x-kubernetes-map-type is set",
            sub_path(sub, path, ".type"));
    static const char *const map_types[] = {"atomic", "granular"};
    if (mt && (!json_is_string(mt) || !IN_LIST(json_string_value(mt), map_types)))
        bad(&sc->api, "%s: must be atomic or granular",
            sub_path(sub, path, ".x-kubernetes-map-type"));

    json_t *lt = json_object_get(s, "x-kubernetes-list-type");
    json_t *keys = json_object_get(s, "x-kubernetes-list-map-keys");
    const char *list = json_string_value(lt);
    json_t *items = json_object_get(s, "items");
    json_t *item_props = json_object_get(items, "properties");
    const char *item_type = json_string_value(json_object_get(items, "type"));
    if (lt && (!type || strcmp(type, "array") != 0)) {
        bad(&sc->api, "%s: must be array when x-kubernetes-list-type is set",
            sub_path(sub, path, ".type"));
    } else if (list && strcmp(list, "set") == 0 && json_is_object(items) && item_type) {
        /* A set compares whole items, so they must be atomic. */
        const char *il = str_at(items, "x-kubernetes-list-type");
        const char *im = str_at(items, "x-kubernetes-map-type");
        if (strcmp(item_type, "array") == 0 && il && strcmp(il, "atomic") != 0)
            bad(&sc->api, "%s: items of a set must be atomic lists",
                sub_path(sub, path, ".items.x-kubernetes-list-type"));
        if (strcmp(item_type, "object") == 0 && (!im || strcmp(im, "atomic") != 0))
            bad(&sc->api, "%s: object items of a set need x-kubernetes-map-type: atomic",
                sub_path(sub, path, ".items.x-kubernetes-map-type"));
    }
    static const char *const list_types[] = {"atomic", "set", "map"};
    if (lt && (!list || !IN_LIST(list, list_types)))
        bad(&sc->api, "%s: must be atomic, set or map",
            sub_path(sub, path, ".x-kubernetes-list-type"));
    if (json_array_size(keys) > 0 && (!list || strcmp(list, "map") != 0))
        bad(&sc->api, "%s: must be map when x-kubernetes-list-map-keys is set",
            sub_path(sub, path, ".x-kubernetes-list-type"));
    if (list && strcmp(list, "map") == 0) {
        if (json_array_size(keys) == 0)
            bad(&sc->api, "%s: a map list needs its keys",
                sub_path(sub, path, ".x-kubernetes-list-map-keys"));
        if (!items)
            bad(&sc->api, "%s: a map list needs an item schema", sub_path(sub, path, ".items"));
        else if (json_is_object(items) && (!item_type || strcmp(item_type, "object") != 0))
            bad(&sc->api, "%s: items of a map list must be objects",
                sub_path(sub, path, ".items.type"));
        size_t i, j;
        json_t *k;
        /* Keys must name scalar properties of object items, once each;
         * and whatever the items, a key that is one of their properties
         * must be required or defaulted, and not nullable. */
        bool object_items = item_type && strcmp(item_type, "object") == 0;
        int missing = 0; /* reported once: the server's message names them all */
        json_array_foreach(keys, i, k)
        {
            const char *name = json_string_value(k);
            json_t *ks = name ? json_object_get(item_props, name) : NULL;
            bool dup = false; /* the server lists a repeated problem once */
            for (j = 0; j < i; j++)
                dup = dup || json_equal(json_array_get(keys, j), k);
            if (object_items && !ks && !missing++)
                bad(&sc->api, "%s: %s is not a property of the items",
                    sub_path(sub, path, ".x-kubernetes-list-map-keys"), name ? name : "?");
            else if (object_items && dup)
                bad(&sc->api, "%s: %s is listed twice",
                    sub_path(sub, path, ".x-kubernetes-list-map-keys"), name);
            if (!ks || dup)
                continue;
            const char *kt = str_at(ks, "type");
            if (object_items && kt && (strcmp(kt, "array") == 0 || strcmp(kt, "object") == 0))
                bad(&sc->api, "%s: a map key must be a scalar",
                    sub_path(sub, path, ".items.properties[%s].type", name));
            if (!str_in_array(json_object_get(items, "required"), name) &&
                !json_object_get(ks, "default"))
                bad(&sc->api, "%s: a map key must be required or have a default",
                    sub_path(sub, path, ".items.properties[%s].default", name));
            if (json_is_true(json_object_get(ks, "nullable")))
                bad(&sc->api, "%s: a map key may not be nullable",
                    sub_path(sub, path, ".items.properties[%s].nullable", name));
        }
    }
    if (list && (strcmp(list, "set") == 0 || strcmp(list, "map") == 0) &&
        json_is_true(json_object_get(items, "nullable")))
        bad(&sc->api, "%s: items of a %s list may not be nullable",
            sub_path(sub, path, ".items.nullable"), list);
}

/* Keywords the server refuses wherever they appear, in the structural part
 * and in value validations alike (ValidateCustomResourceDefinitionOpenAPISchema
 * and specStandardValidatorV3.validate), and patterns that do not compile
 * (validateValueValidation). The server compiles patterns as Go RE2; we
 * need them to compile as POSIX ERE too, since validate() uses regcomp. */
static void check_keywords(struct schema_check *sc, json_t *s, const char *path)
{
    char sub[SCHEMA_PATH_MAX];
    json_t *type = json_object_get(s, "type");
    if (type && !(json_is_string(type) && json_string_length(type) == 0) &&
        (!json_is_string(type) || !IN_LIST(json_string_value(type), schema_types)))
        bad(&sc->api, "%s: type must be one of object, array, string, integer, number, boolean",
            sub_path(sub, path, ".type"));
    /* Refused (specStandardValidatorV3.validate), and NewStructural cannot
     * convert them; nor $schema, which only the conversion refuses. */
    static const char *const unsupported[] = {"id",          "$ref",         "patternProperties",
                                              "definitions", "dependencies", "additionalItems"};
    for (size_t i = 0; i < sizeof unsupported / sizeof *unsupported; i++) {
        json_t *x = json_object_get(s, unsupported[i]);
        /* An empty id, patternProperties or definitions counts as absent;
         * any $ref, dependencies or additionalItems is refused, but only
         * a non-empty one also stops the conversion. */
        bool empty = (json_is_string(x) && json_string_length(x) == 0) ||
                     (json_is_object(x) && json_object_size(x) == 0);
        bool any = strcmp(unsupported[i], "$ref") == 0 ||
                   strcmp(unsupported[i], "dependencies") == 0 ||
                   strcmp(unsupported[i], "additionalItems") == 0;
        if (x && (any || !empty))
            bad(&sc->api, "%s: not supported in CRD schemas",
                sub_path(sub, path, ".%s", unsupported[i]));
        if (x && (!empty || strcmp(unsupported[i], "additionalItems") == 0))
            sc->unconvertible = true;
    }
    json_t *schema_uri = json_object_get(s, "$schema");
    if (schema_uri && !(json_is_string(schema_uri) && json_string_length(schema_uri) == 0))
        sc->unconvertible = true;
    json_t *items = json_object_get(s, "items");
    if (json_array_size(items) > 0) {
        bad(&sc->api, "%s: must be one schema, not a list of schemas",
            sub_path(sub, path, ".items"));
        sc->unconvertible = true;
    }
    if (json_is_true(json_object_get(s, "uniqueItems")))
        bad(&sc->api, "%s: may not be true (quadratic to check)",
            sub_path(sub, path, ".uniqueItems"));
    if (json_is_false(json_object_get(s, "x-kubernetes-preserve-unknown-fields"))) {
        bad(&sc->api, "%s: may only be true or left out",
            sub_path(sub, path, ".x-kubernetes-preserve-unknown-fields"));
        sc->unconvertible = true;
    }
    json_t *props = json_object_get(s, "properties");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (addl && json_object_size(props) > 0 && (json_is_false(addl) || json_is_object(addl)))
        bad(&sc->api, "%s: additionalProperties and properties exclude each other",
            sub_path(sub, path, ".additionalProperties"));
    check_list_and_map_types(sc, s, path);
    json_t *pat = json_object_get(s, "pattern");
    if (pat) {
        regex_t re;
        if (!json_is_string(pat) ||
            regcomp(&re, json_string_value(pat), REG_EXTENDED | REG_NOSUB) != 0)
            bad(&sc->structural, "%s: not a regular expression", sub_path(sub, path, ".pattern"));
        else
            regfree(&re);
    }
}

enum level { LVL_ROOT, LVL_ITEMS, LVL_FIELD };

/* Where a structural node sits: its level (validateStructuralInvariants),
 * whether it is inside the apiVersion, kind or metadata of a resource, and
 * why defaults are refused there (NULL: they are allowed). */
struct node_ctx {
    enum level lvl;
    bool in_meta;
    bool root_meta;  /* in the root metadata, which takes no descriptions */
    bool under_addl; /* under additionalProperties, whose defaults the server skips */
    const char *no_default;
};

/* check_keywords on s and every schema below it, for what only the keyword
 * rules reach: an additionalProperties inside a value validation, which the
 * structural check refuses as a whole without looking in. */
static void check_keywords_deep(struct schema_check *sc, json_t *s, const char *path)
{
    char sub[SCHEMA_PATH_MAX];
    if (!json_is_object(s))
        return;
    check_keywords(sc, s, path);
    static const char *const one[] = {"items", "additionalProperties", "not"};
    for (size_t j = 0; j < 3; j++)
        check_keywords_deep(sc, json_object_get(s, one[j]), sub_path(sub, path, ".%s", one[j]));
    static const char *const many[] = {"allOf", "anyOf", "oneOf"};
    size_t i;
    json_t *b;
    for (size_t j = 0; j < 3; j++)
        json_array_foreach(json_object_get(s, many[j]), i, b)
            check_keywords_deep(sc, b, sub_path(sub, path, ".%s[%zu]", many[j], i));
    const char *key;
    json_object_foreach(json_object_get(s, "properties"), key, b)
    {
        check_keywords_deep(sc, b, sub_path(sub, path, ".properties[%s]", key));
    }
}

/* A schema under anyOf, allOf, oneOf or not: it may only restrict values,
 * never declare structure, documentation or Kubernetes extensions
 * (validateNestedValueValidation). skip_anyof and skip_allof_anyof pass the
 * int-or-string exceptions down. */
static void check_value_validation(struct schema_check *sc, json_t *v, const char *path,
                                   const struct node_ctx *c, bool skip_anyof, bool skip_allof_anyof)
{
    char sub[SCHEMA_PATH_MAX];
    if (!json_is_object(v)) {
        bad(&sc->api, "%s: schema is not an object", path);
        return;
    }
    check_keywords(sc, v, path);
    /* The keyword rules see a value validation in its place: no defaults
     * where the structural schema may have none, and so on. */
    if (c->no_default && json_object_get(v, "default"))
        bad(&sc->api, "%s: no default allowed %s", sub_path(sub, path, ".default"), c->no_default);
    if (c->in_meta && json_is_true(json_object_get(v, "x-kubernetes-embedded-resource")))
        bad(&sc->api, "%s: not allowed inside the metadata of a resource",
            sub_path(sub, path, ".x-kubernetes-embedded-resource"));
    size_t i;
    json_t *b;
    /* The int-or-string pair is exempt from the structural rules only. */
    json_array_foreach(json_object_get(v, "anyOf"), i, b)
    {
        if (skip_anyof)
            check_keywords_deep(sc, b, sub_path(sub, path, ".anyOf[%zu]", i));
        else
            check_value_validation(sc, b, sub_path(sub, path, ".anyOf[%zu]", i), c, false, false);
    }
    json_array_foreach(json_object_get(v, "allOf"), i, b) check_value_validation(
        sc, b, sub_path(sub, path, ".allOf[%zu]", i), c, skip_allof_anyof && i == 0, false);
    json_array_foreach(json_object_get(v, "oneOf"), i, b)
        check_value_validation(sc, b, sub_path(sub, path, ".oneOf[%zu]", i), c, false, false);
    if (json_object_get(v, "not"))
        check_value_validation(sc, json_object_get(v, "not"), sub_path(sub, path, ".not"), c, false,
                               false);
    check_keywords_deep(sc, json_object_get(v, "additionalProperties"),
                        sub_path(sub, path, ".additionalProperties"));
    if (json_is_object(json_object_get(v, "items")))
        check_value_validation(sc, json_object_get(v, "items"), sub_path(sub, path, ".items"), c,
                               false, false);
    const char *key;
    json_t *child;
    json_object_foreach(json_object_get(v, "properties"), key, child)
    {
        check_value_validation(sc, child, sub_path(sub, path, ".properties[%s]", key), c, false,
                               false);
    }
    /* Each is refused when set: a non-empty string, a non-null default, any
     * value of the others, true for the flags, a non-empty list. */
    static const char *const texts[] = {"type", "title", "description"};
    for (i = 0; i < sizeof texts / sizeof *texts; i++) {
        json_t *x = json_object_get(v, texts[i]);
        if (x && !(json_is_string(x) && json_string_length(x) == 0))
            bad(&sc->structural, "%s: only for the structural schema, not in a value validation",
                sub_path(sub, path, ".%s", texts[i]));
    }
    if (json_object_get(v, "default") && !json_is_null(json_object_get(v, "default")))
        bad(&sc->structural, "%s: only for the structural schema, not in a value validation",
            sub_path(sub, path, ".default"));
    static const char *const present[] = {"additionalProperties", "x-kubernetes-list-type",
                                          "x-kubernetes-map-type"};
    for (i = 0; i < sizeof present / sizeof *present; i++)
        if (json_object_get(v, present[i]))
            bad(&sc->structural, "%s: only for the structural schema, not in a value validation",
                sub_path(sub, path, ".%s", present[i]));
    static const char *const flags[] = {"nullable", "x-kubernetes-preserve-unknown-fields",
                                        "x-kubernetes-embedded-resource",
                                        "x-kubernetes-int-or-string"};
    for (i = 0; i < sizeof flags / sizeof *flags; i++)
        if (json_is_true(json_object_get(v, flags[i])))
            bad(&sc->structural, "%s: only for the structural schema, not in a value validation",
                sub_path(sub, path, ".%s", flags[i]));
    static const char *const lists[] = {"x-kubernetes-list-map-keys", "x-kubernetes-validations"};
    for (i = 0; i < sizeof lists / sizeof *lists; i++)
        if (json_array_size(json_object_get(v, lists[i])) > 0)
            bad(&sc->structural, "%s: only for the structural schema, not in a value validation",
                sub_path(sub, path, ".%s", lists[i]));
    if (json_object_get(json_object_get(v, "properties"), "metadata"))
        bad(&sc->structural, "%s: metadata may not be restricted in a value validation",
            sub_path(sub, path, ".properties[metadata]"));
}

/* Every property or items a value validation speaks of must exist in the
 * structural schema s beside it (validateStructuralCompleteness). Kubernetes
 * 1.24 checks this for the junctors of the root only (a nested one it
 * accepts, as we found), so check_schema calls it there only. */
static void check_completeness(struct schema_check *sc, json_t *v, json_t *s, const char *spath,
                               const char *vpath)
{
    char ssub[SCHEMA_PATH_MAX], vsub[SCHEMA_PATH_MAX];
    if (!json_is_object(v))
        return;
    if (!s) {
        bad(&sc->structural, "%s: must be in the structural schema, as %s speaks of it", spath,
            vpath);
        return;
    }
    static const char *const junctors[] = {"allOf", "anyOf", "oneOf"};
    for (size_t j = 0; j < 3; j++) {
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(v, junctors[j]), i, b)
            check_completeness(sc, b, s, spath, sub_path(vsub, vpath, ".%s[%zu]", junctors[j], i));
    }
    if (json_object_get(v, "not"))
        check_completeness(sc, json_object_get(v, "not"), s, spath, sub_path(vsub, vpath, ".not"));
    if (json_object_get(v, "items"))
        check_completeness(sc, json_object_get(v, "items"), json_object_get(s, "items"),
                           sub_path(ssub, spath, ".items"), sub_path(vsub, vpath, ".items"));
    const char *key;
    json_t *child;
    json_object_foreach(json_object_get(v, "properties"), key, child)
    {
        check_completeness(sc, child, json_object_get(json_object_get(s, "properties"), key),
                           sub_path(ssub, spath, ".properties[%s]", key),
                           sub_path(vsub, vpath, ".properties[%s]", key));
    }
}

/* Adds what one step of the server's check found to w. */
static void merge(struct walk *w, const struct walk *step)
{
    if (step->errors > 0 && w->errors == 0)
        memcpy(w->first, step->first, sizeof w->first);
    w->errors += step->errors;
}

/* Whether pruning with schema s would drop a field of v
 * (pruning.Prune: fields that no properties, additionalProperties or
 * x-kubernetes-preserve-unknown-fields keep). skip: v is under
 * x-kubernetes-preserve-unknown-fields, which lists and their items keep. */
static bool would_prune(json_t *s, json_t *v, bool skip, bool resource)
{
    skip = skip || json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields"));
    size_t i;
    json_t *child;
    if (json_is_array(v)) {
        json_t *items = json_object_get(s, "items");
        json_array_foreach(v, i, child)
        {
            if (!(skip && !items) && would_prune(items, child, skip, false))
                return true;
        }
        return false;
    }
    if (!json_is_object(v) || (skip && !s))
        return false;
    bool embedded = resource || json_is_true(json_object_get(s, "x-kubernetes-embedded-resource"));
    json_t *props = json_object_get(s, "properties");
    json_t *addl = json_object_get(s, "additionalProperties");
    const char *key;
    json_object_foreach(v, key, child)
    {
        json_t *ps = json_object_get(props, key);
        if (embedded && (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
                         strcmp(key, "metadata") == 0))
            continue;
        if (ps || addl) {
            if (would_prune(ps ? ps : json_is_object(addl) ? addl : NULL, child, false, false))
                return true;
        } else if (!skip) {
            return true;
        }
    }
    return false;
}

/* A default must survive pruning and validate against its own schema
 * (structuraldefaulting.ValidateDefaults), which lists each problem. A null
 * default is no default. The default of a resource (the root, or an
 * embedded one) is a whole object: without apiVersion and kind the server
 * looks no further. Under additionalProperties the server checks nothing
 * (but applies the default): that is a house rule. */
static void check_default(struct schema_check *sc, json_t *s, const char *path,
                          const struct node_ctx *c, bool resource)
{
    char sub[SCHEMA_PATH_MAX];
    json_t *def = json_object_get(s, "default");
    if (!def || json_is_null(def))
        return;
    struct walk found = {0};
    /* Inside a resource's metadata the server checks the default as
     * metadata, without the pruning test. */
    if (!c->in_meta && would_prune(s, def, false, resource))
        bad(&found, "%s: pruning would drop fields of the default",
            sub_path(sub, path, ".default"));
    static const char *const type_meta[] = {"apiVersion", "kind"};
    int missing = 0;
    for (size_t i = 0; resource && json_is_object(def) && i < 2; i++) {
        const char *x = str_at(def, type_meta[i]);
        if (!x || !*x) {
            missing++;
            bad(&found, "%s: the default of a resource needs %s",
                sub_path(sub, path, ".default.%s", type_meta[i]), type_meta[i]);
        }
    }
    struct walk dw = {0};
    if (!missing)
        validate_value(&dw, s, def, "default", false);
    if (dw.errors) {
        bad(&found, "%s: the default fails its own schema: %s", sub_path(sub, path, ".default"),
            dw.first);
        found.errors += dw.errors - 1;
    }
    if (!c->under_addl)
        merge(&sc->defaults, &found);
    else if (found.errors && (sc->w->rules & RULES_HOUSE))
        bad(sc->w, "%s (house rule: the server does not check it here)", found.first);
}

/* House rule: a format the server knows, or it silently drops it and with
 * it the validation (Kubernetes' StripUnsupportedFormatsPostProcess; newer
 * servers warn). int32/int64 and float/double document integers and numbers. */
static void check_format(struct schema_check *sc, json_t *s, const char *path)
{
    char sub[SCHEMA_PATH_MAX];
    const char *format = json_string_value(json_object_get(s, "format"));
    if (!format)
        return;
    const char *type = json_string_value(json_object_get(s, "type"));
    static const char *const string_formats[] = {
        "bsonobjectid", "uri",    "email",    "hostname",   "ipv4",     "ipv6",
        "cidr",         "mac",    "uuid",     "uuid3",      "uuid4",    "uuid5",
        "isbn",         "isbn10", "isbn13",   "creditcard", "ssn",      "hexcolor",
        "rgbcolor",     "byte",   "password", "date",       "duration", "datetime"};
    static const char *const integer_formats[] = {"int32", "int64"};
    static const char *const number_formats[] = {"float", "double"};
    bool ok;
    if (!type || strcmp(type, "string") == 0) {
        char plain[64]; /* the server drops '-' before looking the name up */
        size_t n = 0;
        for (const char *p = format; *p && n + 1 < sizeof plain; p++)
            if (*p != '-')
                plain[n++] = *p;
        plain[n] = '\0';
        ok = IN_LIST(plain, string_formats);
    } else if (strcmp(type, "integer") == 0) {
        ok = IN_LIST(format, integer_formats);
    } else if (strcmp(type, "number") == 0) {
        ok = IN_LIST(format, number_formats);
    } else {
        ok = false;
    }
    if (!ok)
        bad(sc->w, "%s: %s is not a format the API server knows for this type (house rule)",
            sub_path(sub, path, ".format"), format);
}

/* Fairshare's own rules on one structural node: things the server accepts
 * but that are mistakes in our CRDs. */
static void check_house_rules(struct schema_check *sc, json_t *s, const char *path, bool need_desc)
{
    char sub[SCHEMA_PATH_MAX];
    const char *type = json_string_value(json_object_get(s, "type"));
    const char *desc = json_string_value(json_object_get(s, "description"));
    if (need_desc && (!desc || strlen(desc) < 10))
        bad(sc->w, "%s: missing or too short description (house rule)", path);
    /* The server takes both, but then validates the type alone: an
     * int-or-string of type string refuses every number. */
    if (type && json_is_true(json_object_get(s, "x-kubernetes-int-or-string")))
        bad(sc->w, "%s: type and x-kubernetes-int-or-string together (house rule)",
            sub_path(sub, path, ".type"));
    json_t *props = json_object_get(s, "properties");
    if (props && (!type || strcmp(type, "object") != 0))
        bad(sc->w, "%s: properties on a non-object (house rule)", path);
    json_t *addl = json_object_get(s, "additionalProperties");
    if (json_is_false(addl))
        bad(sc->w, "%s: additionalProperties: false makes an always-empty object (house rule)",
            sub_path(sub, path, ".additionalProperties"));
    else if (props && addl)
        bad(sc->w, "%s: properties and additionalProperties together (house rule)",
            sub_path(sub, path, ".additionalProperties"));
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(s, "required"), i, r)
    {
        if (!json_object_get(props, json_string_value(r)))
            bad(sc->w, "%s: required field %s is not a property (house rule)", path,
                json_string_value(r));
    }
    bool nullable = json_is_true(json_object_get(s, "nullable"));
    if (type)
        json_array_foreach(json_object_get(s, "enum"), i, r)
        {
            if (!(nullable && json_is_null(r)) && !value_has_type(r, type))
                bad(sc->w, "%s: enum value %zu is not of type %s (house rule)",
                    sub_path(sub, path, ".enum"), i, type);
        }
    check_format(sc, s, path);
}

/* The root metadata: the server lets a CRD restrict name and generateName
 * and nothing else, not even with a description
 * (validateStructuralMetadataInvariants at the root level). The server
 * ignores example and externalDocs here; we refuse them too. */
static void check_root_metadata(struct schema_check *sc, json_t *m, const char *path)
{
    char sub[SCHEMA_PATH_MAX];
    const char *key;
    json_t *v;
    json_object_foreach(m, key, v)
    {
        if (strcmp(key, "type") == 0 || strcmp(key, "properties") == 0)
            continue;
        if (json_is_false(v) &&
            (strcmp(key, "nullable") == 0 || strncmp(key, "x-kubernetes-", 13) == 0))
            continue; /* a false flag is no flag */
        if (strcmp(key, "default") == 0)
            continue; /* refused on its own: no defaults in the top-level metadata */
        bad(&sc->structural, "%s: root metadata may only restrict name and generateName (found %s)",
            path, key);
        return;
    }
    json_object_foreach(json_object_get(m, "properties"), key, v)
    {
        if (strcmp(key, "name") != 0 && strcmp(key, "generateName") != 0) {
            bad(&sc->structural,
                "%s: root metadata may only restrict name and generateName (found %s)", path, key);
            return;
        }
        const char *t = str_at(v, "type");
        if ((sc->w->rules & RULES_HOUSE) && (!t || strcmp(t, "string") != 0))
            bad(sc->w, "%s: must be string (house rule)",
                sub_path(sub, path, ".properties[%s].type", key));
    }
}

/* One node of the structural schema (validateStructuralInvariants, with the
 * CRD-wide checks of ValidateCustomResourceDefinitionOpenAPISchema). */
static void check_node(struct schema_check *sc, json_t *s, const char *path,
                       const struct node_ctx *c, bool need_desc)
{
    char sub[SCHEMA_PATH_MAX];
    if (!json_is_object(s)) {
        bad(&sc->api, "%s: schema is not an object", path);
        return;
    }
    check_keywords(sc, s, path);
    const char *type = json_string_value(json_object_get(s, "type"));
    bool ios = json_is_true(json_object_get(s, "x-kubernetes-int-or-string"));
    bool keep = json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields"));
    bool embedded = json_is_true(json_object_get(s, "x-kubernetes-embedded-resource"));
    bool is_resource = c->lvl == LVL_ROOT || embedded;
    if (type && !*type)
        type = NULL;

    if (json_object_get(s, "default")) {
        if (c->no_default)
            bad(&sc->api, "%s: no default allowed %s", sub_path(sub, path, ".default"),
                c->no_default);
        check_default(sc, s, path, c, is_resource);
    }
    if (c->in_meta && embedded)
        bad(&sc->api, "%s: not allowed inside the metadata of a resource",
            sub_path(sub, path, ".x-kubernetes-embedded-resource"));

    json_t *props = json_object_get(s, "properties");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (addl && c->lvl == LVL_ROOT)
        bad(&sc->structural, "%s: not allowed at the root",
            sub_path(sub, path, ".additionalProperties"));
    if (addl && embedded)
        bad(&sc->structural, "%s: not allowed on an embedded resource",
            sub_path(sub, path, ".additionalProperties"));
    if (json_is_object(addl)) {
        struct node_ctx ac = {LVL_FIELD, c->in_meta, c->root_meta, true, c->no_default};
        if (c->in_meta && !ac.no_default)
            ac.no_default = "inside additionalProperties of a resource's metadata";
        check_node(sc, addl, sub_path(sub, path, ".additionalProperties"), &ac, false);
    }
    const char *key;
    json_t *child;
    json_object_foreach(props, key, child)
    {
        static const char *const meta_fields[] = {"apiVersion", "kind", "metadata"};
        struct node_ctx pc = {LVL_FIELD, c->in_meta, c->root_meta, c->under_addl, c->no_default};
        if (is_resource && IN_LIST(key, meta_fields)) {
            pc.in_meta = true;
            if (c->lvl == LVL_ROOT)
                pc.no_default = "in the top-level apiVersion, kind or metadata";
        }
        if (c->lvl == LVL_ROOT && strcmp(key, "metadata") == 0)
            pc.root_meta = true;
        sc->w->properties++;
        check_node(sc, child, sub_path(sub, path, ".properties[%s]", key), &pc, !pc.root_meta);
    }
    json_t *items = json_object_get(s, "items");
    if (type && strcmp(type, "array") == 0 && !items)
        bad(&sc->structural, "%s: an array needs items", sub_path(sub, path, ".items"));
    if (json_is_object(items)) {
        struct node_ctx ic = {LVL_ITEMS, c->in_meta, c->root_meta, c->under_addl, c->no_default};
        check_node(sc, items, sub_path(sub, path, ".items"), &ic, false);
    }

    if (ios && keep)
        bad(&sc->structural, "%s: not with x-kubernetes-int-or-string",
            sub_path(sub, path, ".x-kubernetes-preserve-unknown-fields"));
    if (ios && embedded)
        bad(&sc->structural, "%s: not with x-kubernetes-int-or-string",
            sub_path(sub, path, ".x-kubernetes-embedded-resource"));

    /* The junctors may only restrict values, except for the two
     * int-or-string shapes: anyOf: [{type: integer}, {type: string}], or
     * the same as the anyOf of allOf[0]. */
    json_t *any = json_object_get(s, "anyOf"), *all = json_object_get(s, "allOf");
    bool skip_anyof = is_int_or_string_pair(any);
    bool skip_allof_anyof = json_array_size(all) >= 1 && is_int_or_string_pair(at(all, "0.anyOf"));
    size_t i;
    json_t *b;
    json_array_foreach(any, i, b)
    {
        if (skip_anyof)
            check_keywords_deep(sc, b, sub_path(sub, path, ".anyOf[%zu]", i));
        else
            check_value_validation(sc, b, sub_path(sub, path, ".anyOf[%zu]", i), c, false, false);
    }
    json_array_foreach(all, i, b) check_value_validation(
        sc, b, sub_path(sub, path, ".allOf[%zu]", i), c, skip_allof_anyof && i == 0, false);
    json_array_foreach(json_object_get(s, "oneOf"), i, b)
        check_value_validation(sc, b, sub_path(sub, path, ".oneOf[%zu]", i), c, false, false);
    if (json_object_get(s, "not"))
        check_value_validation(sc, json_object_get(s, "not"), sub_path(sub, path, ".not"), c, false,
                               false);

    if (embedded && (!type || strcmp(type, "object") != 0))
        bad(&sc->structural, "%s: must be object on an embedded resource",
            sub_path(sub, path, ".type"));
    else if (!type && !ios && !keep)
        bad(&sc->structural, "%s: required here (%s)", sub_path(sub, path, ".type"),
            c->lvl == LVL_ROOT    ? "at the root"
            : c->lvl == LVL_ITEMS ? "for array items"
                                  : "for object fields");
    if (embedded && !keep && json_object_size(props) == 0)
        bad(&sc->structural,
            "%s: an embedded resource without x-kubernetes-preserve-unknown-fields needs "
            "properties",
            sub_path(sub, path, ".properties"));
    if (c->lvl == LVL_ROOT && type && strcmp(type, "object") != 0)
        bad(&sc->structural, "%s: must be object at the root", sub_path(sub, path, ".type"));

    if (is_resource) {
        static const char *const type_meta[] = {"apiVersion", "kind"};
        for (i = 0; i < 2; i++) {
            json_t *p = json_object_get(props, type_meta[i]);
            const char *t = str_at(p, "type");
            if (p && (!t || strcmp(t, "string") != 0))
                bad(&sc->structural, "%s: must be string",
                    sub_path(sub, path, ".properties[%s].type", type_meta[i]));
        }
        json_t *m = json_object_get(props, "metadata");
        const char *mt = str_at(m, "type");
        if (m && (!mt || strcmp(mt, "object") != 0))
            bad(&sc->structural, "%s: must be object",
                sub_path(sub, path, ".properties[metadata].type"));
        if (m && c->lvl == LVL_ROOT)
            check_root_metadata(sc, m, sub_path(sub, path, ".properties[metadata]"));
    }

    if (sc->w->rules & RULES_HOUSE)
        check_house_rules(sc, s, path, need_desc);
}

/* With the status subresource, the root may hold only what still applies
 * once status is cut out as properties[status]
 * (validateCustomResourceDefinitionValidation). */
static void check_status_root(struct schema_check *sc, json_t *s, const char *path)
{
    static const char *const allowed[] = {"description",
                                          "type",
                                          "format",
                                          "title",
                                          "maximum",
                                          "exclusiveMaximum",
                                          "minimum",
                                          "exclusiveMinimum",
                                          "maxLength",
                                          "minLength",
                                          "pattern",
                                          "maxItems",
                                          "minItems",
                                          "uniqueItems",
                                          "multipleOf",
                                          "required",
                                          "items",
                                          "properties",
                                          "externalDocs",
                                          "example",
                                          "x-kubernetes-preserve-unknown-fields",
                                          "x-kubernetes-validations"};
    static const char *const plain_flags[] = {"nullable", "x-kubernetes-embedded-resource",
                                              "x-kubernetes-int-or-string"};
    /* One problem at most: the server stops at the first. */
    const char *type = str_at(s, "type");
    if (type && *type && strcmp(type, "object") != 0) {
        bad(&sc->api, "%s.type: must be object at the root with the status subresource", path);
        return;
    }
    const char *key;
    json_t *v;
    json_object_foreach(s, key, v)
    {
        if (IN_LIST(key, allowed) || (json_is_false(v) && IN_LIST(key, plain_flags)))
            continue;
        bad(&sc->api, "%s: %s is not allowed at the root with the status subresource", path, key);
        return;
    }
}

/* Checks a CRD version's openAPIV3Schema the way the Kubernetes 1.24 API
 * server does when the CRD is created (apiextensions.k8s.io/v1, structural
 * schema, defaults), plus Fairshare's house rules if w->rules has
 * RULES_HOUSE: every property has a description, and the "house rule"
 * messages above. path names the root in messages. */
static void check_schema(struct walk *w, json_t *s, const char *path)
{
    char vpath[SCHEMA_PATH_MAX];
    struct schema_check *sc = calloc(1, sizeof *sc);
    assert_non_null(sc);
    sc->w = w;
    if (!json_is_object(s)) {
        bad(w, "%s: schema is not an object", path);
        goto out;
    }
    if (w->rules & RULES_STATUS)
        check_status_root(sc, s, path);
    if (json_is_true(json_object_get(s, "nullable")))
        bad(&sc->api, "%s.nullable: may not be true at the root", path);
    struct node_ctx root = {LVL_ROOT, false, false, false, NULL};
    check_node(sc, s, path, &root, true);
    static const char *const junctors[] = {"allOf", "anyOf", "oneOf"};
    for (size_t j = 0; j < 3; j++) {
        size_t i;
        json_t *b;
        json_array_foreach(json_object_get(s, junctors[j]), i, b)
            check_completeness(sc, b, s, path, sub_path(vpath, path, ".%s[%zu]", junctors[j], i));
    }
    if (json_object_get(s, "not"))
        check_completeness(sc, json_object_get(s, "not"), s, path, sub_path(vpath, path, ".not"));

    merge(w, &sc->api);
    if (sc->unconvertible) {
        if (sc->api.errors == 0)
            bad(w, "%s: uses a keyword a structural schema cannot have ($schema)", path);
    } else {
        merge(w, &sc->structural);
        if (sc->structural.errors == 0)
            merge(w, &sc->defaults);
    }
out:
    free(sc);
}

/* ---- a small OpenAPI validator for the examples ------------------------- */

static bool pattern_matches(const char *pattern, const char *s)
{
    regex_t re;
    int rc = regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB);
    if (rc != 0)
        fail_msg("pattern %s does not compile as POSIX ERE", pattern);
    bool ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* Validates v against schema s the way the API server does after pruning,
 * with kubectl's strict field validation (unknown fields are errors), if
 * structural; without it, as under anyOf/allOf/oneOf/not, which restrict
 * values but declare no fields, unknown fields pass. Formats: date-time and
 * date only. Counts violations in w, which keeps the first message. */
static void validate_value(struct walk *w, json_t *s, json_t *v, const char *path, bool structural)
{
    char sub[512];
    const char *type = json_string_value(json_object_get(s, "type"));
    bool ios = json_is_true(json_object_get(s, "x-kubernetes-int-or-string"));
    if (json_is_null(v) && json_is_true(json_object_get(s, "nullable")))
        return;
    /* Like the server's validator, go on after a wrong type: the other
     * checks each look at the values they apply to. */
    if (ios && !(type && *type)) {
        if (!json_is_integer(v) && !json_is_string(v))
            bad(w, "%s: must be an integer or a string", path);
    } else if (type && *type && !value_has_type(v, type)) {
        bad(w, "%s: must be of type %s", path, type);
    }
    /* A pattern that does not compile is check_schema's to report. */
    const char *pat = json_string_value(json_object_get(s, "pattern"));
    regex_t compiled;
    if (pat && json_is_string(v) && regcomp(&compiled, pat, REG_EXTENDED | REG_NOSUB) == 0) {
        if (regexec(&compiled, json_string_value(v), 0, NULL, 0) != 0)
            bad(w, "%s: \"%s\" does not match %s", path, json_string_value(v), pat);
        regfree(&compiled);
    }
    const char *format = json_string_value(json_object_get(s, "format"));
    if (format && json_is_string(v)) {
        /* RFC 3339, as the server's date-time and date formats read it. */
        const char *re = NULL;
        if (strcmp(format, "date-time") == 0 || strcmp(format, "datetime") == 0)
            re = "^[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?"
                 "([Zz]|[+-][0-9]{2}:[0-9]{2})$";
        else if (strcmp(format, "date") == 0)
            re = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$";
        if (re && !pattern_matches(re, json_string_value(v)))
            bad(w, "%s: \"%s\" is not a %s", path, json_string_value(v), format);
    }
    json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
    if (json_is_number(v)) {
        double x = json_number_value(v);
        if (min &&
            (x < json_number_value(min) ||
             (json_is_true(json_object_get(s, "exclusiveMinimum")) && x == json_number_value(min))))
            bad(w, "%s: %g is below the minimum", path, x);
        if (max &&
            (x > json_number_value(max) ||
             (json_is_true(json_object_get(s, "exclusiveMaximum")) && x == json_number_value(max))))
            bad(w, "%s: %g is above the maximum", path, x);
    }
    if (json_is_string(v)) {
        json_t *maxl = json_object_get(s, "maxLength"), *minl = json_object_get(s, "minLength");
        size_t n = strlen(json_string_value(v));
        if (maxl && n > (size_t)json_integer_value(maxl))
            bad(w, "%s: longer than maxLength", path);
        if (minl && n < (size_t)json_integer_value(minl))
            bad(w, "%s: shorter than minLength", path);
    }
    json_t *en = json_object_get(s, "enum");
    if (en) {
        bool found = false;
        size_t i;
        json_t *e;
        json_array_foreach(en, i, e) found = found || json_equal(e, v);
        if (!found) {
            char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
            bad(w, "%s: %s is not one of the allowed values", path, text ? text : "?");
            free(text);
        }
    }
    /* The junctors, each branch on the same value. */
    size_t i;
    json_t *b;
    json_array_foreach(json_object_get(s, "allOf"), i, b) validate_value(w, b, v, path, false);
    json_t *any = json_object_get(s, "anyOf"), *one = json_object_get(s, "oneOf");
    int matched = 0;
    json_array_foreach(any, i, b)
    {
        struct walk bw = {0};
        validate_value(&bw, b, v, path, false);
        matched += bw.errors == 0;
    }
    if (json_array_size(any) > 0 && matched == 0)
        bad(w, "%s: matches none of anyOf", path);
    matched = 0;
    json_array_foreach(one, i, b)
    {
        struct walk bw = {0};
        validate_value(&bw, b, v, path, false);
        matched += bw.errors == 0;
    }
    if (json_array_size(one) > 0 && matched != 1)
        bad(w, "%s: matches %d of oneOf, not exactly one", path, matched);
    if (json_object_get(s, "not")) {
        struct walk bw = {0};
        validate_value(&bw, json_object_get(s, "not"), v, path, false);
        if (bw.errors == 0)
            bad(w, "%s: matches what not forbids", path);
    }
    if (json_is_object(v)) {
        json_t *props = json_object_get(s, "properties");
        json_t *addl = json_object_get(s, "additionalProperties");
        bool embedded = json_is_true(json_object_get(s, "x-kubernetes-embedded-resource"));
        bool open = json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields")) ||
                    addl || !props;
        const char *key;
        json_t *child;
        json_object_foreach(v, key, child)
        {
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            json_t *cs = json_object_get(props, key);
            bool meta = embedded && (strcmp(key, "apiVersion") == 0 || strcmp(key, "kind") == 0 ||
                                     strcmp(key, "metadata") == 0);
            if (cs)
                validate_value(w, cs, child, sub, structural);
            else if (json_is_object(addl))
                validate_value(w, addl, child, sub, structural);
            else if (json_is_false(addl))
                bad(w, "%s: not allowed (additionalProperties: false)", sub);
            else if (structural && !open && !meta)
                bad(w, "%s: unknown field", sub);
        }
        json_t *r;
        json_array_foreach(json_object_get(s, "required"), i, r)
        {
            if (!json_object_get(v, json_string_value(r)))
                bad(w, "%s: required field %s is missing", path, json_string_value(r));
        }
    }
    if (json_is_array(v)) {
        json_t *maxi = json_object_get(s, "maxItems"), *mini = json_object_get(s, "minItems");
        if (maxi && json_array_size(v) > (size_t)json_integer_value(maxi))
            bad(w, "%s: more than maxItems", path);
        if (mini && json_array_size(v) < (size_t)json_integer_value(mini))
            bad(w, "%s: fewer than minItems", path);
        json_t *item;
        json_t *items = json_object_get(s, "items");
        json_array_foreach(v, i, item)
        {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            if (items)
                validate_value(w, items, item, sub, structural);
        }
    }
}

static void validate(struct walk *w, json_t *s, json_t *v, const char *path)
{
    validate_value(w, s, v, path, true);
}

/* ---- the CRDs --------------------------------------------------------- */

struct crd_names {
    const char *file, *plural, *singular, *kind, *short_name;
};

static const struct crd_names crds[] = {
    {"crds/fairshare.dev_projects.yaml", "projects", "project", "Project", "fsp"},
    {"crds/fairshare.dev_queues.yaml", "queues", "queue", "Queue", "fsq"},
};

/* New reference: the single CRD document of a file. */
static json_t *load_crd(const char *file)
{
    json_t *docs = load(file);
    assert_int_equal(json_array_size(docs), 1);
    json_t *crd = json_incref(json_array_get(docs, 0));
    json_decref(docs);
    assert_string_equal(str_at(crd, "apiVersion"), "apiextensions.k8s.io/v1");
    assert_string_equal(str_at(crd, "kind"), "CustomResourceDefinition");
    return crd;
}

/* Borrowed: versions[0].schema.openAPIV3Schema. */
static json_t *crd_schema(json_t *crd)
{
    json_t *s = at(crd, "spec.versions.0.schema.openAPIV3Schema");
    assert_non_null(s);
    return s;
}

static void test_crds_are_structural_and_described(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof crds / sizeof *crds; i++) {
        json_t *crd = load_crd(crds[i].file);
        assert_int_equal(json_array_size(at(crd, "spec.versions")), 1);
        bool status = json_is_object(at(crd, "spec.versions.0.subresources.status"));
        struct walk w = {.rules = RULES_HOUSE | (status ? RULES_STATUS : 0)};
        check_schema(&w, crd_schema(crd), crds[i].kind);
        if (w.errors)
            fail_msg("%s: %d problems, first: %s", crds[i].file, w.errors, w.first);
        /* A floor, so that an emptied schema cannot pass: apiVersion, kind,
         * metadata, spec with its fields, status with five resource maps. */
        assert_true(w.properties > 45);
        json_decref(crd);
    }
}

static void test_crd_names_scope_and_version(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof crds / sizeof *crds; i++) {
        const struct crd_names *c = &crds[i];
        json_t *crd = load_crd(c->file);
        char name[128];
        snprintf(name, sizeof name, "%s.fairshare.dev", c->plural);
        assert_string_equal(str_at(crd, "metadata.name"), name);
        assert_string_equal(str_at(crd, "spec.group"), "fairshare.dev");
        assert_string_equal(str_at(crd, "spec.scope"), "Cluster");
        assert_string_equal(str_at(crd, "spec.names.plural"), c->plural);
        assert_string_equal(str_at(crd, "spec.names.singular"), c->singular);
        assert_string_equal(str_at(crd, "spec.names.kind"), c->kind);
        json_t *sn = at(crd, "spec.names.shortNames");
        assert_int_equal(json_array_size(sn), 1);
        assert_true(str_in_array(sn, c->short_name));
        assert_true(str_in_array(at(crd, "spec.names.categories"), "fairshare"));
        assert_string_equal(str_at(crd, "spec.versions.0.name"), "v1alpha1");
        assert_true(json_is_true(at(crd, "spec.versions.0.served")));
        assert_true(json_is_true(at(crd, "spec.versions.0.storage")));
        assert_true(json_is_object(at(crd, "spec.versions.0.subresources.status")));
        json_decref(crd);
    }
}

struct column {
    const char *name, *type, *path;
};

/* Borrowed: the schema node a printer column's ".a.b.c" path points to. */
static json_t *schema_at_jsonpath(json_t *schema, const char *jsonpath)
{
    char part[256];
    const char *p = jsonpath;
    json_t *cur = schema;
    while (cur && next_part(&p, part, sizeof part))
        cur = json_object_get(json_object_get(cur, "properties"), part);
    return cur;
}

static void check_columns(const char *file, const struct column *want, size_t n)
{
    json_t *crd = load_crd(file);
    json_t *cols = at(crd, "spec.versions.0.additionalPrinterColumns");
    size_t i;
    json_t *c;
    /* The default columns (priority 0) in order, as `kubectl get` shows them. */
    size_t k = 0;
    json_array_foreach(cols, i, c)
    {
        if (json_integer_value(json_object_get(c, "priority")) != 0)
            continue;
        assert_true(k < n);
        assert_string_equal(str_at(c, "name"), want[k].name);
        assert_string_equal(str_at(c, "type"), want[k].type);
        assert_string_equal(str_at(c, "jsonPath"), want[k].path);
        k++;
    }
    assert_int_equal(k, n);
    /* Every column, wide ones included, points to a field of the schema. */
    json_array_foreach(cols, i, c)
    {
        const char *p = str_at(c, "jsonPath");
        assert_non_null(p);
        assert_true(p[0] == '.');
        if (strcmp(p, ".metadata.creationTimestamp") == 0)
            continue;
        if (!schema_at_jsonpath(crd_schema(crd), p))
            fail_msg("%s: column %s: %s is not in the schema", file, str_at(c, "name"), p);
        assert_non_null(str_at(c, "description"));
    }
    json_decref(crd);
}

static void test_crd_printer_columns(void **state)
{
    (void)state;
    static const struct column queue_cols[] = {
        {"Project", "string", ".spec.project"},
        {"Guaranteed", "string", ".status.guaranteed.gpu"},
        {"Fair-Share", "string", ".status.fairShare.gpu"},
        {"Allocated", "string", ".status.allocated.gpu"},
        {"Pending", "integer", ".status.pending.pods"},
        {"Age", "date", ".metadata.creationTimestamp"},
    };
    static const struct column project_cols[] = {
        {"Team", "string", ".status.team"},
        {"Guaranteed", "string", ".status.guaranteed.gpu"},
        {"Fair-Share", "string", ".status.fairShare.gpu"},
        {"Allocated", "string", ".status.allocated.gpu"},
        {"Pending", "integer", ".status.pending.pods"},
        {"Age", "date", ".metadata.creationTimestamp"},
    };
    check_columns("crds/fairshare.dev_queues.yaml", queue_cols,
                  sizeof queue_cols / sizeof *queue_cols);
    check_columns("crds/fairshare.dev_projects.yaml", project_cols,
                  sizeof project_cols / sizeof *project_cols);
}

static void test_crd_defaults_and_validation(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof crds / sizeof *crds; i++) {
        json_t *crd = load_crd(crds[i].file);
        json_t *spec = at(crd_schema(crd), "properties.spec.properties");
        assert_int_equal(json_integer_value(at(spec, "overQuotaWeight.default")), 1);
        assert_int_equal(json_integer_value(at(spec, "overQuotaWeight.minimum")), 1);
        assert_string_equal(str_at(spec, "overQuotaWeight.type"), "integer");
        assert_int_equal(json_integer_value(at(spec, "overQuotaPriority.default")), 0);
        static const char *const maps[] = {"guaranteed", "limit"};
        static const char *const res[] = {"gpu", "cpu", "memory"};
        for (size_t m = 0; m < 2; m++) {
            json_t *props = at(json_object_get(spec, maps[m]), "properties");
            assert_int_equal(json_object_size(props), 3);
            for (size_t r = 0; r < 3; r++) {
                json_t *q = json_object_get(props, res[r]);
                assert_non_null(q);
                assert_true(json_is_true(json_object_get(q, "x-kubernetes-int-or-string")));
                const char *pat = str_at(q, "pattern");
                assert_non_null(pat);
                assert_false(pattern_matches(pat, "-1"));
                assert_int_equal(json_integer_value(json_object_get(q, "minimum")), 0);
            }
        }
        json_t *conds = at(crd_schema(crd), "properties.status.properties.conditions");
        assert_string_equal(str_at(conds, "x-kubernetes-list-type"), "map");
        json_t *types = at(conds, "items.properties.type.enum");
        assert_int_equal(json_array_size(types), 3);
        assert_true(str_in_array(types, "Ready"));
        assert_true(str_in_array(types, "Invalid"));
        assert_true(str_in_array(types, "Overcommitted"));
        static const char *const cond_fields[] = {
            "type", "status", "reason", "message", "lastTransitionTime", "observedGeneration"};
        for (size_t f = 0; f < 6; f++)
            assert_non_null(json_object_get(at(conds, "items.properties"), cond_fields[f]));
        json_decref(crd);
    }
    /* Project.spec defaults to {} so that its nested defaults always apply. */
    json_t *p = load_crd("crds/fairshare.dev_projects.yaml");
    assert_true(json_is_object(at(crd_schema(p), "properties.spec.default")));
    json_decref(p);
    json_t *q = load_crd("crds/fairshare.dev_queues.yaml");
    assert_true(str_in_array(at(crd_schema(q), "properties.spec.required"), "project"));
    json_decref(q);
}

/* The CRD's quantity pattern against a table, and against the controller's
 * own parser: everything the API server admits must parse, non-negative. */
static void test_quantity_pattern(void **state)
{
    (void)state;
    json_t *crd = load_crd("crds/fairshare.dev_queues.yaml");
    const char *pat = str_at(crd_schema(crd), "properties.spec.properties.guaranteed.properties."
                                              "gpu.pattern");
    assert_non_null(pat);
    static const struct {
        const char *s;
        bool ok;
    } cases[] = {
        {"1", true},     {"2.5", true},   {"0.25", true},   {"250m", true},  {"16Gi", true},
        {"512Mi", true}, {"1e3", true},   {".5", true},     {"+2", true},    {"8", true},
        {"1.", true},    {"100k", true},  {"0", true},      {"-1", false},   {"abc", false},
        {"", false},     {"-0.5", false}, {"1.2.3", false}, {"5 Gi", false}, {"1Gb", false},
        {"1e-3", false}, {"500n", false}, {"2u", false},    {"Gi", false},   {"1i", false},
        {" 1", false},   {"0x10", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bool got = pattern_matches(pat, cases[i].s);
        if (got != cases[i].ok)
            fail_msg("quantity pattern on \"%s\": got %d, want %d", cases[i].s, got, cases[i].ok);
        if (got) {
            int64_t v = -1;
            struct fair_error err = {0};
            if (fair_quantity_parse_milli(cases[i].s, &v, &err) != 0)
                fail_msg("\"%s\" passes the CRD but not the parser: %s", cases[i].s, err.msg);
            assert_true(v >= 0);
        }
    }
    json_decref(crd);
}

/* Every string of up to 4 characters over the quantity alphabet: whatever
 * the CRD pattern admits, the controller's parser must take, as a
 * non-negative value, on both scales. (This found that the Kubernetes
 * pattern's n and u suffixes, which lib/base does not parse, had to go.) */
static void test_quantity_pattern_admits_only_parsable(void **state)
{
    (void)state;
    json_t *crd = load_crd("crds/fairshare.dev_projects.yaml");
    const char *pat = str_at(crd_schema(crd), "properties.spec.properties.limit.properties."
                                              "memory.pattern");
    assert_non_null(pat);
    regex_t re;
    assert_int_equal(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
    static const char alphabet[] = "01.9mkKMiEe+-nu";
    const size_t na = sizeof alphabet - 1;
    long admitted = 0, tried = 0;
    for (size_t len = 1; len <= 4; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= na;
        for (size_t code = 0; code < total; code++) {
            char s[8];
            size_t c = code;
            for (size_t i = 0; i < len; i++, c /= na)
                s[i] = alphabet[c % na];
            s[len] = '\0';
            tried++;
            if (regexec(&re, s, 0, NULL, 0) != 0)
                continue;
            admitted++;
            /* Too large for int64 is a range error the controller reports
             * (a pattern cannot bound magnitude); malformed is not allowed. */
            int64_t milli = 0, plain = 0;
            int rm = fair_quantity_parse_milli(s, &milli, NULL);
            int rp = fair_quantity_parse(s, &plain, NULL);
            if ((rm != 0 && rm != FAIR_ERANGE) || (rp != 0 && rp != FAIR_ERANGE) || milli < 0 ||
                plain < 0)
                fail_msg("the CRD admits \"%s\" but the parser gives %d (%lld) / %d (%lld)", s, rm,
                         (long long)milli, rp, (long long)plain);
        }
    }
    regfree(&re);
    /* 15 + 225 + 3375 + 50625 strings, of which 954 are quantities (as
     * counted independently with Python's re on the same pattern). */
    assert_int_equal(tried, 54240);
    assert_int_equal(admitted, 954);
    json_decref(crd);
}

/* Every quantity node of both CRDs (spec maps, status maps) uses the same
 * pattern and minimum, and its description starts by saying what to write:
 * `kubectl explain` shows these fields as <Object>, since the API server
 * publishes no type for x-kubernetes-int-or-string. */
static int count_quantities(json_t *s, const char *key, const char *pattern)
{
    int n = 0;
    if (json_is_true(json_object_get(s, "x-kubernetes-int-or-string"))) {
        assert_string_equal(str_at(s, "pattern"), pattern);
        assert_int_equal(json_integer_value(json_object_get(s, "minimum")), 0);
        static const char *const starts[][2] = {
            {"gpu", "GPUs (nvidia.com/gpu), as a number or a quoted quantity: "},
            {"cpu", "CPU cores, as a number or a quoted quantity: "},
            {"memory", "Bytes, as a number or a quoted quantity: "},
        };
        const char *desc = str_at(s, "description");
        bool ok = false;
        for (size_t i = 0; i < 3; i++)
            ok = ok || (strcmp(key, starts[i][0]) == 0 && desc &&
                        strncmp(desc, starts[i][1], strlen(starts[i][1])) == 0);
        if (!ok)
            fail_msg("quantity %s: description \"%s\" does not start with its form", key,
                     desc ? desc : "");
        n++;
    }
    const char *sub;
    json_t *child;
    json_object_foreach(json_object_get(s, "properties"), sub, child) n +=
        count_quantities(child, sub, pattern);
    json_t *items = json_object_get(s, "items");
    if (items)
        n += count_quantities(items, "items", pattern);
    return n;
}

static void test_quantity_fields_share_one_pattern(void **state)
{
    (void)state;
    json_t *q = load_crd("crds/fairshare.dev_queues.yaml");
    const char *pat = str_at(crd_schema(q), "properties.spec.properties.guaranteed.properties."
                                            "gpu.pattern");
    json_t *p = load_crd("crds/fairshare.dev_projects.yaml");
    /* spec: guaranteed, limit, lendingLimit; status: guaranteed, fairShare,
     * allocated, borrowed, lent, lendable, pending.resources;
     * spec.schedule[].guaranteed and limit; 3 resources each. */
    assert_int_equal(count_quantities(crd_schema(q), "", pat), 12 * 3);
    assert_int_equal(count_quantities(crd_schema(p), "", pat), 12 * 3);
    json_decref(q);
    json_decref(p);
}

static void test_duration_pattern(void **state)
{
    (void)state;
    json_t *crd = load_crd("crds/fairshare.dev_queues.yaml");
    const char *pat = str_at(crd_schema(crd), "properties.spec.properties.reclaimMinRuntime."
                                              "pattern");
    assert_non_null(pat);
    static const struct {
        const char *s;
        bool ok;
        int64_t ms;
    } cases[] = {
        {"10m", true, 600000},   {"1h30m", true, 5400000}, {"0", true, 0},    {"250ms", true, 250},
        {"1.5h", true, 5400000}, {"90s", true, 90000},     {"-5m", false, 0}, {"10", false, 0},
        {"abc", false, 0},       {"", false, 0},           {"5 m", false, 0}, {"1d", false, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        bool got = pattern_matches(pat, cases[i].s);
        if (got != cases[i].ok)
            fail_msg("duration pattern on \"%s\": got %d, want %d", cases[i].s, got, cases[i].ok);
        int64_t ms = -1;
        int rc = fair_duration_parse_ms(cases[i].s, &ms, NULL);
        /* The parser and the pattern agree on this table. */
        assert_int_equal(rc == 0, cases[i].ok);
        if (got)
            assert_int_equal(ms, cases[i].ms);
    }
    json_decref(crd);
}

/* As for quantities: every duration the CRD admits (strings of up to 5
 * characters over the duration alphabet) parses, or is out of range. */
static void test_duration_pattern_admits_only_parsable(void **state)
{
    (void)state;
    json_t *crd = load_crd("crds/fairshare.dev_queues.yaml");
    const char *pat = str_at(crd_schema(crd), "properties.spec.properties.reclaimMinRuntime."
                                              "pattern");
    regex_t re;
    assert_int_equal(regcomp(&re, pat, REG_EXTENDED | REG_NOSUB), 0);
    static const char alphabet[] = "01.9nsumh+-";
    const size_t na = sizeof alphabet - 1;
    long admitted = 0, tried = 0;
    for (size_t len = 1; len <= 5; len++) {
        size_t total = 1;
        for (size_t i = 0; i < len; i++)
            total *= na;
        for (size_t code = 0; code < total; code++) {
            char s[8];
            size_t c = code;
            for (size_t i = 0; i < len; i++, c /= na)
                s[i] = alphabet[c % na];
            s[len] = '\0';
            tried++;
            if (regexec(&re, s, 0, NULL, 0) != 0)
                continue;
            admitted++;
            int64_t ms = -1;
            int rc = fair_duration_parse_ms(s, &ms, NULL);
            if ((rc != 0 && rc != FAIR_ERANGE) || (rc == 0 && ms < 0))
                fail_msg("the CRD admits \"%s\" but the parser gives %d (%lld)", s, rc,
                         (long long)ms);
        }
    }
    regfree(&re);
    /* Counted independently with Python's re on the same pattern. */
    assert_int_equal(tried, 177155);
    assert_int_equal(admitted, 1423);
    json_decref(crd);
}

/* Hand-made bad objects that the schema must refuse, and one good one. */
static void test_schema_rejects_bad_objects(void **state)
{
    (void)state;
    json_t *pcrd = load_crd("crds/fairshare.dev_projects.yaml");
    json_t *qcrd = load_crd("crds/fairshare.dev_queues.yaml");
    static const struct {
        bool queue;
        const char *json;
        const char *needle; /* in the first message; NULL when valid */
    } cases[] = {
        {false, "{\"spec\":{\"guaranteed\":{\"gpu\":\"2.5\",\"cpu\":64,\"memory\":\"512Gi\"}}}",
         NULL},
        {false, "{\"spec\":{\"guaranteed\":{\"gpu\":\"-1\"}}}", "spec.guaranteed.gpu"},
        {false, "{\"spec\":{\"guaranteed\":{\"gpu\":-1}}}", "below the minimum"},
        {false, "{\"spec\":{\"limit\":{\"gpu\":\"abc\"}}}", "does not match"},
        /* gpu/<model> keys are kept (x-kubernetes-preserve-unknown-fields);
         * the controller checks them, and any other key (test_kube_decode). */
        {false, "{\"spec\":{\"limit\":{\"gpu/H100\":\"4\"},\"lendingLimit\":{\"gpu\":2}}}", NULL},
        {false, "{\"spec\":{\"overQuotaWeight\":0}}", "below the minimum"},
        {false, "{\"spec\":{\"overQuotaWeight\":\"2\"}}", "must be of type integer"},
        {false, "{\"spec\":{\"namespaces\":[\"Team_A\"]}}", "does not match"},
        {false, "{\"spec\":{\"guaranteed\":{\"gpu\":2.5}}}", "integer or a string"},
        {true, "{\"spec\":{\"project\":\"team-a\",\"reclaimMinRuntime\":\"10m\"}}", NULL},
        {true, "{\"spec\":{\"guaranteed\":{\"gpu\":1}}}", "required field project"},
        {true, "{\"spec\":{\"project\":\"a\",\"reclaimMinRuntime\":\"10\"}}", "does not match"},
        {true, "{\"spec\":{\"project\":\"a\",\"overQuotaPriority\":5000}}", "above the maximum"},
        {true, "{\"spec\":{\"project\":\"a\"},\"status\":{\"conditions\":[{\"type\":\"Busy\"}]}}",
         "not one of the allowed"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_error_t jerr;
        json_t *obj = json_loads(cases[i].json, 0, &jerr);
        assert_non_null(obj);
        json_object_set_new(obj, "apiVersion", json_string("fairshare.dev/v1alpha1"));
        json_object_set_new(obj, "kind", json_string(cases[i].queue ? "Queue" : "Project"));
        json_object_set_new(obj, "metadata", json_pack("{s:s}", "name", "x"));
        struct walk w = {0};
        validate(&w, crd_schema(cases[i].queue ? qcrd : pcrd), obj, "");
        if (!cases[i].needle && w.errors)
            fail_msg("case %zu should be valid: %s", i, w.first);
        if (cases[i].needle && (!w.errors || !strstr(w.first, cases[i].needle)))
            fail_msg("case %zu: want an error with \"%s\", got %d errors: %s", i, cases[i].needle,
                     w.errors, w.first);
        json_decref(obj);
    }
    json_decref(pcrd);
    json_decref(qcrd);
}

/* ---- check_schema against the API server's own answers ------------------ */

/* A root schema with one property, spec. */
#define SPEC(s) "{'type':'object','properties':{'spec':" s "}}"
/* A root schema whose spec holds one field, f. */
#define FIELD(s) SPEC("{'type':'object','properties':{'f':" s "}}")

struct schema_case {
    bool status;        /* with the status subresource, as our CRDs have */
    const char *schema; /* the openAPIV3Schema, JSON with ' for " */
    int problems;       /* how many the server listed; 0: it took the CRD */
    const char *needle; /* in the first problem */
};

/* Each schema was sent to a real Kubernetes 1.24.0 API server in a CRD
 * (kubectl create --dry-run=server; apiextensions.k8s.io/v1, one version,
 * cluster-scoped, with the status subresource where status is true). It
 * refused each bad one with the problems in the "server:" comment (less the
 * common prefix spec.validation.openAPIV3Schema and the words Forbidden and
 * Invalid value), and created each good one at the end. The headings name
 * the Kubernetes functions that hold the rules. check_schema must find as
 * many problems as the server listed, the first of them the needle. */
static const struct schema_case server_cases[] = {
    /* The root metadata, apiVersion and kind (validateStructuralMetadataInvariants,
     * validateStructuralInvariants, ValidateCustomResourceDefinitionOpenAPISchema) */
    /* server: .properties[metadata]: must not specify anything other than name and generateName,
       but metadata is implicitly specified */
    {true,
     "{'type':'object','properties':{'metadata':{'type':'object','description':'Standard "
     "metadata.'}}}",
     1, "properties[metadata]: root metadata may only"},
    /* server: .properties[metadata]: must not specify anything other than name and generateName,
       but metadata is implicitly specified */
    {true,
     "{'type':'object','properties':{'metadata':{'type':'object','properties':{'name':{'type':'"
     "string'},'labels':{'type':'object'}}}}}",
     1, "properties[metadata]: root metadata may only"},
    /* server: .properties[metadata]: must not specify anything other than name and generateName,
       but metadata is implicitly specified */
    {true, "{'type':'object','properties':{'metadata':{'type':'object','maxProperties':3}}}", 1,
     "properties[metadata]: root metadata may only"},
    /* server: .properties[metadata].type: "string": must be object */
    {true, "{'type':'object','properties':{'metadata':{'type':'string'}}}", 1,
     "properties[metadata].type: must be object"},
    /* server: .properties[kind].type: "integer": must be string */
    {true, "{'type':'object','properties':{'kind':{'type':'integer'}}}", 1,
     "properties[kind].type: must be string"},
    /* server: .properties[apiVersion].default: must not be set in top-level apiVersion */
    {true, "{'type':'object','properties':{'apiVersion':{'type':'string','default':'a/v1'}}}", 1,
     "properties[apiVersion].default: no default"},
    /* The root (validateStructuralInvariants, validateCustomResourceDefinitionValidation,
     * validateStructuralCompleteness) */
    /* server: .type: "string": must be object at the root */
    {false, "{'type':'string'}", 1, "openAPIV3Schema.type: must be object at the root"},
    /* server: .type: required: must not be empty at the root */
    {true, "{'properties':{'spec':{'type':'string'}}}", 1, "openAPIV3Schema.type: required here"},
    /* server: .additionalProperties: must not be used at the root */
    {false, "{'type':'object','additionalProperties':{'type':'string'}}", 1,
     "additionalProperties: not allowed at the root"},
    /* server: .nullable: nullable cannot be true at the root */
    {false, "{'type':'object','nullable':true}", 1, "nullable: may not be true at the root"},
    /* server: openAPIV3Schema: {the schema}: only [Description Type Format ...
       XPreserveUnknownFields XValidations] fields are allowed at the root of the schema if the
       status subresource is enabled */
    {true, "{'type':'object','minProperties':1}", 1, "minProperties is not allowed at the root"},
    /* server: .properties[status]: required: because it is defined in .allOf[0].properties[status]
     */
    {false,
     "{'type':'object','properties':{'spec':{'type':'object'}},'allOf':[{'properties':{'status':{'"
     "minProperties':1}}}]}",
     1, "properties[status]: must be in the structural schema"},
    /* type (validateStructuralInvariants, specStandardValidatorV3) */
    /* server: .properties[spec].type: Unsupported value: "map": supported values: "array",
       "boolean", "integer", "number", "object", "string" */
    {true, SPEC("{'type':'map'}"), 1, "properties[spec].type: type must be one of"},
    /* server: .properties[spec].properties[f].type: required: must not be empty for specified
       object fields */
    {true, FIELD("{'description':'A field.'}"), 1, "properties[f].type: required here"},
    /* server: .properties[spec].items.type: required: must not be empty for specified array items
     */
    {true, SPEC("{'type':'array','items':{'minLength':1}}"), 1, "items.type: required here"},
    /* server: .properties[spec].additionalProperties.type: required: must not be empty for
       specified object fields */
    {true, SPEC("{'type':'object','additionalProperties':{'maxLength':3}}"), 1,
     "additionalProperties.type: required here"},
    /* server: .properties[spec].items: required: must be specified */
    {true, SPEC("{'type':'array'}"), 1, "properties[spec].items: an array needs items"},
    /* int-or-string (isIntOrStringAnyOfPattern, validateExtensions) */
    /* server: .properties[spec].properties[f].anyOf[0].type: must be empty to be structural +
       .properties[spec].properties[f].anyOf[1].type: must be empty to be structural */
    {true,
     FIELD("{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'string'},{'type':'integer'}]}"), 2,
     "properties[f].anyOf[0].type: only for the structural schema"},
    /* server: .properties[spec].properties[f].anyOf[0].description: must be empty to be structural
       + .properties[spec].properties[f].anyOf[0].type: must be empty to be structural +
       .properties[spec].properties[f].anyOf[1].type: must be empty to be structural */
    {true,
     FIELD("{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'integer','description':'n'},{'"
           "type':'string'}]}"),
     3, "properties[f].anyOf[0].type: only for the structural schema"},
    /* server: .properties[spec].properties[f].allOf[1].anyOf[0].type: must be empty to be
       structural + .properties[spec].properties[f].allOf[1].anyOf[1].type: must be empty to be
       structural */
    {true,
     FIELD("{'x-kubernetes-int-or-string':true,'allOf':[{'pattern':'^[0-9]+$'},{'anyOf':[{'type':'"
           "integer'},{'type':'string'}]}]}"),
     2, "properties[f].allOf[1].anyOf[0].type: only for the structural"},
    /* server: .properties[spec].properties[f].x-kubernetes-preserve-unknown-fields: true: must be
       false if x-kubernetes-int-or-string is true */
    {true, FIELD("{'x-kubernetes-int-or-string':true,'x-kubernetes-preserve-unknown-fields':true}"),
     1, "x-kubernetes-preserve-unknown-fields: not with x-kubernetes-int-or-string"},
    /* value validations: anyOf, allOf, oneOf, not (validateNestedValueValidation) */
    /* server: .properties[spec].anyOf[0].type: must be empty to be structural */
    {true, SPEC("{'type':'string','anyOf':[{'type':'string','maxLength':3},{'minLength':5}]}"), 1,
     "properties[spec].anyOf[0].type: only for the structural schema"},
    /* server: .properties[spec].allOf[0].description: must be empty to be structural */
    {true, SPEC("{'type':'string','allOf':[{'description':'Short.','maxLength':3}]}"), 1,
     "allOf[0].description: only for the structural schema"},
    /* server: .properties[spec].oneOf[0].default: must be undefined to be structural */
    {true, SPEC("{'type':'string','oneOf':[{'default':'a'},{'minLength':5}]}"), 1,
     "oneOf[0].default: only for the structural schema"},
    /* server: .properties[spec].not.nullable: must be false to be structural */
    {true, SPEC("{'type':'string','nullable':true,'not':{'nullable':true,'maxLength':0}}"), 1,
     "not.nullable: only for the structural schema"},
    /* server: .properties[spec].allOf[0].title: must be empty to be structural */
    {true, SPEC("{'type':'string','allOf':[{'title':'Short','maxLength':3}]}"), 1,
     "allOf[0].title: only for the structural schema"},
    /* server: .properties[spec].anyOf[0].additionalProperties: must be undefined to be structural
     */
    {true,
     SPEC("{'type':'object','additionalProperties':{'type':'string'},'anyOf':[{'"
          "additionalProperties':{'maxLength':3}}]}"),
     1, "anyOf[0].additionalProperties: only for the structural schema"},
    /* server: .properties[spec].allOf[0].x-kubernetes-preserve-unknown-fields: must be false to be
       structural */
    {true, SPEC("{'type':'object','allOf':[{'x-kubernetes-preserve-unknown-fields':true}]}"), 1,
     "allOf[0].x-kubernetes-preserve-unknown-fields: only for the structural"},
    /* server: .properties[spec].allOf[0].type: required: must be array if x-kubernetes-list-type is
       specified + .properties[spec].allOf[0].x-kubernetes-list-type: must be undefined to be
       structural */
    {true,
     SPEC("{'type':'array','items':{'type':'string'},'allOf':[{'x-kubernetes-list-type':'atomic'}]"
          "}"),
     2, "allOf[0].type: must be array when x-kubernetes-list-type is set"},
    /* server: .properties[spec].allOf[0].properties[a].type: must be empty to be structural */
    {true,
     SPEC("{'type':'object','properties':{'a':{'type':'string'}},'allOf':[{'properties':{'a':{'"
          "type':'string'}}}]}"),
     1, "allOf[0].properties[a].type: only for the structural schema"},
    /* server: .properties[spec].allOf[0].properties[metadata]: must not be specified in a nested
       context */
    {true,
     SPEC("{'type':'object','properties':{'metadata':{'type':'string'}},'allOf':[{'properties':{'"
          "metadata':{'maxLength':3}}}]}"),
     1, "allOf[0].properties[metadata]: metadata may not be restricted"},
    /* server: .properties[spec].pattern: "[a-": must be a valid regular expression, but isn't:
       error parsing regexp: missing closing ]: `[a-` */
    {true, SPEC("{'type':'string','pattern':'[a-'}"), 1, "properties[spec].pattern: not a regular"},
    /* keywords a CRD schema may not use (specStandardValidatorV3,
       ValidateCustomResourceDefinitionOpenAPISchema) */
    /* server: .properties[spec].$ref: $ref is not supported */
    {true, SPEC("{'type':'object','$ref':'#/definitions/a'}"), 1,
     "properties[spec].$ref: not supported"},
    /* server: .properties[spec].patternProperties: patternProperties is not supported */
    {true, SPEC("{'type':'object','patternProperties':{'^a':{'type':'string'}}}"), 1,
     "properties[spec].patternProperties: not supported"},
    /* server: .properties[spec].definitions: definitions is not supported */
    {true, SPEC("{'type':'object','definitions':{'a':{'type':'string'}}}"), 1,
     "properties[spec].definitions: not supported"},
    /* server: .properties[spec].dependencies: dependencies is not supported */
    {true, SPEC("{'type':'object','dependencies':{'a':['b']}}"), 1,
     "properties[spec].dependencies: not supported"},
    /* server: .properties[spec].additionalItems: additionalItems is not supported */
    {true, SPEC("{'type':'array','items':{'type':'string'},'additionalItems':false}"), 1,
     "properties[spec].additionalItems: not supported"},
    /* server: .properties[spec].id: id is not supported */
    {true, SPEC("{'type':'string','id':'a'}"), 1, "properties[spec].id: not supported"},
    /* server: .properties[spec].items: items must be a schema object and not an array */
    {true, SPEC("{'type':'array','items':[{'type':'string'}]}"), 1,
     "properties[spec].items: must be one schema"},
    /* server: (root): "": OpenAPIV3Schema 'schema' is not supported (NewStructural fails) */
    {true, SPEC("{'type':'object','$schema':'http://json-schema.org/draft-04/schema#'}"), 1,
     "openAPIV3Schema: uses a keyword a structural schema cannot have"},
    /* server: .properties[spec].uniqueItems: uniqueItems cannot be set to true since the runtime
       complexity becomes quadratic */
    {true, SPEC("{'type':'array','items':{'type':'string'},'uniqueItems':true}"), 1,
     "properties[spec].uniqueItems: may not be true"},
    /* server: .properties[spec].x-kubernetes-preserve-unknown-fields: false: must be true or
       undefined */
    {true, SPEC("{'type':'object','x-kubernetes-preserve-unknown-fields':false}"), 1,
     "x-kubernetes-preserve-unknown-fields: may only be true"},
    /* properties and additionalProperties */
    /* server: .properties[spec].additionalProperties: additionalProperties and properties are
       mutual exclusive */
    {true,
     SPEC("{'type':'object','properties':{'a':{'type':'string'}},'additionalProperties':{'type':'"
          "string'}}"),
     1, "properties[spec].additionalProperties: additionalProperties and properties exclude"},
    /* server: .properties[spec].additionalProperties: additionalProperties and properties are
       mutual exclusive */
    {true,
     SPEC("{'type':'object','properties':{'a':{'type':'string'}},'additionalProperties':false}"), 1,
     "properties[spec].additionalProperties: additionalProperties and properties exclude"},
    /* embedded resources (validateStructuralInvariants, specStandardValidatorV3) */
    /* server: .properties[spec].type: required: must be object if x-kubernetes-embedded-resource is
       true */
    {true,
     SPEC("{'x-kubernetes-embedded-resource':true,'x-kubernetes-preserve-unknown-fields':true}"), 1,
     "properties[spec].type: must be object on an embedded resource"},
    /* server: .properties[spec].additionalProperties: must not be used if
       x-kubernetes-embedded-resource is set */
    {true,
     SPEC("{'type':'object','x-kubernetes-embedded-resource':true,'x-kubernetes-preserve-unknown-"
          "fields':true,'additionalProperties':{'type':'string'}}"),
     1, "additionalProperties: not allowed on an embedded resource"},
    /* server: .properties[spec].properties: required: must not be empty if
       x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields */
    {true, SPEC("{'type':'object','x-kubernetes-embedded-resource':true}"), 1,
     "properties[spec].properties: an embedded resource"},
    /* server: .properties[spec].properties[metadata].type: "string": must be object */
    {true,
     SPEC("{'type':'object','x-kubernetes-embedded-resource':true,'properties':{'metadata':{'type':"
          "'string'}}}"),
     1, "properties[spec].properties[metadata].type: must be object"},
    /* server: .properties[spec].properties[kind].type: "integer": must be string */
    {true,
     SPEC("{'type':'object','x-kubernetes-embedded-resource':true,'properties':{'kind':{'type':'"
          "integer'}}}"),
     1, "properties[spec].properties[kind].type: must be string"},
    /* server:
       .properties[spec].properties[metadata].properties[owner].x-kubernetes-embedded-resource: must
       not be used inside of resource meta */
    {true,
     SPEC("{'type':'object','x-kubernetes-embedded-resource':true,'properties':{'metadata':{'type':"
          "'object','properties':{'owner':{'type':'object','x-kubernetes-embedded-resource':true,'"
          "x-kubernetes-preserve-unknown-fields':true}}}}}"),
     1, "properties[owner].x-kubernetes-embedded-resource: not allowed inside"},
    /* map and list types (ValidateCustomResourceDefinitionOpenAPISchema, validateMapListKeysMapSet)
     */
    /* server: .properties[spec].type: "string": must be object if x-kubernetes-map-type is
       specified */
    {true, SPEC("{'type':'string','x-kubernetes-map-type':'atomic'}"), 1,
     "properties[spec].type: must be object when x-kubernetes-map-type"},
    /* server: .properties[spec].x-kubernetes-map-type: Unsupported value: "merge": supported
       values: "atomic", "granular" */
    {true, SPEC("{'type':'object','x-kubernetes-map-type':'merge'}"), 1,
     "x-kubernetes-map-type: must be atomic or granular"},
    /* server: .properties[spec].type: "object": must be array if x-kubernetes-list-type is
       specified */
    {true, SPEC("{'type':'object','x-kubernetes-list-type':'set'}"), 1,
     "properties[spec].type: must be array when x-kubernetes-list-type"},
    /* server: .properties[spec].x-kubernetes-list-type: Unsupported value: "bag": supported values:
       "atomic", "set", "map" */
    {true, SPEC("{'type':'array','items':{'type':'string'},'x-kubernetes-list-type':'bag'}"), 1,
     "x-kubernetes-list-type: must be atomic, set or map"},
    /* server: .properties[spec].items.x-kubernetes-map-type: "null": must be atomic as item of a
       list with x-kubernetes-list-type=set */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'set','items':{'type':'object','properties':{'"
          "a':{'type':'string'}}}}"),
     1, "items.x-kubernetes-map-type: object items of a set"},
    /* server: .properties[spec].items.x-kubernetes-list-type: "set": must be atomic as item of a
       list with x-kubernetes-list-type=set */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'set','items':{'type':'array','x-kubernetes-"
          "list-type':'set','items':{'type':'string'}}}"),
     1, "items.x-kubernetes-list-type: items of a set must be atomic"},
    /* server: .properties[spec].items.nullable: cannot be nullable when x-kubernetes-list-type is
       set */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'set','items':{'type':'string','nullable':true}"
          "}"),
     1, "items.nullable: items of a set list may not be nullable"},
    /* server: .properties[spec].x-kubernetes-list-type: "set": must be map if
       x-kubernetes-list-map-keys is non-empty */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'set','x-kubernetes-list-map-keys':['a'],'"
          "items':{'type':'string'}}"),
     1, "x-kubernetes-list-type: must be map when x-kubernetes-list-map-keys"},
    /* server: .properties[spec].x-kubernetes-list-map-keys: required: must not be empty if
       x-kubernetes-list-type is map */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','items':{'type':'object','properties':{'"
          "a':{'type':'string'}}}}"),
     1, "x-kubernetes-list-map-keys: a map list needs its keys"},
    /* server: .properties[spec].items.type: "string": must be object if parent array's
       x-kubernetes-list-type is map */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['a'],'"
          "items':{'type':'string'}}"),
     1, "items.type: items of a map list must be objects"},
    /* server: .properties[spec].x-kubernetes-list-map-keys: []string{"b"}: entries must all be
       names of item properties */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['b'],'"
          "items':{'type':'object','properties':{'a':{'type':'string'}}}}"),
     1, "x-kubernetes-list-map-keys: b is not a property"},
    /* server: .properties[spec].items.properties[a].type: "object": must be a scalar type if parent
       array's x-kubernetes-list-type is map */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['a'],'"
          "items':{'type':'object','required':['a'],'properties':{'a':{'type':'object'}}}}"),
     1, "items.properties[a].type: a map key must be a scalar"},
    /* server: .properties[spec].x-kubernetes-list-map-keys: []string{"a", "a"}: must not contain
       duplicate entries */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['a','a'],'"
          "items':{'type':'object','required':['a'],'properties':{'a':{'type':'string'}}}}"),
     1, "x-kubernetes-list-map-keys: a is listed twice"},
    /* server: .properties[spec].items.properties[a].default: required: this property is in
       x-kubernetes-list-map-keys, so it must have a default or be a required property */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['a'],'"
          "items':{'type':'object','properties':{'a':{'type':'string'}}}}"),
     1, "items.properties[a].default: a map key must be required or"},
    /* server: .properties[spec].items.properties[a].nullable: this property is in
       x-kubernetes-list-map-keys, so it cannot be nullable */
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['a'],'"
          "items':{'type':'object','required':['a'],'properties':{'a':{'type':'string','nullable':"
          "true}}}}"),
     1, "items.properties[a].nullable: a map key may not be nullable"},
    /* defaults (structuraldefaulting.ValidateDefaults) */
    /* server: .properties[spec].properties[f].default: "string":  in body must be of type integer:
       "string" */
    {true, FIELD("{'type':'integer','default':'one'}"), 1,
     "properties[f].default: the default fails"},
    /* server: .properties[spec].properties[f].default: 0:  in body should be greater than or equal
       to 1 */
    {true, FIELD("{'type':'integer','minimum':1,'default':0}"), 1,
     "properties[f].default: the default fails"},
    /* server: .properties[spec].properties[f].default: Unsupported value: "c": supported values:
       "a", "b" */
    {true, FIELD("{'type':'string','enum':['a','b'],'default':'c'}"), 1,
     "properties[f].default: the default fails"},
    /* server: .properties[spec].properties[f].default: "A":  in body should match '^[a-z]+$' */
    {true, FIELD("{'type':'string','pattern':'^[a-z]+$','default':'A'}"), 1,
     "properties[f].default: the default fails"},
    /* server: .properties[spec].default.a: Required value */
    {true,
     SPEC("{'type':'object','default':{},'required':['a'],'properties':{'a':{'type':'string'}}}"),
     1, "properties[spec].default: the default fails"},
    /* server: .properties[spec].default: map[string]interface {}{"b":1}: must not have unknown
       fields */
    {true, SPEC("{'type':'object','default':{'b':1},'properties':{'a':{'type':'string'}}}"), 1,
     "properties[spec].default: pruning would drop"},
    /* server: .properties[spec].default: map[string]interface {}{"b":1}: must not have unknown
       fields */
    {true, SPEC("{'type':'object','default':{'b':1}}"), 1,
     "properties[spec].default: pruning would drop"},

    /* Good: the server created each. */
    {true,
     "{'type':'object','properties':{'metadata':{'type':'object','properties':{'name':{'type':'"
     "string','maxLength':20},'generateName':{'type':'string'}}}}}",
     0, NULL},
    {true,
     FIELD("{'x-kubernetes-int-or-string':true,'anyOf':[{'type':'integer'},{'type':'string'}],'"
           "pattern':'^[0-9]+m?$'}"),
     0, NULL},
    {true,
     FIELD("{'x-kubernetes-int-or-string':true,'allOf':[{'anyOf':[{'type':'integer'},{'type':'"
           "string'}]},{'pattern':'^[0-9]+$'}]}"),
     0, NULL},
    {true, FIELD("{'x-kubernetes-int-or-string':true}"), 0, NULL},
    {true, FIELD("{'x-kubernetes-preserve-unknown-fields':true}"), 0, NULL},
    {true,
     SPEC("{'type':'string','anyOf':[{'maxLength':3},{'minLength':5}],'not':{'enum':['ab']}}"), 0,
     NULL},
    {true,
     SPEC("{'type':'object','properties':{'a':{'type':'string'},'b':{'type':'string'}},'oneOf':[{'"
          "required':['a']},{'required':['b']}]}"),
     0, NULL},
    {true,
     SPEC("{'type':'object','properties':{'a':{'type':'string'}},'allOf':[{'properties':{'b':{'"
          "maxLength':1}}}]}"),
     0, NULL},
    {true,
     SPEC("{'type':'object','x-kubernetes-embedded-resource':true,'x-kubernetes-preserve-unknown-"
          "fields':true,'properties':{'metadata':{'type':'object','description':'Free below the "
          "root.'}}}"),
     0, NULL},
    {true,
     SPEC("{'type':'object','properties':{'metadata':{'type':'string','description':'Just a field "
          "here.'}}}"),
     0, NULL},
    {true,
     SPEC("{'type':'object','additionalProperties':{'type':'integer'},'x-kubernetes-map-type':'"
          "granular'}"),
     0, NULL},
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'set','items':{'type':'object','x-kubernetes-"
          "map-type':'atomic','properties':{'a':{'type':'string'}}}}"),
     0, NULL},
    {true,
     SPEC("{'type':'array','x-kubernetes-list-type':'map','x-kubernetes-list-map-keys':['a','b'],'"
          "items':{'type':'object','required':['a'],'properties':{'a':{'type':'string'},'b':{'type'"
          ":'integer','default':0}}}}"),
     0, NULL},
    {true,
     SPEC("{'type':'object','default':{'a':'x'},'properties':{'a':{'type':'string','enum':['x','y']"
          ",'default':'y'},'n':{'type':'integer','minimum':1,'default':1}}}"),
     0, NULL},
    {true,
     SPEC("{'type':'object','default':{'a':{'b':1}},'x-kubernetes-preserve-unknown-fields':true}"),
     0, NULL},
    {false,
     "{'type':'object','properties':{'spec':{'type':'object','properties':{'a':{'type':'string'}}}}"
     ",'anyOf':[{'properties':{'spec':{'required':['a']}}}]}",
     0, NULL},
};

/* Fairshare's house rules (RULES_HOUSE): the same server took each of these
 * CRDs, but each is a mistake in ours. */
/* A root schema, described, with one property, spec. */
#define HOUSE_SPEC(s)                                                                              \
    "{'description':'A thing of ours.','type':'object','properties':{'spec':" s "}}"

/* Fairshare's house rules (RULES_HOUSE): the same server took each of these
 * CRDs, but each is a mistake in ours. */
static const struct schema_case house_cases[] = {
    /* A property without a description: kubectl explain shows nothing. */
    {true,
     HOUSE_SPEC(
         "{'description':'The spec of it.','type':'object','properties':{'f':{'type':'string'}}}"),
     1, "properties[f]: missing or too short description"},
    /* The server then validates the type alone: an int-or-string of type string refuses 2. */
    {true,
     HOUSE_SPEC(
         "{'description':'Some quantity.','type':'string','x-kubernetes-int-or-string':true}"),
     1, "type and x-kubernetes-int-or-string together"},
    /* A required field that no one can set. */
    {true,
     HOUSE_SPEC("{'description':'The spec of "
                "it.','type':'object','required':['b'],'properties':{'a':{'description':'The field "
                "a.','type':'string'}}}"),
     1, "required field b is not a property"},
    {true,
     HOUSE_SPEC(
         "{'description':'The spec of it.','type':'string','properties':{'a':{'description':'The "
         "field a.','type':'string'}}}"),
     1, "properties on a non-object"},
    {true,
     HOUSE_SPEC("{'description':'The spec of it.','type':'object','additionalProperties':false}"),
     1, "always-empty object"},
    {true,
     HOUSE_SPEC("{'description':'The spec of "
                "it.','type':'object','additionalProperties':true,'properties':{'a':{'description':"
                "'The field a.','type':'string'}}}"),
     1, "properties and additionalProperties together"},
    /* An enum value that no value of the type can equal. */
    {true, HOUSE_SPEC("{'description':'The spec of it.','type':'string','enum':['a',1]}"), 1,
     "enum value 1 is not of type string"},
    /* Formats the server does not know: it drops them, and their check. */
    {true, HOUSE_SPEC("{'description':'The spec of it.','type':'string','format':'datetime2'}"), 1,
     "datetime2 is not a format the API server knows"},
    {true, HOUSE_SPEC("{'description':'The spec of it.','type':'string','format':'int64'}"), 1,
     "int64 is not a format the API server knows"},
    /* A default under additionalProperties is applied but never checked. */
    {true,
     HOUSE_SPEC("{'description':'The spec of it.','type':'object','additionalProperties':{'type':'"
                "string','default':[]}}"),
     1, "additionalProperties.default: the default fails its own schema"},
    /* metadata.name is a string, whatever the CRD says. */
    {true,
     "{'description':'A thing of "
     "ours.','type':'object','properties':{'metadata':{'type':'object','properties':{'name':{'type'"
     ":'integer'}}}}}",
     1, "properties[metadata].properties[name].type: must be string"},
    /* Good. */
    {true,
     HOUSE_SPEC(
         "{'description':'The spec of it.','type':'object','properties':{'at':{'description':'A "
         "point in time.','type':'string','format':'date-time'},'n':{'description':'A small "
         "count.','type':'integer','format':'int64','enum':[1,2]}}}"),
     0, NULL},
    {true,
     "{'description':'A thing of "
     "ours.','type':'object','properties':{'metadata':{'type':'object','properties':{'name':{'type'"
     ":'string','maxLength':20}}}}}",
     0, NULL},
};

/* New reference: a case's schema, with ' read as ". */
static json_t *case_schema(const char *text)
{
    char buf[2048];
    size_t n = strlen(text);
    assert_true(n < sizeof buf);
    for (size_t i = 0; i <= n; i++)
        buf[i] = text[i] == '\'' ? '"' : text[i];
    json_error_t jerr;
    json_t *s = json_loads(buf, 0, &jerr);
    if (!s)
        fail_msg("case schema %s: %s", text, jerr.text);
    return s;
}

static void run_schema_cases(const struct schema_case *cases, size_t n, unsigned rules)
{
    for (size_t i = 0; i < n; i++) {
        json_t *s = case_schema(cases[i].schema);
        struct walk w = {.rules = rules | (cases[i].status ? RULES_STATUS : 0)};
        check_schema(&w, s, "openAPIV3Schema");
        if (w.errors != cases[i].problems || (cases[i].needle && !strstr(w.first, cases[i].needle)))
            fail_msg("case %zu %s: want %d problems, the first with \"%s\"; got %d: %s", i,
                     cases[i].schema, cases[i].problems, cases[i].needle ? cases[i].needle : "",
                     w.errors, w.first);
        json_decref(s);
    }
}

static void test_check_schema_follows_the_api_server(void **state)
{
    (void)state;
    run_schema_cases(server_cases, sizeof server_cases / sizeof *server_cases, 0);
    run_schema_cases(house_cases, sizeof house_cases / sizeof *house_cases, RULES_HOUSE);
}

/* ---- config/ ------------------------------------------------------------ */

/* The file names kustomize takes a folder's kustomization from. */
static const char *const kustomization_names[] = {"kustomization.yaml", "kustomization.yml",
                                                  "Kustomization"};

/* The kustomization of folder dir ("crds/Kustomization") into out; false if
 * it has none. */
static bool find_kustomization(const char *dir, char *out, size_t n)
{
    for (size_t i = 0; i < sizeof kustomization_names / sizeof *kustomization_names; i++) {
        snprintf(out, n, "%s/%s", dir, kustomization_names[i]);
        if (file_exists(out))
            return true;
    }
    return false;
}

/* New reference: every document under crds/, config/ and config/examples/,
 * kustomizations included. */
static json_t *load_all(int *files)
{
    json_t *all = json_array();
    *files = load_dir("crds", all) + load_dir("config", all) + load_dir("config/admission", all) +
             load_dir("config/examples", all);
    char kz[PATH_MAX_LEN];
    assert_true(find_kustomization("crds", kz, sizeof kz));
    json_t *docs = load(kz);
    json_array_extend(all, docs);
    json_decref(docs);
    (*files)++;
    return all;
}

static void test_every_yaml_loads(void **state)
{
    (void)state;
    int files = 0;
    json_t *all = load_all(&files);
    /* crds: 2 CRDs + Kustomization; config: 11 files; config/admission: 1
     * (the optional ValidatingAdmissionPolicy); examples: 6 files. */
    assert_int_equal(files, 3 + 11 + 1 + 6);
    size_t i;
    json_t *d;
    json_array_foreach(all, i, d)
    {
        assert_non_null(str_at(d, "kind"));
        assert_non_null(str_at(d, "apiVersion"));
    }
    json_decref(all);
}

/* Which verbs the rules must grant is not written down here: it is derived
 * from the API requests the controller sends during the integration tests
 * (tests/integration/test_rbac_requests.c compares both ways). What is
 * checked here is the shape: no wildcard, no duplicate, the lease rights
 * only in the Role, on the lease the shipped config names, and a few
 * rights that must never be needed whatever the code does. */

static bool is_wild(json_t *arr)
{
    return str_in_array(arr, "*");
}

/* Rights the controller must never hold: a scheduler writes bindings,
 * evictions, conditions and Events, never pod specs, nodes or secrets
 * (apart from its webhook's one Secret, in a Role of its own namespace,
 * checked on its own in test_rbac_least_privilege). It
 * creates pods (the requeue of an evicted bare pod, a copy of what its
 * owner submitted) but never changes one. It deletes a pod only as a
 * victim whose evictions a PodDisruptionBudget kept refusing past
 * eviction.pdbMaxWait, as kube-scheduler (which holds the same right)
 * does; never a collection. */
static const struct never {
    const char *group, *resource, *verb; /* verb NULL: any */
} never_granted[] = {
    {"", "pods", "patch"},
    {"", "pods", "update"},
    {"", "pods", "deletecollection"},
    {"", "nodes", "patch"},
    {"", "nodes", "update"},
    {"", "nodes", "delete"},
    {"", "namespaces", "create"},
    {"", "namespaces", "update"},
    {"", "namespaces", "patch"},
    {"", "namespaces", "delete"},
    {"", "secrets", NULL},
    {"", "configmaps", NULL},
    {"", "pods/exec", NULL},
    {"", "serviceaccounts/token", NULL},
    {"fairshare.dev", "projects", "update"},
    {"fairshare.dev", "projects", "patch"},
    {"fairshare.dev", "queues", "update"},
    {"fairshare.dev", "queues", "patch"},
};

/* Expands the rules of a (Cluster)Role, checking each (group, resource,
 * verb, name) against the rules above; returns how many there are. */
static size_t check_rules(json_t *role, bool leases_only)
{
    char seen[64][400];
    size_t got = 0, i, g, r, v, n;
    json_t *rule, *gv, *rv, *vv;
    const char *rname = str_at(role, "metadata.name");
    json_array_foreach(json_object_get(role, "rules"), i, rule)
    {
        json_t *groups = json_object_get(rule, "apiGroups");
        json_t *res = json_object_get(rule, "resources");
        json_t *verbs = json_object_get(rule, "verbs");
        json_t *names = json_object_get(rule, "resourceNames");
        assert_null(json_object_get(rule, "nonResourceURLs"));
        assert_true(json_array_size(groups) && json_array_size(res) && json_array_size(verbs));
        if (is_wild(groups) || is_wild(res) || is_wild(verbs) || is_wild(names))
            fail_msg("%s rule %zu has a wildcard", rname, i);
        json_array_foreach(groups, g, gv) json_array_foreach(res, r, rv)
            json_array_foreach(verbs, v, vv)
        {
            const char *gs = json_string_value(gv), *rs = json_string_value(rv),
                       *vs = json_string_value(vv);
            assert_true(gs && rs && vs);
            bool lease = !strcmp(gs, "coordination.k8s.io") && !strcmp(rs, "leases");
            if (lease != leases_only)
                fail_msg("%s grants %s/%s %s: the lease rights belong in the Role "
                         "fairshare-leader-election, and only they",
                         rname, gs, rs, vs);
            for (size_t k = 0; k < sizeof never_granted / sizeof *never_granted; k++)
                if (!strcmp(never_granted[k].group, gs) && !strcmp(never_granted[k].resource, rs) &&
                    (!never_granted[k].verb || !strcmp(never_granted[k].verb, vs)))
                    fail_msg("%s grants %s/%s %s, which the controller must never need", rname, gs,
                             rs, vs);
            size_t nn = names ? json_array_size(names) : 1;
            for (n = 0; n < nn; n++) {
                const char *name = names ? json_string_value(json_array_get(names, n)) : "";
                assert_non_null(name);
                assert_true(got < 64);
                snprintf(seen[got], sizeof seen[got], "%s|%s|%s|%s", gs, rs, vs, name);
                for (size_t k = 0; k < got; k++)
                    if (!strcmp(seen[k], seen[got]))
                        fail_msg("%s grants %s twice", rname, seen[got]);
                got++;
            }
        }
    }
    return got;
}

static void check_binding(json_t *b, const char *role_kind, const char *role_name)
{
    assert_non_null(b);
    assert_string_equal(str_at(b, "roleRef.apiGroup"), "rbac.authorization.k8s.io");
    assert_string_equal(str_at(b, "roleRef.kind"), role_kind);
    assert_string_equal(str_at(b, "roleRef.name"), role_name);
    json_t *subjects = json_object_get(b, "subjects");
    assert_int_equal(json_array_size(subjects), 1);
    assert_string_equal(str_at(subjects, "0.kind"), "ServiceAccount");
    assert_string_equal(str_at(subjects, "0.name"), "fairshare-controller");
    assert_string_equal(str_at(subjects, "0.namespace"), "fairshare-system");
}

static void test_rbac_least_privilege(void **state)
{
    (void)state;
    json_t *docs = load("config/rbac.yaml");
    assert_int_equal(json_array_size(docs), 7);
    json_t *sa = find_doc(docs, "ServiceAccount", "fairshare-controller");
    assert_non_null(sa);
    assert_string_equal(str_at(sa, "metadata.namespace"), "fairshare-system");
    json_t *cr = find_doc(docs, "ClusterRole", "fairshare-controller");
    assert_non_null(cr);
    assert_true(check_rules(cr, false) > 0);
    /* The Role: create on leases (a name cannot limit create: the object
     * does not exist yet), and every other verb only on the lease that the
     * shipped config names, in its namespace. */
    json_t *cfgdocs = load("config/controller-config.yaml");
    json_t *cfg = json_array_get(cfgdocs, 0);
    const char *lease = str_at(cfg, "leaderElection.leaseName");
    const char *lease_ns = str_at(cfg, "leaderElection.leaseNamespace");
    assert_non_null(lease);
    assert_non_null(lease_ns);
    json_t *role = find_doc(docs, "Role", "fairshare-leader-election");
    assert_non_null(role);
    assert_string_equal(str_at(role, "metadata.namespace"), lease_ns);
    assert_true(check_rules(role, true) > 0);
    size_t i;
    json_t *rule;
    json_array_foreach(json_object_get(role, "rules"), i, rule)
    {
        json_t *names = json_object_get(rule, "resourceNames");
        json_t *verbs = json_object_get(rule, "verbs");
        if (!names) {
            assert_int_equal(json_array_size(verbs), 1);
            assert_string_equal(json_string_value(json_array_get(verbs, 0)), "create");
        } else {
            assert_int_equal(json_array_size(names), 1);
            assert_string_equal(json_string_value(json_array_get(names, 0)), lease);
            assert_false(str_in_array(verbs, "create"));
        }
    }
    json_decref(cfgdocs);
    check_binding(find_doc(docs, "ClusterRoleBinding", "fairshare-controller"), "ClusterRole",
                  "fairshare-controller");
    json_t *rb = find_doc(docs, "RoleBinding", "fairshare-leader-election");
    check_binding(rb, "Role", "fairshare-leader-election");
    assert_string_equal(str_at(rb, "metadata.namespace"), "fairshare-system");
    /* The webhook's certificate: secrets only, in the namespace the config
     * names; create (no name can limit it), and get and update of the one
     * Secret the config names. */
    cfgdocs = load("config/controller-config.yaml");
    cfg = json_array_get(cfgdocs, 0);
    const char *secret = str_at(cfg, "webhook.secretName");
    const char *secret_ns = str_at(cfg, "webhook.namespace");
    assert_non_null(secret);
    assert_non_null(secret_ns);
    json_t *wrole = find_doc(docs, "Role", "fairshare-webhook-cert");
    assert_non_null(wrole);
    assert_string_equal(str_at(wrole, "metadata.namespace"), secret_ns);
    json_array_foreach(json_object_get(wrole, "rules"), i, rule)
    {
        assert_string_equal(str_at(rule, "apiGroups.0"), "");
        assert_int_equal(json_array_size(json_object_get(rule, "apiGroups")), 1);
        assert_string_equal(str_at(rule, "resources.0"), "secrets");
        assert_int_equal(json_array_size(json_object_get(rule, "resources")), 1);
        json_t *names = json_object_get(rule, "resourceNames");
        json_t *verbs = json_object_get(rule, "verbs");
        assert_false(str_in_array(verbs, "list") || str_in_array(verbs, "watch") ||
                     str_in_array(verbs, "*"));
        if (!names) {
            assert_int_equal(json_array_size(verbs), 1);
            assert_string_equal(json_string_value(json_array_get(verbs, 0)), "create");
        } else {
            assert_int_equal(json_array_size(names), 1);
            assert_string_equal(json_string_value(json_array_get(names, 0)), secret);
            assert_false(str_in_array(verbs, "create"));
        }
    }
    json_decref(cfgdocs);
    json_t *wrb = find_doc(docs, "RoleBinding", "fairshare-webhook-cert");
    check_binding(wrb, "Role", "fairshare-webhook-cert");
    json_decref(docs);
}

/* Borrowed: the container of the controller Deployment. */
static json_t *controller_container(json_t *dep)
{
    json_t *cs = at(dep, "spec.template.spec.containers");
    assert_int_equal(json_array_size(cs), 1);
    return json_array_get(cs, 0);
}

static json_t *named(json_t *arr, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        const char *n = str_at(e, "name");
        if (n && strcmp(n, name) == 0)
            return e;
    }
    return NULL;
}

static int64_t qty_at(json_t *root, const char *dotted)
{
    json_t *v = at(root, dotted);
    int64_t out = -1;
    if (json_is_integer(v))
        return json_integer_value(v) * 1000;
    if (!json_is_string(v) || fair_quantity_parse_milli(json_string_value(v), &out, NULL) != 0)
        fail_msg("%s is not a quantity", dotted);
    return out;
}

static void test_deployment_hardened(void **state)
{
    (void)state;
    json_t *docs = load("config/deployment.yaml");
    json_t *dep = find_doc(docs, "Deployment", "fairshare-controller");
    assert_non_null(dep);
    assert_string_equal(str_at(dep, "metadata.namespace"), "fairshare-system");
    assert_int_equal(json_integer_value(at(dep, "spec.replicas")), 2);
    json_t *pod = at(dep, "spec.template.spec");
    assert_string_equal(str_at(pod, "serviceAccountName"), "fairshare-controller");
    /* The controller itself is placed by the default scheduler. */
    assert_null(json_object_get(pod, "schedulerName"));
    assert_null(json_object_get(pod, "hostNetwork"));
    assert_true(json_is_true(at(pod, "securityContext.runAsNonRoot")));
    assert_int_equal(json_integer_value(at(pod, "securityContext.runAsUser")), 65532);
    assert_string_equal(str_at(pod, "securityContext.seccompProfile.type"), "RuntimeDefault");
    json_t *c = controller_container(dep);
    json_t *sc = json_object_get(c, "securityContext");
    assert_true(json_is_true(json_object_get(sc, "readOnlyRootFilesystem")));
    assert_true(json_is_false(json_object_get(sc, "allowPrivilegeEscalation")));
    assert_null(json_object_get(sc, "privileged"));
    json_t *drop = at(sc, "capabilities.drop");
    assert_int_equal(json_array_size(drop), 1);
    assert_true(str_in_array(drop, "ALL"));
    assert_null(at(sc, "capabilities.add"));
    /* Args, probes on the health port, resources. */
    json_t *args = json_object_get(c, "args");
    assert_int_equal(json_array_size(args), 2);
    assert_string_equal(json_string_value(json_array_get(args, 0)), "--config");
    assert_string_equal(json_string_value(json_array_get(args, 1)), "/etc/fairshare/config.yaml");
    json_t *port = named(json_object_get(c, "ports"), "metrics");
    assert_non_null(port);
    assert_int_equal(json_integer_value(json_object_get(port, "containerPort")), 8080);
    assert_string_equal(str_at(c, "livenessProbe.httpGet.path"), "/healthz");
    assert_string_equal(str_at(c, "livenessProbe.httpGet.port"), "health");
    assert_string_equal(str_at(c, "readinessProbe.httpGet.path"), "/readyz");
    assert_string_equal(str_at(c, "readinessProbe.httpGet.port"), "health");
    json_t *hport = named(json_object_get(c, "ports"), "health");
    assert_non_null(hport);
    assert_int_equal(json_integer_value(json_object_get(hport, "containerPort")), 8081);
    static const char *const res[] = {"cpu", "memory"};
    for (size_t i = 0; i < 2; i++) {
        char req[64], lim[64];
        snprintf(req, sizeof req, "resources.requests.%s", res[i]);
        snprintf(lim, sizeof lim, "resources.limits.%s", res[i]);
        int64_t r = qty_at(c, req), l = qty_at(c, lim);
        assert_true(r > 0);
        assert_true(l >= r);
    }
    /* POD_NAME from the downward API (the leader-election identity). */
    json_t *env = named(json_object_get(c, "env"), "POD_NAME");
    assert_non_null(env);
    assert_string_equal(str_at(env, "valueFrom.fieldRef.fieldPath"), "metadata.name");
    /* The config mounted read-only; the ledger on its PVC. */
    json_t *vols = json_object_get(pod, "volumes"), *mounts = json_object_get(c, "volumeMounts");
    json_t *cm = named(mounts, "config");
    assert_string_equal(str_at(cm, "mountPath"), "/etc/fairshare");
    assert_true(json_is_true(json_object_get(cm, "readOnly")));
    assert_string_equal(str_at(named(vols, "config"), "configMap.name"), "fairshare-config");
    assert_string_equal(str_at(named(vols, "ledger"), "persistentVolumeClaim.claimName"),
                        "fairshare-ledger");
    assert_string_equal(str_at(named(mounts, "ledger"), "mountPath"), "/var/lib/fairshare");
    size_t i;
    json_t *vol;
    json_array_foreach(vols, i, vol) assert_null(json_object_get(vol, "hostPath"));
    /* Both replicas on the node the RWO volume is attached to. */
    json_t *aff = at(pod, "affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution.0");
    assert_string_equal(str_at(aff, "topologyKey"), "kubernetes.io/hostname");
    assert_true(
        json_equal(at(aff, "labelSelector.matchLabels"), at(dep, "spec.selector.matchLabels")));
    assert_true(
        json_equal(at(dep, "spec.template.metadata.labels"), at(dep, "spec.selector.matchLabels")));
    json_decref(docs);

    json_t *pvcs = load("config/pvc.yaml");
    json_t *pvc = find_doc(pvcs, "PersistentVolumeClaim", "fairshare-ledger");
    assert_non_null(pvc);
    assert_string_equal(str_at(pvc, "metadata.namespace"), "fairshare-system");
    assert_int_equal(json_array_size(at(pvc, "spec.accessModes")), 1);
    assert_string_equal(str_at(pvc, "spec.accessModes.0"), "ReadWriteOnce");
    json_decref(pvcs);

    json_t *svcs = load("config/service.yaml");
    json_t *svc = find_doc(svcs, "Service", "fairshare-controller");
    assert_non_null(svc);
    assert_int_equal(json_integer_value(at(svc, "spec.ports.0.port")), 8080);
    assert_string_equal(str_at(svc, "spec.ports.0.targetPort"), "metrics");
    json_t *dep_docs = load("config/deployment.yaml");
    assert_true(json_equal(at(svc, "spec.selector"), at(find_doc(dep_docs, "Deployment", NULL),
                                                        "spec.selector.matchLabels")));
    json_decref(dep_docs);
    json_decref(svcs);
}

static void test_controller_config(void **state)
{
    (void)state;
    json_t *docs = load("config/controller-config.yaml");
    assert_int_equal(json_array_size(docs), 1);
    json_t *cfg = json_array_get(docs, 0);
    assert_string_equal(str_at(cfg, "apiVersion"), "config.fairshare.dev/v1alpha1");
    assert_string_equal(str_at(cfg, "kind"), "ControllerConfig");
    assert_string_equal(str_at(cfg, "schedulerName"), "fairshare");
    assert_string_equal(str_at(cfg, "logLevel"), "info");
    assert_true(json_is_true(at(cfg, "leaderElection.enabled")));
    assert_string_equal(str_at(cfg, "leaderElection.leaseNamespace"), "fairshare-system");
    /* The lease the Role lets the controller get and update
     * (test_rbac_least_privilege checks the Role against this name). */
    assert_string_equal(str_at(cfg, "leaderElection.leaseName"), "fairshare-controller");
    assert_string_equal(str_at(cfg, "metricsAddress"), ":8080");
    assert_string_equal(str_at(cfg, "ledger.path"), "/var/lib/fairshare/ledger.db");
    assert_string_equal(str_at(cfg, "ledger.retention"), "400d");
    int64_t ms = 0;
    assert_int_equal(fair_duration_parse_ms(str_at(cfg, "ledger.samplePeriod"), &ms, NULL), 0);
    assert_int_equal(ms, 60000);
    assert_int_equal(fair_duration_parse_ms(str_at(cfg, "cycleInterval"), &ms, NULL), 0);
    assert_int_equal(ms, 1000);
    assert_int_equal(json_integer_value(at(cfg, "kubeAPI.qps")), 2000);
    assert_int_equal(json_integer_value(at(cfg, "kubeAPI.burst")), 4000);
    json_decref(docs);
}

static bool listed(json_t *arr, const char *s)
{
    return str_in_array(arr, s);
}

/* Whether kubectl apply -f DIR reads this file: it takes *.yaml, *.yml and
 * *.json (we also count other letter cases, to be safe). */
static bool applied_by_kubectl(const char *name)
{
    static const char *const exts[] = {".yaml", ".yml", ".json"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof exts / sizeof *exts; i++) {
        size_t m = strlen(exts[i]);
        if (n > m && strcasecmp(name + n - m, exts[i]) == 0)
            return true;
    }
    return false;
}

/* Every file a kustomization names exists, and every manifest beside it is
 * named (so that a new file cannot be forgotten by `kubectl apply -k`).
 * crds/ keeps its kustomization as crds/Kustomization, a name kustomize
 * takes and `kubectl apply -f crds/` skips, so that command sends only the
 * CRDs: everything there it reads must be a CRD. */
static void test_kustomizations(void **state)
{
    (void)state;
    json_t *docs = load("config/kustomization.yaml");
    json_t *k = json_array_get(docs, 0);
    assert_string_equal(str_at(k, "kind"), "Kustomization");
    assert_string_equal(str_at(k, "namespace"), "fairshare-system");
    json_t *res = json_object_get(k, "resources");
    size_t i;
    json_t *r;
    json_array_foreach(res, i, r)
    {
        char rel[512];
        snprintf(rel, sizeof rel, "config/%s", json_string_value(r));
        char kz[PATH_MAX_LEN];
        if (!file_exists(rel) && !find_kustomization(rel, kz, sizeof kz))
            fail_msg("config/kustomization.yaml names %s, which does not exist", rel);
    }
    static const char *const want[] = {
        "../crds",         "namespace.yaml", "rbac.yaml",          "rbac-reports.yaml", "pvc.yaml",
        "deployment.yaml", "service.yaml",   "networkpolicy.yaml", "webhook.yaml",      "rbac-reserve.yaml"};
    assert_int_equal(json_array_size(res), sizeof want / sizeof *want);
    for (i = 0; i < sizeof want / sizeof *want; i++)
        assert_true(listed(res, want[i]));
    /* The ConfigMap comes from controller-config.yaml, under the name the
     * Deployment mounts, with the key the controller's --config names. */
    json_t *gen = at(k, "configMapGenerator.0");
    assert_string_equal(str_at(gen, "name"), "fairshare-config");
    assert_string_equal(str_at(gen, "files.0"), "config.yaml=controller-config.yaml");
    assert_true(file_exists("config/controller-config.yaml"));
    json_decref(docs);

    char kz[PATH_MAX_LEN];
    assert_true(find_kustomization("crds", kz, sizeof kz));
    assert_string_equal(kz, "crds/Kustomization");
    docs = load(kz);
    assert_int_equal(json_array_size(docs), 1);
    assert_string_equal(str_at(docs, "0.kind"), "Kustomization");
    res = at(docs, "0.resources");
    assert_int_equal(json_array_size(res), 2);
    assert_true(listed(res, "fairshare.dev_projects.yaml"));
    assert_true(listed(res, "fairshare.dev_queues.yaml"));
    json_array_foreach(res, i, r)
    {
        char rel[PATH_MAX_LEN];
        snprintf(rel, sizeof rel, "crds/%s", json_string_value(r));
        assert_true(file_exists(rel));
    }
    /* What `kubectl apply -f crds/` reads: CRDs only, each one listed. */
    char dir[PATH_MAX_LEN];
    src_path(dir, sizeof dir, "crds");
    DIR *d = opendir(dir);
    assert_non_null(d);
    int manifests = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (!applied_by_kubectl(e->d_name))
            continue;
        char rel[PATH_MAX_LEN];
        snprintf(rel, sizeof rel, "crds/%s", e->d_name);
        json_t *m = load(rel);
        size_t j;
        json_t *doc;
        json_array_foreach(m, j, doc)
        {
            const char *kind = str_at(doc, "kind");
            if (!kind || strcmp(kind, "CustomResourceDefinition") != 0)
                fail_msg("%s: kubectl apply -f crds/ would send a %s", rel, kind ? kind : "?");
        }
        if (!listed(res, e->d_name))
            fail_msg("%s is not listed in %s", rel, kz);
        json_decref(m);
        manifests++;
    }
    closedir(d);
    assert_int_equal(manifests, 2);
    json_decref(docs);
}

static bool q_is_queue(json_t *d)
{
    return strcmp(str_at(d, "kind"), "Queue") == 0;
}

/* Borrowed: the pod template (Job) or the pod spec holder (Pod). */
static json_t *pod_of(json_t *d)
{
    if (strcmp(str_at(d, "kind"), "Pod") == 0)
        return d;
    if (strcmp(str_at(d, "kind"), "Job") == 0)
        return at(d, "spec.template");
    return NULL;
}

static void test_examples_follow_the_api(void **state)
{
    (void)state;
    json_t *ex = json_array();
    assert_int_equal(load_dir("config/examples", ex), 6);
    json_t *pcrd = load_crd("crds/fairshare.dev_projects.yaml");
    json_t *qcrd = load_crd("crds/fairshare.dev_queues.yaml");
    int projects = 0, queues = 0, pods = 0, fractions = 0, gangs = 0, pinned = 0;
    size_t i;
    json_t *d;
    json_array_foreach(ex, i, d)
    {
        const char *kind = str_at(d, "kind");
        if (strcmp(kind, "Project") == 0 || strcmp(kind, "Queue") == 0) {
            bool q = kind[0] == 'Q';
            struct walk w = {0};
            validate(&w, crd_schema(q ? qcrd : pcrd), d, str_at(d, "metadata.name"));
            if (w.errors)
                fail_msg("example %s: %s", kind, w.first);
            q ? queues++ : projects++;
        }
        if (q_is_queue(d)) {
            /* Its project exists; the queues of a project fit in its guarantee. */
            json_t *p = find_doc(ex, "Project", str_at(d, "spec.project"));
            assert_non_null(p);
        }
    }
    assert_int_equal(projects, 2);
    assert_int_equal(queues, 4);
    json_array_foreach(ex, i, d)
    {
        if (strcmp(str_at(d, "kind"), "Project") != 0)
            continue;
        int64_t sum = 0;
        size_t j;
        json_t *q;
        json_array_foreach(ex, j, q)
        {
            if (q_is_queue(q) && strcmp(str_at(q, "spec.project"), str_at(d, "metadata.name")) == 0)
                sum += qty_at(q, "spec.guaranteed.gpu");
        }
        assert_true(sum > 0);
        assert_true(sum <= qty_at(d, "spec.guaranteed.gpu"));
        json_t *dq = find_doc(ex, "Queue", str_at(d, "spec.defaultQueue"));
        assert_non_null(dq);
        assert_string_equal(str_at(dq, "spec.project"), str_at(d, "metadata.name"));
    }
    /* The pods: scheduled by fairshare, in a queue whose project admits
     * their namespace, with well-formed annotations. */
    json_array_foreach(ex, i, d)
    {
        json_t *pt = pod_of(d);
        if (!pt)
            continue;
        pods++;
        assert_string_equal(str_at(pt, "spec.schedulerName"), "fairshare");
        json_t *labels = at(pt, "metadata.labels"), *ann = at(pt, "metadata.annotations");
        json_t *q = find_doc(ex, "Queue",
                             json_string_value(json_object_get(labels, "fairshare.dev/queue")));
        assert_non_null(q);
        json_t *p = find_doc(ex, "Project", str_at(q, "spec.project"));
        assert_true(str_in_array(at(p, "spec.namespaces"), str_at(d, "metadata.namespace")));
        json_t *c0 = at(pt, "spec.containers.0");
        const char *frac = json_string_value(json_object_get(ann, "fairshare.dev/gpu-fraction"));
        if (frac) {
            int64_t milli = 0;
            assert_int_equal(fair_quantity_parse_milli(frac, &milli, NULL), 0);
            assert_int_equal(milli, 250);
            /* No whole-GPU request, and the devices handed over by the downward API. */
            assert_null(at(c0, "resources.requests.nvidia.com/gpu"));
            assert_null(json_object_get(at(c0, "resources.limits"), "nvidia.com/gpu"));
            json_t *env = named(json_object_get(c0, "env"), "NVIDIA_VISIBLE_DEVICES");
            assert_string_equal(str_at(env, "valueFrom.fieldRef.fieldPath"),
                                "metadata.annotations['fairshare.dev/gpu-devices']");
            fractions++;
        }
        const char *gang = json_string_value(json_object_get(ann, "fairshare.dev/gang"));
        if (gang) {
            const char *size = json_string_value(json_object_get(ann, "fairshare.dev/gang-size"));
            assert_non_null(size);
            char *end;
            long n = strtol(size, &end, 10);
            assert_true(*end == '\0' && n > 1);
            assert_int_equal(n, json_integer_value(at(d, "spec.parallelism")));
            assert_int_equal(n, json_integer_value(at(d, "spec.completions")));
            gangs++;
        }
        const char *pre = json_string_value(json_object_get(labels, "fairshare.dev/preemptible"));
        if (pre) {
            assert_string_equal(pre, "false");
            pinned++;
        }
    }
    assert_int_equal(pods, 3);
    assert_int_equal(fractions, 1);
    assert_int_equal(gangs, 1);
    assert_int_equal(pinned, 1);
    json_decref(pcrd);
    json_decref(qcrd);
    json_decref(ex);
}

/* ---- Dockerfile (Docker cannot run here, so it is linted) ----------------- */

#define DF_MAX_LINES 256
#define DF_LINE_MAX 2048

/* Splits the Dockerfile into logical instructions (continuations joined,
 * comments dropped). Returns the count; lines[i] are NUL-terminated. */
static int dockerfile_lines(char lines[][DF_LINE_MAX], int max)
{
    char p[PATH_MAX_LEN];
    char *data = NULL;
    size_t len = 0;
    struct fair_error err = {0};
    src_path(p, sizeof p, "Dockerfile");
    if (fair_read_file(p, 1 << 20, &data, &len, &err) != 0)
        fail_msg("%s", err.msg);
    int n = 0;
    size_t cur = 0;
    bool cont = false;
    for (char *line = data; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t l = nl ? (size_t)(nl - line) : strlen(line);
        char *next = nl ? nl + 1 : NULL;
        while (l > 0 && (line[l - 1] == ' ' || line[l - 1] == '\r'))
            l--;
        bool is_comment = l > 0 && line[strspn(line, " ")] == '#';
        if (!is_comment && l > 0) {
            bool more = line[l - 1] == '\\';
            if (more)
                l--;
            if (!cont) {
                assert_true(n < max);
                cur = 0;
                n++;
            }
            assert_true(cur + l + 2 < DF_LINE_MAX);
            memcpy(lines[n - 1] + cur, line, l);
            cur += l;
            lines[n - 1][cur++] = ' ';
            lines[n - 1][cur] = '\0';
            cont = more;
        }
        line = next;
    }
    fair_free(data);
    return n;
}

/* Packages named by "apt-get install" in one instruction (appended to out,
 * separated by spaces). */
static void apt_packages(const char *instr, char *out, size_t n)
{
    const char *p = strstr(instr, "apt-get install");
    if (!p)
        return;
    p += strlen("apt-get install");
    while (*p) {
        p += strspn(p, " ");
        size_t l = strcspn(p, " ");
        if (l == 0 || strncmp(p, "&&", 2) == 0)
            break;
        if (p[0] != '-') {
            size_t used = strlen(out);
            assert_true(used + l + 2 < n);
            memcpy(out + used, p, l);
            out[used + l] = ' ';
            out[used + l + 1] = '\0';
        }
        p += l;
    }
}

static bool has_word(const char *list, const char *word)
{
    size_t l = strlen(word);
    for (const char *p = list; (p = strstr(p, word)) != NULL; p += l)
        if ((p == list || p[-1] == ' ') && (p[l] == ' ' || p[l] == '\0'))
            return true;
    return false;
}

/* A base image pinned by digest: "FROM debian:bookworm-YYYYMMDD[-slim]
 * @sha256:<64 hex> AS <stage> ". The dated tag says what the digest is;
 * both stages use the same date (want_date, or any the first time: it is
 * copied to date_out). */
static void check_from(const char *l, const char *stage, bool slim, const char *want_date,
                       char *date_out)
{
    const char *prefix = "FROM debian:bookworm-";
    if (strncmp(l, prefix, strlen(prefix)) != 0)
        fail_msg("base image not debian:bookworm-YYYYMMDD: %s", l);
    const char *p = l + strlen(prefix);
    for (int i = 0; i < 8; i++)
        if (p[i] < '0' || p[i] > '9')
            fail_msg("no dated tag (debian:bookworm-YYYYMMDD): %s", l);
    if (want_date)
        assert_memory_equal(p, want_date, 8);
    else
        snprintf(date_out, 9, "%.8s", p);
    p += 8;
    if (slim) {
        if (strncmp(p, "-slim", 5) != 0)
            fail_msg("the runtime stage is not the slim image: %s", l);
        p += 5;
    }
    if (strncmp(p, "@sha256:", 8) != 0)
        fail_msg("base image not pinned by digest: %s", l);
    p += 8;
    for (int i = 0; i < 64; i++)
        if (!((p[i] >= '0' && p[i] <= '9') || (p[i] >= 'a' && p[i] <= 'f')))
            fail_msg("digest is not 64 lowercase hex digits: %s", l);
    p += 64;
    char tail[64];
    snprintf(tail, sizeof tail, " AS %s ", stage);
    assert_string_equal(p, tail);
}

static void test_dockerfile(void **state)
{
    (void)state;
    static char lines[DF_MAX_LINES][DF_LINE_MAX];
    int n = dockerfile_lines(lines, DF_MAX_LINES);
    int stage = -1, froms = 0;
    char date[16] = "";
    char pkgs[2][DF_LINE_MAX] = {"", ""};
    const char *user = NULL, *entry = NULL;
    bool release = false, copies = false, plugin = false;
    for (int i = 0; i < n; i++) {
        const char *l = lines[i];
        if (strncmp(l, "FROM ", 5) == 0) {
            stage = froms++;
            assert_true(froms <= 2);
            check_from(l, stage == 0 ? "build" : "runtime", stage == 1, date[0] ? date : NULL,
                       date);
            continue;
        }
        assert_true(stage >= 0);
        assert_true(strncmp(l, "ADD ", 4) != 0);
        assert_null(strstr(l, ":latest"));
        apt_packages(l, pkgs[stage], sizeof pkgs[stage]);
        if (stage == 0 && strstr(l, "-DCMAKE_BUILD_TYPE=Release"))
            release = true;
        if (stage == 1 && strncmp(l, "COPY --from=build ", 18) == 0)
            copies = strstr(l, "fairshare-controller") && strstr(l, "fairsharectl");
        if (stage == 1 && strstr(l, "ln -s fairsharectl /usr/local/bin/kubectl-fairshare"))
            plugin = true;
        if (strncmp(l, "USER ", 5) == 0)
            user = l + 5;
        if (strncmp(l, "ENTRYPOINT ", 11) == 0)
            entry = l + 11;
    }
    assert_int_equal(froms, 2);
    assert_true(release);
    assert_true(copies);
    assert_true(plugin);
    /* Runtime: exactly the shared libraries, never a -dev package. */
    static const char *const runtime[] = {"libcurl4",
                                          "libjansson4",
                                          "libyaml-0-2",
                                          "libsqlite3-0",
                                          "libevent-2.1-7",
                                          "libevent-openssl-2.1-7",
                                          "libevent-pthreads-2.1-7",
                                          "libssl3", /* the webhook's CA (lib/httpd/ca.c) */
                                          "ca-certificates"};
    size_t words = 0;
    for (const char *p = pkgs[1]; *p; p += strcspn(p, " "), p += strspn(p, " "))
        words++;
    assert_int_equal(words, sizeof runtime / sizeof *runtime);
    for (size_t i = 0; i < sizeof runtime / sizeof *runtime; i++)
        if (!has_word(pkgs[1], runtime[i]))
            fail_msg("runtime stage does not install %s: %s", runtime[i], pkgs[1]);
    assert_null(strstr(pkgs[1], "-dev"));
    static const char *const build_dev[] = {
        "libcurl4-openssl-dev", "libjansson-dev", "libyaml-dev", "libsqlite3-dev",
        "libevent-dev",         "libcmocka-dev",  "cmake",       "gcc"};
    for (size_t i = 0; i < sizeof build_dev / sizeof *build_dev; i++)
        if (!has_word(pkgs[0], build_dev[i]))
            fail_msg("build stage does not install %s: %s", build_dev[i], pkgs[0]);
    /* Numeric non-root user (runAsNonRoot can check it), exec-form entry. */
    assert_non_null(user);
    assert_string_equal(user, "65532:65532 ");
    assert_non_null(entry);
    assert_string_equal(entry, "[\"/usr/local/bin/fairshare-controller\"] ");

    char p[PATH_MAX_LEN];
    char *ign = NULL;
    size_t len = 0;
    src_path(p, sizeof p, ".dockerignore");
    assert_int_equal(fair_read_file(p, 1 << 16, &ign, &len, NULL), 0);
    assert_non_null(strstr(ign, "\n.git\n"));
    assert_non_null(strstr(ign, "\nbuild-*\n"));
    fair_free(ign);
}

/* ---- docs stay in step with the manifests ------------------------------- */

static char *read_doc(const char *rel);

/* The version is set once, in CMakeLists.txt's project(); the image tags
 * of the manifests and the Dockerfile's example, and CHANGELOG.md, follow it. */
static void test_versions_line_up(void **state)
{
    (void)state;
    char *cm = read_doc("CMakeLists.txt");
    const char *p = strstr(cm, "project(fairshare VERSION ");
    assert_non_null(p);
    p += strlen("project(fairshare VERSION ");
    char v[32];
    size_t n = strspn(p, "0123456789.");
    assert_true(n > 0 && n < sizeof v && p[n] == ' ');
    memcpy(v, p, n);
    v[n] = '\0';
    int dots = 0;
    for (size_t i = 0; i < n; i++)
        dots += v[i] == '.';
    assert_int_equal(dots, 2); /* MAJOR.MINOR.PATCH */
    fair_free(cm);

    char want[96];
    struct {
        const char *file, *before, *after;
    } refs[] = {
        {"config/deployment.yaml", "image: ghcr.io/fairshare-dev/fairshare:", "\n"},
        {"config/kustomization.yaml", "newTag: ", "\n"},
        {"Dockerfile", "ghcr.io/fairshare-dev/fairshare:", " ."},
        {"docs/operations.md", "ghcr.io/fairshare-dev/fairshare:", " "},
        {"CHANGELOG.md", "\n## [", "]"},
    };
    for (size_t i = 0; i < sizeof refs / sizeof *refs; i++) {
        char *doc = read_doc(refs[i].file);
        snprintf(want, sizeof want, "%s%s%s", refs[i].before, v, refs[i].after);
        if (!strstr(doc, want))
            fail_msg("%s lacks \"%s\" (the version of CMakeLists.txt)", refs[i].file, want);
        fair_free(doc);
    }
}

/* New buffer: a whole doc file. */
static char *read_doc(const char *rel)
{
    char p[PATH_MAX_LEN];
    char *data = NULL;
    size_t len = 0;
    struct fair_error err = {0};
    src_path(p, sizeof p, rel);
    if (fair_read_file(p, 1 << 20, &data, &len, &err) != 0)
        fail_msg("%s", err.msg);
    return data;
}

static void expect_backticked(const char *doc, const char *docname, const char *word)
{
    char whole[160], prefix[160];
    snprintf(whole, sizeof whole, "`%s`", word);
    snprintf(prefix, sizeof prefix, "`%s.", word); /* `pending.pods` documents pending */
    if (!strstr(doc, whole) && !strstr(doc, prefix))
        fail_msg("%s does not document %s", docname, whole);
}

/* docs/api.md names every spec and status field of both CRDs, and
 * docs/operations.md every key of the controller config. */
static void test_docs_cover_every_field(void **state)
{
    (void)state;
    char *api = read_doc("docs/api.md");
    for (size_t i = 0; i < sizeof crds / sizeof *crds; i++) {
        json_t *crd = load_crd(crds[i].file);
        static const char *const parts[] = {"properties.spec.properties",
                                            "properties.status.properties"};
        int fields = 0;
        for (size_t k = 0; k < 2; k++) {
            const char *key;
            json_t *child;
            json_object_foreach(at(crd_schema(crd), parts[k]), key, child)
            {
                expect_backticked(api, "docs/api.md", key);
                fields++;
            }
        }
        /* spec + status fields (a Project's has team); with usageHalfLife,
         * budget, schedule, fractions and their status (Projects), schedule and fractions (Queues). */
        assert_int_equal(fields, i == 0 ? 14 + 14 : 11 + 11);
        json_decref(crd);
    }
    fair_free(api);

    char *ops = read_doc("docs/operations.md");
    json_t *docs = load("config/controller-config.yaml");
    json_t *cfg = json_array_get(docs, 0);
    const char *key;
    json_t *v;
    int keys = 0;
    json_object_foreach(cfg, key, v)
    {
        if (json_is_object(v)) {
            const char *sub;
            json_t *sv;
            json_object_foreach(v, sub, sv)
            {
                char dotted[128];
                snprintf(dotted, sizeof dotted, "%s.%s", key, sub);
                /* Either `a.b` or, for grouped rows, `a.b` written as `b`. */
                char needle[160];
                snprintf(needle, sizeof needle, "`%s`", dotted);
                if (!strstr(ops, needle))
                    expect_backticked(ops, "docs/operations.md", sub);
                keys++;
            }
        } else {
            expect_backticked(ops, "docs/operations.md", key);
            keys++;
        }
    }
    assert_int_equal(keys, 35); /* 24 + the 7 webhook keys + 4 fractions.reservation* keys */
    json_decref(docs);
    fair_free(ops);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crds_are_structural_and_described),
        cmocka_unit_test(test_crd_names_scope_and_version),
        cmocka_unit_test(test_crd_printer_columns),
        cmocka_unit_test(test_crd_defaults_and_validation),
        cmocka_unit_test(test_quantity_pattern),
        cmocka_unit_test(test_quantity_pattern_admits_only_parsable),
        cmocka_unit_test(test_quantity_fields_share_one_pattern),
        cmocka_unit_test(test_duration_pattern),
        cmocka_unit_test(test_duration_pattern_admits_only_parsable),
        cmocka_unit_test(test_schema_rejects_bad_objects),
        cmocka_unit_test(test_check_schema_follows_the_api_server),
        cmocka_unit_test(test_every_yaml_loads),
        cmocka_unit_test(test_rbac_least_privilege),
        cmocka_unit_test(test_deployment_hardened),
        cmocka_unit_test(test_controller_config),
        cmocka_unit_test(test_kustomizations),
        cmocka_unit_test(test_examples_follow_the_api),
        cmocka_unit_test(test_dockerfile),
        cmocka_unit_test(test_versions_line_up),
        cmocka_unit_test(test_docs_cover_every_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
