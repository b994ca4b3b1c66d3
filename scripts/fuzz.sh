#!/bin/sh
# Builds the libFuzzer targets (tests/fuzz/fuzz_*.c) with clang in
# build-fuzz/ and runs each for FUZZ_SECONDS (default 60) on a copy of its
# seed corpus, so that the repository is never modified. Prints one summary
# line per target and exits non-zero when any target crashed; the crashing
# input is kept under build-fuzz/fuzz-artifacts/<target>/.
#
#   FUZZ_SECONDS=300 sh scripts/fuzz.sh                  # longer runs
#   FUZZ_TARGETS="fuzz_yaml fuzz_time" sh scripts/fuzz.sh  # some targets
#   FUZZ_KEEP=/tmp/corpora sh scripts/fuzz.sh            # keep grown corpora
set -eu
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${FUZZ_SECONDS:-60}
BUILD=${FUZZ_BUILD:-build-fuzz}
CC_FUZZ=${FUZZ_CC:-clang}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
DEFAULT_MAX_LEN=4096

if ! command -v "$CC_FUZZ" >/dev/null 2>&1; then
  echo "fuzz: $CC_FUZZ not found; run 'sh scripts/install-deps.sh fuzz' (or 'make fuzz')" >&2
  exit 2
fi

cmake -S . -B "$BUILD" -DCMAKE_C_COMPILER="$CC_FUZZ" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFAIR_FUZZ=ON >/dev/null
cmake --build "$BUILD" -j "$JOBS" --target fuzz_targets >/dev/null

if [ -n "${FUZZ_TARGETS:-}" ]; then
  targets=$FUZZ_TARGETS
else
  targets=$(for f in tests/fuzz/fuzz_*.c; do basename "$f" .c; done)
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/fairshare-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

failed=0
for t in $targets; do
  src=tests/fuzz/$t.c
  bin=$BUILD/fuzz/$t
  if [ ! -f "$src" ] || [ ! -x "$bin" ]; then
    echo "fuzz: target=$t result=missing (no $src or $bin)" >&2
    failed=1
    continue
  fi
  # Each target states its input cap in its header: "fuzz-max-len: N".
  max_len=$(sed -n 's/.*fuzz-max-len: *\([0-9][0-9]*\).*/\1/p' "$src" | head -n 1)
  max_len=${max_len:-$DEFAULT_MAX_LEN}
  corpus=$work/$t
  mkdir -p "$corpus"
  if [ -d "tests/fuzz/corpus/$t" ]; then
    cp tests/fuzz/corpus/"$t"/* "$corpus"/ 2>/dev/null || true
  fi
  dict=""
  if [ -f "tests/fuzz/$t.dict" ]; then
    dict="-dict=tests/fuzz/$t.dict"
  fi
  art=$BUILD/fuzz-artifacts/$t
  mkdir -p "$art"
  log=$work/$t.log
  rc=0
  # shellcheck disable=SC2086
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:symbolize=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    "$bin" -max_total_time="$FUZZ_SECONDS" -max_len="$max_len" -timeout=10 \
      -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" $dict \
      "$corpus" >"$log" 2>&1 || rc=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)
  rss=$(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | sed 's/cov: //')
  ft=$(grep -o 'ft: [0-9]*' "$log" | tail -n 1 | sed 's/ft: //')
  units=$(find "$corpus" -type f | wc -l | tr -d ' ')
  result=ok
  [ "$rc" -eq 0 ] || result=crash
  echo "fuzz: target=$t seconds=$FUZZ_SECONDS max_len=$max_len runs=${runs:-?}" \
    "exec_per_s=${speed:-?} cov=${cov:-?} ft=${ft:-?} corpus=$units peak_rss_mb=${rss:-?}" \
    "result=$result"
  if [ -n "${FUZZ_KEEP:-}" ]; then
    mkdir -p "$FUZZ_KEEP/$t"
    cp "$corpus"/* "$FUZZ_KEEP/$t"/ 2>/dev/null || true
  fi
  if [ "$rc" -ne 0 ]; then
    failed=1
    echo "fuzz: $t exited with $rc; last lines of its log:" >&2
    tail -n 40 "$log" >&2
    echo "fuzz: crashing inputs are in $art/" >&2
  fi
done
exit $failed
