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
    static const char *const known_types[] = {"object",  "array",  "string",
                                              "integer", "number", "boolean"};
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
    static const char *const forbidden[] = {"allOf",   "oneOf", "not", "$ref", "patternProperties",
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
 * Counts violations in w, which keeps the first message. */
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
        if (min &&
            (x < json_integer_value(min) || (json_is_true(json_object_get(s, "exclusiveMinimum")) &&
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
 * pattern and minimum. */
static int count_quantities(json_t *s, const char *pattern)
{
    int n = 0;
    if (json_is_true(json_object_get(s, "x-kubernetes-int-or-string"))) {
        assert_string_equal(str_at(s, "pattern"), pattern);
        assert_int_equal(json_integer_value(json_object_get(s, "minimum")), 0);
        n++;
    }
    const char *key;
    json_t *child;
    json_object_foreach(json_object_get(s, "properties"), key, child) n +=
        count_quantities(child, pattern);
    json_t *items = json_object_get(s, "items");
    if (items)
        n += count_quantities(items, pattern);
    return n;
}

static void test_quantity_fields_share_one_pattern(void **state)
{
    (void)state;
    json_t *q = load_crd("crds/fairshare.dev_queues.yaml");
    const char *pat = str_at(crd_schema(q), "properties.spec.properties.guaranteed.properties."
                                            "gpu.pattern");
    json_t *p = load_crd("crds/fairshare.dev_projects.yaml");
    /* spec: guaranteed, limit; status: guaranteed, fairShare, allocated,
     * borrowed, lent, pending.resources; 3 resources each. */
    assert_int_equal(count_quantities(crd_schema(q), pat), 8 * 3);
    assert_int_equal(count_quantities(crd_schema(p), pat), 8 * 3);
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
            fail_msg("case %zu: want an error with \"%s\", got %d errors: %s", i, cases[i].needle,
                     w.errors, w.first);
        json_decref(obj);
    }
    json_decref(pcrd);
    json_decref(qcrd);
}

/* ---- config/ ------------------------------------------------------------ */

/* New reference: every document under crds/, config/ and config/examples/. */
static json_t *load_all(int *files)
{
    json_t *all = json_array();
    *files = load_dir("crds", all) + load_dir("config", all) + load_dir("config/examples", all);
    return all;
}

static void test_every_yaml_loads(void **state)
{
    (void)state;
    int files = 0;
    json_t *all = load_all(&files);
    /* crds: 2 CRDs + kustomization; config: 7 files; examples: 6 files. */
    assert_int_equal(files, 3 + 7 + 6);
    size_t i;
    json_t *d;
    json_array_foreach(all, i, d)
    {
        assert_non_null(str_at(d, "kind"));
        assert_non_null(str_at(d, "apiVersion"));
    }
    json_decref(all);
}

struct grant {
    const char *group, *resource, *verb, *name; /* name: resourceNames entry or NULL */
};

static const struct grant cluster_grants[] = {
    {"", "pods", "get", NULL},
    {"", "pods", "list", NULL},
    {"", "pods", "watch", NULL},
    {"", "pods", "patch", NULL},
    {"", "pods/binding", "create", NULL},
    {"", "pods/eviction", "create", NULL},
    {"", "pods/status", "patch", NULL},
    {"", "pods/status", "update", NULL},
    {"", "nodes", "get", NULL},
    {"", "nodes", "list", NULL},
    {"", "nodes", "watch", NULL},
    {"", "events", "create", NULL},
    {"", "events", "patch", NULL},
    {"events.k8s.io", "events", "create", NULL},
    {"events.k8s.io", "events", "patch", NULL},
    {"fairshare.dev", "projects", "get", NULL},
    {"fairshare.dev", "projects", "list", NULL},
    {"fairshare.dev", "projects", "watch", NULL},
    {"fairshare.dev", "queues", "get", NULL},
    {"fairshare.dev", "queues", "list", NULL},
    {"fairshare.dev", "queues", "watch", NULL},
    {"fairshare.dev", "projects/status", "update", NULL},
    {"fairshare.dev", "projects/status", "patch", NULL},
    {"fairshare.dev", "queues/status", "update", NULL},
    {"fairshare.dev", "queues/status", "patch", NULL},
};

static const struct grant lease_grants[] = {
    {"coordination.k8s.io", "leases", "create", NULL},
    {"coordination.k8s.io", "leases", "get", "fairshare-controller"},
    {"coordination.k8s.io", "leases", "update", "fairshare-controller"},
};

static bool is_wild(json_t *arr)
{
    return str_in_array(arr, "*");
}

/* Expands the rules of a (Cluster)Role into (group, resource, verb, name)
 * and checks that the set equals want, with no wildcard anywhere. */
static void check_grants(json_t *role, const struct grant *want, size_t nwant)
{
    bool seen[64] = {false};
    assert_true(nwant <= 64);
    size_t got = 0, i, g, r, v, n;
    json_t *rule, *gv, *rv, *vv, *nv;
    json_array_foreach(json_object_get(role, "rules"), i, rule)
    {
        json_t *groups = json_object_get(rule, "apiGroups");
        json_t *res = json_object_get(rule, "resources");
        json_t *verbs = json_object_get(rule, "verbs");
        json_t *names = json_object_get(rule, "resourceNames");
        assert_null(json_object_get(rule, "nonResourceURLs"));
        assert_false(is_wild(groups) || is_wild(res) || is_wild(verbs) || is_wild(names));
        json_array_foreach(groups, g, gv) json_array_foreach(res, r, rv)
            json_array_foreach(verbs, v, vv)
        {
            size_t nnames = names ? json_array_size(names) : 1;
            for (n = 0; n < nnames; n++) {
                nv = names ? json_array_get(names, n) : NULL;
                const char *name = nv ? json_string_value(nv) : NULL;
                bool found = false;
                for (size_t k = 0; k < nwant; k++) {
                    const struct grant *w = &want[k];
                    if (strcmp(w->group, json_string_value(gv)) == 0 &&
                        strcmp(w->resource, json_string_value(rv)) == 0 &&
                        strcmp(w->verb, json_string_value(vv)) == 0 &&
                        ((!w->name && !name) || (w->name && name && strcmp(w->name, name) == 0))) {
                        if (seen[k])
                            fail_msg("grant %s %s %s given twice", w->group, w->resource, w->verb);
                        seen[k] = found = true;
                    }
                }
                if (!found)
                    fail_msg("%s grants %s/%s %s%s%s, which the controller does not use",
                             str_at(role, "metadata.name"), json_string_value(gv),
                             json_string_value(rv), json_string_value(vv), name ? " on " : "",
                             name ? name : "");
                got++;
            }
        }
    }
    for (size_t k = 0; k < nwant; k++)
        if (!seen[k])
            fail_msg("missing grant: %s %s %s", want[k].group, want[k].resource, want[k].verb);
    assert_int_equal(got, nwant);
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
    assert_int_equal(json_array_size(docs), 5);
    json_t *sa = find_doc(docs, "ServiceAccount", "fairshare-controller");
    assert_non_null(sa);
    assert_string_equal(str_at(sa, "metadata.namespace"), "fairshare-system");
    json_t *cr = find_doc(docs, "ClusterRole", "fairshare-controller");
    assert_non_null(cr);
    check_grants(cr, cluster_grants, sizeof cluster_grants / sizeof *cluster_grants);
    json_t *role = find_doc(docs, "Role", "fairshare-leader-election");
    assert_non_null(role);
    assert_string_equal(str_at(role, "metadata.namespace"), "fairshare-system");
    check_grants(role, lease_grants, sizeof lease_grants / sizeof *lease_grants);
    check_binding(find_doc(docs, "ClusterRoleBinding", "fairshare-controller"), "ClusterRole",
                  "fairshare-controller");
    json_t *rb = find_doc(docs, "RoleBinding", "fairshare-leader-election");
    check_binding(rb, "Role", "fairshare-leader-election");
    assert_string_equal(str_at(rb, "metadata.namespace"), "fairshare-system");
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
    /* Args, probes on the metrics port, resources. */
    json_t *args = json_object_get(c, "args");
    assert_int_equal(json_array_size(args), 2);
    assert_string_equal(json_string_value(json_array_get(args, 0)), "--config");
    assert_string_equal(json_string_value(json_array_get(args, 1)), "/etc/fairshare/config.yaml");
    json_t *port = named(json_object_get(c, "ports"), "metrics");
    assert_non_null(port);
    assert_int_equal(json_integer_value(json_object_get(port, "containerPort")), 8080);
    assert_string_equal(str_at(c, "livenessProbe.httpGet.path"), "/healthz");
    assert_string_equal(str_at(c, "livenessProbe.httpGet.port"), "metrics");
    assert_string_equal(str_at(c, "readinessProbe.httpGet.path"), "/readyz");
    assert_string_equal(str_at(c, "readinessProbe.httpGet.port"), "metrics");
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
    /* The lease the Role lets the controller get and update. */
    assert_string_equal(str_at(cfg, "leaderElection.leaseName"), lease_grants[1].name);
    assert_string_equal(str_at(cfg, "metricsAddress"), ":8080");
    assert_string_equal(str_at(cfg, "ledger.path"), "/var/lib/fairshare/ledger.db");
    assert_string_equal(str_at(cfg, "ledger.retention"), "400d");
    int64_t ms = 0;
    assert_int_equal(fair_duration_parse_ms(str_at(cfg, "ledger.samplePeriod"), &ms, NULL), 0);
    assert_int_equal(ms, 60000);
    assert_int_equal(fair_duration_parse_ms(str_at(cfg, "cycleInterval"), &ms, NULL), 0);
    assert_int_equal(ms, 1000);
    assert_int_equal(json_integer_value(at(cfg, "kubeAPI.qps")), 500);
    assert_int_equal(json_integer_value(at(cfg, "kubeAPI.burst")), 1000);
    json_decref(docs);
}

static bool listed(json_t *arr, const char *s)
{
    return str_in_array(arr, s);
}

/* Every file a kustomization names exists, and every manifest beside it is
 * named (so that a new file cannot be forgotten by `kubectl apply -k`). */
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
        snprintf(kz, sizeof kz, "%s/kustomization.yaml", rel);
        if (!file_exists(rel) && !file_exists(kz))
            fail_msg("config/kustomization.yaml names %s, which does not exist", rel);
    }
    static const char *const want[] = {"../crds",  "namespace.yaml",  "rbac.yaml",
                                       "pvc.yaml", "deployment.yaml", "service.yaml"};
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

    docs = load("crds/kustomization.yaml");
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

static void test_dockerfile(void **state)
{
    (void)state;
    static char lines[DF_MAX_LINES][DF_LINE_MAX];
    int n = dockerfile_lines(lines, DF_MAX_LINES);
    int stage = -1, froms = 0;
    char pkgs[2][DF_LINE_MAX] = {"", ""};
    const char *user = NULL, *entry = NULL;
    bool release = false, copies = false, plugin = false;
    for (int i = 0; i < n; i++) {
        const char *l = lines[i];
        if (strncmp(l, "FROM ", 5) == 0) {
            stage = froms++;
            assert_true(froms <= 2);
            assert_string_equal(l, froms == 1 ? "FROM debian:bookworm AS build "
                                              : "FROM debian:bookworm-slim AS runtime ");
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
        assert_int_equal(fields, i == 0 ? 8 + 8 : 6 + 8); /* spec + status fields */
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
    assert_int_equal(keys, 17);
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
        cmocka_unit_test(test_every_yaml_loads),
        cmocka_unit_test(test_rbac_least_privilege),
        cmocka_unit_test(test_deployment_hardened),
        cmocka_unit_test(test_controller_config),
        cmocka_unit_test(test_kustomizations),
        cmocka_unit_test(test_examples_follow_the_api),
        cmocka_unit_test(test_dockerfile),
        cmocka_unit_test(test_docs_cover_every_field),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
