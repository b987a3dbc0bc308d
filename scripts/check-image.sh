#!/usr/bin/env bash
# Builds the image from the Dockerfile and checks that it starts: `switchyard --version`
# names package.json's version, `check-config` accepts the example config baked into the
# image, and the process runs as the non-root uid the manifests expect.
#
# Needs a container builder (docker, podman or buildah) and what the build pulls: the
# base image (node:24-bookworm-slim from Docker Hub, or NODE_IMAGE) and the packages of
# package-lock.json from the npm registry. A CI job with registry access runs it as is;
# it is not part of `npm test` (docs/operations.md#build-and-push-the-image).
#
# Usage: scripts/check-image.sh [IMAGE]     (default localhost/switchyard:check; exit 0 = good)
# Env:   BUILDER=docker|podman|buildah      (default: the first one found that works)
#        NODE_IMAGE=REF                     the base image (default: the Dockerfile's)
#        BUILDAH_ISOLATION=chroot           buildah/podman in a VM or container without cgroup
#                                           delegation (buildah's own variable)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
IMAGE="${1:-localhost/switchyard:check}"
VERSION="$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$ROOT/package.json")"
UID_EXPECTED=10001

fail() {
  echo "check-image: $*" >&2
  exit 1
}

[ -n "$VERSION" ] || fail "could not read the version from $ROOT/package.json"

if [ -z "${BUILDER:-}" ]; then
  for candidate in docker podman buildah; do
    command -v "$candidate" > /dev/null || continue
    # A docker client without a daemon does not count.
    if [ "$candidate" = docker ] && ! docker info > /dev/null 2>&1; then continue; fi
    BUILDER="$candidate"
    break
  done
fi
[ -n "${BUILDER:-}" ] || fail "no container builder: install docker, podman or buildah (Debian: apt-get install buildah)"

build_args=()
[ -z "${NODE_IMAGE:-}" ] || build_args+=(--build-arg "NODE_IMAGE=$NODE_IMAGE")

echo "check-image: building $IMAGE with $BUILDER${NODE_IMAGE:+ on $NODE_IMAGE}"
case "$BUILDER" in
  buildah) buildah bud --layers -f "$ROOT/Dockerfile" -t "$IMAGE" "${build_args[@]}" "$ROOT" ;;
  *) "$BUILDER" build -f "$ROOT/Dockerfile" -t "$IMAGE" "${build_args[@]}" "$ROOT" ;;
esac

# Runs the image with its entrypoint (switchyard) and these arguments; buildah has no
# `run` of an image, so it makes a working container of it for the one command.
in_image() {
  if [ "$BUILDER" = buildah ]; then
    local container entrypoint status=0
    entrypoint="$(buildah inspect -f '{{range .OCIv1.Config.Entrypoint}}{{.}} {{end}}' "$IMAGE")"
    container="$(buildah from -q "$IMAGE")"
    # shellcheck disable=SC2086 # the entrypoint is a list of words
    buildah run "$container" -- $entrypoint "$@" || status=$?
    buildah rm "$container" > /dev/null
    return "$status"
  else
    "$BUILDER" run --rm "$IMAGE" "$@"
  fi
}

check() {
  local what="$1" expected="$2" got
  shift 2
  got="$(in_image "$@")" || fail "$what: the image exited $? (output: $got)"
  # shellcheck disable=SC2254 # the expected output is a glob
  case "$got" in
    $expected) echo "check-image: $what: ok ($(head -1 <<< "$got"))" ;;
    *) fail "$what: expected $expected, got: $got" ;;
  esac
}

check 'switchyard --version' "switchyard $VERSION" --version
check 'check-config of the example config' '# /app/config/example.yaml: valid.*' check-config --config /app/config/example.yaml

user="$(if [ "$BUILDER" = buildah ]; then buildah inspect -f '{{.OCIv1.Config.User}}' "$IMAGE"; else "$BUILDER" image inspect -f '{{.Config.User}}' "$IMAGE"; fi)"
[ "${user%%:*}" = "$UID_EXPECTED" ] || fail "the image runs as user '$user', not uid $UID_EXPECTED (the manifests' runAsUser)"
echo "check-image: runs as uid $UID_EXPECTED: ok"
echo "check-image: $IMAGE is good"
