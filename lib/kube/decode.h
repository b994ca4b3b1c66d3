/* JSON (jansson) to the plain structs of kube/objects.h. This is the only
 * place where Pod, Node, Project and Queue JSON is read; the rest of the
 * program sees the structs.
 *
 * Two kinds of failure:
 *  - the object is structurally unreadable (not an object, no
 *    metadata.name, a field of the wrong JSON type where the shape matters):
 *    the decoder fails with FAIR_EINVAL and a message naming the field;
 *  - the object is readable but a value is invalid (a bad quantity, a
 *    negative guarantee, a bad gang-size annotation, ...): the decoder
 *    succeeds and puts a message in the struct's `problem` field, so the
 *    controller can report it (Event, Invalid condition) and leave the
 *    object out of scheduling.
 *
 * Project and Queue decoders are also used by the simulator on YAML
 * manifests converted with base/yaml.h, so quantities are accepted as JSON
 * strings ("2.5", "16Gi") or JSON numbers (2, 2.5). */
#ifndef FAIR_KUBE_DECODE_H
#define FAIR_KUBE_DECODE_H

#include <jansson.h>
#include <stddef.h>

#include "base/error.h"
#include "kube/jsonfilter.h"
#include "kube/objects.h"

/* Well-known label and annotation names. */
#define FAIR_LABEL_QUEUE "fairshare.dev/queue"
#define FAIR_LABEL_PREEMPTIBLE "fairshare.dev/preemptible"
#define FAIR_ANN_GPU_FRACTION "fairshare.dev/gpu-fraction"
#define FAIR_ANN_GPU_DEVICES "fairshare.dev/gpu-devices"
#define FAIR_ANN_GPU_MODEL "fairshare.dev/gpu-model"
/* Set to "webhook" by the GPU env admission webhook (lib/httpd/webhook.h). */
#define FAIR_ANN_GPU_ENV "fairshare.dev/gpu-env"
/* Fairshare's own index of the GPU on its node that a fraction (or a
 * reservation pod) holds; written by the controller. */
#define FAIR_ANN_GPU_SLOT "fairshare.dev/gpu-slot"
/* The device a reservation pod was given ("GPU-<uuid>" or an index), as
 * fairshare-reserve read it from NVIDIA_VISIBLE_DEVICES. */
#define FAIR_ANN_RESERVED_DEVICE "fairshare.dev/reserved-device"
/* GPU memory instead of a fraction ("10Gi"), converted through the node
 * label nvidia.com/gpu.memory (MiB, as GPU feature discovery sets it). */
#define FAIR_ANN_GPU_MEMORY "fairshare.dev/gpu-memory"
#define FAIR_LABEL_GPU_MEMORY "nvidia.com/gpu.memory"
/* Nodes that enforce fractions' limits in the container: value "hami-core". */
#define FAIR_LABEL_GPU_ISOLATION "fairshare.dev/gpu-isolation"
/* Written at bind on such nodes, as HAMi-core reads its env
 * CUDA_DEVICE_MEMORY_LIMIT ("10240m") and CUDA_DEVICE_SM_LIMIT ("25"). */
#define FAIR_ANN_GPU_MEMORY_LIMIT "fairshare.dev/gpu-memory-limit"
#define FAIR_ANN_GPU_SM_LIMIT "fairshare.dev/gpu-sm-limit"
/* Label of reservation pods (value "true"). */
#define FAIR_LABEL_RESERVATION "fairshare.dev/reservation"
/* Longest reserved-device value kept. */
#define FAIR_RESERVED_DEVICE_MAX 128
#define FAIR_ANN_GANG "fairshare.dev/gang"
#define FAIR_ANN_GANG_SIZE "fairshare.dev/gang-size"
#define FAIR_ANN_SIM_DURATION "sim.fairshare.dev/duration-seconds"
#define FAIR_ANN_CHECKPOINT_INTERVAL "fairshare.dev/checkpoint-interval"
/* PodGroup membership: the scheduler-plugins label, Volcano's annotation. */
#define FAIR_LABEL_POD_GROUP "scheduling.x-k8s.io/pod-group"
#define FAIR_ANN_VC_GROUP "scheduling.k8s.io/group-name"
#define FAIR_ANN_PREEMPTION_NOTICE "fairshare.dev/preemption-notice"
/* Requeue of bare pods: the opt-out (a label or an annotation), and what the
 * controller writes on the pod it creates. */
#define FAIR_ANN_REQUEUE "fairshare.dev/requeue"
#define FAIR_ANN_REQUEUE_COUNT "fairshare.dev/requeue-count"
#define FAIR_ANN_REQUEUED_FROM "fairshare.dev/requeued-from"
/* The longest fairshare.dev/preemption-notice that parses (the controller
 * caps it lower, reclaim.maxPreemptionNotice). */
#define FAIR_PREEMPTION_NOTICE_MAX_MS (24LL * 3600 * 1000)
#define FAIR_REQUEUE_COUNT_MAX 1000000
#define FAIR_RES_NAME_GPU "nvidia.com/gpu"
#define FAIR_LABEL_GPU_PRODUCT "nvidia.com/gpu.product"

/* Limits on what one object may hold; more is a decode failure
 * (FAIR_ERANGE), since no real object comes close. */
#define FAIR_DECODE_MAX_ITEMS 1024 /* containers, tolerations, labels, ... */
#define FAIR_DECODE_MAX_STR 4096   /* any single string kept */
#define FAIR_GANG_SIZE_MAX 10000

/* Each decoder: on success *out is a new object the caller owns (free it
 * with the matching fair_k*_free()); on failure *out is NULL, the return
 * value is FAIR_EINVAL, FAIR_ERANGE or FAIR_ENOMEM and err names the
 * field. obj is borrowed. */
int fair_kpod_decode(const json_t *obj, struct fair_kpod **out, struct fair_error *err);
int fair_knode_decode(const json_t *obj, struct fair_knode **out, struct fair_error *err);
int fair_kproject_decode(const json_t *obj, struct fair_kproject **out, struct fair_error *err);
int fair_kqueue_decode(const json_t *obj, struct fair_kqueue **out, struct fair_error *err);
/* A v1 Namespace (name and labels). */
int fair_knamespace_decode(const json_t *obj, struct fair_knamespace **out, struct fair_error *err);

/* A PodGroup of either flavor; spec and status problems go to ->problem. */
int fair_kpodgroup_decode(const json_t *obj, enum fair_kpodgroup_flavor flavor,
                          struct fair_kpodgroup **out, struct fair_error *err);

/* metadata into a caller-owned fair_kmeta (released with
 * fair_kmeta_release()). metadata.name is required. */
int fair_kmeta_decode(const json_t *obj, struct fair_kmeta *m, struct fair_error *err);

/* A Kubernetes quantity given as a JSON string or number. milli: x1000
 * (GPU, CPU), else plain (bytes, counts). what names the field in err. */
int fair_kquantity_decode(const json_t *v, int milli, int64_t *out, const char *what,
                          struct fair_error *err);

/* A table of the decodable kinds, so that generic code (the informer, the
 * store) can hold any of them as `void *`. Every struct starts with its
 * struct fair_kmeta, so fair_kobj_meta() works on all of them. */
struct fair_ktype {
    const char *kind; /* "Pod", "Node", "Project", "Queue" */
    int (*decode)(const json_t *obj, void **out, struct fair_error *err);
    void (*free)(void *obj);
    /* The fields decode() reads, for fair_json_parse_filtered(): watch
     * events are parsed through it (NULL: the whole object). Also keeps
     * the fields of a Status, for ERROR events. */
    const struct fair_jfield *filter;
};

extern const struct fair_ktype fair_ktype_pod;
extern const struct fair_ktype fair_ktype_node;
extern const struct fair_ktype fair_ktype_namespace;
extern const struct fair_ktype fair_ktype_project;
extern const struct fair_ktype fair_ktype_queue;
extern const struct fair_ktype fair_ktype_sp_podgroup; /* "PodGroup", scheduling.x-k8s.io */
extern const struct fair_ktype fair_ktype_vc_podgroup; /* "PodGroup", scheduling.volcano.sh */
extern const struct fair_ktype fair_ktype_pvc;
extern const struct fair_ktype fair_ktype_pv;
extern const struct fair_ktype fair_ktype_storageclass;

/* The annotation the volume binder writes on a claim of a
 * WaitForFirstConsumer class: the node its provisioner must serve. */
#define FAIR_ANN_SELECTED_NODE "volume.kubernetes.io/selected-node"
#define FAIR_NO_PROVISIONER "kubernetes.io/no-provisioner"

int fair_kpvc_decode(const json_t *obj, struct fair_kpvc **out, struct fair_error *err);
int fair_kpv_decode(const json_t *obj, struct fair_kpv **out, struct fair_error *err);
int fair_ksc_decode(const json_t *obj, struct fair_ksc **out, struct fair_error *err);

static inline struct fair_kmeta *fair_kobj_meta(void *obj)
{
    return (struct fair_kmeta *)obj;
}

/* The skeleton of an object: the fields that name it and place it, read
 * from any object, also one too large or too malformed to decode (see
 * kube/liststream.h). Every field may be NULL (absent, or not a string of
 * at most FAIR_DECODE_MAX_STR bytes). Release with
 * fair_kskeleton_release(). */
struct fair_kskeleton {
    char *uid;
    char *namespace_;
    char *name;
    char *resource_version;
    char *node_name;      /* spec.nodeName (pods) */
    char *scheduler_name; /* spec.schedulerName (pods) */
    char *phase;          /* status.phase (pods) */
};

/* The fields fair_kskeleton_decode() reads, for fair_json_parse_filtered()
 * and the list stream. */
extern const struct fair_jfield fair_kskeleton_filter[];

/* obj (borrowed, may be NULL or not an object: then everything is NULL)
 * into sk. Returns 0 or FAIR_ENOMEM. */
int fair_kskeleton_decode(const json_t *obj, struct fair_kskeleton *sk);
void fair_kskeleton_release(struct fair_kskeleton *sk);

/* Kubernetes' Status object (the body of every API error). */
struct fair_kstatus {
    int code;        /* HTTP code in the Status (0 when absent) */
    char reason[64]; /* "NotFound", "Conflict", "TooManyRequests", ... */
    char message[384];
};

/* Reads a Status object; returns FAIR_EINVAL when obj is not one (kind
 * missing or not "Status"). */
int fair_kstatus_decode(const json_t *obj, struct fair_kstatus *st);

/* The FAIR_E* code for an HTTP status: 404 FAIR_ENOTFOUND, 409
 * FAIR_ECONFLICT, 410 FAIR_EGONE, 429 FAIR_ETOOMANY, 401/403 FAIR_EHTTP,
 * 2xx 0, everything else FAIR_EHTTP. */
int fair_khttp_code(long http_status);

#endif
