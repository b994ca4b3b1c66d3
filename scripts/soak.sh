#!/bin/sh
# Long soak of the controller against the fake API server: runs the ctest
# case tests/integration/test_soak.c (two replicas with leader election,
# the leader killed with SIGKILL once per round of faults) with SOAK_SECONDS
# of churn (default 600) in the ASan build (build-asan/, leak and UB checks
# on), samples both controllers' RSS every 30 s, and prints a summary. The
# test itself checks the RSS against SOAK_RSS_MAX_MIB (its default depends
# on the build). Exits non-zero when the soak failed. See
# docs/reliability.md, "Soak".
#
#   sh scripts/soak.sh                          # 10 minutes, ASan build
#   SOAK_SECONDS=120 sh scripts/soak.sh          # shorter
#   SOAK_BUILD=build sh scripts/soak.sh          # the normal build
#   SOAK_SEED=7 sh scripts/soak.sh               # another random sequence
set -eu
cd "$(dirname "$0")/.."

SOAK_SECONDS=${SOAK_SECONDS:-600}
SOAK_BUILD=${SOAK_BUILD:-build-asan}
JOBS=${JOBS:-2}
export SOAK_SECONDS
export SOAK_SEED=${SOAK_SEED:-1}

if [ "$SOAK_BUILD" = build-asan ]; then
  cmake -S . -B "$SOAK_BUILD" -DCMAKE_BUILD_TYPE=Debug -DFAIR_SANITIZE=ON >/dev/null
else
  cmake -S . -B "$SOAK_BUILD" >/dev/null
fi
cmake --build "$SOAK_BUILD" -j "$JOBS" --target it_test_soak fairshare-controller fakekube \
  fairsharectl >/dev/null

bin=$SOAK_BUILD/tests/integration/it_test_soak
log=$(mktemp "${TMPDIR:-/tmp}/fairshare-soak.XXXXXX")
trap 'rm -f "$log"' EXIT INT TERM

echo "soak: build=$SOAK_BUILD seconds=$SOAK_SECONDS seed=$SOAK_SEED started=$(date -u +%FT%TZ)"
start=$(date +%s)
ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1} "$bin" >"$log" 2>&1 &
pid=$!
rss_min=""
rss_max=0
samples=""
while kill -0 "$pid" 2>/dev/null; do
  sleep 30
  # The controllers are children of the test process (restarted after
  # kill -9): one sample "a/b" per round, in MiB.
  sample=""
  for cpid in $(ps --ppid "$pid" -o pid=,comm= 2>/dev/null | awk '$2 ~ /fairshare-cont/ {print $1}'); do
    [ -r "/proc/$cpid/status" ] || continue
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$cpid/status" 2>/dev/null || true)
    [ -n "$rss" ] || continue
    sample="${sample:+$sample/}$((rss / 1024))"
    if [ -z "$rss_min" ] || [ "$rss" -lt "$rss_min" ]; then rss_min=$rss; fi
    if [ "$rss" -gt "$rss_max" ]; then rss_max=$rss; fi
  done
  [ -n "$sample" ] && samples="$samples $sample"
done
rc=0
wait "$pid" || rc=$?
end=$(date +%s)

grep '^soak:' "$log" || true
echo "soak: controller_rss_mib_samples_every_30s=[${samples# }] (both replicas)" \
  "min=$(( ${rss_min:-0} / 1024 )) max=$((rss_max / 1024))"
if [ "$rc" -eq 0 ]; then
  echo "soak: result=ok wall_seconds=$((end - start))"
else
  echo "soak: result=FAILED rc=$rc wall_seconds=$((end - start)); the end of its output:" >&2
  tail -n 60 "$log" >&2
fi
exit "$rc"
