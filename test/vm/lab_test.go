package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testenv"
)

var (
	labOnce sync.Once
	lab     *Lab
	labErr  string // a reason to skip (qemu cannot run)
	labFail error  // anything else: the test fails
)

// setupLab prepares the kernel, base initramfs and slowpath binary once per
// test binary. Only an unusable qemu skips; every other problem fails.
func setupLab(t *testing.T) *Lab {
	t.Helper()
	if testing.Short() {
		t.Skip("VM lab boots a kernel under qemu TCG; skipped with -short")
	}
	labOnce.Do(func() {
		if reason := qemuUnusable(); reason != "" {
			labErr = reason
			return
		}
		start := time.Now()
		cache := CacheDir()
		unlock, err := LockCache(cache)
		if err != nil {
			labFail = fmt.Errorf("VM cache: %w (run as root, or set SLOWPATH_VM_CACHE to a writable directory outside the repository)", err)
			return
		}
		defer unlock()
		pin, err := ReadPin("kernel.pin")
		if err != nil {
			labFail = err
			return
		}
		k, err := PrepareKernel(cache, pin, func(f string, a ...any) { t.Logf(f, a...) })
		if err != nil {
			labFail = err
			return
		}
		base, err := BuildBase(cache, k)
		if err != nil {
			labFail = err
			return
		}
		tmp, err := os.MkdirTemp("", "slowpath-vm-")
		if err != nil {
			labFail = err
			return
		}
		bin := filepath.Join(tmp, "slowpath")
		build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/slowpath")
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			labFail = fmt.Errorf("go build ./cmd/slowpath: %w\n%s", err, out)
			return
		}
		lab = &Lab{Kernel: k, Base: base, Slowpath: bin, TmpDir: tmp}
		t.Logf("vm: lab ready in %v (kernel %s, base initramfs %s)", time.Since(start).Round(time.Millisecond), k.Release, base.Path)
	})
	if labErr != "" {
		testenv.Unavailable(t, labErr)
	}
	if labFail != nil {
		t.Fatalf("vm lab setup: %v", labFail)
	}
	return lab
}

// qemuUnusable starts qemu with TCG and no machine and asks it to quit over
// QMP; it returns why qemu cannot run, or "".
func qemuUnusable() string {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", "-accel", "tcg", "-machine", "none", "-nodefaults", "-display", "none", "-qmp", "stdio")
	cmd.Stdin = strings.NewReader(`{"execute":"qmp_capabilities"}` + "\n" + `{"execute":"quit"}` + "\n")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "qemu-system-x86_64 cannot run with TCG (apt-get install qemu-system-x86): " + err.Error() + ": " + strings.TrimSpace(string(out))
	}
	return ""
}

func TestMain(m *testing.M) {
	code := m.Run()
	if lab != nil {
		os.RemoveAll(lab.TmpDir)
	}
	os.Exit(code)
}

// boot runs s and fails t when the VM did not complete, the scenario exited
// non-zero, or it left a device behind. The console is printed on failure.
func boot(t *testing.T, s Scenario) *Result {
	t.Helper()
	l := setupLab(t)
	res, err := l.Run(context.Background(), s)
	if res != nil {
		t.Logf("vm: %s booted and ran in %v (TCG: functional evidence, not performance)", s.Name, res.Duration.Round(time.Millisecond))
	}
	dump := func() {
		if res != nil {
			t.Logf("guest console (result files elided):\n%s", ElideFiles(res.Console))
		}
	}
	if err != nil {
		dump()
		t.Fatalf("vm %s: %v", s.Name, err)
	}
	if res.ExitCode != 0 {
		dump()
		t.Fatalf("vm %s: scenario exited %d", s.Name, res.ExitCode)
	}
	if len(res.Leftover) > 0 {
		dump()
		t.Fatalf("vm %s: scenario left behind %q (a scenario must remove every device it creates)", s.Name, res.Leftover)
	}
	t.Cleanup(func() {
		if t.Failed() {
			dump()
		}
	})
	return res
}

// TestBoot is the smallest scenario: the guest runs our kernel and a result
// file comes back intact.
func TestBoot(t *testing.T) {
	t.Parallel()
	res := boot(t, Scenario{Name: "boot", Script: `
uname -r > /results/uname
cat /proc/modules > /results/modules
slowpath --version > /results/version
`})
	if got := strings.TrimSpace(string(res.Files["uname"])); got != lab.Kernel.Release {
		t.Errorf("guest uname -r = %q, want %q", got, lab.Kernel.Release)
	}
	for _, m := range []string{"dm_crypt", "dm_mod", "loop"} {
		if !strings.Contains(string(res.Files["modules"]), m+" ") {
			t.Errorf("module %s not loaded in guest:\n%s", m, res.Files["modules"])
		}
	}
}
