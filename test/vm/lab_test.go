package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// kernelLab is one kernel of the matrix: its pin, its expectations and,
// once a scenario asks for it, its prepared lab.
type kernelLab struct {
	Name   string
	Pin    *Pin
	Expect *Expect

	once sync.Once
	lab  *Lab
	fail error
}

// scope says which kernels a scenario boots.
type scope int

const (
	// fullSet: kernels whose expect file says `group full` (6.1).
	fullSet scope = iota
	// everyKernel: the scenario's outcome turns on a kernel fact (drop
	// reasons, crypt target version, crypto driver, softnet_stat): it runs
	// on every kernel of the matrix.
	everyKernel
	// oldest: the oldest kernel of the matrix (5.10), for a scenario whose
	// kernel facts the others only repeat or another scenario covers.
	oldest
	// fullSetAndNewest: the full set and the newest kernel of the matrix
	// (6.1 and 6.12), for a feature whose kernel facts the oldest one only
	// repeats.
	fullSetAndNewest
)

// boots says whether a scenario of scope sc boots kernel k; all are the
// names of every kernel of the matrix (kernels/*.pin), selected or not.
func (sc scope) boots(k *kernelLab, all []string) bool {
	full := k.Expect.Group == GroupFull
	switch sc {
	case fullSet:
		return full
	case oldest:
		return !slices.ContainsFunc(all, func(o string) bool { return olderRelease(o, k.Name) })
	case fullSetAndNewest:
		return full || !slices.ContainsFunc(all, func(o string) bool { return olderRelease(k.Name, o) })
	default:
		return true
	}
}

// olderRelease says whether kernel release a ("5.10") is older than b
// ("6.12"), comparing the numbers of each dotted part.
func olderRelease(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(pa) && i < len(pb); i++ {
		x, _ := strconv.Atoi(pa[i])
		y, _ := strconv.Atoi(pb[i])
		if x != y {
			return x < y
		}
	}
	return len(pa) < len(pb)
}

// KernelEnv selects kernels of the matrix by name, comma-separated
// (`make vm KERNEL=5.10`); empty selects all of kernels/*.pin.
const KernelEnv = "SLOWPATH_VM_KERNEL"

var (
	matrixOnce sync.Once
	matrix     []*kernelLab
	matrixFail error
	labErr     string // a reason to skip (qemu cannot run)
	apt        *AptLab
	tmpDir     string
	slowpath   string
	sharedFail error // building slowpath or preparing the cache
	sharedOnce sync.Once
)

// kernelMatrix reads the pins and expectations of the selected kernels.
func kernelMatrix() ([]*kernelLab, error) {
	matrixOnce.Do(func() {
		names, err := KernelNames("kernels")
		if err != nil || len(names) == 0 {
			matrixFail = fmt.Errorf("no kernels/*.pin (%v)", err)
			return
		}
		var pins []*Pin
		all := map[string]*kernelLab{}
		for _, n := range names {
			p, err := ReadPin(filepath.Join("kernels", n+".pin"))
			if err != nil {
				matrixFail = err
				return
			}
			e, err := ReadExpect(filepath.Join("kernels", n+".expect"))
			if err != nil {
				matrixFail = err
				return
			}
			pins = append(pins, p)
			all[n] = &kernelLab{Name: n, Pin: p, Expect: e}
		}
		want := names
		if v := strings.TrimSpace(os.Getenv(KernelEnv)); v != "" {
			want = strings.Split(v, ",")
		}
		for _, n := range want {
			k, ok := all[strings.TrimSpace(n)]
			if !ok {
				matrixFail = fmt.Errorf("%s=%s: no kernel %q in test/vm/kernels (have %s)", KernelEnv, os.Getenv(KernelEnv), n, strings.Join(names, ", "))
				return
			}
			matrix = append(matrix, k)
		}
		apt, matrixFail = NewAptLab(CacheDir(), pins)
	})
	return matrix, matrixFail
}

// onKernels runs fn as a parallel subtest, named after the kernel, on each
// selected kernel in scope. Every boot of a kernel shares its prepared lab.
func onKernels(t *testing.T, sc scope, fn func(t *testing.T, k *kernelLab)) {
	t.Helper()
	if testing.Short() {
		t.Skip("VM lab boots a kernel under qemu TCG; skipped with -short")
	}
	ks, err := kernelMatrix()
	if err != nil {
		t.Fatalf("vm kernel matrix: %v", err)
	}
	all, err := KernelNames("kernels")
	if err != nil {
		t.Fatalf("vm kernel matrix: %v", err)
	}
	ran := 0
	for _, k := range ks {
		if !sc.boots(k, all) {
			continue
		}
		ran++
		t.Run(k.Name, func(t *testing.T) {
			t.Parallel()
			fn(t, k)
		})
	}
	if ran == 0 {
		t.Logf("none of this scenario's kernels (its scope: the full set, group full in kernels/*.expect; the oldest or newest pin; or every kernel) is selected by %s=%s", KernelEnv, os.Getenv(KernelEnv))
	}
}

// setupLab prepares k's kernel, base initramfs and the slowpath binary
// once per test binary. Only an unusable qemu skips; every other problem
// fails.
func (k *kernelLab) setupLab(t *testing.T) *Lab {
	t.Helper()
	sharedOnce.Do(func() {
		if reason := qemuUnusable(); reason != "" {
			labErr = reason
			return
		}
		tmpDir, sharedFail = os.MkdirTemp("", "slowpath-vm-")
		if sharedFail != nil {
			return
		}
		slowpath = filepath.Join(tmpDir, "slowpath")
		build := exec.Command("go", "build", "-trimpath", "-o", slowpath, "./cmd/slowpath")
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			sharedFail = fmt.Errorf("go build ./cmd/slowpath: %w\n%s", err, out)
		}
	})
	if labErr != "" {
		testenv.Unavailable(t, labErr)
	}
	if sharedFail != nil {
		t.Fatalf("vm lab setup: %v", sharedFail)
	}
	k.once.Do(func() {
		start := time.Now()
		cache := CacheDir()
		unlock, err := LockCache(cache)
		if err != nil {
			k.fail = fmt.Errorf("VM cache: %w (run as root, or set SLOWPATH_VM_CACHE to a writable directory outside the repository)", err)
			return
		}
		defer unlock()
		kern, err := PrepareKernel(cache, apt, k.Pin, func(f string, a ...any) { t.Logf(f, a...) })
		if err != nil {
			k.fail = err
			return
		}
		base, err := BuildBase(cache, kern)
		if err != nil {
			k.fail = err
			return
		}
		k.lab = &Lab{Kernel: kern, Base: base, Slowpath: slowpath, TmpDir: tmpDir}
		summary.kernel(k.Name, kern, time.Since(start))
		t.Logf("vm: lab for %s ready in %v (kernel %s, base initramfs %s)", k.Name, time.Since(start).Round(time.Millisecond), kern.Release, base.Path)
	})
	if k.fail != nil {
		t.Fatalf("vm lab setup (kernel %s): %v", k.Name, k.fail)
	}
	return k.lab
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
	if err := summary.write(); err != nil {
		fmt.Fprintf(os.Stderr, "vm: lab summary: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// bootGate runs one VM per CPU, longest first (Gate).
var bootGate = NewGate(runtime.GOMAXPROCS(0))

// boot runs s and fails t when the VM did not complete, the scenario exited
// non-zero, or it left a device behind. The console is printed on failure.
func boot(t *testing.T, k *kernelLab, s Scenario) *Result {
	t.Helper()
	l := k.setupLab(t)
	release := bootGate.Acquire(expectedBoot(t.Name(), k.Name))
	res, err := l.Run(context.Background(), s)
	release()
	if res != nil {
		summary.boot(k.Name, t.Name(), res.Duration)
		t.Logf("vm: %s booted %s and ran in %v (TCG: functional evidence, not performance)", s.Name, k.Name, res.Duration.Round(time.Millisecond))
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
	onKernels(t, everyKernel, func(t *testing.T, k *kernelLab) {
		res := boot(t, k, Scenario{Name: "boot", Script: `
uname -r > /results/uname
cat /proc/modules > /results/modules
slowpath --version > /results/version
`})
		// The release resolved against the suite: the pin's, or the newest
		// of its series where the archive moved on (ResolvePin).
		if got, want := strings.TrimSpace(string(res.Files["uname"])), k.lab.Kernel.Release; got != want {
			t.Errorf("guest uname -r = %q, want %q", got, want)
		}
		for _, m := range []string{"dm_crypt", "dm_mod", "loop"} {
			if !strings.Contains(string(res.Files["modules"]), m+" ") {
				t.Errorf("module %s not loaded in guest:\n%s", m, res.Files["modules"])
			}
		}
	})
}
