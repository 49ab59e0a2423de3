#!/usr/bin/env bash
# make test's stages after the downloads: lint and the release, go test of
# every package, then every fuzz target (scripts/fuzz.sh, FUZZTIME each),
# under SLOWPATH_STRICT=1.
#
# test/vm, the longest package (about 40 minutes of qemu boots, two at a
# time, each on one core, the longest first: test/vm/gate.go, which needs
# -parallel above the number of tests), starts first and runs in the background; lint
# and the release (make lint release), the other packages, then the fuzz
# targets, run beside it and fill the time its lab setup spends fetching
# kernel packages and their tests spend waiting (Prometheus scrapes, fio
# runs, a browser, sleeps). go test ./... started test/vm last, after the packages before
# it in its list, so it ran alone for its whole length (docs/testing.md,
# "Where the time goes").
#
# test/vm's output follows when it ends, then the lab's summary (which
# kernel each pin became, time per boot). Exit status: non-zero when any
# stage failed.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
summary=$PWD/bin/vm-summary.txt vmlog=$PWD/bin/vm-test.log
rm -f "$summary" "$vmlog"
start=$(date +%s)
stamp() { echo "== suite +$(($(date +%s) - start))s: $*"; }
export SLOWPATH_STRICT=1
# One compile of the product for both: the tests, vet and staticcheck build
# as what ships is built (static, -trimpath: make build, release.sh, the VM
# lab's guest binary, the image test), so the static builds reuse the
# packages vet compiled. With cgo and full paths the suite compiled the
# product twice for amd64 (1 min 50 s of a CPU each, from empty caches).
export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:+$GOFLAGS }-trimpath"

stamp "go test ./test/vm, in the background (its output follows when it ends)"
SLOWPATH_VM_SUMMARY=$summary go test -count=1 -parallel 64 -timeout 40m ./test/vm >"$vmlog" 2>&1 &
vm=$!
trap 'kill "$vm" 2>/dev/null; wait "$vm" 2>/dev/null' INT TERM

rc=0
stamp "make lint release, beside test/vm"
make lint release || rc=1

stamp "go test of every other package"
SLOWPATH_RELEASE_DIR=$PWD/bin/release go test -count=1 -timeout 25m $(go list ./... | grep -v '/test/vm$') || rc=1

stamp "fuzz targets"
./scripts/fuzz.sh "${FUZZTIME:-2s}" || rc=1

stamp "waiting for test/vm"
wait "$vm" || rc=1
cat "$vmlog"
[ ! -f "$summary" ] || cat "$summary"
stamp "done"
exit "$rc"
