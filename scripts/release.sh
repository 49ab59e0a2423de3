#!/usr/bin/env bash
# Writes slowpath's release into OUT: static linux/amd64 and linux/arm64
# binaries as tarballs (binary, LICENSE, LICENSES-THIRD-PARTY, README, man
# pages, completions, the systemd unit and its arguments file), .deb and
# .rpm packages (nfpm), and sha256sums.txt.
#   scripts/release.sh OUT VERSION
# LDFLAGS (the Makefile's version stamp) and SOURCE_DATE_EPOCH (default:
# the commit's date) come from the environment; GOARCHES narrows the
# architectures.
set -euo pipefail
out=$1 version=$2
root=$(cd "$(dirname "$0")/.." && pwd)
# Stripped (-s -w): Debian policy, and a third smaller.
ldflags="${LDFLAGS:-"-X github.com/prometheus/common/version.Version=$version"} -s -w"
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}
# nfpm is a tool of go.mod (go.sum pins it and every module it needs).
NFPM=${NFPM:-go tool nfpm}
# Debian and RPM versions start with a digit: v1.2.3 is 1.2.3, a commit
# (git describe without a tag, even one that starts with a digit) is
# 0.0.0~COMMIT, below any release.
case $version in
v[0-9]*.*) pkgversion=${version#v} ;;
[0-9]*.*) pkgversion=$version ;;
*) pkgversion=0.0.0~$version ;;
esac
pkgversion=${pkgversion//-/.}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
out=$(cd "$out" && pwd)
cd "$root"

share=$work/share
go run ./scripts/gendocs "$share"
gzip -9n "$share"/man/man1/*.1
# The .rpm's unit reads its arguments where Fedora keeps them.
sed 's|/etc/default/slowpath-agent|/etc/sysconfig/slowpath-agent|g' packaging/slowpath-agent.service >"$work/slowpath-agent.rpm.service"
printf 'slowpath (%s-1) unstable; urgency=medium\n\n  * Release %s.\n\n -- slowpath authors <slowpath@users.noreply.github.com>  %s\n' \
	"$pkgversion" "$version" "$(date -u -R -d "@$SOURCE_DATE_EPOCH")" | gzip -9n >"$share/changelog.Debian.gz"

for arch in ${GOARCHES:-amd64 arm64}; do
	name=slowpath-$version.linux-$arch
	dir=$work/$name
	mkdir -p "$dir"
	CGO_ENABLED=0 GOOS=linux GOARCH=$arch go build -trimpath -ldflags "$ldflags" -o "$dir/slowpath" ./cmd/slowpath
	# The licences of what this binary links, read from its build info.
	go run ./scripts/thirdparty "$dir/slowpath" "$dir/LICENSES-THIRD-PARTY"
	# Debian compresses what /usr/share/doc holds beyond the copyright.
	gzip -9nc "$dir/LICENSES-THIRD-PARTY" >"$work/LICENSES-THIRD-PARTY.$arch.gz"
	cp LICENSE README.md packaging/slowpath-agent.default "$dir/"
	# The tarball's install steps (docs/install.md) put the binary in
	# /usr/local/bin, where a package never writes.
	sed 's|^ExecStart=/usr/bin/slowpath |ExecStart=/usr/local/bin/slowpath |' \
		packaging/slowpath-agent.service >"$dir/slowpath-agent.service"
	cp -r "$share/man" "$share/completions" "$dir/"
	tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
		-C "$work" -czf "$out/$name.tar.gz" "$name"
	# nfpm expands the environment in some fields only: fill in all.
	sed -e "s|\${PKG_VERSION}|$pkgversion|; s|\${ARCH}|$arch|; s|\${BIN}|$dir/slowpath|" \
		-e "s|\${SHARE}|$share|; s|\${ROOT}|$root|; s|\${LICENSES}|$dir/LICENSES-THIRD-PARTY|" \
		-e "s|\${WORK}|$work|" packaging/nfpm.yaml >"$work/nfpm-$arch.yaml"
	for p in deb rpm; do
		$NFPM pkg -f "$work/nfpm-$arch.yaml" -p "$p" -t "$out/" >/dev/null
	done
done
cd "$out"
sha256sum -- *.tar.gz *.deb *.rpm >sha256sums.txt
