#!/bin/sh
# make image: builds the container image from the project's Dockerfile with
# no registry. The Dockerfile's bases are Docker Hub's debian images, pinned
# by digest; here both stages start instead from a base made locally from
# Debian's own packages (debootstrap --variant=minbase), imported as
# localhost/debian:bookworm. buildah builds with --isolation chroot (podman
# run does not work in every sandbox: crun cannot set rlimits there).
#   sh scripts/image.sh [WORKDIR]     (root; WORKDIR default build-image)
# Env: DEBIAN_MIRROR (default http://deb.debian.org/debian), IMAGE (default
# localhost/fairshare:VERSION), REBUILD_BASE=1 to make the base again.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
work="${1:-$here/build-image}"
case "$work" in /*) ;; *) work="$here/$work" ;; esac
mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
base=localhost/debian:bookworm
version=$(sed -n 's/^project(fairshare VERSION \([0-9.]*\) .*/\1/p' "$here/CMakeLists.txt")
[ -n "$version" ] || { echo "image: no version in CMakeLists.txt" >&2; exit 1; }
image="${IMAGE:-localhost/fairshare:$version}"

if [ "$(id -u)" -ne 0 ]; then
  echo "image: debootstrap and buildah need root here; run: sudo make image" >&2
  exit 1
fi
for tool in debootstrap podman buildah; do
  command -v "$tool" >/dev/null 2>&1 || {
    echo "image: $tool is missing: sh scripts/install-deps.sh image" >&2
    exit 1
  }
done
mkdir -p "$work"

# ---- the base: Debian bookworm, minbase, from Debian's mirror ----------------
if [ -n "${REBUILD_BASE:-}" ] || ! podman image exists "$base"; then
  echo "== image: making $base with debootstrap ($mirror)"
  rm -rf "$work/rootfs"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 || {
    tail -n 20 "$work/debootstrap.log" >&2
    echo "image: debootstrap failed (log: $work/debootstrap.log)" >&2
    exit 1
  }
  # Slim, like Docker's debian:bookworm-slim which it stands in for: dpkg
  # leaves out documentation, manuals and translations (copyright files
  # stay), apt keeps no package caches, lists or translations, and apt is
  # pointed at the same mirror.
  r="$work/rootfs"
  cat >"$r/etc/dpkg/dpkg.cfg.d/fairshare-slim" <<'EOF'
# Written by Fairshare's scripts/image.sh: a slim image, as debian:*-slim.
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
  cat >"$r/etc/apt/apt.conf.d/fairshare-slim" <<'EOF'
// Written by Fairshare's scripts/image.sh: no caches in image layers.
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb || true"; };
Acquire::Languages "none";
EOF
  find "$r/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete 2>/dev/null || true
  rm -rf "$r/usr/share/man/"* "$r/usr/share/info/"* "$r/usr/share/lintian"
  find "$r/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} + 2>/dev/null || true
  rm -rf "$r/var/cache/apt/"*.bin "$r/var/cache/apt/archives/"*.deb "$r/var/lib/apt/lists/"*
  echo "deb $mirror bookworm main" >"$r/etc/apt/sources.list"
  tar -C "$work/rootfs" -c . | podman import - "$base" >/dev/null
  rm -rf "$work/rootfs"
fi

# ---- the Dockerfile, on that base ---------------------------------------------
# Both FROM lines name the local base instead of the pinned Hub images; the
# rest of the Dockerfile is used as it is.
sed -E "s#^FROM debian:bookworm-[^ ]* AS #FROM $base AS #" "$here/Dockerfile" >"$work/Containerfile"
grep -q "^FROM $base AS build" "$work/Containerfile" && grep -q "^FROM $base AS runtime" "$work/Containerfile" || {
  echo "image: the Dockerfile's FROM lines are not the expected debian:bookworm-* AS build/runtime" >&2
  exit 1
}
commit=$(git -C "$here" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
if ! git -C "$here" diff --quiet HEAD -- 2>/dev/null; then commit="$commit-dirty"; fi
epoch="${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}"
echo "== image: building $image (commit $commit)"
buildah bud --isolation chroot --layers=false -f "$work/Containerfile" \
  --build-arg FAIR_GIT_COMMIT="$commit" --build-arg SOURCE_DATE_EPOCH="$epoch" \
  -t "$image" "$here" >"$work/build.log" 2>&1 || {
  tail -n 30 "$work/build.log" >&2
  echo "image: buildah bud failed (log: $work/build.log)" >&2
  exit 1
}
size=$(podman image inspect --format '{{.Size}}' "$image")
echo "== image: $image, $((size / 1000000)) MB"
