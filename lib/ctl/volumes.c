/* Volumes (see volumes.h): the claims of a pending pod, with the rules
 * and messages of kube-scheduler's VolumeBinding plugin where Fairshare
 * follows them (docs/engine.md, "Volumes"). */
#include "ctl/volumes.h"

#include <stdio.h>
#include <string.h>

#include "base/alloc.h"
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
    if (index_all(&v->pvc_by_key, (const void *const *)pvcs, npvcs, pvc_key) ||
        index_all(&v->pv_by_name, (const void *const *)pvs, npvs, pv_key) ||
        index_all(&v->sc_by_name, (const void *const *)scs, nscs, sc_key)) {
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
    for (size_t i = 0; i < v->nowned; i++)
        fair_free(v->owned[i]);
    fair_free(v->owned);
    memset(v, 0, sizeof *v);
}

static const struct fair_kpvc *find_pvc(const struct fair_ctl_volumes *v, const char *ns,
                                        const char *name)
{
    char key[600];
    int n = snprintf(key, sizeof key, "%s/%s", ns ? ns : "", name);
    if (n < 0 || (size_t)n >= sizeof key)
        return NULL;
    int32_t i = fair_ctl_index_get(&v->pvc_by_key, key);
    return i >= 0 ? v->pvcs[i] : NULL;
}

static const struct fair_kpv *find_pv(const struct fair_ctl_volumes *v, const char *name)
{
    int32_t i = fair_ctl_index_get(&v->pv_by_name, name);
    return i >= 0 ? v->pvs[i] : NULL;
}

static const struct fair_ksc *find_sc(const struct fair_ctl_volumes *v, const char *name)
{
    int32_t i = fair_ctl_index_get(&v->sc_by_name, name);
    return i >= 0 ? v->scs[i] : NULL;
}

/* An unbound claim of a WaitForFirstConsumer class that a provisioner
 * serves: the class, or NULL. */
static const struct fair_ksc *delayed_class(const struct fair_ctl_volumes *v,
                                            const struct fair_kpvc *c)
{
    if (c->volume_name || !c->storage_class || !*c->storage_class)
        return NULL;
    const struct fair_ksc *sc = find_sc(v, c->storage_class);
    return sc && sc->wait_for_first_consumer ? sc : NULL;
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
        if (fair_grow((void **)&v->owned, &v->owned_cap, v->nowned + 1, sizeof *v->owned))
            return FAIR_ENOMEM;
        struct fair_node_affinity *r = fair_calloc(1, sizeof *r);
        if (!r)
            return FAIR_ENOMEM;
        v->owned[v->nowned++] = r;
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
    if (fair_grow((void **)&v->owned, &v->owned_cap, v->nowned + 1, sizeof *v->owned))
        return FAIR_ENOMEM;
    size_t size = sizeof(struct fair_node_affinity) + nt * sizeof(struct fair_node_term) +
                  nr * sizeof(struct fair_node_req);
    char *block = fair_calloc(1, size);
    if (!block)
        return FAIR_ENOMEM;
    v->owned[v->nowned++] = block;
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
        const struct fair_kpvc *c = find_pvc(v, ns, name);
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
            const struct fair_kpv *pv = find_pv(v, c->volume_name);
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
            if (c->selected_node && *c->selected_node)
                WAIT("waiting for the provisioner %s to create the volume of claim \"%s\" on "
                     "node %s (annotation %s)",
                     sc->provisioner ? sc->provisioner : "(none)", name, c->selected_node,
                     FAIR_ANN_SELECTED_NODE);
            if (!sc->provisioner || !strcmp(sc->provisioner, FAIR_NO_PROVISIONER))
                WAIT("claim \"%s\" is unbound and StorageClass \"%s\" has no provisioner: "
                     "Fairshare does not choose among static PersistentVolumes; bind the "
                     "claim to one (spec.volumeName)",
                     name, cls);
            out->select_node = true;
            terms = sc->allowed;
            what = "its StorageClasses' allowedTopologies";
        }
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

size_t fair_ctl_volumes_to_select(const struct fair_ctl_volumes *v, const struct fair_kpod *k,
                                  const struct fair_kpvc **out, size_t max)
{
    size_t n = 0;
    const char *ns = k->meta.namespace_ ? k->meta.namespace_ : "";
    for (size_t i = 0; i < k->nclaims && n < max; i++) {
        const struct fair_kpvc *c = find_pvc(v, ns, k->claims[i]);
        if (!c || c->meta.deletion_ms || (c->selected_node && *c->selected_node))
            continue;
        const struct fair_ksc *sc = delayed_class(v, c);
        if (sc && sc->provisioner && strcmp(sc->provisioner, FAIR_NO_PROVISIONER))
            out[n++] = c;
    }
    return n;
}
