#!/bin/sh
# make test's e2e step: starts the real Kubernetes control plane of
# ../shared/k8s (2 simulated nodes x 8 GPUs, its own state folder), runs
# tests/e2e/run.sh against it and stops it, also on failure. Where that
# folder does not exist, it says so in one line and succeeds.
set -eu
build="${1:-build}"
here=$(cd "$(dirname "$0")/../.." && pwd)
k8s="$here/../shared/k8s"
if [ ! -x "$k8s/up.sh" ]; then
  echo "e2e: skipped: no real control plane at ../shared/k8s (run 'make e2e' with KUBECONFIG to test a cluster)"
  exit 0
fi
K8S_HOME="${E2E_K8S_HOME:-${TMPDIR:-/tmp}/fairshare-e2e-k8s}"
export K8S_HOME
# A plane left behind by an interrupted run is stopped first.
bash "$k8s/down.sh" >/dev/null 2>&1 || true
trap 'bash "$k8s/down.sh" >/dev/null 2>&1 || true' EXIT
trap 'exit 130' INT TERM
echo "== e2e: starting the real control plane (../shared/k8s/up.sh 2 8)"
if ! kc=$(bash "$k8s/up.sh" 2 8 2>"$K8S_HOME.up.log" | tail -n 1) || [ ! -s "$kc" ]; then
  echo "e2e: the control plane did not start:" >&2
  cat "$K8S_HOME.up.log" >&2
  exit 1
fi
rm -f "$K8S_HOME.up.log"
export KUBECONFIG="$kc"
export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
sh "$here/tests/e2e/run.sh" "$build"
