/* fakekube's delegated authentication and authorisation: TokenReview
 * (authentication.k8s.io/v1) and SubjectAccessReview
 * (authorization.k8s.io/v1), with the shapes kube-apiserver answers, for
 * servers that authorise their own clients through the API server (the
 * controller's HTTPS endpoints). Users are given by tests through POST
 * /fake/users: a token, a username, groups and RBAC-like rules. The admin
 * token (the kubeconfig's) is user "fakekube-admin" in system:masters,
 * which every SubjectAccessReview allows. See docs/fakekube.md. */
#include "fakekube.h"

#include "base/alloc.h"
#include "base/log.h"

#include <event2/keyvalq_struct.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKEN 8192
#define MAX_RULES 32

struct fk_user {
    char *token;
    char *username;
    char *uid;
    json_t *groups; /* array of strings, "system:authenticated" included */
    json_t *rules;  /* array of {verbs, apiGroups, resources, nonResourceURLs} */
};

static const char *const TOKENREVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews";
static const char *const ACCESSREVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

static void user_release(struct fk_user *u)
{
    fair_free(u->token);
    fair_free(u->username);
    fair_free(u->uid);
    json_decref(u->groups);
    json_decref(u->rules);
    memset(u, 0, sizeof *u);
}

void fk_auth_release(struct fk_server *s)
{
    for (size_t i = 0; i < s->nusers; i++)
        user_release(&s->users[i]);
    fair_free(s->users);
    s->users = NULL;
    s->nusers = 0;
}

static bool str_list(const json_t *a, size_t max)
{
    if (!a)
        return true;
    if (!json_is_array(a) || json_array_size(a) > max)
        return false;
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) if (!json_is_string(v)) return false;
    return true;
}

static void bad(struct fk_server *s, struct evhttp_request *req, const char *msg)
{
    fk_reply_after(s, req, 400, fk_status(400, "BadRequest", "%s", msg), 0);
}

/* POST /fake/users {"token","username","uid"?,"groups"?,"rules"?}: adds a
 * user, or replaces the one with the same token. */
static void add_user(struct fk_server *s, struct evhttp_request *req)
{
    json_t *b = fk_read_body(s, req);
    if (!b)
        return;
    const char *token = json_string_value(json_object_get(b, "token"));
    const char *name = json_string_value(json_object_get(b, "username"));
    const char *uid = json_string_value(json_object_get(b, "uid"));
    json_t *groups = json_object_get(b, "groups"), *rules = json_object_get(b, "rules");
    bool ok = token && *token && strlen(token) <= MAX_TOKEN && name && *name &&
              strlen(name) < 256 && str_list(groups, 64) &&
              (!rules || (json_is_array(rules) && json_array_size(rules) <= MAX_RULES));
    size_t i;
    json_t *r;
    json_array_foreach(rules, i, r)
    {
        ok = ok && json_is_object(r) && str_list(json_object_get(r, "verbs"), 16) &&
             str_list(json_object_get(r, "apiGroups"), 16) &&
             str_list(json_object_get(r, "resources"), 16) &&
             str_list(json_object_get(r, "nonResourceURLs"), 16);
    }
    if (!ok || !strcmp(token, s->token)) {
        json_decref(b);
        bad(s, req,
            "users need token (not the admin's, at most 8192 bytes), username, and optional "
            "uid, groups (strings) and rules ({verbs, apiGroups, resources, nonResourceURLs})");
        return;
    }
    size_t k = 0;
    while (k < s->nusers && strcmp(s->users[k].token, token) != 0)
        k++;
    if (k == s->nusers) {
        if (s->nusers == FK_MAX_USERS) {
            json_decref(b);
            bad(s, req, "too many users");
            return;
        }
        struct fk_user *nu = fair_realloc(s->users, (s->nusers + 1) * sizeof *nu);
        if (!nu) {
            json_decref(b);
            fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
            return;
        }
        s->users = nu;
        memset(&s->users[k], 0, sizeof s->users[k]);
        s->nusers++;
    }
    struct fk_user *u = &s->users[k];
    user_release(u);
    char uidbuf[40];
    if (!uid) {
        fk_uuid(uidbuf, sizeof uidbuf);
        uid = uidbuf;
    }
    u->token = fair_strdup(token);
    u->username = fair_strdup(name);
    u->uid = fair_strdup(uid);
    u->groups = groups ? json_deep_copy(groups) : json_array();
    u->rules = rules ? json_deep_copy(rules) : json_array();
    if (u->groups)
        json_array_append_new(u->groups, json_string("system:authenticated"));
    json_decref(b);
    if (!u->token || !u->username || !u->uid || !u->groups || !u->rules) {
        fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
        return;
    }
    FAIR_INFO("fakekube", "msg=\"user added\" username=%s", u->username);
    fk_reply_after(s, req, 200, json_pack("{s:i}", "users", (int)s->nusers), 0);
}

int fk_auth_fake(struct fk_server *s, struct evhttp_request *req, const char *what,
                 struct evkeyvalq *q)
{
    if (!strcmp(what, "users")) {
        add_user(s, req);
        return 1;
    }
    if (!strcmp(what, "review-latency")) {
        const char *v = evhttp_find_header(q, "ms");
        char *end = NULL;
        long ms = v ? strtol(v, &end, 10) : -1;
        if (!v || *end || ms < 0 || ms > 600000) {
            bad(s, req, "review-latency needs 0 <= ms <= 600000");
            return 1;
        }
        s->review_latency_ms = (int)ms;
        fk_reply_after(s, req, 200, json_pack("{s:i}", "reviewLatencyMs", (int)ms), 0);
        return 1;
    }
    if (!strcmp(what, "review-hold")) {
        s->review_hold = 1;
        fk_reply_after(s, req, 200, json_pack("{s:b}", "reviewHold", 1), 0);
        return 1;
    }
    if (!strcmp(what, "review-release")) {
        s->review_hold = 0;
        size_t n = fk_release_held(s);
        fk_reply_after(s, req, 200, json_pack("{s:I}", "released", (json_int_t)n), 0);
        return 1;
    }
    return 0;
}

static const struct fk_user *user_by(const struct fk_server *s, const char *token, const char *name)
{
    for (size_t i = 0; i < s->nusers; i++)
        if ((token && !strcmp(s->users[i].token, token)) ||
            (name && !strcmp(s->users[i].username, name)))
            return &s->users[i];
    return NULL;
}

/* A body must be this kind of this group version; answers 400 otherwise. */
static json_t *review_body(struct fk_server *s, struct evhttp_request *req, const char *kind,
                           const char *api_version)
{
    json_t *b = fk_read_body(s, req);
    if (!b)
        return NULL;
    const char *k = json_string_value(json_object_get(b, "kind"));
    const char *v = json_string_value(json_object_get(b, "apiVersion"));
    if ((k && strcmp(k, kind) != 0) || (v && strcmp(v, api_version) != 0)) {
        json_decref(b);
        fk_reply(s, req, 400,
                 fk_status(400, "BadRequest", "the body must be a %s of %s", kind, api_version));
        return NULL;
    }
    if (!json_is_object(json_object_get(b, "spec"))) {
        json_decref(b);
        fk_reply(s, req, 422,
                 fk_status(422, "Invalid", "%s.%s \"\" is invalid: spec: Required value", kind,
                           api_version));
        return NULL;
    }
    return b;
}

static void reply_review(struct fk_server *s, struct evhttp_request *req, json_t *b,
                         const char *kind, const char *api_version, json_t *status)
{
    json_t *out =
        json_pack("{s:s,s:s,s:{s:n},s:O,s:o}", "kind", kind, "apiVersion", api_version, "metadata",
                  "creationTimestamp", "spec", json_object_get(b, "spec"), "status", status);
    json_decref(b);
    if (!out) {
        fk_reply(s, req, 500, fk_status(500, "InternalError", "out of memory"));
        return;
    }
    if (s->review_hold)
        fk_reply_held(s, req, 201, out);
    else
        fk_reply_after(s, req, 201, out, s->latency_ms + s->review_latency_ms);
}

static void token_review(struct fk_server *s, struct evhttp_request *req)
{
    json_t *b = review_body(s, req, "TokenReview", "authentication.k8s.io/v1");
    if (!b)
        return;
    s->token_reviews++;
    const char *token = json_string_value(json_object_get(json_object_get(b, "spec"), "token"));
    json_t *status;
    const struct fk_user *u = token ? user_by(s, token, NULL) : NULL;
    if (token && !strcmp(token, s->token))
        status =
            json_pack("{s:b,s:{s:s,s:s,s:[s,s]},s:[s]}", "authenticated", 1, "user", "username",
                      "fakekube-admin", "uid", "fakekube-admin", "groups", "system:masters",
                      "system:authenticated", "audiences", "https://kubernetes.default.svc");
    else if (u)
        status = json_pack("{s:b,s:{s:s,s:s,s:O},s:[s]}", "authenticated", 1, "user", "username",
                           u->username, "uid", u->uid, "groups", u->groups, "audiences",
                           "https://kubernetes.default.svc");
    else /* what kube-apiserver says of a token nobody knows */
        status =
            json_pack("{s:{},s:s}", "user", "error", "[invalid bearer token, token lookup failed]");
    FAIR_DEBUG("fakekube", "msg=TokenReview authenticated=%d",
               (token && !strcmp(token, s->token)) || u);
    reply_review(s, req, b, "TokenReview", "authentication.k8s.io/v1", status);
}

static bool listed(const json_t *a, const char *v)
{
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
    {
        const char *s = json_string_value(x);
        if (s && (!strcmp(s, "*") || !strcmp(s, v)))
            return true;
    }
    return false;
}

/* A non-resource URL rule: exact, or a prefix ending in '*'. */
static bool url_listed(const json_t *a, const char *path)
{
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
    {
        const char *s = json_string_value(x);
        size_t n = s ? strlen(s) : 0;
        if (n && (!strcmp(s, path) || (s[n - 1] == '*' && !strncmp(s, path, n - 1))))
            return true;
    }
    return false;
}

static bool rule_allows(const json_t *r, const char *verb, const json_t *res, const json_t *nonres)
{
    if (!listed(json_object_get(r, "verbs"), verb))
        return false;
    if (res) {
        const char *group = json_string_value(json_object_get(res, "group"));
        const char *resource = json_string_value(json_object_get(res, "resource"));
        const char *sub = json_string_value(json_object_get(res, "subresource"));
        char full[300];
        snprintf(full, sizeof full, "%s%s%s", resource ? resource : "", sub && *sub ? "/" : "",
                 sub && *sub ? sub : "");
        return listed(json_object_get(r, "apiGroups"), group ? group : "") &&
               listed(json_object_get(r, "resources"), full);
    }
    const char *path = json_string_value(json_object_get(nonres, "path"));
    return path && url_listed(json_object_get(r, "nonResourceURLs"), path);
}

static void access_review(struct fk_server *s, struct evhttp_request *req)
{
    json_t *b = review_body(s, req, "SubjectAccessReview", "authorization.k8s.io/v1");
    if (!b)
        return;
    json_t *spec = json_object_get(b, "spec");
    const char *user = json_string_value(json_object_get(spec, "user"));
    json_t *groups = json_object_get(spec, "groups");
    json_t *res = json_object_get(spec, "resourceAttributes");
    json_t *nonres = json_object_get(spec, "nonResourceAttributes");
    if (!user && json_array_size(groups) == 0) {
        json_decref(b);
        fk_reply(s, req, 422,
                 fk_status(422, "Invalid",
                           "SubjectAccessReview.authorization.k8s.io \"\" is invalid: "
                           "spec.user: Invalid value: \"\": at least one of user or group must "
                           "be specified"));
        return;
    }
    if (!res == !nonres) {
        json_decref(b);
        fk_reply(s, req, 422,
                 fk_status(422, "Invalid",
                           "SubjectAccessReview.authorization.k8s.io \"\" is invalid: "
                           "spec.resourceAttributes: Invalid value: \"null\": exactly one of "
                           "nonResourceAttributes or resourceAttributes must be specified"));
        return;
    }
    s->access_reviews++;
    const char *verb = json_string_value(json_object_get(res ? res : nonres, "verb"));
    bool allowed = false;
    const char *reason = "";
    if (listed(groups, "system:masters") && !listed(groups, "*")) {
        allowed = true;
        reason = "fakekube: the user is in system:masters";
    } else if (user && verb) {
        const struct fk_user *u = user_by(s, NULL, user);
        size_t i;
        json_t *r;
        json_array_foreach(u ? u->rules : NULL, i, r) if (rule_allows(r, verb, res, nonres))
        {
            allowed = true;
            reason = "fakekube: allowed by the user's rules";
        }
    }
    reply_review(s, req, b, "SubjectAccessReview", "authorization.k8s.io/v1",
                 allowed ? json_pack("{s:b,s:s}", "allowed", 1, "reason", reason)
                         : json_pack("{s:b}", "allowed", 0));
}

int fk_auth_handle(struct fk_server *s, struct evhttp_request *req, const char *path, int method)
{
    bool tr = !strcmp(path, TOKENREVIEWS), sar = !strcmp(path, ACCESSREVIEWS);
    if (!tr && !sar)
        return 0;
    if (method != EVHTTP_REQ_POST) {
        fk_reply(s, req, 405,
                 fk_status(405, "MethodNotAllowed",
                           "the server does not allow this method on the requested resource"));
        return 1;
    }
    if (tr)
        token_review(s, req);
    else
        access_review(s, req);
    return 1;
}
