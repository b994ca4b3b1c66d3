#!/bin/sh
# make e2e: runs the end-to-end suite (BUILD/tests/e2e/e2e_*) against the
# cluster that KUBECONFIG names, one program at a time (they share the
# cluster's GPUs). What the cluster needs: docs/e2e.md. The admin program
# runs first, since it installs the CRDs the way an admin does.
set -eu
build="${1:-build}"
here=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in /*) ;; *) build="$here/$build" ;; esac
if [ -z "${KUBECONFIG:-}" ]; then
  echo "e2e: set KUBECONFIG to the cluster to test (docs/e2e.md says what it needs)" >&2
  exit 2
fi
dir="$build/tests/e2e"
if [ ! -x "$dir/e2e_admin" ]; then
  echo "e2e: $dir/e2e_admin is missing; build first (make build)" >&2
  exit 2
fi
progs="$dir/e2e_admin"
for p in "$dir"/e2e_*; do
  [ -x "$p" ] && [ "$p" != "$dir/e2e_admin" ] && progs="$progs $p"
done
failed=""
start=$(date +%s)
for p in $progs; do
  name=$(basename "$p")
  echo "== e2e: $name"
  if ! "$p"; then
    failed="$failed $name"
  fi
done
took=$(( $(date +%s) - start ))
if [ -n "$failed" ]; then
  echo "e2e: FAILED:$failed (${took}s)" >&2
  exit 1
fi
echo "e2e: all passed on $KUBECONFIG (${took}s)"
