package host

import (
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

func TestParsePIDStat(t *testing.T) {
	// A kworker running kcryptd work, and a user process whose comm holds
	// ") (" to trip a naive split.
	kw := "57 (kworker/u4:2-kcryptd/254:0) I 2 0 0 0 -1 69238880 0 0 0 0 31 420 0 0 20 0 1 0 120 0 0 18446744073709551615 0 0 0 0 0 0 0 2147483647 0 0 0 0 17 1 0 0 0 0 0"
	flags, ticks, err := parsePIDStat([]byte(kw))
	if err != nil || flags&pfKthread == 0 || ticks != 451 {
		t.Fatalf("kworker: flags %#x ticks %d err %v", flags, ticks, err)
	}
	user := "900 (a) (b) S 1 900 900 0 -1 4194560 10 0 0 0 7 3 0 0 20 0 1 0 500 1000 100"
	flags, ticks, err = parsePIDStat([]byte(user))
	if err != nil || flags&pfKthread != 0 || ticks != 10 {
		t.Fatalf("user: flags %#x ticks %d err %v", flags, ticks, err)
	}
	if _, _, err := parsePIDStat([]byte("1 (init) S 0")); err == nil {
		t.Error("short line accepted")
	}
}

func FuzzParsePIDStat(f *testing.F) {
	f.Add([]byte("57 (kworker/u4:2-kcryptd/254:0) I 2 0 0 0 -1 69238880 0 0 0 0 31 420 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) { _, _, _ = parsePIDStat(b) })
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
