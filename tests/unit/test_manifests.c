/* Checks the YAML under crds/ and config/: the CRDs are structural and
 * declare the names, columns, defaults and validation docs/api.md promises;
 * the RBAC grants exactly what the controller uses; the Deployment is
 * hardened; and the examples pass the CRDs' own schemas (a small OpenAPI
 * validator below, with the patterns compiled by POSIX regcomp). */
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
#include <sys/stat.h>

#include <cmocka.h>

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

__attribute__((unused)) static bool file_exists(const char *rel)
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
__attribute__((unused)) static int load_dir(const char *rel, json_t *all)
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
__attribute__((unused)) static json_t *find_doc(json_t *docs, const char *kind, const char *name)
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

struct walk {
    int errors;
    int properties;
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

/* The rules of apiextensions.k8s.io/v1 structural schemas that a CRD file
 * can break, plus ours: every property has a description. */
static void check_schema(struct walk *w, json_t *s, const char *path, bool need_desc)
{
    char sub[512];
    if (!json_is_object(s)) {
        bad(w, "%s: schema is not an object", path);
        return;
    }
    const char *type = json_string_value(json_object_get(s, "type"));
    bool ios = json_is_true(json_object_get(s, "x-kubernetes-int-or-string"));
    bool keep = json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields"));
    static const char *const known_types[] = {"object", "array", "string", "integer", "number",
                                              "boolean"};
    if (type) {
        bool ok = false;
        for (size_t i = 0; i < sizeof known_types / sizeof *known_types; i++)
            ok = ok || strcmp(type, known_types[i]) == 0;
        if (!ok)
            bad(w, "%s: unknown type %s", path, type);
        if (ios)
            bad(w, "%s: type and x-kubernetes-int-or-string together", path);
    } else if (!ios && !keep) {
        bad(w, "%s: no type (structural schemas need one)", path);
    }
    const char *desc = json_string_value(json_object_get(s, "description"));
    if (need_desc && (!desc || strlen(desc) < 10))
        bad(w, "%s: missing or too short description", path);
    json_t *any = json_object_get(s, "anyOf");
    if (any) {
        /* Only the int-or-string form: anyOf: [{type: integer}, {type: string}]. */
        if (!ios || json_array_size(any) != 2)
            bad(w, "%s: anyOf is only allowed for int-or-string", path);
        size_t i;
        json_t *b;
        json_array_foreach(any, i, b)
        {
            if (json_object_size(b) != 1 || !json_is_string(json_object_get(b, "type")))
                bad(w, "%s.anyOf[%zu]: may hold only a type", path, i);
        }
    }
    static const char *const forbidden[] = {"allOf", "oneOf", "not", "$ref", "patternProperties",
                                            "nullable"};
    for (size_t i = 0; i < sizeof forbidden / sizeof *forbidden; i++)
        if (json_object_get(s, forbidden[i]))
            bad(w, "%s: %s is not used in Fairshare's schemas", path, forbidden[i]);
    json_t *def = json_object_get(s, "default");
    if (def && type && !value_has_type(def, type))
        bad(w, "%s: default does not have type %s", path, type);
    json_t *props = json_object_get(s, "properties");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (props && addl)
        bad(w, "%s: properties and additionalProperties are mutually exclusive in CRDs", path);
    if (json_is_false(addl))
        bad(w, "%s: additionalProperties: false is forbidden in CRDs", path);
    if (props) {
        if (!type || strcmp(type, "object") != 0)
            bad(w, "%s: properties on a non-object", path);
        const char *key;
        json_t *child;
        json_object_foreach(props, key, child)
        {
            w->properties++;
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            check_schema(w, child, sub, true);
        }
    }
    if (json_is_object(addl)) {
        snprintf(sub, sizeof sub, "%s.*", path);
        check_schema(w, addl, sub, false);
    }
    json_t *items = json_object_get(s, "items");
    if (type && strcmp(type, "array") == 0 && !items)
        bad(w, "%s: array without items", path);
    if (items) {
        snprintf(sub, sizeof sub, "%s[]", path);
        check_schema(w, items, sub, false);
    }
    json_t *req = json_object_get(s, "required");
    if (req) {
        size_t i;
        json_t *r;
        json_array_foreach(req, i, r)
        {
            if (!json_object_get(props, json_string_value(r)))
                bad(w, "%s: required field %s is not a property", path, json_string_value(r));
        }
    }
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
 * with kubectl's strict field validation (unknown fields are errors).
 * Returns the number of violations; the first goes into w. */
static void validate(struct walk *w, json_t *s, json_t *v, const char *path)
{
    char sub[512];
    const char *type = json_string_value(json_object_get(s, "type"));
    bool ios = json_is_true(json_object_get(s, "x-kubernetes-int-or-string"));
    if (ios) {
        if (!json_is_integer(v) && !json_is_string(v)) {
            bad(w, "%s: must be an integer or a string", path);
            return;
        }
    } else if (type && !value_has_type(v, type)) {
        bad(w, "%s: must be of type %s", path, type);
        return;
    }
    json_t *pat = json_object_get(s, "pattern");
    if (pat && json_is_string(v) && !pattern_matches(json_string_value(pat), json_string_value(v)))
        bad(w, "%s: \"%s\" does not match %s", path, json_string_value(v), json_string_value(pat));
    json_t *min = json_object_get(s, "minimum"), *max = json_object_get(s, "maximum");
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (min && (x < json_integer_value(min) ||
                    (json_is_true(json_object_get(s, "exclusiveMinimum")) &&
                     x == json_integer_value(min))))
            bad(w, "%s: %lld is below the minimum", path, (long long)x);
        if (max && x > json_integer_value(max))
            bad(w, "%s: %lld is above the maximum", path, (long long)x);
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
    if (en && json_is_string(v) && !str_in_array(en, json_string_value(v)))
        bad(w, "%s: \"%s\" is not one of the allowed values", path, json_string_value(v));
    if (json_is_object(v)) {
        json_t *props = json_object_get(s, "properties");
        bool open = json_is_true(json_object_get(s, "x-kubernetes-preserve-unknown-fields")) ||
                    json_object_get(s, "additionalProperties") || !props;
        const char *key;
        json_t *child;
        json_object_foreach(v, key, child)
        {
            snprintf(sub, sizeof sub, "%s.%s", path, key);
            json_t *cs = json_object_get(props, key);
            if (cs)
                validate(w, cs, child, sub);
            else if (!open)
                bad(w, "%s: unknown field", sub);
        }
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(s, "required"), i, r)
        {
            if (!json_object_get(v, json_string_value(r)))
                bad(w, "%s: required field %s is missing", path, json_string_value(r));
        }
    }
    if (json_is_array(v)) {
        json_t *maxi = json_object_get(s, "maxItems");
        if (maxi && json_array_size(v) > (size_t)json_integer_value(maxi))
            bad(w, "%s: more than maxItems", path);
        size_t i;
        json_t *item;
        json_array_foreach(v, i, item)
        {
            snprintf(sub, sizeof sub, "%s[%zu]", path, i);
            validate(w, json_object_get(s, "items"), item, sub);
        }
    }
}

/* ---- the CRDs --------------------------------------------------------- */

struct crd_names {
    const char *file, *plural, *singular, *kind, *short_name;
};

static const struct crd_names crds[] = {
    {"crds/fairshare.dev_projects.yaml", "projects", "project", "Project", "proj"},
    {"crds/fairshare.dev_queues.yaml", "queues", "queue", "Queue", "fq"},
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
        struct walk w = {0};
        check_schema(&w, crd_schema(crd), crds[i].kind, true);
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
        {"Team", "string", ".spec.team"},
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
        static const char *const cond_fields[] = {"type", "status", "reason", "message",
                                                  "lastTransitionTime", "observedGeneration"};
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
        {"1", true},     {"2.5", true},   {"0.25", true},  {"250m", true},  {"16Gi", true},
        {"512Mi", true}, {"1e3", true},   {".5", true},    {"+2", true},    {"8", true},
        {"1.", true},    {"100k", true},  {"0", true},     {"-1", false},   {"abc", false},
        {"", false},     {"-0.5", false}, {"1.2.3", false}, {"5 Gi", false}, {"1Gb", false},
        {"1e-3", false}, {"Gi", false},   {"1i", false},   {" 1", false},   {"0x10", false},
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
        {"10m", true, 600000}, {"1h30m", true, 5400000}, {"0", true, 0},
        {"250ms", true, 250},  {"1.5h", true, 5400000},  {"90s", true, 90000},
        {"-5m", false, 0},     {"10", false, 0},         {"abc", false, 0},
        {"", false, 0},        {"5 m", false, 0},        {"1d", false, 0},
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
        {false, "{\"spec\":{\"limit\":{\"tpu\":\"1\"}}}", "spec.limit.tpu: unknown field"},
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
            fail_msg("case %zu: want an error with \"%s\", got %d errors: %s", i,
                     cases[i].needle, w.errors, w.first);
        json_decref(obj);
    }
    json_decref(pcrd);
    json_decref(qcrd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_crds_are_structural_and_described),
        cmocka_unit_test(test_crd_names_scope_and_version),
        cmocka_unit_test(test_crd_printer_columns),
        cmocka_unit_test(test_crd_defaults_and_validation),
        cmocka_unit_test(test_quantity_pattern),
        cmocka_unit_test(test_duration_pattern),
        cmocka_unit_test(test_schema_rejects_bad_objects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
