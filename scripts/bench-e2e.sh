#!/bin/sh
# Bind throughput and reclaim latency of fairshare-controller on a real API
# server (bench/bench_e2e.c). Without KUBECONFIG it starts ../shared/k8s's
# control plane with 125 simulated nodes x 8 GPUs and stops it on exit, also
# on failure or ^C; with KUBECONFIG it uses that cluster, which must be idle
# (the benchmark binds to every node and cordons all but two for a while).
#
# usage: sh scripts/bench-e2e.sh BUILD [bench_e2e flags: --json FILE, --rounds N, ...]
# env:   KUBECONFIG  an existing cluster instead of ../shared/k8s
#        K8S_HOME    state folder of ../shared/k8s's up.sh/down.sh (their default otherwise)
set -eu
repo=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-build-bench}
[ $# -gt 0 ] && shift
bench="$build/bench/bench_e2e"
ctl="$build/fairshare-controller"
for f in "$bench" "$ctl"; do
  if [ ! -x "$f" ]; then
    echo "bench-e2e: $f not found: build first (make bench-e2e builds $build/)" >&2
    exit 1
  fi
done
log() { echo "[bench-e2e] $*" >&2; }

k8s="$repo/../shared/k8s"
kubeconfig=${KUBECONFIG:-}
started=0
stop_plane() {
  if [ "$started" = 1 ]; then
    started=0
    log "stopping the control plane"
    bash "$k8s/down.sh" >&2 || log "down.sh failed; stop it by hand: bash $k8s/down.sh"
  fi
}
if [ -z "$kubeconfig" ]; then
  if [ ! -d "$k8s" ]; then
    echo "bench-e2e: no cluster: set KUBECONFIG, or provide $k8s (a control plane for tests)" >&2
    exit 1
  fi
  home=${K8S_HOME:-${TMPDIR:-/tmp}/fairshare-k8s}
  if [ -f "$home/leader.pid" ] && kill -0 "$(cat "$home/leader.pid")" 2>/dev/null; then
    # Someone else's: never benchmark on it (we cordon its nodes) or stop it.
    echo "bench-e2e: a control plane already runs in $home (pid $(cat "$home/leader.pid")):" \
      "stop it, use another K8S_HOME, or set KUBECONFIG to benchmark on it" >&2
    exit 1
  fi
  trap 'stop_plane' EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  started=1
  log "starting the control plane of $k8s (125 nodes x 8 GPUs)"
  kubeconfig=$(bash "$k8s/up.sh" 125 8 | tail -n 1)
  if [ ! -s "$kubeconfig" ]; then
    echo "bench-e2e: up.sh gave no kubeconfig (\"$kubeconfig\")" >&2
    exit 1
  fi
fi
log "cluster: $kubeconfig"
"$bench" --kubeconfig "$kubeconfig" --controller "$ctl" --crds "$repo/crds" "$@"
