#!/bin/sh
# Installs the Debian packages Fairshare needs, when they are missing. Runs
# apt-get as root, or through sudo.
#   install-deps.sh           build and run: compiler, CMake, the libraries
#                             (what `make build` and `make demo` need), and
#                             python3-yaml for the Helm chart's renderer
#                             (scripts/render-chart.py, ctest chart/render)
#   install-deps.sh browser   also Chromium, for the dashboard test
#                             (tests/integration/test_dashboard.c; `make test`)
#   install-deps.sh fuzz      also clang with libFuzzer (`make fuzz`)
#   install-deps.sh image     only the image tools: debootstrap, podman,
#                             buildah (`make image`)
# When another apt or dpkg (unattended-upgrades, a second terminal) holds the
# package lock, it says so and waits for it, up to INSTALL_DEPS_LOCK_WAIT
# seconds (default 300), instead of failing with apt's own error.
set -eu

PKGS="gcc libc6-dev make cmake pkg-config git ca-certificates openssl sqlite3 curl
libcurl4-openssl-dev libjansson-dev libyaml-dev libsqlite3-dev libevent-dev
libcmocka-dev libssl-dev python3 python3-yaml"
case "${1:-}" in
  "") ;;
  browser) PKGS="$PKGS chromium" ;;
  fuzz) PKGS="$PKGS clang libclang-rt-14-dev" ;;
  image) PKGS="debootstrap podman buildah git" ;;
  *) echo "install-deps: unknown set \"$1\" (use: browser, fuzz, image, or nothing)" >&2; exit 2 ;;
esac
wait_s="${INSTALL_DEPS_LOCK_WAIT:-300}"
case "$wait_s" in '' | *[!0-9]*) echo "install-deps: INSTALL_DEPS_LOCK_WAIT must be seconds" >&2; exit 2 ;; esac
retry_s="${INSTALL_DEPS_LOCK_RETRY:-5}"

missing=""
for p in $PKGS; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=""
elif command -v sudo >/dev/null 2>&1; then
  SUDO="sudo"
else
  echo "install-deps: missing packages:$missing" >&2
  echo "install-deps: run as root or install sudo, then retry" >&2
  exit 1
fi

errf=$(mktemp "${TMPDIR:-/tmp}/install-deps.XXXXXX")
trap 'rm -f "$errf"' EXIT

# apt_get ARGS...: apt-get, waiting for the package lock with a message.
# DPkg::Lock::Timeout makes apt >= 1.9.11 wait for dpkg's lock itself, but
# silently (-qq), and `apt-get update` takes the lists lock, which that
# option does not cover on every version: so apt waits retry_s seconds at a
# time, and a lock error is retried here, said once, until wait_s.
apt_get() {
  waited=0
  said=""
  while :; do
    # shellcheck disable=SC2086
    if $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout="$retry_s" "$@" \
      2>"$errf"; then
      grep -v '^W: ' "$errf" >&2 || true
      return 0
    fi
    if ! grep -q 'Could not get lock\|Unable to lock\|Unable to acquire the dpkg frontend lock' "$errf"; then
      cat "$errf" >&2
      echo "install-deps: apt-get $1 failed (above); fix that, then run make again" >&2
      return 1
    fi
    if [ "$waited" -ge "$wait_s" ]; then
      echo "install-deps: the apt/dpkg lock is still held after ${wait_s}s:" >&2
      grep 'lock' "$errf" | sed 's/^/  /' >&2
      echo "install-deps: wait for that process to finish (or see who holds it: ps aux | grep -e apt -e dpkg), then run make again" >&2
      return 1
    fi
    if [ -z "$said" ]; then
      holder=$(grep -o 'held by process [0-9]* ([^)]*)' "$errf" | head -n 1 || true)
      echo "install-deps: another package manager holds the apt/dpkg lock${holder:+ ($holder)}; waiting up to ${wait_s}s for it to finish..." >&2
      said=1
    fi
    sleep "$retry_s"
    waited=$((waited + retry_s))
  done
}

echo "install-deps: installing$missing"
apt_get update -qq
# shellcheck disable=SC2086
apt_get install -y -qq --no-install-recommends $missing >/dev/null
