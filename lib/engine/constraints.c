/* Scheduling constraints (see constraints.h): node affinity matching with
 * the semantics of k8s.io/component-helpers' nodeaffinity package and
 * apimachinery's label and field selectors, other resources and host ports
 * as NodeResourcesFit and NodePorts count them, and the per-cycle state. */
#include "engine/constraints.h"

#include <string.h>

#include "base/alloc.h"
#include "base/mig.h"
#include "base/error.h"
#include "engine/interpod.h"

static int str_cmp(const char *a, const char *b)
{
    return strcmp(a ? a : "", b ? b : "");
}

/* ---- syntax ------------------------------------------------------------ */

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], len bytes, 1..63. */
static bool qualified_name(const char *s, size_t len)
{
    if (len == 0 || len > 63 || !is_alnum(s[0]) || !is_alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
            return false;
    return true;
}

/* DNS-1123 subdomain: lower-case labels of [a-z0-9-], each starting and
 * ending alphanumeric, joined by dots, at most 253 bytes. */
static bool dns_subdomain(const char *s, size_t len)
{
    if (len == 0 || len > 253)
        return false;
    size_t start = 0;
    for (size_t i = 0; i <= len; i++) {
        if (i < len && s[i] != '.') {
            char c = s[i];
            if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'))
                return false;
            continue;
        }
        if (i == start || s[start] == '-' || s[i - 1] == '-')
            return false;
        start = i + 1;
    }
    return true;
}

bool fair_label_key_valid(const char *s)
{
    if (!s)
        return false;
    const char *slash = strchr(s, '/');
    if (!slash)
        return qualified_name(s, strlen(s));
    if (strchr(slash + 1, '/'))
        return false;
    return dns_subdomain(s, (size_t)(slash - s)) && qualified_name(slash + 1, strlen(slash + 1));
}

bool fair_label_value_valid(const char *s)
{
    if (!s || !s[0])
        return true;
    return qualified_name(s, strlen(s));
}

bool fair_parse_int64(const char *s, int64_t *out)
{
    if (!s || !*s)
        return false;
    bool neg = false;
    if (*s == '+' || *s == '-') {
        neg = *s == '-';
        s++;
    }
    if (!*s)
        return false;
    uint64_t v = 0;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return false;
        uint64_t d = (uint64_t)(*s - '0');
        if (v > (lim - d) / 10)
            return false;
        v = v * 10 + d;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

bool fair_node_req_valid(const struct fair_node_req *r)
{
    if (r->nvalues > 0 && !r->values)
        return false;
    if (r->field) {
        if (r->op != FAIR_SEL_IN && r->op != FAIR_SEL_NOT_IN)
            return false;
        return r->nvalues == 1;
    }
    if (!fair_label_key_valid(r->key))
        return false;
    switch (r->op) {
    case FAIR_SEL_IN:
    case FAIR_SEL_NOT_IN:
        if (r->nvalues == 0)
            return false;
        break;
    case FAIR_SEL_EXISTS:
    case FAIR_SEL_DOES_NOT_EXIST:
        if (r->nvalues != 0)
            return false;
        break;
    case FAIR_SEL_GT:
    case FAIR_SEL_LT: {
        int64_t v;
        if (r->nvalues != 1 || !fair_parse_int64(r->values[0], &v))
            return false;
        break;
    }
    default:
        return false;
    }
    for (uint32_t i = 0; i < r->nvalues; i++)
        if (!fair_label_value_valid(r->values[i]))
            return false;
    return true;
}

/* ---- matching ---------------------------------------------------------- */

const char *fair_label_get(const struct fair_label *l, size_t n, const char *key)
{
    for (size_t i = 0; i < n; i++)
        if (str_cmp(l[i].key, key) == 0)
            return l[i].value ? l[i].value : "";
    return NULL;
}

static bool in_values(const struct fair_node_req *r, const char *v)
{
    for (uint32_t i = 0; i < r->nvalues; i++)
        if (str_cmp(r->values[i], v) == 0)
            return true;
    return false;
}

bool fair_label_req_match(const struct fair_node_req *r, const struct fair_label *l, size_t n)
{
    const char *v = fair_label_get(l, n, r->key);
    int64_t have, want;
    switch (r->op) {
    case FAIR_SEL_IN:
        return v && in_values(r, v);
    case FAIR_SEL_NOT_IN:
        return !v || !in_values(r, v);
    case FAIR_SEL_EXISTS:
        return v != NULL;
    case FAIR_SEL_DOES_NOT_EXIST:
        return v == NULL;
    case FAIR_SEL_GT:
    case FAIR_SEL_LT:
        if (!v || r->nvalues != 1 || !fair_parse_int64(v, &have) ||
            !fair_parse_int64(r->values[0], &want))
            return false;
        return r->op == FAIR_SEL_GT ? have > want : have < want;
    default:
        return false;
    }
}

/* fields.Set of a node holds metadata.name only; an absent field reads as
 * "" (fields.Set.Get). */
static bool field_req_match(const struct fair_node_req *r, const struct fair_node *n)
{
    const char *v = str_cmp(r->key, "metadata.name") == 0 && n->name ? n->name : "";
    bool eq = r->nvalues == 1 && str_cmp(r->values[0], v) == 0;
    return r->op == FAIR_SEL_IN ? eq : (r->op == FAIR_SEL_NOT_IN ? !eq : false);
}

bool fair_node_term_match(const struct fair_node_term *t, const struct fair_node *n)
{
    if (t->invalid || t->nreqs == 0)
        return false;
    /* The field selector applies only when the node has fields, i.e. a
     * name (nodeSelectorTerm.match). */
    bool has_fields = n->name && n->name[0];
    for (uint32_t i = 0; i < t->nreqs; i++) {
        const struct fair_node_req *r = &t->reqs[i];
        if (r->field ? has_fields && !field_req_match(r, n)
                     : !fair_label_req_match(r, n->labels, n->nlabels))
            return false;
    }
    return true;
}

bool fair_node_affinity_match(const struct fair_node_affinity *a, const struct fair_node *n)
{
    if (!a || !a->required)
        return true;
    for (size_t i = 0; i < a->nterms; i++)
        if (fair_node_term_match(&a->terms[i], n))
            return true;
    return false;
}

int64_t fair_node_affinity_score(const struct fair_node_affinity *a, const struct fair_node *n)
{
    int64_t s = 0;
    if (!a)
        return 0;
    for (size_t i = 0; i < a->npreferred; i++)
        if (a->preferred[i].weight != 0 && fair_node_term_match(&a->preferred[i], n))
            s += a->preferred[i].weight;
    return s;
}

/* ---- per-cycle cache ----------------------------------------------------- */

struct cls {
    const struct fair_node_affinity *a; /* the first pod's, standing for all */
    uint64_t *nodes;                    /* by rank; NULL until first needed */
};

/* A host port held on a node; entries of one node are chained. */
struct used_port {
    const struct fair_host_port *hp;
    const struct fair_pod *pod;
    int32_t next; /* -1: end */
    bool dead;    /* given back (a gang's rolled-back bind) */
};

struct fair_cons {
    const struct fair_snapshot *snap;
    /* Other resources: the names pending pods ask for, and per node rank
     * and name what is free (sfree[rank * nnames + k]). */
    const char **names;
    size_t nnames;
    int64_t *sfree;
    /* Set by reclaim around its node checks of a MIG pod: the MIG
     * resources are left to it, as it counts the victims' instances. */
    bool defer_mig;
    /* Host ports: per node rank the first entry (-1), entries in ports. */
    int32_t *port_head;
    struct used_port *ports;
    size_t nports, ports_cap;
    int32_t *rank_idx;          /* rank -> snapshot index */
    const int32_t *rank_of_idx; /* snapshot index -> rank (the placement's) */
    bool full;                  /* a port could not be recorded: refuse ports */
    struct fair_interpod *ip;   /* inter-pod (anti-)affinity; NULL: none */
    size_t nnodes, words;
    int32_t *pod_cls; /* per snapshot pod: class, -1 */
    struct cls *cls;
    size_t ncls;
    int32_t *cand; /* fair_cons_candidates */
    int64_t *sc;   /* 3 * nnodes: the three scores of the candidates */
    bool *ign;     /* nnodes */
    size_t *bytes;
};

static uint64_t hash_str(uint64_t h, const char *s)
{
    for (s = s ? s : ""; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;
}

static uint64_t hash_num(uint64_t h, uint64_t v)
{
    return (h ^ v) * 1099511628211ULL;
}

static uint64_t hash_affinity(const struct fair_node_affinity *a)
{
    uint64_t h = 14695981039346656037ULL;
    h = hash_num(h, a->nterms);
    for (size_t i = 0; i < a->nterms; i++) {
        const struct fair_node_term *t = &a->terms[i];
        h = hash_num(h, (uint64_t)t->nreqs << 1 | t->invalid);
        for (uint32_t j = 0; j < t->nreqs; j++) {
            const struct fair_node_req *r = &t->reqs[j];
            h = hash_num(h, (uint64_t)r->op << 32 | (uint64_t)r->field << 31 | r->nvalues);
            h = hash_str(h, r->key);
            for (uint32_t k = 0; k < r->nvalues; k++)
                h = hash_str(h, r->values[k]);
        }
    }
    return h;
}

/* Whether a and b have the same required terms. */
static bool same_required(const struct fair_node_affinity *a, const struct fair_node_affinity *b)
{
    if (a == b)
        return true;
    if (a->nterms != b->nterms)
        return false;
    for (size_t i = 0; i < a->nterms; i++) {
        const struct fair_node_term *s = &a->terms[i], *t = &b->terms[i];
        if (s->nreqs != t->nreqs || s->invalid != t->invalid)
            return false;
        for (uint32_t j = 0; j < s->nreqs; j++) {
            const struct fair_node_req *r = &s->reqs[j], *q = &t->reqs[j];
            if (r->op != q->op || r->field != q->field || r->nvalues != q->nvalues ||
                str_cmp(r->key, q->key))
                return false;
            for (uint32_t k = 0; k < r->nvalues; k++)
                if (str_cmp(r->values[k], q->values[k]))
                    return false;
        }
    }
    return true;
}

bool fair_node_affinity_same(const struct fair_node_affinity *a, const struct fair_node_affinity *b)
{
    bool ra = a && a->required, rb = b && b->required;
    if (!ra || !rb)
        return ra == rb;
    return same_required(a, b);
}

static void *cons_calloc(size_t *bytes, size_t n, size_t size)
{
    void *p = fair_calloc(n ? n : 1, size);
    if (p && bytes)
        *bytes += (n ? n : 1) * size;
    return p;
}

static bool aff_required(const struct fair_pod *p)
{
    return p->node_affinity && p->node_affinity->required;
}

static int32_t name_index(const struct fair_cons *c, const char *name)
{
    for (size_t k = 0; k < c->nnames; k++)
        if (str_cmp(c->names[k], name) == 0)
            return (int32_t)k;
    return -1;
}

static int64_t node_scalar(const struct fair_node *n, const char *name)
{
    for (size_t i = 0; i < n->nscalars; i++)
        if (str_cmp(n->scalars[i].name, name) == 0)
            return n->scalars[i].value;
    return 0;
}

static int add_port(struct fair_cons *c, int32_t rank, const struct fair_pod *p,
                    const struct fair_host_port *hp)
{
    if (c->nports == c->ports_cap) {
        size_t cap = c->ports_cap ? c->ports_cap * 2 : 64;
        struct used_port *np = fair_realloc(c->ports, cap * sizeof(*np));
        if (!np)
            return FAIR_ENOMEM;
        if (c->bytes)
            *c->bytes += (cap - c->ports_cap) * sizeof(*np);
        c->ports = np;
        c->ports_cap = cap;
    }
    c->ports[c->nports] = (struct used_port){hp, p, c->port_head[rank], false};
    c->port_head[rank] = (int32_t)c->nports++;
    return 0;
}

/* Resources and host ports: the names pending pods ask for, what is free
 * of them on each node, and the ports bound pods hold. */
static int init_room(struct fair_cons *c, size_t nscal, bool ports)
{
    const struct fair_snapshot *snap = c->snap;
    if (nscal) {
        c->names = cons_calloc(c->bytes, nscal, sizeof(*c->names));
        if (!c->names)
            return FAIR_ENOMEM;
        for (size_t i = 0; i < snap->npods; i++) {
            const struct fair_pod *p = &snap->pods[i];
            if (p->state != FAIR_POD_PENDING)
                continue;
            for (size_t k = 0; k < p->nscalars; k++)
                if (name_index(c, p->scalars[k].name) < 0)
                    c->names[c->nnames++] = p->scalars[k].name;
        }
        c->sfree = cons_calloc(c->bytes, c->nnodes * c->nnames, sizeof(*c->sfree));
        if (!c->sfree)
            return FAIR_ENOMEM;
        for (size_t r = 0; r < c->nnodes; r++)
            for (size_t k = 0; k < c->nnames; k++)
                c->sfree[r * c->nnames + k] =
                    node_scalar(&snap->nodes[c->rank_idx[r]], c->names[k]);
    }
    if (ports) {
        c->port_head = cons_calloc(c->bytes, c->nnodes, sizeof(*c->port_head));
        if (!c->port_head)
            return FAIR_ENOMEM;
        for (size_t r = 0; r < c->nnodes; r++)
            c->port_head[r] = -1;
    }
    for (size_t i = 0; i < snap->npods; i++) {
        const struct fair_pod *p = &snap->pods[i];
        if (p->state != FAIR_POD_BOUND || p->node < 0 || (size_t)p->node >= snap->nnodes)
            continue;
        if (p->nscalars || p->nhost_ports)
            fair_cons_commit(c, c->rank_of_idx[p->node], p, 1);
    }
    return c->full ? FAIR_ENOMEM : 0;
}

int fair_cons_new(struct fair_cons **out, const struct fair_snapshot *snap, const int32_t *rank_of,
                  size_t *bytes)
{
    int rc = FAIR_ENOMEM;
    size_t n = 0, nscal = 0;
    bool ports = false, scored = false;
    struct fair_cons *c = NULL;
    size_t cap = 0;
    uint64_t *keys = NULL;
    int32_t *slots = NULL;
    *out = NULL;
    for (size_t i = 0; i < snap->npods; i++) {
        const struct fair_pod *p = &snap->pods[i];
        if (p->state != FAIR_POD_PENDING)
            continue;
        n += aff_required(p);
        nscal += p->nscalars;
        ports |= p->nhost_ports > 0;
        scored |= (p->node_affinity && p->node_affinity->npreferred) || p->nspread_soft;
    }
    bool pods = false;
    for (size_t i = 0; i < snap->npods && !pods; i++)
        pods = snap->pods[i].pod_affinity != NULL || snap->pods[i].nspread > 0 ||
               snap->pods[i].nspread_soft > 0;
    if (n == 0 && nscal == 0 && !ports && !pods && !scored)
        return 0;
    c = cons_calloc(bytes, 1, sizeof(*c));
    if (!c)
        goto out;
    c->snap = snap;
    c->nnodes = snap->nnodes;
    c->words = (snap->nnodes + 63) / 64;
    c->bytes = bytes;
    c->rank_of_idx = rank_of;
    c->rank_idx = cons_calloc(bytes, snap->nnodes, sizeof(*c->rank_idx));
    if (!c->rank_idx)
        goto out;
    for (size_t i = 0; i < snap->nnodes; i++)
        c->rank_idx[rank_of[i]] = (int32_t)i;
    if ((nscal || ports) && init_room(c, nscal, ports))
        goto out;
    if (pods && fair_interpod_new(&c->ip, snap, c->rank_idx, rank_of, bytes))
        goto out;
    c->pod_cls = cons_calloc(bytes, snap->npods, sizeof(*c->pod_cls));
    c->cls = cons_calloc(bytes, n, sizeof(*c->cls));
    c->cand = cons_calloc(bytes, snap->nnodes, sizeof(*c->cand));
    c->sc = cons_calloc(bytes, 3 * snap->nnodes, sizeof(*c->sc));
    c->ign = cons_calloc(bytes, snap->nnodes, sizeof(*c->ign));
    if (!c->cand || !c->sc || !c->ign)
        goto out;
    for (cap = 16; cap < 2 * n; cap *= 2)
        ;
    keys = fair_calloc(cap, sizeof(*keys));
    slots = fair_calloc(cap, sizeof(*slots));
    if (!c->pod_cls || !c->cls || !keys || !slots)
        goto out;
    for (size_t s = 0; s < cap; s++)
        slots[s] = -1;
    /* Classes by content: open addressing on the hash, equal content
     * compared in full. */
    for (size_t i = 0; i < snap->npods; i++) {
        const struct fair_pod *p = &snap->pods[i];
        c->pod_cls[i] = -1;
        if (p->state != FAIR_POD_PENDING || !aff_required(p))
            continue;
        uint64_t h = hash_affinity(p->node_affinity);
        size_t s = (size_t)h & (cap - 1);
        while (slots[s] >= 0 &&
               (keys[s] != h || !same_required(c->cls[slots[s]].a, p->node_affinity)))
            s = (s + 1) & (cap - 1);
        if (slots[s] < 0) {
            slots[s] = (int32_t)c->ncls;
            keys[s] = h;
            c->cls[c->ncls++].a = p->node_affinity;
        }
        c->pod_cls[i] = slots[s];
    }
    *out = c;
    c = NULL;
    rc = 0;
out:
    fair_free(keys);
    fair_free(slots);
    fair_cons_free(c);
    return rc;
}

void fair_cons_free(struct fair_cons *c)
{
    if (!c)
        return;
    for (size_t i = 0; i < c->ncls; i++)
        fair_free(c->cls[i].nodes);
    fair_free(c->cls);
    fair_free(c->pod_cls);
    fair_free(c->rank_idx);
    fair_free(c->names);
    fair_free(c->sfree);
    fair_free(c->port_head);
    fair_free(c->ports);
    fair_free(c->cand);
    fair_free(c->sc);
    fair_free(c->ign);
    fair_interpod_free(c->ip);
    fair_free(c);
}

/* The class's nodes, computed on first use; NULL when out of memory (the
 * caller then evaluates the terms directly). */
static const uint64_t *class_nodes(struct fair_cons *c, struct cls *k)
{
    if (k->nodes)
        return k->nodes;
    uint64_t *bits = cons_calloc(c->bytes, c->words, sizeof(*bits));
    if (!bits)
        return NULL;
    for (size_t r = 0; r < c->nnodes; r++)
        if (fair_node_affinity_match(k->a, &c->snap->nodes[c->rank_idx[r]]))
            bits[r >> 6] |= (uint64_t)1 << (r & 63);
    k->nodes = bits;
    return bits;
}

static bool is_any_ip(const char *ip)
{
    return !ip || !ip[0] || strcmp(ip, "0.0.0.0") == 0;
}

bool fair_host_port_conflict(const struct fair_host_port *a, const struct fair_host_port *b)
{
    if (a->port != b->port || a->protocol != b->protocol || a->port <= 0)
        return false;
    if (is_any_ip(a->host_ip) || is_any_ip(b->host_ip))
        return true;
    return strcmp(a->host_ip, b->host_ip) == 0;
}

/* Other resources and host ports of pod on node rank. */
static bool room_ok(const struct fair_cons *c, int32_t rank, const struct fair_pod *pod)
{
    for (size_t k = 0; k < pod->nscalars; k++) {
        int64_t want = pod->scalars[k].value;
        if (want <= 0 || (c->defer_mig && fair_mig_is_resource(pod->scalars[k].name)))
            continue;
        int32_t j = c->nnames ? name_index(c, pod->scalars[k].name) : -1;
        int64_t have = j >= 0
                           ? c->sfree[(size_t)rank * c->nnames + (size_t)j]
                           : node_scalar(&c->snap->nodes[c->rank_idx[rank]], pod->scalars[k].name);
        if (want > have)
            return false;
    }
    if (pod->nhost_ports && c->full)
        return false;
    if (pod->nhost_ports && c->port_head)
        for (int32_t e = c->port_head[rank]; e >= 0; e = c->ports[e].next) {
            if (c->ports[e].dead)
                continue;
            for (size_t k = 0; k < pod->nhost_ports; k++)
                if (fair_host_port_conflict(&pod->host_ports[k], c->ports[e].hp))
                    return false;
        }
    return true;
}

void fair_cons_defer_mig(struct fair_cons *c, bool on)
{
    if (c)
        c->defer_mig = on;
}

int64_t fair_cons_scalar_free(const struct fair_cons *c, int32_t rank, const char *name)
{
    if (!c)
        return 0;
    int32_t j = c->nnames ? name_index(c, name) : -1;
    return j >= 0 ? c->sfree[(size_t)rank * c->nnames + (size_t)j]
                  : node_scalar(&c->snap->nodes[c->rank_idx[rank]], name);
}

bool fair_cons_pod_constrained(const struct fair_cons *c, const struct fair_pod *pod)
{
    return fair_cons_constrained(pod) || (c && fair_interpod_touches(c->ip, pod));
}

bool fair_cons_node_ok(struct fair_cons *c, const struct fair_snapshot *snap, int32_t rank,
                       int32_t node, const struct fair_pod *pod)
{
    if (!fair_cons_pod_constrained(c, pod))
        return true;
    if (c && c->ip && !fair_interpod_ok(c->ip, rank, pod))
        return false;
    if ((pod->nscalars || pod->nhost_ports) && c && !room_ok(c, rank, pod))
        return false;
    if (!c && pod->nscalars) {
        /* No state (a pod from outside the snapshot): allocatable only. */
        for (size_t k = 0; k < pod->nscalars; k++)
            if (pod->scalars[k].value > node_scalar(&snap->nodes[node], pod->scalars[k].name))
                return false;
    }
    if (!aff_required(pod))
        return true;
    if (c && pod >= snap->pods && pod < snap->pods + snap->npods) {
        int32_t k = c->pod_cls[pod - snap->pods];
        const uint64_t *bits = k >= 0 ? class_nodes(c, &c->cls[k]) : NULL;
        if (bits)
            return (bits[rank >> 6] >> (rank & 63)) & 1;
    }
    return fair_node_affinity_match(pod->node_affinity, &snap->nodes[node]);
}

void fair_cons_commit(struct fair_cons *c, int32_t rank, const struct fair_pod *pod, int sign)
{
    if (!c)
        return;
    fair_interpod_commit(c->ip, rank, pod, sign);
    for (size_t k = 0; c->nnames && k < pod->nscalars; k++) {
        int32_t j = name_index(c, pod->scalars[k].name);
        if (j >= 0 && pod->scalars[k].value > 0)
            c->sfree[(size_t)rank * c->nnames + (size_t)j] -= sign * pod->scalars[k].value;
    }
    if (!c->port_head || pod->nhost_ports == 0)
        return;
    if (sign > 0) {
        for (size_t k = 0; k < pod->nhost_ports; k++)
            if (pod->host_ports[k].port > 0 && add_port(c, rank, pod, &pod->host_ports[k]))
                c->full = true; /* out of memory: no more binds of such pods */
        return;
    }
    for (int32_t e = c->port_head[rank]; e >= 0; e = c->ports[e].next)
        if (c->ports[e].pod == pod)
            c->ports[e].dead = true;
}

/* ---- scores ---------------------------------------------------------------- */

void fair_score_normalize_max(int64_t *s, size_t n)
{
    int64_t max = 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] > max)
            max = s[i];
    for (size_t i = 0; i < n; i++)
        s[i] = max > 0 ? FAIR_MAX_NODE_SCORE * s[i] / max : 0;
}

void fair_score_normalize_minmax(int64_t *s, size_t n)
{
    int64_t min = INT64_MAX, max = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        if (s[i] > max)
            max = s[i];
        if (s[i] < min)
            min = s[i];
    }
    for (size_t i = 0; i < n; i++)
        s[i] = max > min ? (int64_t)((double)FAIR_MAX_NODE_SCORE * (double)(s[i] - min) /
                                     (double)(max - min))
                         : 0;
}

void fair_score_normalize_spread(int64_t *s, const bool *ignored, size_t n)
{
    int64_t min = INT64_MAX, max = 0;
    for (size_t i = 0; i < n; i++) {
        if (ignored[i])
            continue;
        if (s[i] < min)
            min = s[i];
        if (s[i] > max)
            max = s[i];
    }
    for (size_t i = 0; i < n; i++) {
        if (ignored[i])
            s[i] = 0;
        else if (max == 0)
            s[i] = FAIR_MAX_NODE_SCORE;
        else
            s[i] = FAIR_MAX_NODE_SCORE * (max + min - s[i]) / max;
    }
}

bool fair_cons_scored(struct fair_cons *c, const struct fair_pod *pod)
{
    if (!c)
        return false;
    if (pod->node_affinity && pod->node_affinity->npreferred)
        return true;
    return fair_interpod_scored(c->ip, pod);
}

int32_t *fair_cons_candidates(struct fair_cons *c)
{
    return c->cand;
}

size_t fair_cons_best(struct fair_cons *c, const struct fair_pod *pod, const int32_t *ranks,
                      size_t n)
{
    if (n <= 1 || n > c->nnodes)
        return 0;
    int64_t *na = c->sc, *ipa = c->sc + n, *pts = c->sc + 2 * n;
    for (size_t i = 0; i < n; i++)
        na[i] =
            fair_node_affinity_score(pod->node_affinity, &c->snap->nodes[c->rank_idx[ranks[i]]]);
    fair_score_normalize_max(na, n);
    if (fair_interpod_affinity_score(c->ip, pod, ranks, n, ipa))
        return 0;
    fair_score_normalize_minmax(ipa, n);
    if (fair_interpod_spread_score(c->ip, pod, ranks, n, pts, c->ign))
        return 0;
    bool soft = pod->nspread_soft > 0;
    if (soft)
        fair_score_normalize_spread(pts, c->ign, n);
    size_t best = 0;
    int64_t top = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        int64_t t = FAIR_SCORE_WEIGHT * (na[i] + ipa[i] + (soft ? pts[i] : 0));
        if (t > top) {
            top = t;
            best = i;
        }
    }
    return best;
}
