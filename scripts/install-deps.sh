#!/bin/sh
# Installs the Debian packages Fairshare builds, tests and benchmarks with,
# when they are missing. Runs apt-get as root, or through sudo.
set -eu

PKGS="gcc libc6-dev make cmake pkg-config git ca-certificates openssl sqlite3 curl
libcurl4-openssl-dev libjansson-dev libyaml-dev libsqlite3-dev libevent-dev
libcmocka-dev libssl-dev
chromium"
# Extra packages for a target (fuzz: clang with libFuzzer; browser: chromium).
case "${1:-}" in
  fuzz) PKGS="$PKGS clang libclang-rt-14-dev" ;;
  browser) PKGS="$PKGS chromium" ;;
esac

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
echo "install-deps: installing$missing"
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
