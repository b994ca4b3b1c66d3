/* Names of engine enums, for messages, Events and the demo. */
#include "engine/engine.h"

const char *fair_res_name(enum fair_res r)
{
    switch (r) {
    case FAIR_RES_GPU: return "gpu";
    case FAIR_RES_CPU: return "cpu";
    case FAIR_RES_MEM: return "memory";
    default: return "?";
    }
}
