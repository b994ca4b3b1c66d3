/* Required inter-pod affinity and anti-affinity (see interpod.h): label
 * selectors, term matching, and the per-cycle counts of matching pods per
 * topology domain. */
#include "engine/interpod.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/alloc.h"
#include "base/error.h"
#include "engine/constraints.h"

static int str_cmp(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

bool fair_label_selector_match(const struct fair_label_selector *s, const struct fair_label *l,
                               size_t n)
{
    if (s->nothing || s->invalid)
        return false;
    for (size_t i = 0; i < s->nmatch_labels; i++) {
        const char *v = fair_label_get(l, n, s->match_labels[i].key);
        if (!v || str_cmp(v, s->match_labels[i].value))
            return false;
    }
    for (size_t i = 0; i < s->nexprs; i++)
        if (!fair_label_req_match(&s->exprs[i], l, n))
            return false;
    return true;
}

bool fair_pod_term_match(const struct fair_pod_term *t, const char *owner_ns,
                         const struct fair_pod *p)
{
    bool ns_ok = t->all_namespaces;
    if (!ns_ok && t->nnamespaces == 0 && !t->ns_by_labels)
        ns_ok = str_cmp(owner_ns, p->namespace_) == 0;
    for (size_t i = 0; !ns_ok && i < t->nnamespaces; i++)
        ns_ok = str_cmp(t->namespaces[i], p->namespace_) == 0;
    if (!ns_ok && t->ns_by_labels)
        ns_ok = fair_label_selector_match(&t->ns_selector, p->ns_labels, p->nns_labels);
    return ns_ok && fair_label_selector_match(&t->selector, p->labels, p->nlabels);
}

/* ---- per-cycle state ---------------------------------------------------- */

/* A topology key: each node rank's domain (-1: the node lacks the key). */
struct topo {
    const char *key;
    int32_t *dom;
    int32_t ndom;
};

/* Terms counted together: one anti-affinity term, or (group) a pod's whole
 * list of affinity terms, for which a pod counts only if it matches them
 * all. cnt[off[i] + d]: matching pods in domain d of term i's key. */
struct tclass {
    const struct fair_pod_term *terms;
    size_t nterms;
    const char *ns; /* the owner's namespace */
    bool group;
    bool ready; /* counted */
    uint64_t hash;
    int32_t *topo;
    size_t *off;
    int32_t *cnt;
    int64_t total;
};

/* The pending pods with the same spread constraints, namespace, node
 * selector and node affinity (one workload's): per constraint the
 * matching pods per domain of its key, over the eligible nodes. */
struct sclass {
    const struct fair_pod *first;   /* stands for them all */
    const struct fair_spread *cons; /* first's DoNotSchedule or ScheduleAnyway ones */
    size_t ncons;
    bool soft;
    uint64_t hash;
    bool ready;       /* counted */
    bool min_ok;      /* minv up to date */
    uint8_t *node_ok; /* per rank: matches the selector and affinity, has every key */
    int32_t *topo;    /* per constraint */
    size_t *off;      /* per constraint: its domains in cnt and elig */
    int32_t *cnt;
    uint8_t *elig; /* per domain: holds an eligible node */
    int32_t *minv; /* per constraint: fewest matching pods in an eligible domain */
};

struct cset {
    struct tclass *v;
    size_t n, cap;
    int32_t *slots; /* hash table of v's indices, -1 empty */
    size_t nslots;
};

/* Placed pods by their value of one label key, sorted by value then by
 * position in placed; those placed after built_n are not in it. */
struct kent {
    const char *val;
    int32_t idx;
};

struct kidx {
    const char *key;
    struct kent *v;
    size_t n, built_n;
};

/* A placed pod: bound before the cycle or during it. */
struct placed {
    const struct fair_pod *pod;
    int32_t rank;
    bool dead;
};

struct fair_interpod {
    const struct fair_snapshot *snap;
    const int32_t *rank_idx, *rank_of;
    size_t nnodes;
    size_t *bytes;
    struct topo *topos;
    size_t ntopos, topos_cap;
    /* Incoming side: the pending pods' classes (tc), by pod: its affinity
     * group (pod_aff) and its anti terms (pod_anti[pod_anti_off[i]..]). */
    struct cset tc;
    /* Existing side: classes of the anti terms of pods bound or pending
     * (ec), by pod (pod_ec[pod_ec_off[i]..]): they count their owners. */
    struct cset ec;
    int32_t *pod_aff;
    size_t *pod_anti_off, *pod_ec_off; /* npods + 1 */
    int32_t *pod_anti, *pod_ec;
    int8_t *pod_ecm; /* per pod: matches an ec class (1), not (-1), unknown (0) */
    /* Topology spread: classes, and per pod its class (-1). */
    struct sclass *sc;
    size_t nsc, sc_cap;
    int32_t *pod_sc, *pod_ssc; /* DoNotSchedule, ScheduleAnyway */
    /* Placed pods whose own terms score incoming pods (required or
     * preferred affinity, preferred anti-affinity): indices into placed. */
    int32_t *wlist;
    size_t nw, w_cap;
    int8_t *pod_wm;  /* per pod: some such term matches it (1), none so far (0) */
    int32_t *pod_wn; /* per pod: the wlist entries already looked at */
    struct placed *placed;
    size_t nplaced, placed_cap;
    struct kidx *kidx; /* label indexes of the placed pods, by key */
    size_t nkidx, kidx_cap;
    int64_t ec_total;
    bool oom; /* a class could not be counted: refuse constrained pods */
};

static void *ip_calloc(struct fair_interpod *ip, size_t n, size_t size)
{
    void *p = fair_calloc(n ? n : 1, size);
    if (p && ip->bytes)
        *ip->bytes += (n ? n : 1) * size;
    return p;
}

static int grow(struct fair_interpod *ip, void **arr, size_t *cap, size_t need, size_t elem)
{
    size_t old = *cap;
    if (fair_grow(arr, cap, need, elem))
        return FAIR_ENOMEM;
    if (ip->bytes && *cap > old)
        *ip->bytes += (*cap - old) * elem;
    return 0;
}

/* The index of topology key (added on first use); -1 out of memory. */
static int32_t topo_of(struct fair_interpod *ip, const char *key)
{
    for (size_t i = 0; i < ip->ntopos; i++)
        if (str_cmp(ip->topos[i].key, key) == 0)
            return (int32_t)i;
    if (grow(ip, (void **)&ip->topos, &ip->topos_cap, ip->ntopos + 1, sizeof(*ip->topos)))
        return -1;
    struct topo *t = &ip->topos[ip->ntopos];
    memset(t, 0, sizeof(*t));
    t->key = key;
    t->dom = ip_calloc(ip, ip->nnodes, sizeof(*t->dom));
    const char **vals = fair_calloc(ip->nnodes ? ip->nnodes : 1, sizeof(*vals));
    if (!t->dom || !vals) {
        fair_free(t->dom);
        fair_free(vals);
        return -1;
    }
    /* Domains by value: nodes are few; the values seen are kept in order
     * and found again by a linear search only among distinct ones. */
    for (size_t r = 0; r < ip->nnodes; r++) {
        const struct fair_node *n = &ip->snap->nodes[ip->rank_idx[r]];
        const char *v = fair_label_get(n->labels, n->nlabels, key);
        t->dom[r] = -1;
        if (!v)
            continue;
        /* Hostname-like keys have a value per node: look at the last
         * few domains first, then all. */
        int32_t d = -1;
        for (int32_t k = t->ndom - 1; k >= 0 && d < 0; k--)
            if (str_cmp(vals[k], v) == 0)
                d = k;
        if (d < 0) {
            d = t->ndom++;
            vals[d] = v;
        }
        t->dom[r] = d;
    }
    fair_free(vals);
    return (int32_t)ip->ntopos++;
}

static bool same_selector(const struct fair_label_selector *a, const struct fair_label_selector *b)
{
    if (a->nothing != b->nothing || a->invalid != b->invalid ||
        a->nmatch_labels != b->nmatch_labels || a->nexprs != b->nexprs)
        return false;
    for (size_t i = 0; i < a->nmatch_labels; i++)
        if (str_cmp(a->match_labels[i].key, b->match_labels[i].key) ||
            str_cmp(a->match_labels[i].value, b->match_labels[i].value))
            return false;
    for (size_t i = 0; i < a->nexprs; i++) {
        const struct fair_node_req *r = &a->exprs[i], *q = &b->exprs[i];
        if (r->op != q->op || r->nvalues != q->nvalues || str_cmp(r->key, q->key))
            return false;
        for (uint32_t k = 0; k < r->nvalues; k++)
            if (str_cmp(r->values[k], q->values[k]))
                return false;
    }
    return true;
}

/* Whether terms a (of a pod in namespace ans) and b (bns) select the same
 * pods over the same keys. */
static bool same_terms(const struct fair_pod_term *a, size_t na, const char *ans,
                       const struct fair_pod_term *b, size_t nb, const char *bns)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++) {
        const struct fair_pod_term *s = &a[i], *t = &b[i];
        if (str_cmp(s->topology_key, t->topology_key) || s->all_namespaces != t->all_namespaces ||
            s->nnamespaces != t->nnamespaces || !same_selector(&s->selector, &t->selector) ||
            s->ns_by_labels != t->ns_by_labels ||
            (s->ns_by_labels && !same_selector(&s->ns_selector, &t->ns_selector)))
            return false;
        if (!s->all_namespaces && s->nnamespaces == 0 && !s->ns_by_labels && str_cmp(ans, bns))
            return false;
        for (size_t k = 0; k < s->nnamespaces; k++)
            if (str_cmp(s->namespaces[k], t->namespaces[k]))
                return false;
    }
    return true;
}

static uint64_t hstr(uint64_t h, const char *s)
{
    for (s = s ? s : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;
}

static uint64_t hash_terms(const struct fair_pod_term *t, size_t n, const char *ns, bool group)
{
    uint64_t h = 14695981039346656037ULL ^ (uint64_t)group;
    for (size_t i = 0; i < n; i++) {
        h = hstr(h, t[i].topology_key);
        h = (h ^
             (t[i].selector.nmatch_labels << 8 | t[i].selector.nexprs << 1 | t[i].all_namespaces)) *
            1099511628211ULL;
        for (size_t k = 0; k < t[i].selector.nmatch_labels; k++)
            h = hstr(hstr(h, t[i].selector.match_labels[k].key),
                     t[i].selector.match_labels[k].value);
        for (size_t k = 0; k < t[i].selector.nexprs; k++) {
            h = hstr(h, t[i].selector.exprs[k].key);
            for (uint32_t v = 0; v < t[i].selector.exprs[k].nvalues; v++)
                h = hstr(h, t[i].selector.exprs[k].values[v]);
        }
        for (size_t k = 0; k < t[i].nnamespaces; k++)
            h = hstr(h, t[i].namespaces[k]);
        if (t[i].ns_by_labels) {
            const struct fair_label_selector *q = &t[i].ns_selector;
            h = hstr(h, "\x01");
            for (size_t k = 0; k < q->nmatch_labels; k++)
                h = hstr(hstr(h, q->match_labels[k].key), q->match_labels[k].value);
            for (size_t k = 0; k < q->nexprs; k++)
                h = hstr(h, q->exprs[k].key);
        }
        if (!t[i].all_namespaces && t[i].nnamespaces == 0 && !t[i].ns_by_labels)
            h = hstr(h, ns);
    }
    return h;
}

/* The class of terms (added if new); -1 out of memory. Found by hash
 * (open addressing, rebuilt as it grows), compared in full. */
static int32_t class_of(struct fair_interpod *ip, struct cset *cs,
                        const struct fair_pod_term *terms, size_t nterms, const char *ns,
                        bool group)
{
    uint64_t h = hash_terms(terms, nterms, ns, group);
    if (cs->nslots < 2 * (cs->n + 1)) {
        size_t ns2 = cs->nslots ? cs->nslots * 2 : 64;
        while (ns2 < 2 * (cs->n + 1))
            ns2 *= 2;
        int32_t *sl = ip_calloc(ip, ns2, sizeof(*sl));
        if (!sl)
            return -1;
        for (size_t i = 0; i < ns2; i++)
            sl[i] = -1;
        for (size_t i = 0; i < cs->n; i++) {
            size_t k = (size_t)cs->v[i].hash & (ns2 - 1);
            while (sl[k] >= 0)
                k = (k + 1) & (ns2 - 1);
            sl[k] = (int32_t)i;
        }
        fair_free(cs->slots);
        cs->slots = sl;
        cs->nslots = ns2;
    }
    size_t k = (size_t)h & (cs->nslots - 1);
    for (; cs->slots[k] >= 0; k = (k + 1) & (cs->nslots - 1)) {
        const struct tclass *c = &cs->v[cs->slots[k]];
        if (c->hash == h && c->group == group &&
            same_terms(c->terms, c->nterms, c->ns, terms, nterms, ns))
            return cs->slots[k];
    }
    if (grow(ip, (void **)&cs->v, &cs->cap, cs->n + 1, sizeof(*cs->v)))
        return -1;
    struct tclass *c = &cs->v[cs->n];
    memset(c, 0, sizeof(*c));
    c->hash = h;
    c->terms = terms;
    c->nterms = nterms;
    c->ns = ns;
    c->group = group;
    c->topo = ip_calloc(ip, nterms, sizeof(*c->topo));
    c->off = ip_calloc(ip, nterms + 1, sizeof(*c->off));
    if (!c->topo || !c->off)
        goto fail;
    for (size_t i = 0; i < nterms; i++) {
        c->topo[i] = topo_of(ip, terms[i].topology_key);
        if (c->topo[i] < 0)
            goto fail;
        c->off[i + 1] = c->off[i] + (size_t)ip->topos[c->topo[i]].ndom;
    }
    c->cnt = ip_calloc(ip, c->off[nterms], sizeof(*c->cnt));
    if (!c->cnt)
        goto fail;
    cs->slots[k] = (int32_t)cs->n;
    return (int32_t)cs->n++;
fail:
    fair_free(c->topo);
    fair_free(c->off);
    return -1;
}

static void free_classes(struct cset *cs)
{
    for (size_t i = 0; i < cs->n; i++) {
        fair_free(cs->v[i].topo);
        fair_free(cs->v[i].off);
        fair_free(cs->v[i].cnt);
    }
    fair_free(cs->v);
    fair_free(cs->slots);
}

void fair_interpod_free(struct fair_interpod *ip)
{
    if (!ip)
        return;
    for (size_t i = 0; i < ip->ntopos; i++)
        fair_free(ip->topos[i].dom);
    fair_free(ip->topos);
    free_classes(&ip->tc);
    free_classes(&ip->ec);
    fair_free(ip->pod_aff);
    fair_free(ip->pod_anti_off);
    fair_free(ip->pod_ec_off);
    fair_free(ip->pod_anti);
    fair_free(ip->pod_ec);
    fair_free(ip->pod_ecm);
    for (size_t i = 0; i < ip->nsc; i++) {
        fair_free(ip->sc[i].node_ok);
        fair_free(ip->sc[i].topo);
        fair_free(ip->sc[i].off);
        fair_free(ip->sc[i].cnt);
        fair_free(ip->sc[i].elig);
        fair_free(ip->sc[i].minv);
    }
    fair_free(ip->sc);
    fair_free(ip->pod_sc);
    fair_free(ip->pod_ssc);
    fair_free(ip->wlist);
    fair_free(ip->pod_wm);
    fair_free(ip->pod_wn);
    for (size_t i = 0; i < ip->nkidx; i++)
        fair_free(ip->kidx[i].v);
    fair_free(ip->kidx);
    fair_free(ip->placed);
    fair_free(ip);
}

/* Whether pod p counts for class c: matches the term, or all of a group's. */
static bool class_matches(const struct tclass *c, const struct fair_pod *p)
{
    for (size_t i = 0; i < c->nterms; i++)
        if (!fair_pod_term_match(&c->terms[i], c->ns, p))
            return false;
    return c->nterms > 0;
}

/* Counts p, placed on rank (sign 1) or taken back (-1), in class c. */
static void class_add(struct fair_interpod *ip, struct tclass *c, int32_t rank, int sign)
{
    for (size_t i = 0; i < c->nterms; i++) {
        int32_t d = ip->topos[c->topo[i]].dom[rank];
        if (d < 0)
            continue;
        c->cnt[c->off[i] + (size_t)d] += sign;
        c->total += sign;
    }
}

static const struct fair_pod_affinity *aff_of(const struct fair_pod *p)
{
    return p->pod_affinity;
}

/* Whether p's own terms score other pods (kube-scheduler's
 * InterPodAffinity, existing pods' side). */
static bool scores_others(const struct fair_pod *p)
{
    const struct fair_pod_affinity *a = p->pod_affinity;
    return a && (a->naffinity || a->npref_affinity || a->npref_anti);
}

static int add_placed(struct fair_interpod *ip, const struct fair_pod *p, int32_t rank)
{
    if (grow(ip, (void **)&ip->placed, &ip->placed_cap, ip->nplaced + 1, sizeof(*ip->placed)))
        return FAIR_ENOMEM;
    if (scores_others(p)) {
        if (grow(ip, (void **)&ip->wlist, &ip->w_cap, ip->nw + 1, sizeof(*ip->wlist)))
            return FAIR_ENOMEM;
        ip->wlist[ip->nw++] = (int32_t)ip->nplaced;
    }
    ip->placed[ip->nplaced++] = (struct placed){p, rank, false};
    return 0;
}

static bool same_labels(const struct fair_label *a, size_t na, const struct fair_label *b,
                        size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (str_cmp(a[i].key, b[i].key) || str_cmp(a[i].value, b[i].value))
            return false;
    return true;
}

/* The DoNotSchedule (soft: ScheduleAnyway) constraints of p. */
static const struct fair_spread *spread_list(const struct fair_pod *p, bool soft, size_t *n)
{
    *n = soft ? p->nspread_soft : p->nspread;
    return soft ? p->spread + p->nspread : p->spread;
}

/* Whether pods a and b spread the same way over the same nodes. */
static bool same_spread(const struct fair_pod *a, const struct fair_pod *b, bool soft)
{
    size_t na, nb;
    const struct fair_spread *sa = spread_list(a, soft, &na), *sb = spread_list(b, soft, &nb);
    if (na != nb || str_cmp(a->namespace_, b->namespace_) ||
        !same_labels(a->node_selector, a->nnode_selector, b->node_selector, b->nnode_selector) ||
        !fair_node_affinity_same(a->node_affinity, b->node_affinity))
        return false;
    for (size_t i = 0; i < na; i++)
        if (sa[i].max_skew != sb[i].max_skew || sa[i].min_domains != sb[i].min_domains ||
            str_cmp(sa[i].topology_key, sb[i].topology_key) ||
            !same_selector(&sa[i].selector, &sb[i].selector))
            return false;
    return true;
}

static uint64_t hash_spread(const struct fair_pod *p, bool soft)
{
    size_t n;
    const struct fair_spread *sp = spread_list(p, soft, &n);
    uint64_t h = hstr(14695981039346656037ULL ^ (uint64_t)soft, p->namespace_);
    for (size_t i = 0; i < n; i++) {
        h = hstr(h, sp[i].topology_key);
        h = (h ^ (uint64_t)sp[i].max_skew) * 1099511628211ULL;
        for (size_t k = 0; k < sp[i].selector.nmatch_labels; k++)
            h = hstr(h, sp[i].selector.match_labels[k].value);
    }
    for (size_t k = 0; k < p->nnode_selector; k++)
        h = hstr(h, p->node_selector[k].value);
    return h;
}

/* Whether node n passes p's node selector and required node affinity
 * (the nodes PodTopologySpread counts in 1.24). */
static bool node_eligible(const struct fair_node *n, const struct fair_pod *p)
{
    for (size_t i = 0; i < p->nnode_selector; i++) {
        const char *v = fair_label_get(n->labels, n->nlabels, p->node_selector[i].key);
        if (!v || str_cmp(v, p->node_selector[i].value))
            return false;
    }
    return fair_node_affinity_match(p->node_affinity, n);
}

/* The spread class of pending pod p (added if new); -1 out of memory.
 * Pods with constraints are few: a linear search on the hash. */
static int32_t spread_class_of(struct fair_interpod *ip, const struct fair_pod *p, bool soft)
{
    uint64_t h = hash_spread(p, soft);
    for (size_t i = 0; i < ip->nsc; i++)
        if (ip->sc[i].hash == h && ip->sc[i].soft == soft && same_spread(ip->sc[i].first, p, soft))
            return (int32_t)i;
    if (grow(ip, (void **)&ip->sc, &ip->sc_cap, ip->nsc + 1, sizeof(*ip->sc)))
        return -1;
    struct sclass *c = &ip->sc[ip->nsc];
    memset(c, 0, sizeof(*c));
    c->first = p;
    c->hash = h;
    c->soft = soft;
    c->cons = spread_list(p, soft, &c->ncons);
    c->topo = ip_calloc(ip, c->ncons, sizeof(*c->topo));
    c->off = ip_calloc(ip, c->ncons + 1, sizeof(*c->off));
    c->minv = ip_calloc(ip, c->ncons, sizeof(*c->minv));
    c->node_ok = ip_calloc(ip, ip->nnodes, sizeof(*c->node_ok));
    if (!c->topo || !c->off || !c->minv || !c->node_ok)
        goto fail;
    for (size_t i = 0; i < c->ncons; i++) {
        c->topo[i] = topo_of(ip, c->cons[i].topology_key);
        if (c->topo[i] < 0)
            goto fail;
        c->off[i + 1] = c->off[i] + (size_t)ip->topos[c->topo[i]].ndom;
    }
    c->cnt = ip_calloc(ip, c->off[c->ncons], sizeof(*c->cnt));
    c->elig = ip_calloc(ip, c->off[c->ncons], sizeof(*c->elig));
    if (!c->cnt || !c->elig)
        goto fail;
    for (size_t r = 0; r < ip->nnodes; r++) {
        bool ok = node_eligible(&ip->snap->nodes[ip->rank_idx[r]], p);
        for (size_t i = 0; ok && i < c->ncons; i++)
            ok = ip->topos[c->topo[i]].dom[r] >= 0;
        c->node_ok[r] = ok;
        for (size_t i = 0; ok && i < c->ncons; i++)
            c->elig[c->off[i] + (size_t)ip->topos[c->topo[i]].dom[r]] = 1;
    }
    return (int32_t)ip->nsc++;
fail:
    fair_free(c->topo);
    fair_free(c->off);
    fair_free(c->minv);
    fair_free(c->node_ok);
    fair_free(c->cnt);
    fair_free(c->elig);
    return -1;
}

/* Whether placed pod q counts for spread class c (its namespace, not
 * terminating); sign into the counts of q's node rank. */
static void spread_add(struct fair_interpod *ip, struct sclass *c, const struct fair_pod *q,
                       int32_t rank, int sign)
{
    const struct fair_pod *p = c->first;
    if (!c->node_ok[rank] || q->terminating || str_cmp(q->namespace_, p->namespace_))
        return;
    for (size_t i = 0; i < c->ncons; i++)
        if (fair_label_selector_match(&c->cons[i].selector, q->labels, q->nlabels)) {
            c->cnt[c->off[i] + (size_t)ip->topos[c->topo[i]].dom[rank]] += sign;
            c->min_ok = false;
        }
}

int fair_interpod_new(struct fair_interpod **out, const struct fair_snapshot *snap,
                      const int32_t *rank_idx, const int32_t *rank_of, size_t *bytes)
{
    bool any = false, pending = false;
    *out = NULL;
    for (size_t i = 0; i < snap->npods; i++) {
        any |= snap->pods[i].pod_affinity != NULL ||
               ((snap->pods[i].nspread || snap->pods[i].nspread_soft) &&
                snap->pods[i].state == FAIR_POD_PENDING);
        pending |= snap->pods[i].state == FAIR_POD_PENDING;
    }
    if (!any || !pending)
        return 0;
    struct fair_interpod *ip = fair_calloc(1, sizeof(*ip));
    if (!ip)
        return FAIR_ENOMEM;
    if (bytes)
        *bytes += sizeof(*ip);
    ip->snap = snap;
    ip->rank_idx = rank_idx;
    ip->rank_of = rank_of;
    ip->nnodes = snap->nnodes;
    ip->bytes = bytes;
    size_t np = snap->npods;
    ip->pod_aff = ip_calloc(ip, np, sizeof(*ip->pod_aff));
    ip->pod_anti_off = ip_calloc(ip, np + 1, sizeof(*ip->pod_anti_off));
    ip->pod_ec_off = ip_calloc(ip, np + 1, sizeof(*ip->pod_ec_off));
    ip->pod_ecm = ip_calloc(ip, np, sizeof(*ip->pod_ecm));
    ip->pod_sc = ip_calloc(ip, np, sizeof(*ip->pod_sc));
    ip->pod_ssc = ip_calloc(ip, np, sizeof(*ip->pod_ssc));
    ip->pod_wm = ip_calloc(ip, np, sizeof(*ip->pod_wm));
    ip->pod_wn = ip_calloc(ip, np, sizeof(*ip->pod_wn));
    if (!ip->pod_aff || !ip->pod_anti_off || !ip->pod_ec_off || !ip->pod_ecm || !ip->pod_sc ||
        !ip->pod_ssc || !ip->pod_wm || !ip->pod_wn)
        goto fail;
    /* Offsets first, then the classes of each pod's terms. */
    size_t nanti = 0, nec = 0;
    for (size_t i = 0; i < np; i++) {
        const struct fair_pod *p = &snap->pods[i];
        const struct fair_pod_affinity *a = aff_of(p);
        ip->pod_anti_off[i] = nanti;
        ip->pod_ec_off[i] = nec;
        if (!a)
            continue;
        if (p->state == FAIR_POD_PENDING)
            nanti += a->nanti;
        nec += a->nanti;
    }
    ip->pod_anti_off[np] = nanti;
    ip->pod_ec_off[np] = nec;
    ip->pod_anti = ip_calloc(ip, nanti, sizeof(*ip->pod_anti));
    ip->pod_ec = ip_calloc(ip, nec, sizeof(*ip->pod_ec));
    if (!ip->pod_anti || !ip->pod_ec)
        goto fail;
    for (size_t i = 0; i < np; i++) {
        const struct fair_pod *p = &snap->pods[i];
        const struct fair_pod_affinity *a = aff_of(p);
        ip->pod_aff[i] = -1;
        ip->pod_sc[i] = -1;
        ip->pod_ssc[i] = -1;
        if (p->nspread && p->state == FAIR_POD_PENDING &&
            (ip->pod_sc[i] = spread_class_of(ip, p, false)) < 0)
            goto fail;
        if (p->nspread_soft && p->state == FAIR_POD_PENDING &&
            (ip->pod_ssc[i] = spread_class_of(ip, p, true)) < 0)
            goto fail;
        if (!a)
            continue;
        bool pend = p->state == FAIR_POD_PENDING;
        bool bound = p->state == FAIR_POD_BOUND && p->node >= 0 && (size_t)p->node < ip->nnodes;
        if (pend && a->naffinity) {
            ip->pod_aff[i] = class_of(ip, &ip->tc, a->affinity, a->naffinity, p->namespace_, true);
            if (ip->pod_aff[i] < 0)
                goto fail;
        }
        for (size_t k = 0; k < a->nanti; k++) {
            if (pend) {
                int32_t c = class_of(ip, &ip->tc, &a->anti[k], 1, p->namespace_, false);
                if (c < 0)
                    goto fail;
                ip->pod_anti[ip->pod_anti_off[i] + k] = c;
            }
            int32_t e = class_of(ip, &ip->ec, &a->anti[k], 1, p->namespace_, false);
            if (e < 0)
                goto fail;
            ip->pod_ec[ip->pod_ec_off[i] + k] = e;
            if (bound) {
                class_add(ip, &ip->ec.v[e], rank_of[p->node], 1);
                ip->ec_total++;
            }
        }
    }
    for (size_t i = 0; i < np; i++) {
        const struct fair_pod *p = &snap->pods[i];
        if (p->state == FAIR_POD_BOUND && p->node >= 0 && (size_t)p->node < ip->nnodes &&
            add_placed(ip, p, rank_of[p->node]))
            goto fail;
    }
    *out = ip;
    return 0;
fail:
    fair_interpod_free(ip);
    return FAIR_ENOMEM;
}

bool fair_interpod_active(const struct fair_interpod *ip)
{
    return ip && ip->ec.n > 0;
}

bool fair_interpod_touches(struct fair_interpod *ip, const struct fair_pod *pod)
{
    if (!ip || ip->ec.n == 0)
        return false;
    int32_t pi = pod >= ip->snap->pods && pod < ip->snap->pods + ip->snap->npods
                     ? (int32_t)(pod - ip->snap->pods)
                     : -1;
    if (pi >= 0 && ip->pod_ecm[pi])
        return ip->pod_ecm[pi] > 0;
    bool any = false;
    for (size_t e = 0; e < ip->ec.n && !any; e++)
        any = class_matches(&ip->ec.v[e], pod);
    if (pi >= 0)
        ip->pod_ecm[pi] = any ? 1 : -1;
    return any;
}

/* Counts the placed pods of an incoming class on its first use. */
static int cmp_kent(const void *pa, const void *pb)
{
    const struct kent *a = pa, *b = pb;
    int r = strcmp(a->val, b->val);
    return r ? r : (a->idx > b->idx) - (a->idx < b->idx);
}

/* The index of the placed pods by their value of label key, built on
 * first use over the pods placed so far; NULL when out of memory. */
static struct kidx *key_index(struct fair_interpod *ip, const char *key)
{
    for (size_t i = 0; i < ip->nkidx; i++)
        if (str_cmp(ip->kidx[i].key, key) == 0)
            return &ip->kidx[i];
    if (grow(ip, (void **)&ip->kidx, &ip->kidx_cap, ip->nkidx + 1, sizeof(*ip->kidx)))
        return NULL;
    struct kidx *k = &ip->kidx[ip->nkidx];
    memset(k, 0, sizeof(*k));
    k->key = key;
    k->built_n = ip->nplaced;
    size_t n = 0;
    for (size_t i = 0; i < ip->nplaced; i++)
        n += fair_label_get(ip->placed[i].pod->labels, ip->placed[i].pod->nlabels, key) != NULL;
    k->v = ip_calloc(ip, n, sizeof(*k->v));
    if (!k->v)
        return NULL;
    for (size_t i = 0; i < ip->nplaced; i++) {
        const struct fair_pod *q = ip->placed[i].pod;
        const char *v = fair_label_get(q->labels, q->nlabels, key);
        if (v)
            k->v[k->n++] = (struct kent){v, (int32_t)i};
    }
    qsort(k->v, k->n, sizeof(*k->v), cmp_kent);
    ip->nkidx++;
    return k;
}

/* A requirement every pod of class c must meet, to look up in an index:
 * a matchLabels entry or an In expression of the first term's selector.
 * Its values in *vals / *nvals (a matchLabels entry: one). */
static const char *index_key(const struct tclass *c, const char *const **vals, size_t *nvals,
                             const char **one)
{
    const struct fair_label_selector *s = &c->terms[0].selector;
    if (s->nothing || s->invalid)
        return NULL;
    if (s->nmatch_labels) {
        *one = s->match_labels[0].value ? s->match_labels[0].value : "";
        *vals = one;
        *nvals = 1;
        return s->match_labels[0].key;
    }
    for (size_t i = 0; i < s->nexprs; i++)
        if (s->exprs[i].op == FAIR_SEL_IN && s->exprs[i].nvalues) {
            *vals = s->exprs[i].values;
            *nvals = s->exprs[i].nvalues;
            return s->exprs[i].key;
        }
    return NULL;
}

static void class_ready(struct fair_interpod *ip, struct tclass *c)
{
    if (c->ready)
        return;
    const char *const *vals = NULL, *one = NULL;
    size_t nvals = 0, from = 0;
    const char *key = c->nterms ? index_key(c, &vals, &nvals, &one) : NULL;
    struct kidx *k = key ? key_index(ip, key) : NULL;
    if (k) {
        /* Only the pods with one of the values can match; the pods placed
         * after the index was built are looked at one by one. */
        for (size_t j = 0; j < nvals; j++) {
            struct kent probe = {vals[j] ? vals[j] : "", -1};
            size_t lo = 0, hi = k->n;
            while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (cmp_kent(&k->v[mid], &probe) < 0)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            for (; lo < k->n && strcmp(k->v[lo].val, probe.val) == 0; lo++) {
                const struct placed *pl = &ip->placed[k->v[lo].idx];
                if (!pl->dead && class_matches(c, pl->pod))
                    class_add(ip, c, pl->rank, 1);
            }
        }
        from = k->built_n;
    }
    for (size_t i = from; i < ip->nplaced; i++)
        if (!ip->placed[i].dead && class_matches(c, ip->placed[i].pod))
            class_add(ip, c, ip->placed[i].rank, 1);
    c->ready = true;
}

static int32_t pod_index(const struct fair_interpod *ip, const struct fair_pod *p)
{
    if (p >= ip->snap->pods && p < ip->snap->pods + ip->snap->npods)
        return (int32_t)(p - ip->snap->pods);
    return -1;
}

/* Counts the placed pods of spread class c on its first use. */
static void spread_ready(struct fair_interpod *ip, struct sclass *c)
{
    if (c->ready)
        return;
    for (size_t i = 0; i < ip->nplaced; i++)
        if (!ip->placed[i].dead)
            spread_add(ip, c, ip->placed[i].pod, ip->placed[i].rank, 1);
    c->ready = true;
}

static bool spread_ok(struct fair_interpod *ip, struct sclass *c, int32_t rank,
                      const struct fair_pod *pod)
{
    const struct fair_pod *p = c->first;
    spread_ready(ip, c);
    if (!c->min_ok) {
        for (size_t i = 0; i < c->ncons; i++) {
            int32_t m = INT32_MAX, ndom = 0;
            for (size_t d = c->off[i]; d < c->off[i + 1]; d++)
                if (c->elig[d]) {
                    ndom++;
                    if (c->cnt[d] < m)
                        m = c->cnt[d];
                }
            /* minDomains: fewer eligible domains than asked for, and the
             * global minimum is 0 (the missing domains hold none). */
            c->minv[i] = ndom < c->cons[i].min_domains ? 0 : m;
        }
        c->min_ok = true;
    }
    for (size_t i = 0; i < p->nspread; i++) {
        int32_t d = ip->topos[c->topo[i]].dom[rank];
        if (d < 0)
            return false;
        int64_t self = fair_label_selector_match(&p->spread[i].selector, pod->labels, pod->nlabels);
        int64_t skew = (int64_t)c->cnt[c->off[i] + (size_t)d] + self - (int64_t)c->minv[i];
        if (skew > p->spread[i].max_skew)
            return false;
    }
    return true;
}

bool fair_interpod_ok(struct fair_interpod *ip, int32_t rank, const struct fair_pod *pod)
{
    if (!ip)
        return true;
    if (ip->oom)
        return false;
    int32_t pi = pod_index(ip, pod);
    const struct fair_pod_affinity *a = pi >= 0 ? aff_of(pod) : NULL;
    /* 1. Affinity: every key on the node, and a matching pod in each
     * domain, unless none matches anywhere and the pod matches itself. */
    if (a && a->naffinity && ip->pod_aff[pi] >= 0) {
        struct tclass *c = &ip->tc.v[ip->pod_aff[pi]];
        class_ready(ip, c);
        bool exist = true;
        for (size_t i = 0; i < c->nterms; i++) {
            int32_t d = ip->topos[c->topo[i]].dom[rank];
            if (d < 0)
                return false;
            if (c->cnt[c->off[i] + (size_t)d] <= 0)
                exist = false;
        }
        if (!exist && !(c->total == 0 && class_matches(c, pod)))
            return false;
    }
    /* 2. The pod's anti-affinity. */
    for (size_t k = 0; a && k < a->nanti; k++) {
        struct tclass *c = &ip->tc.v[ip->pod_anti[ip->pod_anti_off[pi] + k]];
        class_ready(ip, c);
        int32_t d = ip->topos[c->topo[0]].dom[rank];
        if (d >= 0 && c->cnt[c->off[0] + (size_t)d] > 0)
            return false;
    }
    /* 4. Topology spread (DoNotSchedule): the node has every key, and in
     * each constraint's domain the matching pods (this one too, if it
     * matches) exceed the fewest of any eligible domain by maxSkew at
     * most. */
    if (pi >= 0 && ip->pod_sc[pi] >= 0 && !spread_ok(ip, &ip->sc[ip->pod_sc[pi]], rank, pod))
        return false;
    /* 3. The placed pods' anti-affinity against this pod: none when the
     * pod matches no such class at all (known per pod, asked once). */
    bool touched = ip->ec_total > 0 && fair_interpod_touches(ip, pod);
    for (size_t e = 0; touched && e < ip->ec.n; e++) {
        const struct tclass *c = &ip->ec.v[e];
        if (c->total <= 0)
            continue;
        int32_t d = ip->topos[c->topo[0]].dom[rank];
        if (d >= 0 && c->cnt[c->off[0] + (size_t)d] > 0 && class_matches(c, pod))
            return false;
    }
    return true;
}

void fair_interpod_commit(struct fair_interpod *ip, int32_t rank, const struct fair_pod *pod,
                          int sign)
{
    if (!ip)
        return;
    for (size_t i = 0; i < ip->tc.n; i++)
        if (ip->tc.v[i].ready && class_matches(&ip->tc.v[i], pod))
            class_add(ip, &ip->tc.v[i], rank, sign);
    for (size_t i = 0; i < ip->nsc; i++)
        if (ip->sc[i].ready)
            spread_add(ip, &ip->sc[i], pod, rank, sign);
    int32_t pi = pod_index(ip, pod);
    if (pi >= 0)
        for (size_t k = ip->pod_ec_off[pi]; k < ip->pod_ec_off[pi + 1]; k++) {
            class_add(ip, &ip->ec.v[ip->pod_ec[k]], rank, sign);
            ip->ec_total += sign;
        }
    if (sign > 0) {
        if (add_placed(ip, pod, rank))
            ip->oom = true;
        return;
    }
    for (size_t i = ip->nplaced; i-- > 0;)
        if (ip->placed[i].pod == pod && ip->placed[i].rank == rank && !ip->placed[i].dead) {
            ip->placed[i].dead = true;
            break;
        }
}

/* ---- scores (preferred terms) -------------------------------------------- */

/* kube-scheduler's default weight of an existing pod's required affinity
 * term that matches the incoming pod (hardPodAffinityWeight). */
#define HARD_POD_AFFINITY_WEIGHT 1

static bool has_pref(const struct fair_pod *p)
{
    const struct fair_pod_affinity *a = p->pod_affinity;
    return a && (a->npref_affinity || a->npref_anti);
}

/* Whether a term of a placed pod that scores others matches pod. Cached
 * per pod: a match stays one (a rolled-back bind only makes the scoring
 * find nothing), and the entries placed since the last look are the only
 * ones looked at. */
static bool w_matches(struct fair_interpod *ip, const struct fair_pod *pod)
{
    int32_t pi = pod_index(ip, pod);
    if (pi >= 0 && ip->pod_wm[pi])
        return true;
    bool any = false;
    size_t from = pi >= 0 ? (size_t)ip->pod_wn[pi] : 0;
    for (size_t w = from; w < ip->nw && !any; w++) {
        const struct placed *pl = &ip->placed[ip->wlist[w]];
        const struct fair_pod_affinity *a = pl->pod->pod_affinity;
        if (pl->dead)
            continue;
        for (size_t k = 0; k < a->naffinity && !any; k++)
            any = fair_pod_term_match(&a->affinity[k], pl->pod->namespace_, pod);
        for (size_t k = 0; k < a->npref_affinity && !any; k++)
            any = fair_pod_term_match(&a->pref_affinity[k], pl->pod->namespace_, pod);
        for (size_t k = 0; k < a->npref_anti && !any; k++)
            any = fair_pod_term_match(&a->pref_anti[k], pl->pod->namespace_, pod);
    }
    if (pi >= 0) {
        ip->pod_wm[pi] = any;
        ip->pod_wn[pi] = (int32_t)ip->nw;
    }
    return any;
}

bool fair_interpod_scored(struct fair_interpod *ip, const struct fair_pod *pod)
{
    if (!ip)
        return false;
    int32_t pi = pod_index(ip, pod);
    if (pi >= 0 && ip->pod_ssc[pi] >= 0)
        return true;
    return has_pref(pod) || (ip->nw > 0 && w_matches(ip, pod));
}

/* Adds weight to the candidates in the domain of key that holds rank
 * (none when that node lacks the key). */
static void add_domain(struct fair_interpod *ip, int32_t topo, int32_t rank, int64_t weight,
                       const int32_t *ranks, size_t n, int64_t *out)
{
    const int32_t *dom = ip->topos[topo].dom;
    int32_t d = dom[rank];
    if (d < 0 || weight == 0)
        return;
    for (size_t i = 0; i < n; i++)
        if (dom[ranks[i]] == d)
            out[i] += weight;
}

int fair_interpod_affinity_score(struct fair_interpod *ip, const struct fair_pod *pod,
                                 const int32_t *ranks, size_t n, int64_t *out)
{
    for (size_t i = 0; i < n; i++)
        out[i] = 0;
    if (!ip || ip->oom)
        return 0;
    const struct fair_pod_affinity *a = pod->pod_affinity;
    /* The incoming pod's preferred terms: weight per matching placed pod
     * in the candidate's domain (anti-affinity: minus). */
    for (int anti = 0; a && anti < 2; anti++) {
        const struct fair_pod_term *t = anti ? a->pref_anti : a->pref_affinity;
        size_t nt = anti ? a->npref_anti : a->npref_affinity;
        for (size_t k = 0; k < nt; k++) {
            int32_t ci = class_of(ip, &ip->tc, &t[k], 1, pod->namespace_, false);
            if (ci < 0)
                return FAIR_ENOMEM;
            struct tclass *c = &ip->tc.v[ci];
            class_ready(ip, c);
            const int32_t *dom = ip->topos[c->topo[0]].dom;
            int64_t w = anti ? -(int64_t)t[k].weight : (int64_t)t[k].weight;
            for (size_t i = 0; i < n; i++) {
                int32_t d = dom[ranks[i]];
                if (d >= 0)
                    out[i] += w * c->cnt[c->off[0] + (size_t)d];
            }
        }
    }
    /* The placed pods' terms that match the incoming pod. */
    for (size_t w = 0; w < ip->nw; w++) {
        const struct placed *pl = &ip->placed[ip->wlist[w]];
        if (pl->dead)
            continue;
        const struct fair_pod *q = pl->pod;
        const struct fair_pod_affinity *qa = q->pod_affinity;
        for (int kind = 0; kind < 3; kind++) {
            const struct fair_pod_term *t =
                kind == 0 ? qa->affinity : (kind == 1 ? qa->pref_affinity : qa->pref_anti);
            size_t nt =
                kind == 0 ? qa->naffinity : (kind == 1 ? qa->npref_affinity : qa->npref_anti);
            for (size_t k = 0; k < nt; k++) {
                if (!fair_pod_term_match(&t[k], q->namespace_, pod))
                    continue;
                int32_t topo = topo_of(ip, t[k].topology_key);
                if (topo < 0)
                    return FAIR_ENOMEM;
                int64_t wt = kind == 0 ? HARD_POD_AFFINITY_WEIGHT
                                       : (kind == 1 ? t[k].weight : -(int64_t)t[k].weight);
                add_domain(ip, topo, pl->rank, wt, ranks, n, out);
            }
        }
    }
    return 0;
}

int fair_interpod_spread_score(struct fair_interpod *ip, const struct fair_pod *pod,
                               const int32_t *ranks, size_t n, int64_t *out, bool *ignored)
{
    for (size_t i = 0; i < n; i++) {
        out[i] = 0;
        ignored[i] = false;
    }
    int32_t pi = ip ? pod_index(ip, pod) : -1;
    if (pi < 0 || ip->pod_ssc[pi] < 0 || ip->oom)
        return 0;
    struct sclass *c = &ip->sc[ip->pod_ssc[pi]];
    spread_ready(ip, c);
    /* Candidates lacking a key are ignored (score 0). */
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < c->ncons && !ignored[i]; k++)
            ignored[i] = ip->topos[c->topo[k]].dom[ranks[i]] < 0;
        kept += !ignored[i];
    }
    double *score = fair_calloc(n ? n : 1, sizeof(*score));
    uint8_t *seen = NULL;
    if (!score)
        return FAIR_ENOMEM;
    for (size_t k = 0; k < c->ncons; k++) {
        const struct topo *t = &ip->topos[c->topo[k]];
        /* The constraint's normalising weight: log(domains + 2), the
         * domains among the candidates (hostname: the candidates). */
        size_t size = 0;
        if (str_cmp(c->cons[k].topology_key, "kubernetes.io/hostname") == 0) {
            size = kept;
        } else {
            seen = fair_calloc(t->ndom ? (size_t)t->ndom : 1, 1);
            if (!seen) {
                fair_free(score);
                return FAIR_ENOMEM;
            }
            for (size_t i = 0; i < n; i++)
                if (!ignored[i] && !seen[t->dom[ranks[i]]]) {
                    seen[t->dom[ranks[i]]] = 1;
                    size++;
                }
            fair_free(seen);
            seen = NULL;
        }
        double weight = log((double)size + 2);
        for (size_t i = 0; i < n; i++) {
            if (ignored[i])
                continue;
            int32_t d = t->dom[ranks[i]];
            score[i] +=
                (double)c->cnt[c->off[k] + (size_t)d] * weight + (double)(c->cons[k].max_skew - 1);
        }
    }
    for (size_t i = 0; i < n; i++)
        out[i] = ignored[i] ? 0 : (int64_t)llround(score[i]);
    fair_free(score);
    return 0;
}
