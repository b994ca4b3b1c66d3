/* Label and field selectors for fakekube's list and watch, following
 * k8s.io/apimachinery/pkg/labels: "a=b,c!=d,e,!f,g in (x,y),h notin (z)".
 * Field selectors accept only =, == and != on a per-type set of fields. */
#include "fakekube.h"

#include "base/alloc.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static void skip_ws(const char **p)
{
    while (**p == ' ')
        (*p)++;
}

static int is_key_char(char c)
{
    return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' || c == '/';
}

static char *read_token(const char **p)
{
    const char *start = *p;
    while (is_key_char(**p))
        (*p)++;
    if (*p == start)
        return NULL;
    return fair_strndup(start, (size_t)(*p - start));
}

static char *read_value(const char **p, int is_field)
{
    const char *start = *p;
    /* Field values may hold characters label values may not (e.g. ':'). */
    while (**p && **p != ',' && **p != ')' && **p != ' ' && (is_field || is_key_char(**p)))
        (*p)++;
    return fair_strndup(start, (size_t)(*p - start));
}

int fk_selector_parse(const char *s, int is_field, struct fk_selector *sel, char *err, size_t n)
{
    memset(sel, 0, sizeof(*sel));
    sel->is_field = is_field;
    const char *p = s ? s : "";
    if (strlen(p) > 4096) {
        snprintf(err, n, "selector too long");
        return -1;
    }
    skip_ws(&p);
    while (*p) {
        if (sel->nreqs == FK_SEL_MAX_REQS) {
            snprintf(err, n, "too many requirements in selector");
            goto fail;
        }
        struct fk_sel_req *r = &sel->reqs[sel->nreqs];
        int neg = 0;
        if (*p == '!' && !is_field) {
            neg = 1;
            p++;
            skip_ws(&p);
        }
        r->key = read_token(&p);
        if (!r->key) {
            snprintf(err, n, "invalid selector: expected a key at \"%.40s\"", p);
            goto fail;
        }
        sel->nreqs++;
        skip_ws(&p);
        if (neg) {
            r->op = FK_SEL_NOTEXISTS;
        } else if (p[0] == '=' && p[1] == '=') {
            r->op = FK_SEL_EQ;
            p += 2;
        } else if (p[0] == '=') {
            r->op = FK_SEL_EQ;
            p += 1;
        } else if (p[0] == '!' && p[1] == '=') {
            r->op = FK_SEL_NEQ;
            p += 2;
        } else if (!is_field && strncmp(p, "in", 2) == 0 && (p[2] == ' ' || p[2] == '(')) {
            r->op = FK_SEL_IN;
            p += 2;
        } else if (!is_field && strncmp(p, "notin", 5) == 0 && (p[5] == ' ' || p[5] == '(')) {
            r->op = FK_SEL_NOTIN;
            p += 5;
        } else if (*p == ',' || *p == '\0') {
            if (is_field) {
                snprintf(err, n, "invalid field selector: \"%s\" needs an operator", r->key);
                goto fail;
            }
            r->op = FK_SEL_EXISTS;
        } else {
            snprintf(err, n, "invalid selector: unexpected \"%.20s\"", p);
            goto fail;
        }
        skip_ws(&p);
        if (r->op == FK_SEL_EQ || r->op == FK_SEL_NEQ) {
            r->values[0] = read_value(&p, is_field);
            if (!r->values[0])
                goto oom;
            r->nvalues = 1;
        } else if (r->op == FK_SEL_IN || r->op == FK_SEL_NOTIN) {
            if (*p != '(') {
                snprintf(err, n, "invalid selector: expected '(' after \"%s\"", r->key);
                goto fail;
            }
            p++;
            for (;;) {
                skip_ws(&p);
                if (r->nvalues == FK_SEL_MAX_VALUES) {
                    snprintf(err, n, "too many values in selector");
                    goto fail;
                }
                r->values[r->nvalues] = read_value(&p, 0);
                if (!r->values[r->nvalues])
                    goto oom;
                r->nvalues++;
                skip_ws(&p);
                if (*p == ',') {
                    p++;
                    continue;
                }
                if (*p == ')') {
                    p++;
                    break;
                }
                snprintf(err, n, "invalid selector: expected ',' or ')' in set of \"%s\"", r->key);
                goto fail;
            }
        }
        skip_ws(&p);
        if (*p == ',') {
            p++;
            skip_ws(&p);
            if (!*p) {
                snprintf(err, n, "invalid selector: trailing ','");
                goto fail;
            }
        } else if (*p) {
            snprintf(err, n, "invalid selector: unexpected \"%.20s\"", p);
            goto fail;
        }
    }
    return 0;
oom:
    snprintf(err, n, "out of memory");
fail:
    fk_selector_release(sel);
    return -1;
}

void fk_selector_release(struct fk_selector *sel)
{
    for (size_t i = 0; i < sel->nreqs; i++) {
        fair_free(sel->reqs[i].key);
        for (size_t j = 0; j < sel->reqs[i].nvalues; j++)
            fair_free(sel->reqs[i].values[j]);
    }
    sel->nreqs = 0;
}

static int in_values(const struct fk_sel_req *r, const char *v)
{
    for (size_t i = 0; i < r->nvalues; i++)
        if (strcmp(r->values[i], v) == 0)
            return 1;
    return 0;
}

int fk_selector_match(const struct fk_selector *sel, const json_t *obj)
{
    if (!sel)
        return 1;
    const json_t *labels = json_object_get(json_object_get(obj, "metadata"), "labels");
    for (size_t i = 0; i < sel->nreqs; i++) {
        const struct fk_sel_req *r = &sel->reqs[i];
        const char *v;
        int present;
        if (sel->is_field) {
            v = fk_path_str(obj, r->key);
            present = 1;
        } else {
            v = json_string_value(json_object_get(labels, r->key));
            present = v != NULL;
            if (!v)
                v = "";
        }
        switch (r->op) {
        case FK_SEL_EQ:
            if (!present || strcmp(v, r->values[0]) != 0)
                return 0;
            break;
        case FK_SEL_NEQ:
            /* Like Kubernetes, != also matches objects without the label. */
            if (present && strcmp(v, r->values[0]) == 0)
                return 0;
            break;
        case FK_SEL_EXISTS:
            if (!present)
                return 0;
            break;
        case FK_SEL_NOTEXISTS:
            if (present)
                return 0;
            break;
        case FK_SEL_IN:
            if (!present || !in_values(r, v))
                return 0;
            break;
        case FK_SEL_NOTIN:
            if (present && in_values(r, v))
                return 0;
            break;
        }
    }
    return 1;
}

int fk_selector_check_fields(const struct fk_selector *sel, int type, char *err, size_t n)
{
    static const char *const common[] = {"metadata.name", "metadata.namespace", NULL};
    static const char *const pods[] = {"spec.nodeName",
                                       "spec.schedulerName",
                                       "status.phase",
                                       "spec.serviceAccountName",
                                       "status.podIP",
                                       "spec.restartPolicy",
                                       "status.nominatedNodeName",
                                       NULL};
    static const char *const events[] = {"involvedObject.kind",
                                         "involvedObject.namespace",
                                         "involvedObject.name",
                                         "involvedObject.uid",
                                         "reason",
                                         "type",
                                         "source",
                                         NULL};
    for (size_t i = 0; i < sel->nreqs; i++) {
        const char *k = sel->reqs[i].key;
        int ok = 0;
        for (size_t j = 0; common[j] && !ok; j++)
            ok = strcmp(common[j], k) == 0;
        for (size_t j = 0; type == FK_PODS && pods[j] && !ok; j++)
            ok = strcmp(pods[j], k) == 0;
        for (size_t j = 0; type == FK_EVENTS && events[j] && !ok; j++)
            ok = strcmp(events[j], k) == 0;
        if (type == FK_NODES && strcmp(k, "spec.unschedulable") == 0)
            ok = 1;
        if (!ok) {
            snprintf(err, n, "field label not supported: %s", k);
            return -1;
        }
    }
    return 0;
}
