# slowpath — see README.md. Every target installs what it needs from Debian.
GO        ?= go
BIN       := bin/slowpath
VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION  ?= $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
BRANCH    ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
# The commit's date, not the clock's, so a rebuild of a commit is identical.
BUILD_DATE ?= $(shell git log -1 --format=%cd --date=format:%Y%m%d-%H:%M:%S 2>/dev/null || echo unknown)
BUILD_USER ?= $(shell id -un)@$(shell hostname)
# prometheus/common/version's variables: `slowpath version` prints them.
VPKG      := github.com/prometheus/common/version
LDFLAGS   := -X $(VPKG).Version=$(VERSION) -X $(VPKG).Revision=$(REVISION) -X $(VPKG).Branch=$(BRANCH) \
             -X $(VPKG).BuildDate=$(BUILD_DATE) -X $(VPKG).BuildUser=$(BUILD_USER)
# Static (no cgo, no glibc): the same binary runs on any distribution and
# in the FROM-scratch image.
STATIC    := CGO_ENABLED=0
# Stripped (-s -w: no ELF symbol table, no DWARF) as release.sh builds:
# this is the binary `make image` ships and `make run` starts, and a
# third smaller (docs/performance.md). Panics and pprof still name
# functions (Go's own pclntab stays); only delve and gdb need DWARF:
# `make build STRIP=` keeps it.
STRIP     ?= -s -w
FUZZTIME  ?= 2s
# bash with pipefail, so `| tee` does not hide a failing go test.
SHELL       := /bin/bash
.SHELLFLAGS := -o pipefail -c

# Debian packages: the main job needs none; tests need real tools.
TEST_DEPS := python3 time fio iperf3 qemu-system-x86 busybox-static cpio cryptsetup-bin dmsetup ethtool iproute2 linux-perf util-linux mount e2fsprogs xfsprogs lz4 zstd xz-utils gcc make file chromium prometheus prometheus-node-exporter podman runc nftables qemu-user-static lintian systemd postgresql-15 mariadb-server sysbench shellcheck rpm rpm2cpio rpmlint

.PHONY: all build image release run test unit lint fuzz bench generate deps-test clean vm mod vm-pins prep

all: build

build:
	$(STATIC) $(GO) build -trimpath -ldflags '$(LDFLAGS) $(STRIP)' -o $(BIN) ./cmd/slowpath

# The container image (Containerfile: FROM scratch and the static binary)
# as an OCI archive: podman load -i bin/slowpath-image.tar
image: build
	./scripts/install-deps.sh podman runc
	./scripts/image.sh $(BIN) bin/slowpath-image.tar $(VERSION) $(REVISION)

# Static linux/amd64 and linux/arm64 tarballs, .deb and .rpm (nfpm), and
# sha256sums.txt in bin/release (scripts/release.sh; docs/install.md).
release:
	rm -rf bin/release
	LDFLAGS='$(LDFLAGS)' ./scripts/release.sh bin/release $(VERSION)

# The main job: diagnose this host.
run: build
	./$(BIN) doctor

# Every module go.mod requires, its tools' included, before anything
# builds: a module the proxy refuses fails here, named with what needs it.
mod:
	$(GO) run ./scripts/moddownload

deps-test:
	./scripts/install-deps.sh $(TEST_DEPS)
	./scripts/tuned-loader.sh >/dev/null

# Everything, as CI runs it. Privileged and VM tests fail (not skip) here.
# scripts/suite.sh starts test/vm first, in the background, then runs
# beside it `make lint release` (packaging's tests check the release made
# here, which builds the binary: a separate build compiled everything again
# with -trimpath, a minute on a fresh machine, for a file no test reads),
# go test of every other package and every fuzz target; the VM lab's
# summary (which kernel each pin became, time per boot) is printed, passed
# or not.
test: prep
	FUZZTIME=$(FUZZTIME) ./scripts/suite.sh

# The two downloads make test starts with (Go modules, Debian packages) at
# once: both mostly wait on the network.
prep:
	$(MAKE) -j2 mod deps-test

# The qemu VM lab alone (test/vm; see docs/testing.md): every kernel of
# test/vm/kernels, or one: make vm KERNEL=5.10. One scenario:
# make vm KERNEL=6.12 RUN=TestBacklogDrop
vm: deps-test
	SLOWPATH_VM_KERNEL='$(KERNEL)' SLOWPATH_STRICT=1 $(GO) test -count=1 -v -parallel 64 -timeout 25m -run '$(or $(RUN),.)' ./test/vm

# Rewrites test/vm/kernels/*.pin to what their suites list today (the lab
# already takes the newest of a pin's series when the archive moved on, and
# says so; this makes that the pin).
vm-pins: deps-test
	SLOWPATH_UPDATE_PINS=1 $(GO) test -count=1 -v -run '^TestUpdatePins$$' ./test/vm

# Unprivileged quick loop for development.
unit:
	$(GO) test -short ./...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' | grep -v '_bpfe[lb].go$$')); if [ -n "$$out" ]; then echo "gofmt needed: $$out"; exit 1; fi
	$(GO) vet ./...
	$(GO) tool staticcheck ./...

# Runs every fuzz target briefly (FUZZTIME each) on top of its seed corpus.
fuzz:
	./scripts/fuzz.sh $(FUZZTIME)

# -p 1: one package's benchmarks at a time, so no two of them share the
# CPUs (go test runs GOMAXPROCS packages at once); each measures its
# reference beside it in the same run (docs/performance.md).
bench: deps-test build
	$(GO) test -p 1 -run '^$$' -bench . -benchtime 1x -count 1 -timeout 90m ./... | tee bench.out

# Regenerates bpf2go output (committed so `go build` needs no clang).
generate:
	./scripts/install-deps.sh clang llvm libbpf-dev
	$(GO) generate ./...

clean:
	rm -rf bin bench.out
