// Package imagetest builds slowpath's container image as `make image` does
// (a static binary, Containerfile, scripts/image.sh) and loads it into a
// podman store private to the test (scripts/podman-private.sh), for tests
// that run the image as the manifests do. When the test ends the store is
// reset and removed, and the host is checked for what podman could leave:
// containers, network namespaces, nftables tables and ip_forward.
package imagetest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// Image is the slowpath image, loaded.
type Image struct {
	Ref    string // the reference it is loaded under
	Binary string // the static binary inside it, for running on the host
	podman string
	env    []string
}

// Version is the version stamped into the test image's binary.
const Version = "imagetest"

// Build builds and loads the image; everything goes when t ends.
func Build(t testing.TB) *Image {
	t.Helper()
	testenv.RequireRoot(t)
	podman := testenv.RequireTool(t, "podman", "podman")
	testenv.RequireTool(t, "runc", "runc")
	before := hostState(t)
	root := testenv.ModuleRoot(t)
	dir := t.TempDir()
	im := &Image{Ref: "localhost/slowpath:" + Version, Binary: filepath.Join(dir, "slowpath"), podman: podman}

	build := exec.Command(testenv.RequireTool(t, "go", "golang-go"), "build", "-trimpath",
		"-ldflags", "-X github.com/prometheus/common/version.Version="+Version, "-o", im.Binary, "./cmd/slowpath")
	build.Dir = root
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	start := time.Now()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	t.Logf("static build: %.1f s", time.Since(start).Seconds())
	start = time.Now()
	archive := filepath.Join(dir, "slowpath-image.tar")
	if out, err := exec.Command(filepath.Join(root, "scripts/image.sh"), im.Binary, archive, Version).CombinedOutput(); err != nil {
		t.Fatalf("scripts/image.sh: %v\n%s", err, out)
	}
	t.Logf("scripts/image.sh: %.1f s", time.Since(start).Seconds())

	// Short: conmon's sockets live under it, and a t.TempDir path leaves
	// its exit notice unread (each container's end then waits 20 s).
	store, err := os.MkdirTemp("", "podman")
	if err != nil {
		t.Fatal(err)
	}
	shell := func(fn string) {
		if out, err := exec.Command("bash", "-c", `. "$1" && `+fn+` "$2"`, "bash",
			filepath.Join(root, "scripts/podman-private.sh"), store).CombinedOutput(); err != nil {
			t.Errorf("%s: %v\n%s", fn, err, out)
		}
	}
	shell("podman_private")
	im.env = append(os.Environ(), "CONTAINERS_CONF="+filepath.Join(store, "containers.conf"),
		"CONTAINERS_STORAGE_CONF="+filepath.Join(store, "storage.conf"))
	t.Cleanup(func() {
		if out, err := im.Podman("ps", "-aq"); err != nil || len(bytes.TrimSpace(out)) > 0 {
			t.Errorf("containers left when the test ended: %s (%v)", out, err)
		}
		start := time.Now()
		shell("podman_private_done")
		t.Logf("podman store removed: %.1f s", time.Since(start).Seconds())
		if _, err := os.Stat(store); err == nil {
			t.Errorf("podman store %s left", store)
		}
		after := hostState(t)
		for k, v := range before.values {
			if after.values[k] != v {
				t.Errorf("%s changed: %q before, %q after", k, v, after.values[k])
			}
		}
		for k, names := range after.sets {
			for n := range names {
				// podman names its network namespaces netns-UUID;
				// other tests of the run make and remove their own.
				if k == "network namespaces" && !strings.HasPrefix(n, "netns-") {
					continue
				}
				if !before.sets[k][n] {
					t.Errorf("%s: %s added while the image ran", k, n)
				}
			}
		}
	})
	start = time.Now()
	if out, err := im.Podman("load", "-q", "-i", archive); err != nil {
		t.Fatalf("podman load: %v\n%s", err, out)
	}
	t.Logf("podman load: %.1f s", time.Since(start).Seconds())
	return im
}

// Podman runs podman on the private store.
func (im *Image) Podman(args ...string) ([]byte, error) {
	cmd := exec.Command(im.podman, args...)
	cmd.Env = im.env
	return cmd.CombinedOutput()
}

// state is what a container runtime may change on the host: values that
// must be the same once the test ends, and lists of named things (nftables
// tables, network namespaces) that must have gained nothing. Other tests
// of a parallel `go test ./...` may remove their own meanwhile, so only
// additions count.
type state struct {
	values map[string]string
	sets   map[string]map[string]bool
}

func hostState(t testing.TB) state {
	t.Helper()
	s := state{values: map[string]string{}, sets: map[string]map[string]bool{}}
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_forward")
	if err != nil {
		t.Fatal(err)
	}
	s.values["net.ipv4.ip_forward"] = strings.TrimSpace(string(b))
	for _, p := range []string{"/var/lib/containers", "/sys/fs/cgroup/memory/libpod_parent", "/run/libpod"} {
		_, err := os.Stat(p)
		s.values[p+" exists"] = map[bool]string{true: "yes", false: "no"}[err == nil]
	}
	list := func(what string, cmd ...string) {
		out, err := exec.Command(cmd[0], cmd[1:]...).CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(cmd, " "), err, out)
		}
		s.sets[what] = map[string]bool{}
		for _, l := range strings.Split(string(out), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				s.sets[what][l] = true
			}
		}
	}
	list("nftables tables", testenv.RequireTool(t, "nft", "nftables"), "list", "tables")
	list("network namespaces", testenv.RequireTool(t, "ip", "iproute2"), "netns", "list")
	return s
}
