/* Leader election on a coordination.k8s.io/v1 Lease, as client-go's
 * leaderelection package does it.
 *
 * States and transitions (all on the event loop, driven by a retry timer):
 *   FOLLOWER: every retry_ms, GET the Lease. If it does not exist, CREATE
 *     it; if its holder is empty or it has not changed for
 *     leaseDurationSeconds (measured on our own monotonic clock from when
 *     we last saw it change, never by comparing clocks), UPDATE it with us
 *     as holder (conditional on its resourceVersion: a 409 means someone
 *     else won; we re-read). Success -> LEADER (on_started_leading).
 *   LEADER: every retry_ms, renew (UPDATE renewTime, conditional). If no
 *     renewal has succeeded for renew_deadline_ms -> STOPPED
 *     (on_stopped_leading) before the lease (lease_ms) can expire, so that
 *     two leaders never act at once. The same when a read shows another
 *     holder. A leader that lost its lease stops campaigning, as
 *     client-go's elector returns: the program should exit (and be
 *     restarted) or create a new fair_leader.
 *   One attempt runs at a time: a tick that finds the previous attempt
 *     still in flight waits for it, unless it has been in flight for the
 *     renew deadline (then it is abandoned and a new GET starts).
 *   fair_leader_stop(): if LEADER, on_stopped_leading runs, then the Lease
 *     is released (holderIdentity cleared, leaseDurationSeconds 1, as
 *     client-go's ReleaseOnCancel) so the next candidate takes over fast;
 *     then the done callback runs.
 * Defaults: lease 15 s, renew deadline 10 s, retry 2 s. */
#ifndef FAIR_CACHE_LEADER_H
#define FAIR_CACHE_LEADER_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "kube/client.h"

struct fair_leader;

struct fair_leader_options {
    const char *ns;            /* Lease namespace; default the client's */
    const char *name;          /* Lease name; required */
    const char *identity;      /* default $POD_NAME, else the hostname */
    int64_t lease_ms;          /* default 15000 */
    int64_t renew_deadline_ms; /* default 10000; < lease_ms */
    int64_t retry_ms;          /* default 2000; < renew_deadline_ms */
};

struct fair_leader_callbacks {
    void (*on_started_leading)(void *ctx);
    void (*on_stopped_leading)(void *ctx);
    /* Optional: the observed holder changed (identity "" when none). */
    void (*on_new_leader)(const char *identity, void *ctx);
    void *ctx;
};

/* Strings in opts are copied. Does nothing until fair_leader_start().
 * c (borrowed; it must outlive the leader) should be a client of its own,
 * not the one that carries bulk work: requests of one client share its
 * connections, and a renewal queued behind binds for a connection can
 * miss the renew deadline (see kube/client.h; lib/ctl/controller.c makes
 * one from the same kubeconfig, with its request timeout at the renew
 * deadline). */
int fair_leader_new(struct fair_kclient *c, const struct fair_leader_options *opts,
                    const struct fair_leader_callbacks *cbs, struct fair_leader **out,
                    struct fair_error *err);
int fair_leader_start(struct fair_leader *l, struct fair_error *err);
/* Stops campaigning; releases the Lease if held, then calls done (may be
 * NULL) from the loop. Run the loop until done is called. */
void fair_leader_stop(struct fair_leader *l, void (*done)(void *ctx), void *ctx);
bool fair_leader_is_leader(const struct fair_leader *l);
/* Our identity. Borrowed. */
const char *fair_leader_identity(const struct fair_leader *l);
/* Frees without releasing (the Lease then expires on its own). */
void fair_leader_free(struct fair_leader *l);

#endif
