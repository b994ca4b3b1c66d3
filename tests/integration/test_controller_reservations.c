/* Fractional GPUs on real devices (issue 14, docs/fractions.md): with
 * fractions.reservations on, a GPU that holds fractions is held by a
 * reservation pod asking nvidia.com/gpu: 1, and the fractions are bound
 * with the device that pod was given.
 *
 * The fake API server's kubelet plays the device plugin: a pod asking for
 * nvidia.com/gpu gets distinct device UUIDs of its node (annotation
 * sim.fairshare.dev/nvidia-visible-devices, standing for the container's
 * NVIDIA_VISIBLE_DEVICES), or is refused (Failed, UnexpectedAdmissionError)
 * when too few are free. This test plays the container runtime: for every
 * running reservation pod it starts the real fairshare-reserve with the
 * env the runtime and the downward API would set, and stops it (SIGTERM)
 * when the pod is deleted. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "test_controller_common.h"

#define RESV_NS "fairshare-system"
#define VISIBLE "sim.fairshare.dev/nvidia-visible-devices"

/* ---- the simulated container runtime for reservation pods ---- */

struct rt_proc {
    char uid[64];
    pid_t pid;
    bool stopped;
    int status; /* exit status once stopped; -1: killed or died */
};

static struct rt_proc rt_procs[128];
static int rt_n;
static struct fair_fake *rt_fake;

static const char *ann_of(const json_t *p, const char *key)
{
    return json_string_value(
        json_object_get(json_object_get(json_object_get(p, "metadata"), "annotations"), key));
}

static struct rt_proc *rt_find(const char *uid)
{
    for (int i = 0; i < rt_n; i++)
        if (!strcmp(rt_procs[i].uid, uid))
            return &rt_procs[i];
    return NULL;
}

static void rt_spawn(const json_t *p)
{
    const char *uid = fair_fake_json_str(p, "metadata.uid");
    const char *name = fair_fake_json_str(p, "metadata.name");
    const char *dev = ann_of(p, VISIBLE);
    if (rt_n >= (int)(sizeof rt_procs / sizeof *rt_procs))
        fail_msg("too many reservation pods");
    struct rt_proc *r = &rt_procs[rt_n++];
    memset(r, 0, sizeof *r); /* the slot may hold a stopped process of an earlier test */
    snprintf(r->uid, sizeof r->uid, "%s", uid);
    char bin[512], log[600];
    snprintf(bin, sizeof bin, "%s/fairshare-reserve", FAIR_BIN_DIR);
    snprintf(log, sizeof log, "%s/reserve-%s.log", rt_fake->dir, name);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        setenv("NVIDIA_VISIBLE_DEVICES", dev, 1);
        setenv("POD_NAME", name, 1);
        setenv("POD_NAMESPACE", RESV_NS, 1);
        execl(bin, bin, "--kubeconfig", rt_fake->kubeconfig, (char *)NULL);
        _exit(127);
    }
    r->pid = pid;
}

static void rt_stop(struct rt_proc *r)
{
    int st = 0;
    kill(r->pid, SIGTERM);
    waitpid(r->pid, &st, 0);
    r->stopped = true;
    r->status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* One pass of the runtime: starts fairshare-reserve for the running
 * reservation pods that have their device, stops it for the deleted ones.
 * Returns true (for use inside WAIT_UNTIL expressions). */
static bool rt_step(void)
{
    json_t *l = list(rt_fake, "/api/v1/namespaces/" RESV_NS "/pods");
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *uid = fair_fake_json_str(p, "metadata.uid");
        const char *phase = fair_fake_json_str(p, "status.phase");
        bool deleting = json_object_get(json_object_get(p, "metadata"), "deletionTimestamp");
        struct rt_proc *r = rt_find(uid);
        if (!r && !deleting && phase && !strcmp(phase, "Running") && ann_of(p, VISIBLE))
            rt_spawn(p);
        else if (r && !r->stopped && deleting)
            rt_stop(r);
    }
    /* Pods gone altogether. */
    for (int k = 0; k < rt_n; k++) {
        bool present = false;
        json_array_foreach(json_object_get(l, "items"), i, p)
        {
            if (!strcmp(fair_fake_json_str(p, "metadata.uid"), rt_procs[k].uid))
                present = true;
        }
        if (!present && !rt_procs[k].stopped)
            rt_stop(&rt_procs[k]);
    }
    json_decref(l);
    return true;
}

static void rt_reset(struct fair_fake *f)
{
    for (int k = 0; k < rt_n; k++)
        if (!rt_procs[k].stopped)
            rt_stop(&rt_procs[k]);
    rt_n = 0;
    rt_fake = f;
}

static int rt_teardown(void **state)
{
    for (int k = 0; k < rt_n; k++)
        if (!rt_procs[k].stopped) {
            kill(rt_procs[k].pid, SIGKILL);
            waitpid(rt_procs[k].pid, NULL, 0);
            rt_procs[k].stopped = true;
        }
    rt_n = 0;
    return tc_teardown(state);
}

/* ---- helpers ---- */

/* The reservation pods that are not being deleted. */
static int count_reservations(struct fair_fake *f)
{
    json_t *l = list(f, "/api/v1/namespaces/" RESV_NS "/pods");
    int n = 0;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        if (!json_object_get(json_object_get(p, "metadata"), "deletionTimestamp"))
            n++;
    }
    json_decref(l);
    return n;
}

static int count_all_reservations(struct fair_fake *f)
{
    json_t *l = list(f, "/api/v1/namespaces/" RESV_NS "/pods");
    int n = (int)json_array_size(json_object_get(l, "items"));
    json_decref(l);
    return n;
}

/* The one live reservation pod's uid and reported device (malloc'd). */
static void the_reservation(struct fair_fake *f, char **uid, char **dev)
{
    json_t *l = list(f, "/api/v1/namespaces/" RESV_NS "/pods");
    json_t *items = json_object_get(l, "items");
    assert_int_equal(json_array_size(items), 1);
    json_t *p = json_array_get(items, 0);
    const char *lab = json_string_value(json_object_get(
        json_object_get(json_object_get(p, "metadata"), "labels"), "fairshare.dev/reservation"));
    assert_non_null(lab);
    assert_string_equal(lab, "true");
    *uid = strdup(fair_fake_json_str(p, "metadata.uid"));
    const char *d = ann_of(p, "fairshare.dev/reserved-device");
    assert_non_null(d);
    /* What fairshare-reserve wrote is what the device plugin gave it. */
    assert_string_equal(d, ann_of(p, VISIBLE));
    *dev = strdup(d);
    json_decref(l);
}

static char *pod_ann(struct fair_fake *f, const char *ns, const char *name, const char *key)
{
    json_t *p = get_pod(f, ns, name);
    const char *v = p ? ann_of(p, key) : NULL;
    char *r = v ? strdup(v) : NULL;
    json_decref(p);
    return r;
}

static bool pod_running(struct fair_fake *f, const char *ns, const char *name)
{
    json_t *p = get_pod(f, ns, name);
    const char *phase = p ? fair_fake_json_str(p, "status.phase") : NULL;
    bool ok = phase && !strcmp(phase, "Running");
    json_decref(p);
    return ok;
}

static void del_pod(struct fair_fake *f, const char *ns, const char *name)
{
    char path[256];
    long code = 0;
    snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", ns, name);
    assert_int_equal(fair_fake_request(f, "DELETE", path, NULL, &code, NULL), 0);
    assert_true(code == 200 || code == 202 || code == 404);
}

/* Starts the controller on f with reservations on (in RESV_NS), and waits
 * until it is ready. */
static void start_ctl(struct fair_fake *f, struct ctl *c, const char *tag)
{
    memset(c, 0, sizeof *c);
    config_write(c->config, sizeof c->config, f, tag,
                 "fractions:\n"
                 "  reservations: true\n"
                 "  reservationNamespace: " RESV_NS "\n"
                 "  reservationServiceAccount: \"\"\n");
    assert_int_equal(ctl_start(c, f, tag), 0);
    if (!WAIT_UNTIL(ctl_ready(c), WAIT_MS)) {
        ctl_dump_log(c, 40);
        fail_msg("controller not ready");
    }
}

static void setup(struct fair_fake *f, struct ctl *c, int nodes, int gpus, const char *tag)
{
    struct fair_fake_opts o = {
        .nodes = nodes, .gpus_per_node = gpus, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(f, &o), 0);
    rt_reset(f);
    const char *ns[] = {"team-a", RESV_NS, NULL};
    mk_namespaces(f, ns);
    char g[16];
    snprintf(g, sizeof g, "%d", nodes * gpus);
    mk_project(f, "a", g, "[\"team-a\"]", NULL);
    mk_queue(f, "qa", "a", g, 1);
    start_ctl(f, c, tag);
}

static bool has_reason(struct fair_fake *f, const char *name, const char *reason)
{
    return pod_condition_is(f, "team-a", name, "PodScheduled", reason);
}

/* Four quarters share one reservation's device; a whole-GPU pod gets the
 * other device; a second whole-GPU pod waits (the node's two devices are
 * the reservation's and the first pod's). When the quarters end, the
 * reservation is deleted (its fairshare-reserve stops cleanly on SIGTERM),
 * and the waiting pod gets the freed device. */
static void test_quarters_share_one_device(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup(&fake, &c, 1, 2, "quarters");
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "q-%d", i);
        mk_pod_full(&fake, "team-a", name, "qa", NULL, "0.25", NULL, NULL, 0);
    }
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 4, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the quarters were not bound");
    }
    assert_int_equal(count_all_reservations(&fake), 1);
    char *ruid, *dev;
    the_reservation(&fake, &ruid, &dev);
    assert_true(strncmp(dev, "GPU-", 4) == 0);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "q-%d", i);
        char *d = pod_ann(&fake, "team-a", name, "fairshare.dev/gpu-devices");
        assert_non_null(d);
        assert_string_equal(d, dev);
        free(d);
        d = pod_ann(&fake, "team-a", name, "fairshare.dev/gpu-slot");
        assert_non_null(d);
        free(d);
    }
    mk_pod_full(&fake, "team-a", "whole-1", "qa", "1", NULL, NULL, NULL, 0);
    assert_true(WAIT_UNTIL(rt_step() && pod_running(&fake, "team-a", "whole-1"), WAIT_MS));
    char *w = pod_ann(&fake, "team-a", "whole-1", VISIBLE);
    assert_non_null(w);
    assert_string_not_equal(w, dev);
    free(w);
    mk_pod_full(&fake, "team-a", "whole-2", "qa", "1", NULL, NULL, NULL, 0);
    /* The queue holds the node's 2 GPUs: 4 x 0.25 on one device, 1 on the
     * other; the reservation itself is charged nothing. */
    if (!WAIT_UNTIL(rt_step() && (has_reason(&fake, "whole-2", "FairShare") ||
                                  has_reason(&fake, "whole-2", "NoNodeFits")),
                    WAIT_MS)) {
        char *why = pod_condition(&fake, "team-a", "whole-2", "PodScheduled", NULL);
        fail_msg("whole-2: PodScheduled reason %s, not FairShare or NoNodeFits",
                 why ? why : "(none)");
    }
    char *n2 = pod_node(&fake, "team-a", "whole-2", NULL);
    assert_string_equal(n2, "");
    free(n2);
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "q-%d", i);
        del_pod(&fake, "team-a", name);
    }
    if (!WAIT_UNTIL(rt_step() && count_all_reservations(&fake) == 0, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the reservation outlived its last fraction");
    }
    rt_step();
    assert_int_equal(rt_n, 1);
    assert_true(rt_procs[0].stopped);
    assert_int_equal(rt_procs[0].status, 0);
    assert_true(WAIT_UNTIL(pod_running(&fake, "team-a", "whole-2"), WAIT_MS));
    free(ruid);
    free(dev);
    rt_reset(&fake);
    stop_all(&fake, &c);
}

/* A restarted controller adopts the reservation it finds: a new fraction
 * joins the same device, no second reservation is made, and the
 * reservation still goes with its last fraction. */
static void test_restart_adopts(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup(&fake, &c, 1, 2, "adopt");
    mk_pod_full(&fake, "team-a", "h-0", "qa", NULL, "0.5", NULL, NULL, 0);
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 1, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the fraction was not bound");
    }
    char *ruid, *dev;
    the_reservation(&fake, &ruid, &dev);
    assert_int_equal(ctl_stop(&c), 0);
    assert_int_equal(ctl_start(&c, &fake, "adopt"), 0);
    assert_true(WAIT_UNTIL(ctl_ready(&c), WAIT_MS));
    mk_pod_full(&fake, "team-a", "h-1", "qa", NULL, "0.5", NULL, NULL, 0);
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 2, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the second fraction was not bound after the restart");
    }
    char *ruid2, *dev2;
    the_reservation(&fake, &ruid2, &dev2);
    assert_string_equal(ruid, ruid2);
    char *d = pod_ann(&fake, "team-a", "h-1", "fairshare.dev/gpu-devices");
    assert_non_null(d);
    assert_string_equal(d, dev);
    free(d);
    del_pod(&fake, "team-a", "h-0");
    /* One fraction left: the reservation stays. */
    assert_true(WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", -1) == 1, WAIT_MS));
    mk_pod_full(&fake, "team-a", "probe", "qa", NULL, "0.25", NULL, NULL, 0);
    assert_true(WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 2, WAIT_MS));
    assert_int_equal(count_all_reservations(&fake), 1);
    del_pod(&fake, "team-a", "h-1");
    del_pod(&fake, "team-a", "probe");
    if (!WAIT_UNTIL(rt_step() && count_all_reservations(&fake) == 0, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the adopted reservation outlived its last fraction");
    }
    free(ruid);
    free(dev);
    free(ruid2);
    free(dev2);
    rt_reset(&fake);
    stop_all(&fake, &c);
}

/* ---- the randomised invariant ---- */

/* No pod was refused by the kubelet for want of a device, no fraction's
 * device is a whole-GPU pod's, and fractions with the same slot of a node
 * see the same device, which a reservation pod of that node reported. */
static void check_devices(struct fair_fake *f, int step)
{
    json_t *all = list(f, "/api/v1/pods");
    json_t *items = json_object_get(all, "items");
    size_t i, j;
    json_t *p, *q;
    json_array_foreach(items, i, p)
    {
        const char *reason = fair_fake_json_str(p, "status.reason");
        if (reason && !strcmp(reason, "UnexpectedAdmissionError"))
            fail_msg("step %d: pod %s was refused a device: %s", step,
                     fair_fake_json_str(p, "metadata.name"),
                     fair_fake_json_str(p, "status.message"));
        const char *frac = ann_of(p, "fairshare.dev/gpu-fraction");
        const char *node = fair_fake_json_str(p, "spec.nodeName");
        const char *fdev = ann_of(p, "fairshare.dev/gpu-devices");
        if (!frac || !node || !*node || !pod_live_bound(p))
            continue;
        if (!fdev)
            fail_msg("step %d: fraction %s bound without a device", step,
                     fair_fake_json_str(p, "metadata.name"));
        bool reported = false;
        json_array_foreach(items, j, q)
        {
            const char *qnode = fair_fake_json_str(q, "spec.nodeName");
            if (!qnode || strcmp(qnode, node) || q == p)
                continue;
            const char *vis = ann_of(q, VISIBLE);
            const char *ns = fair_fake_json_str(q, "metadata.namespace");
            const char *phase = fair_fake_json_str(q, "status.phase");
            bool live = phase && strcmp(phase, "Succeeded") && strcmp(phase, "Failed");
            if (!strcmp(ns, RESV_NS)) {
                const char *rd = ann_of(q, "fairshare.dev/reserved-device");
                if (rd && !strcmp(rd, fdev) && live)
                    reported = true;
            } else if (vis && live && strstr(vis, fdev)) {
                fail_msg("step %d: fraction %s and whole-GPU pod %s share device %s", step,
                         fair_fake_json_str(p, "metadata.name"),
                         fair_fake_json_str(q, "metadata.name"), fdev);
            }
            const char *qfrac = ann_of(q, "fairshare.dev/gpu-fraction");
            const char *qslot = ann_of(q, "fairshare.dev/gpu-slot");
            const char *pslot = ann_of(p, "fairshare.dev/gpu-slot");
            const char *qdev = ann_of(q, "fairshare.dev/gpu-devices");
            if (qfrac && qslot && pslot && !strcmp(qslot, pslot) && pod_live_bound(q) && qdev &&
                strcmp(qdev, fdev))
                fail_msg("step %d: fractions %s and %s on slot %s see %s and %s", step,
                         fair_fake_json_str(p, "metadata.name"),
                         fair_fake_json_str(q, "metadata.name"), pslot, fdev, qdev);
        }
        if (!reported)
            fail_msg("step %d: fraction %s has device %s, which no reservation of %s holds", step,
                     fair_fake_json_str(p, "metadata.name"), fdev, node);
    }
    json_decref(all);
}

/* Bound pods of team-a are all Running (the kubelet has given them their
 * devices) and every running reservation has its fairshare-reserve. */
static bool settled(struct fair_fake *f)
{
    rt_step();
    json_t *l = list(f, "/api/v1/namespaces/team-a/pods");
    bool ok = true;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(l, "items"), i, p)
    {
        const char *phase = fair_fake_json_str(p, "status.phase");
        if (pod_live_bound(p) && (!phase || strcmp(phase, "Running")))
            ok = false;
    }
    json_decref(l);
    return ok;
}

static void test_random_never_share(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup(&fake, &c, 2, 4, "random");
    unsigned seed = (unsigned)time(NULL);
    const char *env = getenv("FAIR_TEST_SEED");
    if (env)
        seed = (unsigned)strtoul(env, NULL, 10);
    fprintf(stderr, "seed %u (FAIR_TEST_SEED)\n", seed);
    srand(seed);
    char names[256][32];
    int nnames = 0, created = 0;
    for (int step = 0; step < 120; step++) {
        int op = rand() % 10;
        if ((op < 7 || nnames == 0) && nnames < 256) {
            char *nm = names[nnames++];
            snprintf(nm, sizeof names[0], "p-%03d", created++);
            if (op < 4)
                mk_pod_full(&fake, "team-a", nm, "qa", NULL, rand() % 2 ? "0.25" : "0.5", NULL,
                            NULL, 0);
            else
                mk_pod_full(&fake, "team-a", nm, "qa", rand() % 4 ? "1" : "2", NULL, NULL, NULL, 0);
        } else {
            int k = rand() % nnames;
            del_pod(&fake, "team-a", names[k]);
            memmove(names[k], names[nnames - 1], sizeof names[0]);
            nnames--;
        }
        rt_step();
        if (step % 8 == 7) {
            if (!WAIT_UNTIL(settled(&fake), WAIT_MS))
                fail_msg("step %d: bound pods did not start", step);
            check_devices(&fake, step);
        }
    }
    for (int k = 0; k < nnames; k++)
        del_pod(&fake, "team-a", names[k]);
    if (!WAIT_UNTIL(rt_step() && count_all_reservations(&fake) == 0, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("%d reservations outlived their fractions", count_reservations(&fake));
    }
    for (int k = 0; k < rt_n; k++)
        assert_int_equal(rt_procs[k].status, 0);
    rt_reset(&fake);
    stop_all(&fake, &c);
}

/* On a node labelled fairshare.dev/gpu-isolation: hami-core with 80 GiB
 * GPUs (nvidia.com/gpu.memory: 81920), a fraction is bound with HAMi-core's
 * limits: half a GPU gets "40960m" and "50"; fairshare.dev/gpu-memory:
 * 20Gi is a quarter of the smallest GPU any node reports (the other node
 * reports none) and gets its own 20480m and 25 %. On the node without the
 * labels, no limits are written. The two pods for node-0000 are kept there
 * by a node selector on the label itself, not on the hostname: the limits
 * are written from the node as the controller last saw it, so a pod it may
 * place before its node watch has brought the label would be bound without
 * them (the label and the pods arrive on different watches). */
static void test_hami_limits(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup(&fake, &c, 2, 2, "hami");
    long code = 0;
    assert_int_equal(fair_fake_request_ct(
                         &fake, "PATCH", "/api/v1/nodes/node-0000", "application/merge-patch+json",
                         "{\"metadata\":{\"labels\":{\"fairshare.dev/gpu-isolation\":"
                         "\"hami-core\",\"nvidia.com/gpu.memory\":\"81920\"}}}",
                         &code, NULL),
                     0);
    assert_int_equal(code, 200);
    const char *on_hami = ",\"nodeSelector\":{\"fairshare.dev/gpu-isolation\":\"hami-core\"}";
    mk_pod_spec(&fake, "team-a", "half", "qa", NULL, "0.5", NULL, NULL, on_hami, 0);
    mk_pod_spec(&fake, "team-a", "mem", "qa", NULL, NULL, NULL,
                ",\"fairshare.dev/gpu-memory\":\"20Gi\"", on_hami, 0);
    mk_pod_spec(&fake, "team-a", "plain", "qa", NULL, "0.5", NULL, NULL,
                ",\"nodeSelector\":{\"kubernetes.io/hostname\":\"node-0001\"}", 0);
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 3, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the fractions were not bound");
    }
    struct {
        const char *pod, *mem, *sm;
    } want[] = {{"half", "40960m", "50"}, {"mem", "20480m", "25"}, {"plain", NULL, NULL}};
    for (size_t i = 0; i < 3; i++) {
        char *node = pod_node(&fake, "team-a", want[i].pod, NULL);
        assert_string_equal(node, want[i].mem ? "node-0000" : "node-0001");
        free(node);
        char *m = pod_ann(&fake, "team-a", want[i].pod, "fairshare.dev/gpu-memory-limit");
        char *sm = pod_ann(&fake, "team-a", want[i].pod, "fairshare.dev/gpu-sm-limit");
        if (want[i].mem) {
            assert_non_null(m);
            assert_string_equal(m, want[i].mem);
            assert_non_null(sm);
            assert_string_equal(sm, want[i].sm);
        } else {
            assert_null(m);
            assert_null(sm);
        }
        free(m);
        free(sm);
    }
    rt_reset(&fake);
    stop_all(&fake, &c);
}

/* A queue with spec.fractions.isolation: required: its fraction waits
 * (NoNodeFits) while no node is labelled fairshare.dev/gpu-isolation:
 * hami-core, then goes to the one that is, with its limits; the other
 * queue's fraction goes anywhere. */
static void test_isolation_required(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup(&fake, &c, 2, 2, "isolation");
    must_create(&fake, "/apis/fairshare.dev/v1alpha1/queues",
                "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Queue\",\"metadata\":"
                "{\"name\":\"qi\"},\"spec\":{\"project\":\"a\",\"guaranteed\":{\"gpu\":\"1\"},"
                "\"fractions\":{\"isolation\":\"required\"}}}");
    mk_pod_full(&fake, "team-a", "iso", "qi", NULL, "0.5", NULL, NULL, 0);
    mk_pod_full(&fake, "team-a", "free", "qa", NULL, "0.5", NULL, NULL, 0);
    /* Within its guarantee, no node fits: Unschedulable, the reason
     * cluster autoscalers act on (an isolating node would take it). */
    if (!WAIT_UNTIL(rt_step() && has_reason(&fake, "iso", "Unschedulable"), WAIT_MS)) {
        char *why = pod_condition(&fake, "team-a", "iso", "PodScheduled", NULL);
        ctl_dump_log(&c, 60);
        fail_msg("iso: PodScheduled reason %s, not Unschedulable", why ? why : "(none)");
    }
    assert_true(WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 1, WAIT_MS));
    long code = 0;
    assert_int_equal(fair_fake_request_ct(&fake, "PATCH", "/api/v1/nodes/node-0001",
                                          "application/merge-patch+json",
                                          "{\"metadata\":{\"labels\":{\"fairshare.dev/"
                                          "gpu-isolation\":\"hami-core\"}}}",
                                          &code, NULL),
                     0);
    assert_int_equal(code, 200);
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 2, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the isolated fraction was not bound once a node was labelled");
    }
    char *node = pod_node(&fake, "team-a", "iso", NULL);
    assert_string_equal(node, "node-0001");
    free(node);
    char *sm = pod_ann(&fake, "team-a", "iso", "fairshare.dev/gpu-sm-limit");
    assert_non_null(sm);
    assert_string_equal(sm, "50");
    free(sm);
    rt_reset(&fake);
    stop_all(&fake, &c);
}

/* Two projects, a (team-a, qa) and b (team-b, qb), on one node of two
 * GPUs; share: both set spec.fractions.shareAcrossProjects (before the
 * controller starts, so that it reads them with its first cycle). */
static void setup_tenants(struct fair_fake *f, struct ctl *c, bool share_a, bool share_b,
                          const char *tag)
{
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 2, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(f, &o), 0);
    rt_reset(f);
    const char *ns[] = {"team-a", "team-b", RESV_NS, NULL};
    mk_namespaces(f, ns);
    char body[512];
    const char *names[] = {"a", "b"};
    bool share[] = {share_a, share_b};
    for (int i = 0; i < 2; i++) {
        snprintf(body, sizeof body,
                 "{\"apiVersion\":\"fairshare.dev/v1alpha1\",\"kind\":\"Project\",\"metadata\":"
                 "{\"name\":\"%s\"},\"spec\":{\"namespaces\":[\"team-%s\"],\"guaranteed\":"
                 "{\"gpu\":\"1\"},\"fractions\":{\"shareAcrossProjects\":%s}}}",
                 names[i], names[i], share[i] ? "true" : "false");
        must_create(f, "/apis/fairshare.dev/v1alpha1/projects", body);
    }
    mk_queue(f, "qa", "a", "1", 1);
    mk_queue(f, "qb", "b", "1", 1);
    start_ctl(f, c, tag);
}

/* Quarters of projects a and b, alternating: the devices of a's and b's
 * fractions (fairshare.dev/gpu-devices, from the reservations) differ
 * unless both projects opted in, when all four share one reservation.
 * Apart, once a's device is full, a's next half finds no device (b's has
 * 0.5 free but is b's) and its condition says why. */
static void tenants_case(bool share_a, bool share_b)
{
    static struct fair_fake fake;
    static struct ctl c;
    bool shared = share_a && share_b;
    setup_tenants(&fake, &c, share_a, share_b, shared ? "tenants-shared" : "tenants-apart");
    char name[32];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "f-%d", i);
        mk_pod_full(&fake, i % 2 ? "team-b" : "team-a", name, i % 2 ? "qb" : "qa", NULL, "0.25",
                    NULL, NULL, 0);
    }
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 2 &&
                        count_pods(&fake, "team-b", 1) == 2,
                    WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("the quarters were not bound");
    }
    assert_int_equal(count_all_reservations(&fake), shared ? 1 : 2);
    char *dev[4];
    for (int i = 0; i < 4; i++) {
        snprintf(name, sizeof name, "f-%d", i);
        dev[i] = pod_ann(&fake, i % 2 ? "team-b" : "team-a", name, "fairshare.dev/gpu-devices");
        assert_non_null(dev[i]);
        assert_true(strncmp(dev[i], "GPU-", 4) == 0);
    }
    assert_string_equal(dev[0], dev[2]); /* a with a */
    assert_string_equal(dev[1], dev[3]); /* b with b */
    if (shared)
        assert_string_equal(dev[0], dev[1]);
    else
        assert_string_not_equal(dev[0], dev[1]);
    if (!shared) {
        /* a's device full; b's has 0.5 free, which a's next half may not use. */
        mk_pod_full(&fake, "team-a", "fill", "qa", NULL, "0.5", NULL, NULL, 0);
        assert_true(WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 3, WAIT_MS));
        mk_pod_full(&fake, "team-a", "big", "qa", NULL, "0.5", NULL, NULL, 0);
        if (!WAIT_UNTIL(rt_step() && pod_condition_message_has(&fake, "team-a", "big",
                                                               "PodScheduled", "other projects"),
                        WAIT_MS)) {
            char *msg = pod_condition_message(&fake, "team-a", "big", "PodScheduled");
            ctl_dump_log(&c, 60);
            fail_msg("big: PodScheduled message %s does not name the tenancy",
                     msg ? msg : "(none)");
        }
        char *n = pod_node(&fake, "team-a", "big", NULL);
        assert_string_equal(n, "");
        free(n);
    }
    for (int i = 0; i < 4; i++)
        free(dev[i]);
    rt_reset(&fake);
    stop_all(&fake, &c);
}

static void test_tenants_apart(void **state)
{
    (void)state;
    tenants_case(false, false);
}

/* Only one of the two opted in: still apart. */
static void test_tenants_one_opted_in(void **state)
{
    (void)state;
    tenants_case(true, false);
}

static void test_tenants_both_opted_in(void **state)
{
    (void)state;
    tenants_case(true, true);
}

static bool queue_gpu_in(struct fair_fake *f, const char *queue, const char *field, const char *a,
                         const char *b)
{
    return queue_gpu_is(f, queue, field, a) || queue_gpu_is(f, queue, field, b);
}

/* fairshare.dev/gpu-memory: 10Gi on a node labelled 80 GiB is charged
 * 0.125, on one labelled 40 GiB 0.25 (docs/fractions.md, "Asking for
 * memory instead of a fraction"). Each pod is kept on its node by a node
 * selector on the label itself, so the labels are known when it is placed. */
static void test_memory_per_node(void **state)
{
    (void)state;
    static struct fair_fake fake;
    static struct ctl c;
    setup(&fake, &c, 2, 1, "memory");
    static const char *const mib[] = {"81920", "40960"};
    for (int i = 0; i < 2; i++) {
        char path[64], body[160];
        long code = 0;
        snprintf(path, sizeof path, "/api/v1/nodes/node-000%d", i);
        snprintf(body, sizeof body,
                 "{\"metadata\":{\"labels\":{\"nvidia.com/gpu.memory\":\"%s\"}}}", mib[i]);
        assert_int_equal(fair_fake_request_ct(&fake, "PATCH", path, "application/merge-patch+json",
                                              body, &code, NULL),
                         0);
        assert_int_equal(code, 200);
    }
    const char *mem = ",\"fairshare.dev/gpu-memory\":\"10Gi\"";
    mk_pod_spec(&fake, "team-a", "m80", "qa", NULL, NULL, NULL, mem,
                ",\"nodeSelector\":{\"nvidia.com/gpu.memory\":\"81920\"}", 0);
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 1, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("m80 was not bound");
    }
    char *node = pod_node(&fake, "team-a", "m80", NULL);
    assert_string_equal(node, "node-0000");
    free(node);
    if (!WAIT_UNTIL(queue_gpu_in(&fake, "qa", "allocated", "125m", "0.125"), WAIT_MS)) {
        json_t *st = queue_status(&fake, "qa");
        char *dump = json_dumps(st, JSON_COMPACT);
        fail_msg("qa status after m80: %s", dump ? dump : "(none)");
    }
    mk_pod_spec(&fake, "team-a", "m40", "qa", NULL, NULL, NULL, mem,
                ",\"nodeSelector\":{\"nvidia.com/gpu.memory\":\"40960\"}", 0);
    if (!WAIT_UNTIL(rt_step() && count_pods(&fake, "team-a", 1) == 2, WAIT_MS)) {
        ctl_dump_log(&c, 60);
        fail_msg("m40 was not bound");
    }
    if (!WAIT_UNTIL(queue_gpu_in(&fake, "qa", "allocated", "375m", "0.375"), WAIT_MS)) {
        json_t *st = queue_status(&fake, "qa");
        char *dump = json_dumps(st, JSON_COMPACT);
        fail_msg("qa status after m40: %s", dump ? dump : "(none)");
    }
    rt_reset(&fake);
    stop_all(&fake, &c);
}

/* fakekube's device plugin alone (no controller): pods created bound get
 * distinct devices of their node, a pod asking for more than is free is
 * refused as the kubelet refuses it, the assignment survives a restart of
 * the fake, and a deleted pod's device is given again. */
static void bare_gpu_pod(struct fair_fake *f, const char *name, const char *gpus)
{
    char body[1024];
    snprintf(body, sizeof body,
             "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"%s\"},"
             "\"spec\":{\"nodeName\":\"node-0000\",\"terminationGracePeriodSeconds\":0,"
             "\"containers\":[{\"name\":\"m\",\"image\":\"x\",\"resources\":{\"limits\":"
             "{\"nvidia.com/gpu\":\"%s\"}}}]}}",
             name, gpus);
    must_create(f, "/api/v1/namespaces/team-a/pods", body);
}

static bool pod_phase_is(struct fair_fake *f, const char *name, const char *phase)
{
    json_t *p = get_pod(f, "team-a", name);
    const char *ph = p ? fair_fake_json_str(p, "status.phase") : NULL;
    bool ok = ph && !strcmp(ph, phase);
    json_decref(p);
    return ok;
}

static void assert_fake_restarted(struct fair_fake *f)
{
    assert_int_equal(fair_fake_stop(f), 0);
    assert_int_equal(fair_fake_restart(f), 0);
}

static void test_fake_device_plugin(void **state)
{
    (void)state;
    static struct fair_fake fake;
    struct fair_fake_opts o = {.nodes = 1, .gpus_per_node = 3, .kubelet = 1, .grace_seconds = -1};
    assert_int_equal(tc_fake_start(&fake, &o), 0);
    const char *ns[] = {"team-a", NULL};
    mk_namespaces(&fake, ns);
    bare_gpu_pod(&fake, "a", "2");
    assert_true(WAIT_UNTIL(pod_phase_is(&fake, "a", "Running"), WAIT_MS));
    char *va = pod_ann(&fake, "team-a", "a", VISIBLE);
    assert_non_null(va);
    assert_non_null(strchr(va, ','));
    assert_fake_restarted(&fake);
    bare_gpu_pod(&fake, "b", "1");
    assert_true(WAIT_UNTIL(pod_phase_is(&fake, "b", "Running"), WAIT_MS));
    char *vb = pod_ann(&fake, "team-a", "b", VISIBLE);
    assert_non_null(vb);
    assert_null(strstr(va, vb)); /* not one of a's two */
    bare_gpu_pod(&fake, "c", "1");
    assert_true(WAIT_UNTIL(pod_phase_is(&fake, "c", "Failed"), WAIT_MS));
    json_t *pc = get_pod(&fake, "team-a", "c");
    assert_string_equal(fair_fake_json_str(pc, "status.reason"), "UnexpectedAdmissionError");
    json_decref(pc);
    del_pod(&fake, "team-a", "b");
    assert_true(WAIT_UNTIL(count_pods(&fake, "team-a", -1) == 2, WAIT_MS));
    bare_gpu_pod(&fake, "d", "1");
    assert_true(WAIT_UNTIL(pod_phase_is(&fake, "d", "Running"), WAIT_MS));
    char *vd = pod_ann(&fake, "team-a", "d", VISIBLE);
    assert_non_null(vd);
    assert_string_equal(vd, vb); /* b's device, free again */
    free(va);
    free(vb);
    free(vd);
    assert_int_equal(fair_fake_stop(&fake), 0);
    fair_fake_release(&fake);
}

/* fairshare-reserve refuses what is not one device, or no pod identity,
 * with exit status 2 and a message, before any request. */
static int run_reserve_env(const char *dev, const char *name, const char *ns)
{
    char bin[512];
    snprintf(bin, sizeof bin, "%s/fairshare-reserve", FAIR_BIN_DIR);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0) {
            dup2(fd, 2);
            close(fd);
        }
        unsetenv("NVIDIA_VISIBLE_DEVICES");
        unsetenv("POD_NAME");
        unsetenv("POD_NAMESPACE");
        if (dev)
            setenv("NVIDIA_VISIBLE_DEVICES", dev, 1);
        if (name)
            setenv("POD_NAME", name, 1);
        if (ns)
            setenv("POD_NAMESPACE", ns, 1);
        execl(bin, bin, "--kubeconfig", "/nonexistent", (char *)NULL);
        _exit(127);
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_reserve_refuses_bad_env(void **state)
{
    (void)state;
    assert_int_equal(run_reserve_env(NULL, "p", "ns"), 2);
    assert_int_equal(run_reserve_env("", "p", "ns"), 2);
    assert_int_equal(run_reserve_env("all", "p", "ns"), 2);
    assert_int_equal(run_reserve_env("GPU-1,GPU-2", "p", "ns"), 2);
    assert_int_equal(run_reserve_env("GPU-1; rm -rf", "p", "ns"), 2);
    assert_int_equal(run_reserve_env("GPU-1", NULL, "ns"), 2);
    assert_int_equal(run_reserve_env("GPU-1", "p", ""), 2);
    /* Good env, unreadable kubeconfig: a usage error too. */
    assert_int_equal(run_reserve_env("GPU-1", "p", "ns"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve_refuses_bad_env),
        cmocka_unit_test_teardown(test_fake_device_plugin, rt_teardown),
        cmocka_unit_test_teardown(test_quarters_share_one_device, rt_teardown),
        cmocka_unit_test_teardown(test_restart_adopts, rt_teardown),
        cmocka_unit_test_teardown(test_random_never_share, rt_teardown),
        cmocka_unit_test_teardown(test_hami_limits, rt_teardown),
        cmocka_unit_test_teardown(test_isolation_required, rt_teardown),
        cmocka_unit_test_teardown(test_tenants_apart, rt_teardown),
        cmocka_unit_test_teardown(test_tenants_one_opted_in, rt_teardown),
        cmocka_unit_test_teardown(test_tenants_both_opted_in, rt_teardown),
        cmocka_unit_test_teardown(test_memory_per_node, rt_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
