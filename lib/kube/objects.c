/* _free functions of the plain Kubernetes structs (kube/objects.h). Each
 * struct owns its strings and arrays. */
#include "kube/objects.h"
#include "base/alloc.h"

void fair_kmeta_release(struct fair_kmeta *m)
{
    if (!m)
        return;
    fair_free(m->uid);
    fair_free(m->namespace_);
    fair_free(m->name);
    fair_free(m->resource_version);
    m->uid = m->namespace_ = m->name = m->resource_version = NULL;
}

static void free_labels(struct fair_label *l, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        fair_free((char *)l[i].key);
        fair_free((char *)l[i].value);
    }
    fair_free(l);
}

void fair_kpod_free(struct fair_kpod *p)
{
    if (!p)
        return;
    fair_free(p->node_affinity);
    fair_free(p->sched_extra);
    fair_free(p->pod_affinity);
    fair_free(p->spread);
    fair_free(p->claims_mem);
    if (p->packed) {
        fair_free(p);
        return;
    }
    fair_kmeta_release(&p->meta);
    fair_free(p->scheduler_name);
    fair_free(p->node_name);
    fair_free(p->queue);
    fair_free(p->gpu_devices);
    fair_free(p->reserved_device);
    fair_free(p->gang);
    fair_free(p->gpu_model);
    fair_free(p->scheduled_reason);
    fair_free(p->disruption_reason);
    free_labels(p->node_selector, p->nnode_selector);
    free_labels(p->labels, p->nlabels);
    for (size_t i = 0; i < p->ntolerations; i++) {
        fair_free((char *)p->tolerations[i].key);
        fair_free((char *)p->tolerations[i].value);
    }
    fair_free(p->tolerations);
    fair_free(p->problem);
    fair_free(p->owner_uid);
    fair_free(p->owner_kind);
    fair_free(p->owner_name);
    fair_free(p);
}

void fair_knode_free(struct fair_knode *n)
{
    if (!n)
        return;
    fair_kmeta_release(&n->meta);
    fair_free(n->gpu_model);
    free_labels(n->labels, n->nlabels);
    for (size_t i = 0; i < n->ntaints; i++) {
        fair_free((char *)n->taints[i].key);
        fair_free((char *)n->taints[i].value);
    }
    fair_free(n->taints);
    fair_free(n->scalars);
    fair_free(n);
}

void fair_knamespace_free(struct fair_knamespace *n)
{
    if (!n)
        return;
    fair_kmeta_release(&n->meta);
    free_labels(n->labels, n->nlabels);
    fair_free(n);
}

void fair_kproject_free(struct fair_kproject *p)
{
    if (!p)
        return;
    fair_kmeta_release(&p->meta);
    fair_ktime_free(p->time);
    fair_free(p->team);
    fair_free(p->cost_center);
    for (size_t i = 0; i < p->nnamespaces; i++)
        fair_free(p->namespaces[i]);
    fair_free(p->namespaces);
    fair_free(p->default_queue);
    fair_free(p->problem);
    fair_free(p);
}

void fair_kpodgroup_free(struct fair_kpodgroup *g)
{
    if (!g)
        return;
    fair_kmeta_release(&g->meta);
    fair_free(g->phase);
    fair_free(g->condition_reason);
    fair_free(g->problem);
    fair_free(g);
}

void fair_kqueue_free(struct fair_kqueue *q)
{
    if (!q)
        return;
    fair_kmeta_release(&q->meta);
    fair_ktime_free(q->time);
    fair_free(q->project);
    fair_free(q->problem);
    fair_free(q);
}

void fair_kpvc_free(struct fair_kpvc *c)
{
    if (!c)
        return;
    fair_kmeta_release(&c->meta);
    fair_free(c->key);
    fair_free(c->volume_name);
    fair_free(c->storage_class);
    fair_free(c->selected_node);
    free_labels(c->selector, c->nselector);
    fair_free(c->selector_exprs);
    fair_free(c->problem);
    fair_free(c);
}

void fair_kpv_free(struct fair_kpv *v)
{
    if (!v)
        return;
    fair_kmeta_release(&v->meta);
    fair_free(v->node_affinity);
    fair_free(v->problem);
    fair_free(v->storage_class);
    fair_free(v->claim_ns);
    fair_free(v->claim_name);
    fair_free(v->claim_uid);
    free_labels(v->labels, v->nlabels);
    fair_free(v);
}

void fair_ksc_free(struct fair_ksc *c)
{
    if (!c)
        return;
    fair_kmeta_release(&c->meta);
    fair_free(c->provisioner);
    fair_free(c->allowed);
    fair_free(c->problem);
    fair_free(c);
}
