#!/usr/bin/env bash
# Builds the slowpath image from Containerfile around a static binary and
# writes it as an OCI archive:
#   scripts/image.sh BINARY OUT.tar [VERSION [REVISION]]
# podman runs on a private store (scripts/podman-private.sh), removed at the end.
set -euo pipefail
bin=$1 out=$2 version=${3:-dev} revision=${4:-unknown}
here=$(cd "$(dirname "$0")" && pwd)
. "$here/podman-private.sh"
work=$(mktemp -d)
trap 'podman_private_done "$work/podman"; rm -rf "$work"' EXIT
podman_private "$work/podman"
mkdir "$work/ctx"
cp "$bin" "$work/ctx/slowpath"
tag="localhost/slowpath:$version"
podman build -q --network=none --build-arg VERSION="$version" --build-arg REVISION="$revision" \
	-t "$tag" -f "$here/../Containerfile" "$work/ctx" >/dev/null
rm -f "$out"
podman save -q --format oci-archive -o "$out" "$tag"
