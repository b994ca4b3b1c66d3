/* Integration-test helper: a Kubernetes API client (lib/kube) for a running
 * fake API server, as the tests of the client, the informer and leader
 * election set one up. */
#ifndef FAIR_TEST_HELPER_KCLIENT_H
#define FAIR_TEST_HELPER_KCLIENT_H

#include "helper_fakekube.h"

struct event_base;
struct fair_kclient;

/* A new client on base (borrowed; it must outlive the client) for f,
 * configured from f's kubeconfig; the caller frees *out with
 * fair_kclient_free(). Returns 0; -1 when the kubeconfig does not load
 * (its message is printed); or fair_kclient_new's FAIR_E* code. */
int fair_fake_kclient_new(struct fair_fake *f, struct event_base *base, struct fair_kclient **out);

#endif
