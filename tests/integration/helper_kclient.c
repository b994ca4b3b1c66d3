/* Integration-test helper: connects a lib/kube client to the fake API
 * server through the kubeconfig the server wrote (see helper_kclient.h). */
#include "helper_kclient.h"

#include "base/error.h"
#include "kube/client.h"
#include "kube/config.h"

#include <stdio.h>

int fair_fake_kclient_new(struct fair_fake *f, struct event_base *base, struct fair_kclient **out)
{
    struct fair_kconfig cfg;
    struct fair_error err = {0};
    if (fair_kconfig_load_kubeconfig(f->kubeconfig, NULL, &cfg, &err)) {
        fprintf(stderr, "%s\n", err.msg);
        return -1;
    }
    int rc = fair_kclient_new(base, &cfg, NULL, out, &err);
    fair_kconfig_release(&cfg);
    return rc;
}
