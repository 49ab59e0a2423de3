package sampler

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestParseTaskStat(t *testing.T) {
	tests := []struct {
		in   string
		want taskStat
		err  string
	}{
		{in: "1234 (fio) R 1200 1234 1200 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 1 0 5000 1000 100 18446744073709551615\n",
			want: taskStat{PID: 1234, Comm: "fio", State: 'R', PPID: 1200, Ticks: 325, Start: 5000}},
		// A postmaster that reaped backends: cutime 40, cstime 2.
		{in: "900 (postgres) S 1 900 900 0 -1 4194560 100 0 0 0 10 5 40 2 20 0 1 0 77 1000 100 18446744073709551615",
			want: taskStat{PID: 900, Comm: "postgres", State: 'S', PPID: 1, Ticks: 15, ChildTicks: 42, Start: 77}},
		{in: "88 (kworker/u4:2-kcryptd/253:0) I 2 0 0 0 -1 69238880 0 0 0 0 7 913 0 0 20 0 1 0 310 0 0 18446744073709551615",
			want: taskStat{PID: 88, Comm: "kworker/u4:2-kcryptd/253:0", State: 'I', PPID: 2, Ticks: 920, Start: 310}},
		// comm may contain spaces and ')' (a process can name itself so).
		{in: "7 (a) b (c)) S 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 9 0 0 0",
			want: taskStat{PID: 7, Comm: "a) b (c)", State: 'S', PPID: 1, Ticks: 3, Start: 9}},
		{in: "", err: "no (comm)"},
		{in: "x (a) S 1", err: "bad pid"},
		{in: "7 (a) S 1 2 3", err: "fields after comm"},
		{in: "7 (a) S 1 7 7 0 -1 0 0 0 0 0 x 2 0 0 20 0 1 0 9 0 0 0", err: "invalid syntax"},
	}
	for _, tt := range tests {
		got, err := parseTaskStat([]byte(tt.in))
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%q: err %v, want %q", tt.in, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tt.in, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", tt.in, diff)
		}
	}
}

func FuzzParseTaskStat(f *testing.F) {
	f.Add([]byte("88 (kworker/u4:2-kcryptd/253:0) I 2 0 0 0 -1 69238880 0 0 0 0 7 913 0 0 20 0 1 0 310 0 0 18446744073709551615"))
	f.Add([]byte("7 (a) b (c)) S 1 7 7 0 -1 0 0 0 0 0 1 2 0 0 20 0 1 0 9 0 0 0"))
	f.Fuzz(func(t *testing.T, b []byte) {
		st, err := parseTaskStat(b)
		if err == nil && (st.PID <= 0 || strings.Contains(string(b), "("+st.Comm+")") == false) {
			t.Fatalf("accepted %q as %+v", b, st)
		}
	})
}

func TestGroup(t *testing.T) {
	for _, tt := range []struct {
		comm     string
		ppid     int
		workload bool
		want     string
	}{
		{"fio", 100, true, benchresult.GroupWorkload},
		{"kcryptd/253:0", 2, false, benchresult.GroupKcryptd},
		{"kworker/u4:2-kcryptd/253:0", 2, false, benchresult.GroupKcryptd},
		{"dmcrypt_write/253:0", 2, false, benchresult.GroupDmcryptWrite},
		{"kworker/1:1H-kblockd", 2, false, benchresult.GroupKworker},
		{"ksoftirqd/0", 2, false, benchresult.GroupKsoftirqd},
		{"kcryptd-lookalike", 1, false, ""}, // a user process is no kernel thread
		{"jbd2/vda-8", 2, false, ""},
	} {
		if got := Group(tt.comm, tt.ppid, tt.workload); got != tt.want {
			t.Errorf("Group(%q, %d, %v) = %q, want %q", tt.comm, tt.ppid, tt.workload, got, tt.want)
		}
	}
}

// statLine is a /proc/PID/stat line with the given comm, parent and ticks.
func statLine(pid int, comm string, ppid int, ticks uint64) string {
	return fmt.Sprintf("%d (%s) S %d %d %d 0 -1 0 0 0 0 0 %d %d 0 0 20 0 1 0 %d 0 0 0\n", pid, comm, ppid, pid, pid, ticks/2, ticks-ticks/2, 100+pid)
}

func writeTree(t *testing.T, root string, disk string, stats map[int]string) {
	t.Helper()
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "sys"), 0o755))
	must(os.MkdirAll(filepath.Join(root, "proc"), 0o755))
	must(os.WriteFile(filepath.Join(root, "proc", "diskstats"), []byte(disk), 0o644))
	for pid, line := range stats {
		d := filepath.Join(root, "proc", fmt.Sprint(pid))
		must(os.MkdirAll(d, 0o755))
		must(os.WriteFile(filepath.Join(d, "stat"), []byte(line), 0o644))
	}
}

// diskLine is a /proc/diskstats line (kernel 5.5+: 20 columns).
func diskLine(name string, reads, rsect, rticks, writes, wsect, wticks, inflight, ioticks, weighted uint64) string {
	return fmt.Sprintf(" 253 0 %s %d 0 %d %d %d 0 %d %d %d %d %d 0 0 0 0 0 0\n", name, reads, rsect, rticks, writes, wsect, wticks, inflight, ioticks, weighted)
}

// TestFixture drives the sampler over a fixture tree whose counters move
// by known amounts between two readings.
func TestFixture(t *testing.T) {
	root := t.TempDir()
	procs := func(scale uint64) map[int]string {
		return map[int]string{
			1000: statLine(1000, "fio", 1, 10*scale),                      // workload root (AddWorkload)
			1001: statLine(1001, "fio", 1000, 50*scale),                   // its job process
			88:   statLine(88, "kworker/u4:2-kcryptd/253:0", 2, 30*scale), // crypto work
			89:   statLine(89, "dmcrypt_write/253:0", 2, 5*scale),         // write thread
			90:   statLine(90, "ksoftirqd/0", 2, 2*scale),                 // softirq
			91:   statLine(91, "kworker/0:1-events", 2, 1*scale),          // other kworker
			500:  statLine(500, "sshd", 1, 1000*scale),                    // not ours
			92:   statLine(92, "jbd2/dm-0-8", 2, 1000*scale),              // not a tracked kthread
		}
	}
	writeTree(t, root, diskLine("dm-0", 0, 0, 0, 0, 0, 0, 0, 0, 0)+diskLine("ram0", 0, 0, 0, 0, 0, 0, 0, 0, 0), procs(1))
	start := time.Now()
	s, err := Start(Options{FS: hostfs.New(root), Devices: []Device{{"dm-0", "dm-crypt", 1}, {"ram0", "ram", 2}, {"sdz", "disk", 3}}, Interval: time.Hour, Start: start})
	if err != nil {
		t.Fatal(err)
	}
	s.AddWorkload(1000)
	// dm-0: 100 reads of 8 sectors taking 2000 ms, 50 writes taking 500 ms;
	// ram0: 150 I/Os taking 15 ms.
	writeTree(t, root, diskLine("dm-0", 100, 800, 2000, 50, 400, 500, 3, 900, 2500)+diskLine("ram0", 100, 800, 10, 50, 400, 5, 0, 15, 15), procs(3))
	time.Sleep(200 * time.Millisecond)
	// fio 1000 exited having used 2 s by wait4: more than the 1.2 s
	// sampled, so the workload figure takes it. 1999 was never sampled.
	s.AddWorkloadCPU(1000, 2*time.Second)
	s.AddWorkloadCPU(1999, 300*time.Millisecond)
	w := s.Stop()

	if len(w.Devices) != 3 {
		t.Fatalf("devices %+v", w.Devices)
	}
	dm, ram := w.Devices[0], w.Devices[1]
	if len(dm.Samples) != 1 || dm.Samples[0].Reads != 100 || dm.Samples[0].ReadBytes != 800*512 || dm.Samples[0].InFlight != 3 {
		t.Errorf("dm-0 samples %+v", dm.Samples)
	}
	if dm.AwaitNS != 2500.0/150*1e6 || dm.ReadAwaitNS != 20e6 || dm.WriteAwaitNS != 10e6 {
		t.Errorf("dm-0 await %v read %v write %v", dm.AwaitNS, dm.ReadAwaitNS, dm.WriteAwaitNS)
	}
	if ram.AwaitNS != 0.1e6 {
		t.Errorf("ram0 await %v", ram.AwaitNS)
	}
	if !strings.Contains(strings.Join(w.Problems, "\n"), "device sdz not in /proc/diskstats") {
		t.Errorf("problems %q", w.Problems)
	}
	cpu := map[string]int64{}
	for _, g := range w.Threads {
		cpu[g.Group] = g.CPUNS
	}
	tick := int64(10 * time.Millisecond)
	want := map[string]int64{
		benchresult.GroupWorkload:     int64(2300 * time.Millisecond), // both fio processes by wait4; sshd is not ours
		benchresult.GroupKcryptd:      60 * tick,
		benchresult.GroupDmcryptWrite: 10 * tick,
		benchresult.GroupKsoftirqd:    4 * tick,
		benchresult.GroupKworker:      2 * tick,
	}
	if diff := cmp.Diff(want, cpu); diff != "" {
		t.Errorf("cpu by group (-want +got):\n%s", diff)
	}
	for _, want := range []string{"dm-0 await 17 ms vs ram0 0.10 ms", "of a CPU in kcryptd", "of a CPU in dmcrypt_write"} {
		if !strings.Contains(w.Summary, want) {
			t.Errorf("summary %q lacks %q", w.Summary, want)
		}
	}
	if w.Threads[1].Top[0].Comm != "kworker/u4:2-kcryptd/253:0" {
		t.Errorf("kcryptd top %+v", w.Threads[1].Top)
	}
}

// TestLive samples this machine while the test writes and syncs 16 MiB to
// a file on the filesystem of its temporary directory and burns CPU.
func TestLive(t *testing.T) {
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	name := devName(t, unix.Major(st.Dev), unix.Minor(st.Dev))
	if name == "" {
		testenv.Unavailable(t, dir+" is not on a block device in /proc/diskstats (set TMPDIR to a disk-backed directory)")
	}
	var ru0, ru1 unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru0); err != nil {
		t.Fatal(err)
	}
	s, err := Start(Options{FS: hostfs.Default(), Devices: []Device{{name, "disk", 0}}, Interval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 1<<20)
	f, err := os.Create(filepath.Join(dir, "f"))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 16; i++ {
		buf[0] = byte(i)
		if _, err := f.Write(buf); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Burn some CPU in this process: the workload group.
	end := time.Now().Add(400 * time.Millisecond)
	h := sha256.New()
	for time.Now().Before(end) {
		h.Write(buf[:4096])
	}
	time.Sleep(150 * time.Millisecond)
	w := s.Stop()
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru1); err != nil {
		t.Fatal(err)
	}
	d := w.Devices[0]
	var wb uint64
	for _, x := range d.Samples {
		wb += x.WriteBytes
	}
	if wb < 16<<20 || d.WriteIOPS <= 0 || d.UtilPercent <= 0 {
		t.Errorf("%s: %d bytes written (want ≥ 16 MiB), %.0f write IOPS, util %.1f%%", name, wb, d.WriteIOPS, d.UtilPercent)
	}
	// The reference: this process's own rusage over the same window,
	// less the sampler thread. /proc counts in 10 ms ticks.
	self := time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()-ru0.Utime.Nano()-ru0.Stime.Nano()) - time.Duration(w.SamplerCPUNS)
	got := time.Duration(w.Threads[0].CPUNS)
	if w.Threads[0].Group != benchresult.GroupWorkload || got <= 0 || (got-self).Abs() > 30*time.Millisecond+self/10 {
		t.Errorf("workload CPU %v, rusage of this process %v: want within 30 ms + 10%%", got, self)
	}
	if len(w.Threads[0].Timeline) < 4 {
		t.Errorf("timeline %+v", w.Threads[0].Timeline)
	}
	t.Logf("workload CPU %v vs rusage %v", got, self)
	t.Logf("summary: %s; sampler CPU %v; %d samples", w.Summary, time.Duration(w.SamplerCPUNS), len(d.Samples))
}

func devName(t *testing.T, major, minor uint32) string {
	b, err := os.ReadFile("/proc/diskstats")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) > 3 && f[0] == fmt.Sprint(major) && f[1] == fmt.Sprint(minor) {
			return f[2]
		}
	}
	return ""
}
