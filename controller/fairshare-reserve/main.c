/* fairshare-reserve: the container of a reservation pod (docs/fractions.md).
 *
 * The pod asks for nvidia.com/gpu: 1, so the device plugin gives it one
 * real device and the container runtime names it in NVIDIA_VISIBLE_DEVICES
 * (a UUID such as "GPU-8f6c...", or an index). This program writes that
 * name into its own pod's annotation fairshare.dev/reserved-device (the
 * pod named by POD_NAME and POD_NAMESPACE, which the downward API sets),
 * retrying until the API server takes it, then sleeps until SIGTERM or
 * SIGINT, holding the device for the fractions the controller binds to it.
 *
 *   fairshare-reserve [--kubeconfig PATH] [--once]
 *
 * Without --kubeconfig: $KUBECONFIG, else the in-cluster service account.
 * --once: exit 0 after the annotation is written (tests).
 * Exit status: 0 on SIGTERM/SIGINT (or --once), 2 on bad usage or
 * environment (no device, no pod identity), 1 when the API cannot be
 * reached before a signal. */
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"
#include "kube/client.h"
#include "kube/config.h"
#include "kube/decode.h"

static volatile sig_atomic_t g_stop;

static void on_signal(int sig)
{
    (void)sig;
    g_stop = 1;
}

struct patch_state {
    struct event_base *base;
    bool done;
    int rc;
    long status;
    char msg[sizeof(struct fair_error){0}.msg];
};

static void on_patched(const struct fair_kresponse *resp, void *ctx)
{
    struct patch_state *st = ctx;
    st->done = true;
    st->rc = resp->rc;
    st->status = resp->status;
    snprintf(st->msg, sizeof st->msg, "%s", resp->rc ? resp->err.msg : "");
    event_base_loopbreak(st->base);
}

/* The device as the runtime names it: one entry, a UUID or an index. */
static int check_device(const char *dev)
{
    size_t n = strlen(dev);
    if (n == 0 || n > FAIR_RESERVED_DEVICE_MAX)
        return -1;
    if (strspn(dev, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.:-") != n)
        return -1;
    if (!strcmp(dev, "all") || !strcmp(dev, "none") || !strcmp(dev, "void"))
        return -1;
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: fairshare-reserve [--kubeconfig PATH] [--once]\n"
               "env: NVIDIA_VISIBLE_DEVICES (set by the container runtime), POD_NAME and "
               "POD_NAMESPACE (downward API)\n");
}

int main(int argc, char **argv)
{
    const char *kubeconfig = NULL;
    bool once = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kubeconfig") && i + 1 < argc) {
            kubeconfig = argv[++i];
        } else if (!strcmp(argv[i], "--once")) {
            once = true;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "fairshare-reserve: unknown argument %s\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    const char *dev = getenv("NVIDIA_VISIBLE_DEVICES");
    const char *name = getenv("POD_NAME");
    const char *ns = getenv("POD_NAMESPACE");
    if (!dev || check_device(dev)) {
        fprintf(stderr,
                "fairshare-reserve: NVIDIA_VISIBLE_DEVICES must name one device (a UUID or an "
                "index), got \"%.80s\"\n",
                dev ? dev : "(unset)");
        return 2;
    }
    if (!name || !*name || !ns || !*ns) {
        fprintf(stderr, "fairshare-reserve: POD_NAME and POD_NAMESPACE must be set (downward "
                        "API)\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    struct fair_error err = {0};
    struct fair_kconfig cfg;
    fair_kconfig_init(&cfg);
    if (fair_kconfig_load(kubeconfig, &cfg, &err)) {
        fprintf(stderr, "fairshare-reserve: %s\n", err.msg);
        fair_kconfig_release(&cfg);
        return 2;
    }
    struct event_base *base = event_base_new();
    struct fair_kclient *kc = NULL;
    if (!base || fair_kclient_new(base, &cfg, NULL, &kc, &err)) {
        fprintf(stderr, "fairshare-reserve: %s\n", base ? err.msg : "out of memory");
        fair_kconfig_release(&cfg);
        if (base)
            event_base_free(base);
        return 1;
    }
    json_t *patch =
        json_pack("{s:{s:{s:s}}}", "metadata", "annotations", FAIR_ANN_RESERVED_DEVICE, dev);
    char *text = patch ? json_dumps(patch, JSON_COMPACT) : NULL;
    json_decref(patch);
    int rc = 1;
    unsigned delay_s = 1;
    while (text && !g_stop) {
        struct patch_state st = {.base = base};
        if (fair_kclient_merge_patch(kc, &fair_kres_pods, ns, name, NULL, text, on_patched, &st,
                                     &err) == 0) {
            while (!st.done && !g_stop)
                event_base_loop(base, EVLOOP_ONCE);
        } else {
            snprintf(st.msg, sizeof st.msg, "%s", err.msg);
        }
        if (st.done && st.rc == 0) {
            fprintf(stderr, "fairshare-reserve: pod %s/%s holds device %s\n", ns, name, dev);
            rc = 0;
            break;
        }
        fprintf(stderr,
                "fairshare-reserve: annotating pod %s/%s failed (status %ld): %s; "
                "retrying in %us\n",
                ns, name, st.status, st.msg, delay_s);
        for (unsigned s = 0; s < delay_s && !g_stop; s++)
            sleep(1);
        if (delay_s < 30)
            delay_s *= 2;
    }
    free(text);
    fair_kclient_free(kc);
    event_base_free(base);
    fair_kconfig_release(&cfg);
    if (rc != 0)
        return g_stop ? 0 : 1;
    if (once)
        return 0;
    /* Hold the device until the pod is deleted. The signals are blocked
     * while g_stop is read, and sigsuspend() unblocks them and waits in one
     * step: a signal between the check and pause() would not have ended the
     * wait, and the pod would have hung until its grace period ran out. */
    sigset_t stop, old;
    sigemptyset(&stop);
    sigaddset(&stop, SIGTERM);
    sigaddset(&stop, SIGINT);
    sigprocmask(SIG_BLOCK, &stop, &old);
    while (!g_stop)
        sigsuspend(&old);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return 0;
}
