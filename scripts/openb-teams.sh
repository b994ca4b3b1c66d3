#!/bin/sh
# Writes the Alibaba openb pod list as the simulator's simple jobs CSV with
# the pods split into teams by what they run, for "does lending pay?" on
# the real trace with teams whose demand differs:
#
#   scripts/openb-teams.sh [--by kind|qos] [POD_LIST] > jobs.csv
#
# --by kind (the default):
#   infer    pods that ask for a fraction of one GPU (shared inference)
#   single   pods of one whole GPU
#   multi    pods of 2 GPUs or more (distributed training)
#   cpu      pods without GPU (no GPU guarantee)
# --by qos, the pod list's own qos column:
#   ls       LS (latency-sensitive)
#   be       BE (best effort)
#   other    anything else (Burstable, Guaranteed, empty)
#
# The projects files tests/data/sim/kinds3_*.yaml and qos3_*.yaml
# guarantee the 414 GPUs of tests/data/sim/openb_nodes_every16.csv in
# proportion to each team's GPU-hours in openb_pod_list_default.csv
# (infer 57, single 296, multi 61; ls 333, other 70, be 11).
# Times are kept as the simulator reads the pod list itself: arrival at
# creation_time, a run of deletion_time - scheduled_time (or -
# creation_time when the pod was never scheduled), empty deletion: never
# ends. Every column but the team is the pod list's own.
set -eu
by=kind
if [ "${1:-}" = "--by" ]; then
    [ $# -ge 2 ] || { echo "$0: --by needs kind or qos" >&2; exit 2; }
    by="$2"
    shift 2
fi
case "$by" in kind | qos) ;; *) echo "$0: --by: \"$by\" is not kind or qos" >&2; exit 2 ;; esac
T="${1:-../shared/traces/alibaba-openb-2023/openb_pod_list_default.csv}"
[ -r "$T" ] || { echo "$0: cannot read $T" >&2; exit 2; }
awk -F, -v by="$by" '
NR == 1 {
    for (i = 1; i <= NF; i++) col[$i] = i
    cols = "name cpu_milli memory_mib num_gpu gpu_milli creation_time deletion_time scheduled_time"
    if (by == "qos") cols = cols " qos"
    for (k = split(cols, need, " "); k > 0; k--)
        if (!(need[k] in col)) { print "openb-teams: no column " need[k] > "/dev/stderr"; exit 2 }
    print "name,queue,submit_s,duration_s,gpu,cpu,memory"
    next
}
{
    n = $col["num_gpu"] + 0; g = $col["gpu_milli"] + 0
    cr = $col["creation_time"]; sc = $col["scheduled_time"]; de = $col["deletion_time"]
    from = (sc != "") ? sc : cr
    dur = (de != "") ? de - from : "inf"
    if (n == 0) { team = "cpu"; gpu = 0 }
    else if (n == 1 && g < 1000) { team = "infer"; gpu = g "m" }
    else if (n == 1) { team = "single"; gpu = 1 }
    else { team = "multi"; gpu = n }
    if (by == "qos") {
        q = $col["qos"]
        team = (q == "LS") ? "ls" : (q == "BE") ? "be" : "other"
    }
    print $col["name"] "," team "," cr "," dur "," gpu "," $col["cpu_milli"] "m," $col["memory_mib"] "Mi"
}' "$T"
