#!/usr/bin/env bash
# Unpacks Debian's tuned package (its Python profile loader and stock
# profiles) into a cache directory, for the tests that read profiles with
# tuned's own parser (internal/fix TestTunedProfileWithTunedsLoader). The
# package is never installed: tuned must not tune this machine. Idempotent.
# Prints the directory.
set -euo pipefail
version=2.20.0-1
dir=${SLOWPATH_TUNED_DIR:-/var/cache/slowpath-tuned}/$version
if [ -f "$dir/root/usr/lib/python3/dist-packages/tuned/profiles/loader.py" ]; then
	echo "$dir"
	exit 0
fi
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
if ! apt-get download -qq "tuned=$version" >/dev/null 2>&1; then
	apt-get update -qq
	apt-get download -qq "tuned=$version" >/dev/null
fi
rm -rf "$dir/root"
dpkg-deb -x tuned_*.deb "$dir/root"
echo "$dir"
