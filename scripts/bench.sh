#!/bin/sh
# Runs every benchmark in BUILD/bench in name order; each prints its figures.
# bench_e2e needs a Kubernetes API server: `make bench-e2e` runs it.
set -eu
dir="${1:-build-bench}/bench"
for b in "$dir"/bench_*; do
  [ -x "$b" ] || continue
  case "$(basename "$b")" in bench_e2e) continue ;; esac
  echo "== $(basename "$b") =="
  "$b"
done
