#!/usr/bin/env bash
# Runs CI as a fresh machine would, on this one: a clone of HEAD in a new
# directory, the Go module cache, build cache and GOPATH, the VM lab's cache
# and tuned's unpacked loader in new empty directories, tracefs and debugfs
# unmounted; then `CI=true bash .ci/run`, timed. What this machine keeps that
# a new one lacks is thereby out of the way: a module the proxy no longer
# serves, a kernel package the archive replaced, a mount set up by hand.
# Debian packages installed earlier stay (removing them would touch the
# host's apt state); `make test` installs what is missing either way.
#
#   scripts/fresh-machine.sh [REV]     (default HEAD; exit status: .ci/run's)
#
# It prints the time and keeps the log, each line with its time of day, in
# /var/tmp/slowpath-fresh-*.log.
# Afterwards the mounts it took away are put back and the host state
# (scripts/host-state.sh) must be as it was; its directories are removed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$root" rev-parse "${1:-HEAD}")
work=$(mktemp -d /var/tmp/slowpath-fresh.XXXXXX)
log=/var/tmp/slowpath-fresh-$(date -u +%Y%m%dT%H%M%SZ)-${rev:0:12}.log

# The mounts to put back afterwards, as they were.
mounts=$(awk '$3 == "tracefs" || $3 == "debugfs" {print $3, $2}' /proc/mounts)
before=$("$root/scripts/host-state.sh")

cleanup() {
	# The module cache is read-only by design; go clean empties it.
	GOMODCACHE=$work/gomodcache go clean -modcache 2>/dev/null || true
	rm -rf "$work"
	# Put back what was mounted, shallowest first (tracefs may sit below debugfs).
	while read -r type dir; do
		[ -n "$type" ] || continue
		mountpoint -q "$dir" || mount -t "$type" "$type" "$dir" || echo "fresh-machine: could not mount $type on $dir again" >&2
	done < <(echo "$mounts" | sort -k2)
}
trap cleanup EXIT

# Unmount every tracefs and debugfs, deepest first.
awk '$3 == "tracefs" || $3 == "debugfs" {print $2}' /proc/mounts | sort -r | while read -r dir; do
	umount "$dir"
done

git clone -q "$root" "$work/src"
git -C "$work/src" checkout -q "$rev"
mkdir -p "$work/gomodcache" "$work/gocache" "$work/gopath" "$work/vm" "$work/tuned"

echo "fresh-machine: $rev in $work/src; empty GOMODCACHE, GOCACHE, GOPATH, SLOWPATH_VM_CACHE, SLOWPATH_TUNED_DIR; tracefs and debugfs unmounted" | tee "$log"
start=$(date +%s)
status=0
(
	cd "$work/src"
	export GOMODCACHE=$work/gomodcache GOCACHE=$work/gocache GOPATH=$work/gopath
	export SLOWPATH_VM_CACHE=$work/vm SLOWPATH_TUNED_DIR=$work/tuned CI=true
	bash .ci/run </dev/null
) 2>&1 | while IFS= read -r line; do
	# The log gets each line's time (bash's printf, no fork per line), so
	# the time of every stage can be read from it afterwards.
	printf '%s\n' "$line"
	printf '%(%T)T %s\n' -1 "$line" >>"$log"
done || status=$?
elapsed=$(($(date +%s) - start))

cleanup
trap - EXIT
after=$("$root/scripts/host-state.sh")
if [ "$before" != "$after" ]; then
	echo "fresh-machine: the host is not as it was (before -, after +):" | tee -a "$log"
	diff <(echo "$before") <(echo "$after") | tee -a "$log" || true
	[ "$status" -ne 0 ] || status=1
fi
result=passed
[ "$status" -eq 0 ] || result="failed (exit $status)"
echo "fresh-machine: .ci/run $result in ${elapsed} s ($((elapsed / 60)) min $((elapsed % 60)) s) at $rev; log $log" | tee -a "$log"
exit "$status"
