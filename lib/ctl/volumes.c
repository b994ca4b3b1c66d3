/* Volumes (see volumes.h): the claims of a pending pod, with the rules
 * and messages of kube-scheduler's VolumeBinding plugin where Fairshare
 * follows them (docs/engine.md, "Volumes"). */
#include "ctl/volumes.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
#include "engine/constraints.h"
#include "base/error.h"
#include "kube/decode.h"

static int index_all(struct fair_ctl_index *ix, const void *const *objs, size_t n,
                     const char *(*key)(const void *))
{
    for (size_t i = 0; i < n; i++) {
        const char *k = key(objs[i]);
        if (k && fair_ctl_index_put(ix, k, (int32_t)i))
            return FAIR_ENOMEM;
    }
    return 0;
}

static const char *pvc_key(const void *o)
{
    return ((const struct fair_kpvc *)o)->key;
}

static const char *pv_key(const void *o)
{
    return ((const struct fair_kpv *)o)->meta.name;
}

static const char *sc_key(const void *o)
{
    return ((const struct fair_ksc *)o)->meta.name;
}

/* v->pv_by_claim and its chains. Returns 0 or FAIR_ENOMEM. */
static int index_claims(struct fair_ctl_volumes *v)
{
    fair_ctl_index_init(&v->pv_by_claim);
    size_t len = 1;
    for (size_t i = 0; i < v->npvs; i++)
        if (v->pvs[i]->claim_name)
            len += strlen(v->pvs[i]->claim_ns ? v->pvs[i]->claim_ns : "") +
                   strlen(v->pvs[i]->claim_name) + 2;
    v->claim_keys = fair_malloc(len);
    v->pv_claim_next = fair_malloc((v->npvs ? v->npvs : 1) * sizeof *v->pv_claim_next);
    if (!v->claim_keys || !v->pv_claim_next)
        return FAIR_ENOMEM;
    /* Backwards, so that each chain runs in input order. */
    char *key = v->claim_keys;
    size_t left = len;
    for (size_t i = v->npvs; i-- > 0;) {
        const struct fair_kpv *pv = v->pvs[i];
        v->pv_claim_next[i] = -1;
        if (!pv->claim_name)
            continue;
        int n = snprintf(key, left, "%s/%s", pv->claim_ns ? pv->claim_ns : "", pv->claim_name);
        if (n < 0 || (size_t)n >= left)
            return FAIR_ENOMEM; /* not reached: len counts every key */
        v->pv_claim_next[i] = fair_ctl_index_get(&v->pv_by_claim, key);
        if (fair_ctl_index_put(&v->pv_by_claim, key, (int32_t)i))
            return FAIR_ENOMEM;
        key += (size_t)n + 1;
        left -= (size_t)n + 1;
    }
    return 0;
}

int fair_ctl_volumes_init(struct fair_ctl_volumes *v, const struct fair_kpvc *const *pvcs,
                          size_t npvcs, const struct fair_kpv *const *pvs, size_t npvs,
                          const struct fair_ksc *const *scs, size_t nscs)
{
    memset(v, 0, sizeof *v);
    fair_ctl_index_init(&v->pvc_by_key);
    fair_ctl_index_init(&v->pv_by_name);
    fair_ctl_index_init(&v->sc_by_name);
    v->pvcs = pvcs;
    v->npvcs = npvcs;
    v->pvs = pvs;
    v->npvs = npvs;
    v->scs = scs;
    v->nscs = nscs;
    v->pv_taken = fair_calloc(npvs ? npvs : 1, sizeof *v->pv_taken);
    if (!v->pv_taken || index_all(&v->pvc_by_key, (const void *const *)pvcs, npvcs, pvc_key) ||
        index_all(&v->pv_by_name, (const void *const *)pvs, npvs, pv_key) ||
        index_all(&v->sc_by_name, (const void *const *)scs, nscs, sc_key) || index_claims(v)) {
        fair_ctl_volumes_release(v);
        return FAIR_ENOMEM;
    }
    return 0;
}

void fair_ctl_volumes_release(struct fair_ctl_volumes *v)
{
    if (!v)
        return;
    fair_ctl_index_release(&v->pvc_by_key);
    fair_ctl_index_release(&v->pv_by_name);
    fair_ctl_index_release(&v->sc_by_name);
    fair_ctl_index_release(&v->pv_by_claim);
    fair_free(v->pv_claim_next);
    fair_free(v->claim_keys);
    for (size_t i = 0; i < v->nowned; i++)
        fair_free(v->owned[i]);
    fair_free(v->owned);
    fair_free(v->pv_taken);
    memset(v, 0, sizeof *v);
}

/* A zeroed block of size bytes owned by v (freed by
 * fair_ctl_volumes_release), or NULL. */
static void *owned_alloc(struct fair_ctl_volumes *v, size_t size)
{
    if (fair_grow((void **)&v->owned, &v->owned_cap, v->nowned + 1, sizeof *v->owned))
        return NULL;
    void *p = fair_calloc(1, size);
    if (p)
        v->owned[v->nowned++] = p;
    return p;
}

const struct fair_kpvc *fair_ctl_volume_claim(const struct fair_ctl_volumes *v, const char *ns,
                                              const char *name)
{
    char key[600];
    int n = snprintf(key, sizeof key, "%s/%s", ns ? ns : "", name);
    if (n < 0 || (size_t)n >= sizeof key)
        return NULL;
    int32_t i = fair_ctl_index_get(&v->pvc_by_key, key);
    return i >= 0 ? v->pvcs[i] : NULL;
}

const struct fair_kpv *fair_ctl_volume(const struct fair_ctl_volumes *v, const char *name)
{
    int32_t i = fair_ctl_index_get(&v->pv_by_name, name);
    return i >= 0 ? v->pvs[i] : NULL;
}

static const struct fair_ksc *find_sc(const struct fair_ctl_volumes *v, const char *name)
{
    int32_t i = fair_ctl_index_get(&v->sc_by_name, name);
    return i >= 0 ? v->scs[i] : NULL;
}

/* The class of an unbound claim when it binds WaitForFirstConsumer (with
 * a provisioner or not), or NULL. */
static const struct fair_ksc *delayed_class(const struct fair_ctl_volumes *v,
                                            const struct fair_kpvc *c)
{
    if (c->volume_name || !c->storage_class || !*c->storage_class)
        return NULL;
    const struct fair_ksc *sc = find_sc(v, c->storage_class);
    return sc && sc->wait_for_first_consumer ? sc : NULL;
}

/* Whether a provisioner creates the class's volumes (else they are static,
 * made by an admin: kubernetes.io/no-provisioner). */
static bool provisioned(const struct fair_ksc *sc)
{
    return sc->provisioner && strcmp(sc->provisioner, FAIR_NO_PROVISIONER) != 0;
}

static bool str_eq(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

bool fair_ctl_volume_claimed_by(const struct fair_kpv *pv, const struct fair_kpvc *c)
{
    return pv->claim_name && str_eq(pv->claim_name, c->meta.name) &&
           str_eq(pv->claim_ns, c->meta.namespace_) &&
           (!pv->claim_uid || !*pv->claim_uid || str_eq(pv->claim_uid, c->meta.uid));
}

static bool has_label(const struct fair_label *l, size_t n, const struct fair_label *want)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(l[i].key, want->key))
            return !strcmp(l[i].value, want->value);
    return false;
}

/* Whether node n can reach volume pv (its required node affinity). */
static bool reaches(const struct fair_kpv *pv, const struct fair_node *n)
{
    const struct fair_node_affinity *a = pv->node_affinity;
    return !a || !a->required || fair_node_affinity_match(a, n);
}

const struct fair_kpv *fair_ctl_volume_prebound(const struct fair_ctl_volumes *v,
                                                const struct fair_kpvc *c)
{
    if (!c->key)
        return NULL;
    for (int32_t i = fair_ctl_index_get(&v->pv_by_claim, c->key); i >= 0; i = v->pv_claim_next[i])
        if (fair_ctl_volume_claimed_by(v->pvs[i], c) && !v->pvs[i]->meta.deletion_ms)
            return v->pvs[i];
    return NULL;
}

bool fair_ctl_volume_matches(const struct fair_kpv *pv, const struct fair_kpvc *c,
                             const struct fair_node *n)
{
    if (pv->meta.deletion_ms || pv->problem || c->problem || pv->claim_name || !pv->available)
        return false;
    if (!c->storage_class || !pv->storage_class || strcmp(c->storage_class, pv->storage_class))
        return false;
    if (pv->capacity_bytes < c->request_bytes || (c->access_modes & ~pv->access_modes) ||
        pv->block != c->block)
        return false;
    for (size_t i = 0; i < c->nselector; i++)
        if (!has_label(pv->labels, pv->nlabels, &c->selector[i]))
            return false;
    const struct fair_node_term *sel = c->selector_exprs ? c->selector_exprs->terms : NULL;
    for (size_t i = 0; sel && i < sel->nreqs; i++)
        if (!fair_label_req_match(&sel->reqs[i], pv->labels, pv->nlabels))
            return false;
    return !n || reaches(pv, n);
}

/* A term of one In requirement on a label: merged per key. */
static bool single_in(const struct fair_node_term *t)
{
    return t->nreqs == 1 && !t->invalid && t->reqs[0].op == FAIR_SEL_IN && !t->reqs[0].field;
}

#define STATIC_MAX_KEYS 8

/* Term t's slot among the merged keys: the index of its key, or nkeys when
 * it is not a one-In term or its key is not among them (kept as it is). */
static size_t key_slot(const char *const *keys, size_t nkeys, const struct fair_node_term *t)
{
    if (!single_in(t))
        return nkeys;
    size_t k = 0;
    while (k < nkeys && strcmp(keys[k], t->reqs[0].key))
        k++;
    return k;
}

/* Claim c (unbound, of a class without provisioner, no volume prebound to
 * it): *nmatch candidates and the nodes they allow: *terms NULL (a
 * candidate reachable from every node) or the OR of their terms, one-In
 * terms on one key merged into one requirement (local volumes: hostname In
 * [the nodes]). */
static int static_terms(struct fair_ctl_volumes *v, const struct fair_kpvc *c, size_t *nmatch,
                        const struct fair_node_affinity **terms, bool *too_many)
{
    *nmatch = 0;
    *terms = NULL;
    *too_many = false;
    bool anywhere = false;
    const char *keys[STATIC_MAX_KEYS];
    size_t nkeys = 0, nraw = 0, nvals = 0, kvals[STATIC_MAX_KEYS] = {0};
    for (size_t i = 0; i < v->npvs; i++) {
        const struct fair_kpv *pv = v->pvs[i];
        if (!fair_ctl_volume_matches(pv, c, NULL))
            continue;
        (*nmatch)++;
        const struct fair_node_affinity *a = pv->node_affinity;
        if (!a || !a->required) {
            anywhere = true;
            continue;
        }
        for (size_t t = 0; t < a->nterms; t++) {
            const struct fair_node_term *x = &a->terms[t];
            size_t k = key_slot(keys, nkeys, x);
            if (single_in(x) && k == nkeys && nkeys < STATIC_MAX_KEYS)
                keys[nkeys++] = x->reqs[0].key;
            if (k < nkeys) {
                kvals[k] += x->reqs[0].nvalues;
                nvals += x->reqs[0].nvalues;
            } else {
                nraw++;
            }
        }
    }
    if (anywhere || !*nmatch)
        return 0;
    size_t nt = nkeys + nraw;
    if (nt > FAIR_CTL_VOLUME_MAX_TERMS) {
        *too_many = true;
        return 0;
    }
    char *block = owned_alloc(
        v, sizeof(struct fair_node_affinity) + nt * sizeof(struct fair_node_term) +
               nkeys * sizeof(struct fair_node_req) + (nvals ? nvals : 1) * sizeof(char *));
    if (!block)
        return FAIR_ENOMEM;
    struct fair_node_affinity *r = (struct fair_node_affinity *)block;
    struct fair_node_term *tt = (struct fair_node_term *)(block + sizeof *r);
    struct fair_node_req *reqs = (struct fair_node_req *)(tt + nt);
    const char **vals = (const char **)(reqs + nkeys);
    /* The merged terms first (each key's values in one run, in volume
     * order), then the rest, in one more pass over the candidates. */
    size_t q = 0, raw = nkeys, at[STATIC_MAX_KEYS];
    for (size_t k = 0; k < nkeys; k++) {
        reqs[k].key = keys[k];
        reqs[k].op = FAIR_SEL_IN;
        reqs[k].values = &vals[q];
        reqs[k].nvalues = (uint32_t)kvals[k];
        tt[k].reqs = &reqs[k];
        tt[k].nreqs = 1;
        at[k] = q;
        q += kvals[k];
    }
    for (size_t i = 0; i < v->npvs; i++) {
        const struct fair_kpv *pv = v->pvs[i];
        if (!fair_ctl_volume_matches(pv, c, NULL))
            continue;
        const struct fair_node_affinity *a = pv->node_affinity;
        for (size_t t = 0; t < a->nterms; t++) {
            const struct fair_node_term *x = &a->terms[t];
            size_t k = key_slot(keys, nkeys, x);
            if (k == nkeys) {
                tt[raw++] = *x;
                continue;
            }
            for (uint32_t j = 0; j < x->reqs[0].nvalues; j++)
                vals[at[k]++] = x->reqs[0].values[j];
        }
    }
    r->required = true;
    r->terms = tt;
    r->nterms = nt;
    *terms = r;
    return 0;
}

/* a AND b, both required: every pair of terms, their requirements
 * concatenated (ORed pairs). NULL a or b: the other. The result is owned
 * by v; it borrows the requirements of a and b. */
static int and_affinity(struct fair_ctl_volumes *v, const struct fair_node_affinity *a,
                        const struct fair_node_affinity *b, const struct fair_node_affinity **out,
                        bool *too_many)
{
    *too_many = false;
    if (a && !a->required && a->npreferred && b) {
        /* The pod's preferred terms stay, b's required ones come in. */
        struct fair_node_affinity *r = owned_alloc(v, sizeof *r);
        if (!r)
            return FAIR_ENOMEM;
        *r = *b;
        r->preferred = a->preferred;
        r->npreferred = a->npreferred;
        *out = r;
        return 0;
    }
    if (!a || !a->required) {
        *out = b;
        return 0;
    }
    if (!b) {
        *out = a;
        return 0;
    }
    size_t nt = a->nterms * b->nterms, nr = 0;
    if (a->nterms && b->nterms && nt / a->nterms != b->nterms)
        nt = SIZE_MAX;
    if (nt > FAIR_CTL_VOLUME_MAX_TERMS) {
        *too_many = true;
        return 0;
    }
    for (size_t i = 0; i < a->nterms; i++)
        for (size_t j = 0; j < b->nterms; j++)
            nr += a->terms[i].nreqs + b->terms[j].nreqs;
    char *block =
        owned_alloc(v, sizeof(struct fair_node_affinity) + nt * sizeof(struct fair_node_term) +
                           nr * sizeof(struct fair_node_req));
    if (!block)
        return FAIR_ENOMEM;
    struct fair_node_affinity *r = (struct fair_node_affinity *)block;
    struct fair_node_term *terms = (struct fair_node_term *)(block + sizeof *r);
    struct fair_node_req *reqs = (struct fair_node_req *)(terms + nt);
    size_t t = 0, q = 0;
    for (size_t i = 0; i < a->nterms; i++)
        for (size_t j = 0; j < b->nterms; j++) {
            const struct fair_node_term *x = &a->terms[i], *y = &b->terms[j];
            terms[t].reqs = &reqs[q];
            terms[t].nreqs = x->nreqs + y->nreqs;
            terms[t].invalid = x->invalid || y->invalid;
            if (x->nreqs)
                memcpy(&reqs[q], x->reqs, x->nreqs * sizeof *reqs);
            q += x->nreqs;
            if (y->nreqs)
                memcpy(&reqs[q], y->reqs, y->nreqs * sizeof *reqs);
            q += y->nreqs;
            t++;
        }
    r->required = true;
    r->terms = nt ? terms : NULL;
    r->nterms = nt;
    /* The pod's own preferred terms, when a is the pod's. */
    r->preferred = a->preferred;
    r->npreferred = a->npreferred;
    *out = r;
    return 0;
}

/* The required node affinity "metadata.name In [node]" (owned by v; it
 * borrows node). */
static int node_name_term(struct fair_ctl_volumes *v, const char *node,
                          const struct fair_node_affinity **out)
{
    char *block = owned_alloc(v, sizeof(struct fair_node_affinity) + sizeof(struct fair_node_term) +
                                     sizeof(struct fair_node_req) + sizeof(char *));
    if (!block)
        return FAIR_ENOMEM;
    struct fair_node_affinity *r = (struct fair_node_affinity *)block;
    struct fair_node_term *t = (struct fair_node_term *)(block + sizeof *r);
    struct fair_node_req *q = (struct fair_node_req *)(t + 1);
    const char **val = (const char **)(q + 1);
    *val = node;
    *q = (struct fair_node_req){
        .key = "metadata.name", .values = val, .nvalues = 1, .op = FAIR_SEL_IN, .field = true};
    *t = (struct fair_node_term){.reqs = q, .nreqs = 1};
    *r = (struct fair_node_affinity){.required = true, .terms = t, .nterms = 1};
    *out = r;
    return 0;
}

#define WAIT(...)                                                                                  \
    do {                                                                                           \
        out->wait = true;                                                                          \
        snprintf(out->message, sizeof out->message, __VA_ARGS__);                                  \
        return 0;                                                                                  \
    } while (0)

int fair_ctl_volumes_pod(struct fair_ctl_volumes *v, const struct fair_kpod *k,
                         struct fair_ctl_volume_verdict *out)
{
    memset(out, 0, sizeof *out);
    out->affinity = k->node_affinity;
    const char *ns = k->meta.namespace_ ? k->meta.namespace_ : "";
    for (size_t i = 0; i < k->nclaims; i++) {
        const char *name = k->claims[i];
        const struct fair_kpvc *c = fair_ctl_volume_claim(v, ns, name);
        if (!c)
            WAIT("persistentvolumeclaim \"%s\" not found", name);
        if (c->meta.deletion_ms)
            WAIT("persistentvolumeclaim \"%s\" is being deleted", name);
        if (c->lost)
            WAIT("persistentvolumeclaim \"%s\" lost its persistentvolume%s%s", name,
                 c->volume_name ? " " : "", c->volume_name ? c->volume_name : "");
        const struct fair_node_affinity *terms = NULL;
        const char *what = NULL;
        if (c->volume_name) {
            const struct fair_kpv *pv = fair_ctl_volume(v, c->volume_name);
            if (!pv)
                WAIT("persistentvolumeclaim \"%s\" is bound to persistentvolume \"%s\", which "
                     "does not exist",
                     name, c->volume_name);
            if (pv->problem)
                WAIT("persistentvolume \"%s\" (claim \"%s\"): %s", pv->meta.name, name,
                     pv->problem);
            terms = pv->node_affinity && pv->node_affinity->required ? pv->node_affinity : NULL;
            what = "its volumes' node affinity";
        } else {
            const char *cls = c->storage_class;
            if (!cls || !*cls)
                WAIT("pod has unbound immediate PersistentVolumeClaims (\"%s\" names no "
                     "StorageClass: a PersistentVolume must be bound to it first)",
                     name);
            const struct fair_ksc *sc = find_sc(v, cls);
            if (!sc)
                WAIT("storageclass.storage.k8s.io \"%s\" not found (claim \"%s\")", cls, name);
            if (!sc->wait_for_first_consumer)
                WAIT("pod has unbound immediate PersistentVolumeClaims (\"%s\", StorageClass "
                     "\"%s\" binds Immediately: waiting for its volume)",
                     name, cls);
            if (sc->problem)
                WAIT("storageclass \"%s\" (claim \"%s\"): %s", cls, name, sc->problem);
            if (!provisioned(sc)) {
                /* Static volumes: the binder's findMatchingVolume. */
                if (c->problem)
                    WAIT("claim \"%s\": %s", name, c->problem);
                const struct fair_kpv *pre = fair_ctl_volume_prebound(v, c);
                if (pre) {
                    /* Prebound (by us before a restart, or by another
                     * scheduler): the pod goes where that volume is, as
                     * FindMatchingVolume takes a volume prebound to the
                     * claim first, and holds its room there again while
                     * the PV controller binds. */
                    if (pre->problem)
                        WAIT("persistentvolume \"%s\" (claim \"%s\"): %s", pre->meta.name, name,
                             pre->problem);
                    out->select_node = true;
                    out->selected_claim = c;
                    terms = pre->node_affinity && pre->node_affinity->required ? pre->node_affinity
                                                                               : NULL;
                    what = "its prebound volume's node affinity";
                    goto merge;
                }
                size_t nmatch;
                bool many;
                if (static_terms(v, c, &nmatch, &terms, &many))
                    return FAIR_ENOMEM;
                if (!nmatch)
                    WAIT("no Available persistentvolume of StorageClass \"%s\" matches claim "
                         "\"%s\" (capacity, access modes, volume mode, selector; claimRef "
                         "empty)",
                         cls, name);
                if (many)
                    WAIT("the persistentvolumes that match claim \"%s\" make more than %d node "
                         "selector terms; Fairshare does not schedule this pod",
                         name, FAIR_CTL_VOLUME_MAX_TERMS);
                out->select_node = true;
                what = "its static volumes' node affinity";
                goto merge;
            }
            out->select_node = true;
            terms = sc->allowed;
            what = "its StorageClasses' allowedTopologies";
            if (c->selected_node && *c->selected_node) {
                /* Its provisioner works on that node (selected-node,
                 * written by us before a restart or by another
                 * scheduler): the pod may go there only, as
                 * kube-scheduler's FindPodVolumes reads it, and its room
                 * there is held again until the volume is bound. */
                const struct fair_node_affinity *on = NULL, *merged;
                bool too_many;
                if (node_name_term(v, c->selected_node, &on) ||
                    and_affinity(v, out->affinity, on, &merged, &too_many))
                    return FAIR_ENOMEM;
                if (too_many)
                    WAIT("its node affinity makes more than %d node selector terms; Fairshare "
                         "does not schedule this pod",
                         FAIR_CTL_VOLUME_MAX_TERMS);
                out->affinity = merged;
                out->selected_claim = c;
            }
        }
    merge:
        if (!terms)
            continue;
        bool too_many;
        const struct fair_node_affinity *merged;
        if (and_affinity(v, out->affinity, terms, &merged, &too_many))
            return FAIR_ENOMEM;
        if (too_many)
            WAIT("its node affinity and %s make more than %d node selector terms; Fairshare "
                 "does not schedule this pod",
                 what, FAIR_CTL_VOLUME_MAX_TERMS);
        out->affinity = merged;
    }
    return 0;
}

/* The unbound claims of k of a WaitForFirstConsumer class on their way
 * to node n: with a provisioner, selected-node n; without one, a volume
 * prebound to them that n reaches. n NULL: the claims with a provisioner
 * and no selected-node yet. */
static size_t claims_on(const struct fair_ctl_volumes *v, const struct fair_kpod *k,
                        const struct fair_node *n, const struct fair_kpvc **out, size_t max)
{
    size_t cnt = 0;
    const char *ns = k->meta.namespace_ ? k->meta.namespace_ : "";
    for (size_t i = 0; i < k->nclaims && cnt < max; i++) {
        const struct fair_kpvc *c = fair_ctl_volume_claim(v, ns, k->claims[i]);
        const struct fair_ksc *sc = c && !c->meta.deletion_ms ? delayed_class(v, c) : NULL;
        if (!sc)
            continue;
        if (!provisioned(sc)) {
            const struct fair_kpv *pv = n ? fair_ctl_volume_prebound(v, c) : NULL;
            if (pv && reaches(pv, n))
                out[cnt++] = c;
            continue;
        }
        const char *sel = c->selected_node && *c->selected_node ? c->selected_node : NULL;
        if (n ? sel && n->name && !strcmp(sel, n->name) : !sel)
            out[cnt++] = c;
    }
    return cnt;
}

size_t fair_ctl_volumes_to_select(const struct fair_ctl_volumes *v, const struct fair_kpod *k,
                                  const struct fair_kpvc **out, size_t max)
{
    return claims_on(v, k, NULL, out, max);
}

size_t fair_ctl_volumes_selected(const struct fair_ctl_volumes *v, const struct fair_kpod *k,
                                 const struct fair_node *n, const struct fair_kpvc **out,
                                 size_t max)
{
    return claims_on(v, k, n, out, max);
}

static bool static_claim(const struct fair_ctl_volumes *v, const struct fair_kpvc *c)
{
    if (!c || c->volume_name || c->meta.deletion_ms)
        return false;
    const struct fair_ksc *sc = delayed_class(v, c);
    return sc && !provisioned(sc);
}

int fair_ctl_volumes_prebind(struct fair_ctl_volumes *v, const struct fair_kpod *k,
                             const struct fair_node *n, struct fair_ctl_prebind *out, size_t max)
{
    size_t cnt = 0;
    int ret = 0;
    int32_t picked[64];
    const char *ns = k->meta.namespace_ ? k->meta.namespace_ : "";
    for (size_t i = 0; i < k->nclaims; i++) {
        const struct fair_kpvc *c = fair_ctl_volume_claim(v, ns, k->claims[i]);
        if (!static_claim(v, c) || fair_ctl_volume_prebound(v, c))
            continue;
        if (cnt == max || cnt == sizeof picked / sizeof *picked) {
            ret = -1;
            goto undo;
        }
        int32_t best = -1;
        for (size_t j = 0; j < v->npvs; j++) {
            const struct fair_kpv *pv = v->pvs[j];
            if (v->pv_taken[j] || !fair_ctl_volume_matches(pv, c, n))
                continue;
            if (best < 0 || pv->capacity_bytes < v->pvs[best]->capacity_bytes ||
                (pv->capacity_bytes == v->pvs[best]->capacity_bytes &&
                 strcmp(pv->meta.name ? pv->meta.name : "",
                        v->pvs[best]->meta.name ? v->pvs[best]->meta.name : "") < 0))
                best = (int32_t)j;
        }
        if (best < 0) {
            ret = -1;
            goto undo;
        }
        v->pv_taken[best] = true;
        picked[cnt] = best;
        out[cnt].claim = c;
        out[cnt].pv = v->pvs[best];
        cnt++;
    }
    return (int)cnt;
undo:
    for (size_t i = 0; i < cnt; i++)
        v->pv_taken[picked[i]] = false;
    return ret;
}
