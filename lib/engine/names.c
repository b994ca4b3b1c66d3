/* Names of engine enums, for messages, Events, metrics and the demo. */
#include "engine/engine.h"

const char *fair_res_name(enum fair_res r)
{
    switch (r) {
    case FAIR_RES_GPU:
        return "gpu";
    case FAIR_RES_CPU:
        return "cpu";
    case FAIR_RES_MEM:
        return "memory";
    default:
        return "?";
    }
}

const char *fair_pending_reason_str(enum fair_pending_reason r)
{
    switch (r) {
    case FAIR_PENDING_NONE:
        return "None";
    case FAIR_PENDING_UNKNOWN_QUEUE:
        return "UnknownQueue";
    case FAIR_PENDING_INVALID_QUEUE:
        return "InvalidQueue";
    case FAIR_PENDING_OVER_LIMIT:
        return "OverLimit";
    case FAIR_PENDING_OVER_GUARANTEE:
        return "NonPreemptibleOverGuarantee";
    case FAIR_PENDING_WAITING_RECLAIM:
        return "WaitingForReclaim";
    case FAIR_PENDING_NO_NODE_FITS:
        return "NoNodeFits";
    case FAIR_PENDING_GANG_INCOMPLETE:
        return "GangIncomplete";
    case FAIR_PENDING_GANG_NO_FIT:
        return "GangDoesNotFit";
    case FAIR_PENDING_FAIR_SHARE:
        return "QueueAtFairShare";
    case FAIR_PENDING_INVALID_POD:
        return "InvalidPod";
    case FAIR_PENDING_RECLAIM_HELD:
        return "ReclaimHeldBack";
    case FAIR_PENDING_NODE_HELD:
        return "WaitingForHeldNode";
    case FAIR_PENDING_LENDING_KEPT:
        return "LendingLimit";
    default:
        return "Unknown";
    }
}

const char *fair_evict_reason_str(enum fair_evict_reason r)
{
    switch (r) {
    case FAIR_EVICT_NONE:
        return "None";
    case FAIR_EVICT_RECLAIM:
        return "Reclaim";
    case FAIR_EVICT_PREEMPT:
        return "Preempt";
    case FAIR_EVICT_FAIR_SHARE:
        return "FairShare";
    default:
        return "Unknown";
    }
}
