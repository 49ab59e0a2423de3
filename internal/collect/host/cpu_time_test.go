package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
)

func TestParseCPUTicks(t *testing.T) {
	got, err := parseCPUTicks([]byte("cpu  100 5 50 1000 20 3 2 1 7 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n"))
	if err != nil || got != (CPUTicks{Busy: 161, Total: 1181}) {
		t.Fatalf("%+v %v", got, err)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4\n", "cpu 1 x 3 4 5\n", "cpu 1 2\n"} {
		if _, err := parseCPUTicks([]byte(bad)); err == nil {
			t.Errorf("parseCPUTicks(%q) accepted", bad)
		}
	}
}

// TestKernelThreadTicks sums utime+stime of the kernel threads of a
// fixture tree: a kworker running kcryptd work counts, a user process whose
// comm holds ") (" to trip a naive split does not, and a stat that does
// not parse is skipped as an exited task.
func TestKernelThreadTicks(t *testing.T) {
	dir := t.TempDir()
	for pid, stat := range map[string]string{
		"57":  "57 (kworker/u4:2-kcryptd/254:0) I 2 0 0 0 -1 69238880 0 0 0 0 31 420 0 0 20 0 1 0 120 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0\n",
		"58":  "58 (kthreadd) S 0 0 0 0 -1 2129984 0 0 0 0 5 4 0 0 20 0 1 0 2 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 0 0 0 0 0 0 0\n",
		"900": "900 (a) (b) S 1 900 900 0 -1 4194560 10 0 0 0 7 3 0 0 20 0 1 0 500 1000 100 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
		"901": "901 (short) S 0\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, pid, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := KernelThreadTicks(hostfs.FS{Proc: dir})
	if err != nil || got != 451+9 {
		t.Errorf("KernelThreadTicks = %d, %v; want 460", got, err)
	}
}

// TestLiveTicks reads this machine's counters: ticks only grow, and some
// kernel thread (ksoftirqd, kworker) has run since boot.
func TestLiveTicks(t *testing.T) {
	fs := hostfs.Default()
	a, err := ReadCPUTicks(fs)
	if err != nil {
		t.Fatal(err)
	}
	k, err := KernelThreadTicks(fs)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := ReadCPUTicks(fs)
	if b.Total < a.Total || b.Busy < a.Busy || a.Busy > a.Total || k == 0 {
		t.Errorf("ticks %+v then %+v, kernel threads %d", a, b, k)
	}
}
