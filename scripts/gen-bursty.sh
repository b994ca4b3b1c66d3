#!/bin/sh
# Writes a synthetic bursty job list (the simulator's simple jobs CSV) for
# "does lending pay?": four teams whose demand comes and goes, so that one
# team's guarantee idles while another's pods queue. Deterministic for a
# seed on any POSIX awk (its own MINSTD generator, no srand/rand).
#
#   scripts/gen-bursty.sh [SEED] [HOURS] [LOAD] > jobs.csv
#
# Teams (each guaranteed a quarter of the 16 x 8-GPU cluster of
# tests/data/sim/nodes_16x8.csv, see bursty4_*.yaml):
#   day     submits from 09:00 to 17:00 each day, jobs of median 45 min
#   night   submits from 21:00 to 05:00, the same jobs
#   onoff   on and off in turns of random length (mean 6 h each), median 1 h
#   steady  submits all the time, longer jobs (median 2 h): it always wants
#           more than its guarantee, the borrower
# While on, each team offers about LOAD% of its guarantee (default 150; the
# steady team 5/6 of that); at 150 the cluster is offered about 75% of its
# GPUs over the day, at 250 about 125%. Job sizes: 1, 2,
# 4 or 8 GPUs (50/25/15/10%); run times log-normal (sigma 1), at most 24 h;
# 4 CPUs and 16 GiB per GPU.
set -eu
seed="${1:-1}"
hours="${2:-72}"
load="${3:-150}"
case "$seed$hours$load" in *[!0-9]*) echo "usage: $0 [SEED] [HOURS] [LOAD] (integers)" >&2; exit 2 ;; esac
awk -v seed="$seed" -v hours="$hours" -v load="$load" '
function rnd() { st = (st * 48271) % 2147483647; return st / 2147483647 }
function expo(mean) { return -mean * log(1 - rnd()) }
function lognorm(median,   u, v) {
    u = rnd(); v = rnd(); if (u < 1e-12) u = 1e-12
    return median * exp(sqrt(-2 * log(u)) * cos(6.283185307179586 * v))
}
function size(   x) { x = rnd(); return x < 0.5 ? 1 : x < 0.75 ? 2 : x < 0.9 ? 4 : 8 }
# on(t): whether team k submits at time t (seconds).
function on(k, t,   h) {
    h = (t % 86400) / 3600
    if (k == "day") return h >= 9 && h < 17
    if (k == "night") return h >= 21 || h < 5
    return 1
}
function emit(k, t, median,   g, d) {
    g = size(); d = lognorm(median)
    if (d > 86400) d = 86400
    if (d < 60) d = 60
    n[k]++
    printf "%s-%04d,%s,%.0f,%.0f,%d,%d,%dGi\n", k, n[k], k, t, d, g, 4 * g, 16 * g
}
BEGIN {
    st = (seed * 7919 + 12345) % 2147483647; if (st == 0) st = 1
    end = hours * 3600
    print "name,queue,submit_s,duration_s,gpu,cpu,memory"
    # rate (jobs per second while on) = offered GPUs / (mean GPUs x mean run)
    # mean GPUs 2.4; log-normal mean = median x e^0.5 = 1.65 x median.
    split("day night onoff steady", team, " ")
    med["day"] = 2700; med["night"] = 2700; med["onoff"] = 3600; med["steady"] = 7200
    off["day"] = 0.32 * load; off["night"] = off["day"]; off["onoff"] = off["day"]
    off["steady"] = off["day"] * 5 / 6
    for (i = 1; i <= 4; i++) {
        k = team[i]
        rate = off[k] / (2.4 * 1.65 * med[k])
        t = 0; ison = 1; sw = expo(21600)
        while (1) {
            t += expo(1 / rate)
            if (t >= end) break
            if (k == "onoff") {
                while (t >= sw) { ison = !ison; sw += expo(21600) }
                if (!ison) continue
            } else if (!on(k, t)) continue
            emit(k, t, med[k])
        }
    }
}' | { IFS= read -r h; echo "$h"; sort -t, -k3,3n -k1,1; }
