/* The mutating admission webhook for fractional-GPU pods (see webhook.h):
 * an AdmissionReview in, a JSONPatch of downward-API env entries out, and
 * the lib/httpd route that serves it. */
#include "httpd/webhook.h"

#include <jansson.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/alloc.h"
#include "base/error.h"
#include "base/log.h"
#include "httpd/httpd.h"

#define COMP "webhook"
#define API_VERSION "admission.k8s.io/v1"
#define MAX_UID 256

/* The env entries and the annotation each one reads. */
static const struct {
    const char *name;
    const char *annotation;
    bool cuda_only; /* only with o->cuda_visible_devices */
} env_table[] = {
    {"NVIDIA_VISIBLE_DEVICES", "fairshare.dev/gpu-devices", false},
    {"CUDA_VISIBLE_DEVICES", "fairshare.dev/gpu-devices", true},
    {"CUDA_DEVICE_MEMORY_LIMIT", FAIR_WEBHOOK_ANN_MEMORY_LIMIT, false},
    {"CUDA_DEVICE_SM_LIMIT", FAIR_WEBHOOK_ANN_SM_LIMIT, false},
};
#define N_ENV (sizeof env_table / sizeof *env_table)

/* Whether the JSON text nests deeper than max (strings skipped). jansson's
 * own limit is 2048 levels; a pod needs about 15. */
static bool too_deep(const char *s, size_t n, int max)
{
    int depth = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '{' || c == '[') {
            if (++depth > max)
                return true;
        } else if (c == '}' || c == ']')
            depth--;
    }
    return false;
}

static const char *str_at(const json_t *o, const char *key)
{
    const json_t *v = json_is_object(o) ? json_object_get(o, key) : NULL;
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static bool nonempty_ann(const json_t *ann, const char *key)
{
    const char *s = str_at(ann, key);
    return s && *s;
}

static int bad(struct fair_webhook_result *res, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static int bad(struct fair_webhook_result *res, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(res->message, sizeof res->message, fmt, ap);
    va_end(ap);
    return FAIR_EINVAL;
}

/* Whether env (an array, or NULL) already names name. */
static bool env_has(const json_t *env, const char *name)
{
    size_t i;
    const json_t *e;
    json_array_foreach(env, i, e)
    {
        const char *n = str_at(e, "name");
        if (n && strcmp(n, name) == 0)
            return true;
    }
    return false;
}

static json_t *env_entry(const char *name, const char *annotation)
{
    char path[128];
    snprintf(path, sizeof path, "metadata.annotations['%s']", annotation);
    return json_pack("{s:s,s:{s:{s:s}}}", "name", name, "valueFrom", "fieldRef", "fieldPath", path);
}

/* Appends to patch the ops for the containers of list (field "containers"
 * or "initContainers"). Returns 0, FAIR_EINVAL (res->message says why) or
 * FAIR_ENOMEM. */
static int patch_containers(const struct fair_webhook_options *o, const json_t *spec,
                            const char *field, bool required, json_t *patch,
                            struct fair_webhook_result *res)
{
    const json_t *cs = json_object_get(spec, field);
    if (!cs) {
        if (required)
            return bad(res, "spec.%s is missing", field);
        return 0;
    }
    if (!json_is_array(cs))
        return bad(res, "spec.%s is not a list", field);
    if (json_array_size(cs) > FAIR_WEBHOOK_MAX_CONTAINERS)
        return bad(res, "spec.%s has more than %d entries", field, FAIR_WEBHOOK_MAX_CONTAINERS);
    size_t i;
    const json_t *c;
    json_array_foreach(cs, i, c)
    {
        if (!json_is_object(c))
            return bad(res, "spec.%s[%zu] is not an object", field, i);
        const json_t *env = json_object_get(c, "env");
        if (env && !json_is_array(env) && !json_is_null(env))
            return bad(res, "spec.%s[%zu].env is not a list", field, i);
        if (json_is_null(env))
            env = NULL;
        json_t *add = json_array();
        if (!add)
            return FAIR_ENOMEM;
        for (size_t k = 0; k < N_ENV; k++) {
            if (env_table[k].cuda_only && !o->cuda_visible_devices)
                continue;
            if (env_has(env, env_table[k].name)) /* the user's entry wins */
                continue;
            if (json_array_append_new(add, env_entry(env_table[k].name, env_table[k].annotation))) {
                json_decref(add);
                return FAIR_ENOMEM;
            }
        }
        size_t n = json_array_size(add);
        char path[96];
        int rc = 0;
        if (n == 0) {
            json_decref(add);
            continue;
        }
        res->env_added += n;
        if (!env) {
            /* One op creates the list with all the entries. */
            snprintf(path, sizeof path, "/spec/%s/%zu/env", field, i);
            rc = json_array_append_new(
                patch, json_pack("{s:s,s:s,s:o}", "op", "add", "path", path, "value", add));
        } else {
            snprintf(path, sizeof path, "/spec/%s/%zu/env/-", field, i);
            size_t k;
            const json_t *e;
            json_array_foreach(add, k, e)
            {
                if ((rc = json_array_append_new(
                         patch, json_pack("{s:s,s:s,s:O}", "op", "add", "path", path, "value", e))))
                    break;
            }
            json_decref(add);
        }
        if (rc)
            return FAIR_ENOMEM;
    }
    return 0;
}

static int b64(const char *in, size_t n, char **out)
{
    size_t cap = 4 * ((n + 2) / 3) + 1;
    char *b = fair_malloc(cap);
    if (!b)
        return FAIR_ENOMEM;
    EVP_EncodeBlock((unsigned char *)b, (const unsigned char *)in, (int)n);
    *out = b;
    return 0;
}

/* Decides for a well-formed review: the patch (NULL for none) and the
 * outcome; res->message says why for a bad object. */
static int decide(const struct fair_webhook_options *o, const json_t *request, json_t **patch_out,
                  struct fair_webhook_result *res)
{
    *patch_out = NULL;
    const json_t *kind = json_object_get(request, "kind");
    const json_t *resource = json_object_get(request, "resource");
    const char *op = str_at(request, "operation");
    const char *sub = str_at(request, "subResource");
    const char *group = str_at(kind, "group");
    if (!op || strcmp(op, "CREATE") != 0 || !str_at(kind, "kind") ||
        strcmp(str_at(kind, "kind"), "Pod") != 0 || (group && *group) ||
        !str_at(resource, "resource") || strcmp(str_at(resource, "resource"), "pods") != 0 ||
        (sub && *sub)) {
        res->outcome = FAIR_WEBHOOK_IGNORED;
        snprintf(res->message, sizeof res->message, "not a pod creation");
        return 0;
    }
    const json_t *pod = json_object_get(request, "object");
    if (!json_is_object(pod)) {
        res->outcome = FAIR_WEBHOOK_BAD_OBJECT;
        snprintf(res->message, sizeof res->message, "request.object is not a pod");
        return 0;
    }
    const json_t *md = json_object_get(pod, "metadata");
    const json_t *spec = json_object_get(pod, "spec");
    const json_t *ann = json_object_get(md, "annotations");
    const char *sched = str_at(spec, "schedulerName");
    if (!sched || strcmp(sched, o->scheduler_name ? o->scheduler_name : "fairshare") != 0 ||
        !json_is_object(ann) ||
        (!nonempty_ann(ann, "fairshare.dev/gpu-fraction") &&
         !nonempty_ann(ann, FAIR_WEBHOOK_ANN_MEMORY))) {
        res->outcome = FAIR_WEBHOOK_IGNORED;
        snprintf(res->message, sizeof res->message, "not a fractional pod of this scheduler");
        return 0;
    }
    json_t *patch = json_array();
    if (!patch)
        return FAIR_ENOMEM;
    int rc = patch_containers(o, spec, "containers", true, patch, res);
    if (!rc)
        rc = patch_containers(o, spec, "initContainers", false, patch, res);
    if (rc == FAIR_EINVAL) {
        json_decref(patch);
        res->env_added = 0;
        res->outcome = FAIR_WEBHOOK_BAD_OBJECT;
        return 0;
    }
    if (rc) {
        json_decref(patch);
        return rc;
    }
    /* The mark the controller looks for (its Event for pods the webhook
     * did not see). "add" replaces a value that is there. */
    if (json_array_append_new(patch, json_pack("{s:s,s:s,s:s}", "op", "add", "path",
                                               "/metadata/annotations/fairshare.dev~1gpu-env",
                                               "value", "webhook"))) {
        json_decref(patch);
        return FAIR_ENOMEM;
    }
    res->outcome = res->env_added ? FAIR_WEBHOOK_PATCHED : FAIR_WEBHOOK_UNCHANGED;
    *patch_out = patch;
    return 0;
}

static int answer(struct fair_buf *out, json_t *doc)
{
    if (!doc)
        return FAIR_ENOMEM;
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text)
        return FAIR_ENOMEM;
    int rc = fair_buf_appends(out, text);
    free(text);
    return rc;
}

static int malformed(struct fair_buf *out, struct fair_webhook_result *res, const char *uid,
                     const char *msg)
{
    res->outcome = FAIR_WEBHOOK_MALFORMED;
    res->status = 400;
    snprintf(res->message, sizeof res->message, "%s", msg);
    return answer(out, json_pack("{s:s,s:s,s:{s:s,s:b,s:{s:i,s:s}}}", "apiVersion", API_VERSION,
                                 "kind", "AdmissionReview", "response", "uid", uid ? uid : "",
                                 "allowed", 0, "status", "code", 400, "message", msg));
}

int fair_webhook_review(const struct fair_webhook_options *o, const char *body, size_t len,
                        struct fair_buf *out, struct fair_webhook_result *res)
{
    memset(res, 0, sizeof *res);
    res->status = 200;
    if (len > FAIR_WEBHOOK_MAX_BODY)
        return malformed(out, res, NULL, "the review is larger than 1 MiB");
    if (too_deep(body, len, FAIR_WEBHOOK_MAX_DEPTH))
        return malformed(out, res, NULL, "the review nests deeper than 64 levels");
    json_error_t je;
    json_t *doc = json_loadb(body, len, JSON_REJECT_DUPLICATES, &je);
    if (!doc)
        return malformed(out, res, NULL, "the body is not JSON");
    int rc = 0;
    json_t *patch = NULL;
    char *text = NULL, *enc = NULL;
    const json_t *request = json_object_get(doc, "request");
    const char *uid = str_at(request, "uid");
    const char *av = str_at(doc, "apiVersion");
    const char *kind = str_at(doc, "kind");
    if (!json_is_object(request) || !uid || !*uid || strlen(uid) > MAX_UID) {
        rc = malformed(out, res, NULL, "not an AdmissionReview: request.uid is missing");
        goto out;
    }
    if (!av || strcmp(av, API_VERSION) != 0 || !kind || strcmp(kind, "AdmissionReview") != 0) {
        rc = malformed(out, res, uid,
                       "only admission.k8s.io/v1 AdmissionReview is served "
                       "(admissionReviewVersions: [v1])");
        goto out;
    }
    if ((rc = decide(o, request, &patch, res)))
        goto out;
    json_t *resp = json_pack("{s:s,s:b}", "uid", uid, "allowed", 1);
    if (resp && patch) {
        text = json_dumps(patch, JSON_COMPACT);
        if (!text || b64(text, strlen(text), &enc) ||
            json_object_set_new(resp, "patchType", json_string("JSONPatch")) ||
            json_object_set_new(resp, "patch", json_string(enc)))
            rc = FAIR_ENOMEM;
    } else if (resp && res->outcome == FAIR_WEBHOOK_BAD_OBJECT) {
        char w[320];
        snprintf(w, sizeof w, "fairshare webhook: GPU env not added: %s", res->message);
        if (json_object_set_new(resp, "warnings", json_pack("[s]", w)))
            rc = FAIR_ENOMEM;
    }
    if (!resp || rc) {
        json_decref(resp);
        rc = FAIR_ENOMEM;
        goto out;
    }
    rc = answer(out, json_pack("{s:s,s:s,s:o}", "apiVersion", API_VERSION, "kind",
                               "AdmissionReview", "response", resp));
out:
    free(text);
    fair_free(enc);
    json_decref(patch);
    json_decref(doc);
    return rc;
}

/* ---- the route ---- */

struct fair_webhook {
    struct fair_webhook_options o;
    char *scheduler_name;
    struct fair_webhook_stats st;
};

static const char *outcome_name[] = {"patched", "unchanged", "ignored", "bad_object", "malformed"};

static void on_review(void *ctx, struct fair_httpd_req *req, const char *query)
{
    struct fair_webhook *w = ctx;
    (void)query;
    const char *ct = fair_httpd_req_header(req, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0) {
        static const char msg[] = "{\"error\":\"Content-Type must be application/json\"}\n";
        w->st.reviews[FAIR_WEBHOOK_MALFORMED]++;
        fair_httpd_reply(req, 415, "application/json", msg, sizeof msg - 1);
        return;
    }
    size_t len = 0;
    const char *body = fair_httpd_req_body(req, &len);
    if (!body) {
        fair_httpd_reply(req, 400, "application/json", "", 0);
        return;
    }
    struct fair_buf out;
    struct fair_webhook_result res;
    fair_buf_init(&out, 4u << 20);
    int rc = fair_webhook_review(&w->o, body, len, &out, &res);
    if (rc) {
        static const char msg[] = "{\"error\":\"out of memory\"}\n";
        fair_httpd_reply(req, 500, "application/json", msg, sizeof msg - 1);
    } else {
        w->st.reviews[res.outcome]++;
        if (res.outcome == FAIR_WEBHOOK_MALFORMED || res.outcome == FAIR_WEBHOOK_BAD_OBJECT)
            FAIR_WARN(COMP, "msg=\"review not used\" outcome=%s reason=\"%s\"",
                      outcome_name[res.outcome], res.message);
        else
            FAIR_DEBUG(COMP, "msg=review outcome=%s env_added=%zu", outcome_name[res.outcome],
                       res.env_added);
        fair_httpd_reply(req, res.status, "application/json", fair_buf_str(&out), out.len);
    }
    fair_buf_release(&out);
}

int fair_webhook_register(struct fair_httpd *srv, const char *path,
                          const struct fair_webhook_options *o, struct fair_webhook **out)
{
    struct fair_webhook *w = fair_calloc(1, sizeof *w);
    if (!w)
        return FAIR_ENOMEM;
    w->o = *o;
    if (o->scheduler_name && !(w->scheduler_name = fair_strdup(o->scheduler_name))) {
        fair_free(w);
        return FAIR_ENOMEM;
    }
    w->o.scheduler_name = w->scheduler_name;
    int rc = fair_httpd_route_async(srv, "POST", path, on_review, w);
    if (rc) {
        fair_webhook_free(w);
        return rc;
    }
    *out = w;
    return 0;
}

void fair_webhook_free(struct fair_webhook *w)
{
    if (!w)
        return;
    fair_free(w->scheduler_name);
    fair_free(w);
}

void fair_webhook_stats(const struct fair_webhook *w, struct fair_webhook_stats *out)
{
    *out = w->st;
}

int fair_webhook_metrics(const struct fair_webhook *w, struct fair_buf *out)
{
    int rc =
        fair_buf_appends(out, "# HELP fairshare_webhook_reviews_total Admission reviews answered "
                              "by the GPU env webhook, by outcome.\n"
                              "# TYPE fairshare_webhook_reviews_total counter\n");
    for (int i = 0; !rc && i <= FAIR_WEBHOOK_MALFORMED; i++)
        rc = fair_buf_appendf(out, "fairshare_webhook_reviews_total{outcome=\"%s\"} %llu\n",
                              outcome_name[i], w->st.reviews[i]);
    return rc;
}
