#!/bin/sh
# Runs every benchmark in BUILD/bench in name order; each prints its figures.
set -eu
dir="${1:-build-bench}/bench"
for b in "$dir"/bench_*; do
  [ -x "$b" ] || continue
  echo "== $(basename "$b") =="
  "$b"
done
