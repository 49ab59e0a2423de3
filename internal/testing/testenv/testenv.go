// Package testenv decides whether privileged or tool-dependent tests can run.
// Outside `make test` a missing prerequisite skips the test with its reason;
// under `make test` (SLOWPATH_STRICT=1) it fails, so CI cannot go green by
// silently skipping the real-kernel tests.
package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Strict reports whether missing prerequisites must fail tests.
func Strict() bool { return os.Getenv("SLOWPATH_STRICT") == "1" }

// Unavailable skips t, or fails it in strict mode, with the reason.
func Unavailable(t testing.TB, reason string) {
	t.Helper()
	if Strict() {
		t.Fatalf("prerequisite missing (SLOWPATH_STRICT=1): %s", reason)
	}
	t.Skip(reason)
}

// RequireRoot stops t unless it runs as root.
func RequireRoot(t testing.TB) {
	t.Helper()
	if os.Geteuid() != 0 {
		Unavailable(t, "needs root (run `sudo make test`)")
	}
}

// RequireTool stops t unless name is on PATH, and returns its path.
func RequireTool(t testing.TB, name, debianPackage string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Unavailable(t, name+" not found: apt-get install "+debianPackage)
	}
	return p
}

// RunUnprivileged runs the test binary again as user nobody (uid and gid
// 65534, no groups) through setpriv(1), with env ("NAME=value") added and
// only the capabilities flags grants (such as "--inh-caps=+bpf",
// "--ambient-caps=+bpf"), and returns what it printed. The package's
// TestMain plays the child when it sees env. It needs root.
func RunUnprivileged(t testing.TB, env string, flags ...string) []byte {
	t.Helper()
	RequireRoot(t)
	setpriv := RequireTool(t, "setpriv", "util-linux")
	args := append([]string{"--reuid=65534", "--regid=65534", "--clear-groups"}, flags...)
	cmd := exec.Command(setpriv, append(args, os.Args[0])...)
	cmd.Env = append(os.Environ(), env)
	out, _ := cmd.CombinedOutput()
	return out
}

// BuildSlowpath builds the slowpath binary into a directory of t's and
// returns its path, for tests that run the real binary (signals, exit
// codes, setpriv, another process's CPU time). It needs the go tool.
func BuildSlowpath(t testing.TB) string {
	t.Helper()
	goTool := RequireTool(t, "go", "golang-go")
	bin := filepath.Join(t.TempDir(), "slowpath")
	if out, err := exec.Command(goTool, "build", "-o", bin, "github.com/slowpath/slowpath/cmd/slowpath").CombinedOutput(); err != nil {
		t.Fatalf("build slowpath: %v\n%s", err, out)
	}
	return bin
}

// BuildSlowpathStripped builds slowpath as make build and release.sh do
// (static, -trimpath, -s -w), for benchmarks of what ships: its size,
// start-up and resident memory.
func BuildSlowpathStripped(t testing.TB) string {
	t.Helper()
	goTool := RequireTool(t, "go", "golang-go")
	bin := filepath.Join(t.TempDir(), "slowpath")
	cmd := exec.Command(goTool, "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "github.com/slowpath/slowpath/cmd/slowpath")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build slowpath: %v\n%s", err, out)
	}
	return bin
}

// ModuleRoot returns the directory of go.mod above the test's working
// directory, for tests that read the repository's shared testdata.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// NotOnThisKernel skips t, also under SLOWPATH_STRICT=1, because the
// kernel it was to run on lacks the feature it tests, as that kernel's
// committed expectations record (test/vm/kernels/NAME.expect). Only such
// committed per-kernel data may decide it, never a probe at run time: a
// kernel that should have the feature fails instead.
func NotOnThisKernel(t testing.TB, kernel, reason string) {
	t.Helper()
	t.Skipf("not on kernel %s: %s (recorded in test/vm/kernels/%s.expect)", kernel, reason, kernel)
}

// ByHand skips t, also under SLOWPATH_STRICT=1, unless the environment
// variable env is "1": a scenario that costs the suite more than it may
// (minutes of VM boots), kept runnable and documented for whoever runs it
// by hand, never counted as run by `make test`.
func ByHand(t testing.TB, env, what string) {
	t.Helper()
	if os.Getenv(env) != "1" {
		t.Skipf("%s: by hand, %s=1 (docs/testing.md)", what, env)
	}
}
