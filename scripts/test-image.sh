#!/bin/sh
# make test-image: checks the image `make image` built (root; buildah):
#   - it is configured to run as the numeric non-root user 65532:65532, with
#     the exec-form entrypoint fairshare-controller;
#   - fairshare-controller --version (this source's version) and --help, and
#     the kubectl plugin's `kubectl-fairshare version`, run in it as that user;
#   - that user can write nowhere in it but the ledger folder (and the
#     sticky /tmp), so it runs on a read-only root filesystem as the
#     Deployment asks (readOnlyRootFilesystem: true);
#   - it has no shell and no build tools;
# and prints its size.
set -eu

here=$(cd "$(dirname "$0")/.." && pwd)
version=$(sed -n 's/^project(fairshare VERSION \([0-9.]*\) .*/\1/p' "$here/CMakeLists.txt")
image="${IMAGE:-localhost/fairshare:$version}"
fail() { echo "test-image: FAIL: $*" >&2; exit 1; }
ok() { echo "test-image: ok: $*"; }

[ "$(id -u)" -eq 0 ] || fail "run as root (buildah)"
command -v buildah >/dev/null 2>&1 || fail "buildah is missing: sh scripts/install-deps.sh image"
buildah inspect --type image "$image" >/dev/null 2>&1 || fail "no image $image: run make image first"

user=$(buildah inspect --type image --format '{{.OCIv1.Config.User}}' "$image")
[ "$user" = "65532:65532" ] || fail "image user is \"$user\", not 65532:65532"
entry=$(buildah inspect --type image --format '{{.OCIv1.Config.Entrypoint}}' "$image")
[ "$entry" = '[/usr/local/bin/fairshare-controller]' ] || fail "entrypoint is $entry"
ok "runs as $user, entrypoint $entry"

ctr=$(buildah from --pull=false "$image")
mnt=""
cleanup() {
  [ -n "$mnt" ] && buildah umount "$ctr" >/dev/null 2>&1
  buildah rm "$ctr" >/dev/null 2>&1 || true
}
trap cleanup EXIT
run() { buildah run --isolation chroot --user 65532:65532 "$ctr" -- "$@"; }

out=$(run /usr/local/bin/fairshare-controller --version)
case "$out" in
  "fairshare-controller $version (commit "*", built "*")") ok "$out" ;;
  *) fail "fairshare-controller --version said: $out" ;;
esac
run /usr/local/bin/fairshare-controller --help | grep '^usage: fairshare-controller' >/dev/null ||
  fail "fairshare-controller --help"
ok "fairshare-controller --help"
out=$(run /usr/local/bin/kubectl-fairshare version)
case "$out" in "fairsharectl $version "*) ok "kubectl-fairshare version: $out" ;; *) fail "kubectl-fairshare version said: $out" ;; esac
# A wrong flag is refused with status 2, as on the host.
if run /usr/local/bin/fairshare-controller --no-such-flag >/dev/null 2>&1; then
  fail "fairshare-controller accepted --no-such-flag"
fi

mnt=$(buildah mount "$ctr")
# What uid 65532 could write: files it owns, and world-writable files or
# folders. Only the ledger folder may be there, besides symlinks, device
# nodes (a container runtime mounts its own /dev) and sticky folders such as
# /tmp (an emptyDir in the Deployment), where one cannot touch others' files.
writable=$(cd "$mnt" && find . -xdev ! -type l ! -type c \( -user 65532 -o -perm -0002 \) \
  ! \( -type d -perm -1000 \) ! -path ./var/lib/fairshare | head -n 20)
[ -z "$writable" ] || fail "writable by 65532 besides /var/lib/fairshare: $writable"
[ "$(stat -c %u "$mnt/var/lib/fairshare")" = 65532 ] || fail "/var/lib/fairshare is not 65532's"
grep -q 'readOnlyRootFilesystem: true' "$here/config/deployment.yaml" ||
  fail "config/deployment.yaml does not set readOnlyRootFilesystem"
ok "user 65532 can write only /var/lib/fairshare (the Deployment mounts the root read-only)"

for sh in sh dash bash rbash; do
  [ ! -e "$mnt/usr/bin/$sh" ] && [ ! -e "$mnt/bin/$sh" ] || fail "the image has a shell: $sh"
done
if run /bin/sh -c true >/dev/null 2>&1; then fail "/bin/sh runs in the image"; fi
for tool in gcc cc c99 make cmake ld as pkg-config; do
  [ ! -e "$mnt/usr/bin/$tool" ] || fail "the image has a build tool: $tool"
done
ok "no shell, no build tools"

size=$(podman image inspect --format '{{.Size}}' "$image" 2>/dev/null || echo 0)
ok "$image: $((size / 1000000)) MB ($size bytes)"
echo "test-image: all checks passed"
