package replay

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

func TestValidate(t *testing.T) {
	good := func() *Trace {
		return &Trace{Files: []File{{Name: "f0001", Size: 1 << 20, Resident: []Range{{0, 4096}}}},
			Threads: []Thread{{Name: "t0001", Ops: []Op{{Kind: Read, Offset: 0, Length: 4096, At: time.Millisecond}, {Kind: Fsync, At: 2 * time.Millisecond},
				{Kind: Write, Offset: 1 << 20, Length: 4096, At: 3 * time.Millisecond}}}}}
	}
	if err := good().Validate(); err != nil {
		t.Fatalf("valid trace: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Trace)
		want string
	}{
		{"no files", func(t *Trace) { t.Files = nil }, "no files"},
		{"real name", func(t *Trace) { t.Files[0].Name = "../etc/passwd" }, "not a pseudonym"},
		{"thread named like a file", func(t *Trace) { t.Threads[0].Name = "f0001" }, "not a pseudonym"},
		{"name with a space", func(t *Trace) { t.Files[0].Name = "f0001 x" }, "not a pseudonym"},
		{"resident range past the end", func(t *Trace) { t.Files[0].Resident = []Range{{1 << 20, 1}} }, "outside"},
		{"file index", func(t *Trace) { t.Threads[0].Ops[0].File = 1 }, "file index 1 of 1"},
		{"time backwards", func(t *Trace) { t.Threads[0].Ops[2].At = 0 }, "before the previous"},
		{"unknown kind", func(t *Trace) { t.Threads[0].Ops[0].Kind = 9 }, "unknown kind"},
		{"zero length", func(t *Trace) { t.Threads[0].Ops[0].Length = 0 }, "read of 0 bytes"},
		{"huge length", func(t *Trace) { t.Threads[0].Ops[0].Length = MaxOpLength + 1 }, "at most"},
		{"offset overflow", func(t *Trace) { t.Threads[0].Ops[0].Offset = 1<<63 - 10 }, "below 2^63"},
		{"advice only", func(t *Trace) {
			t.Threads[0].Ops = []Op{{Kind: Fadvise, Advice: 4, At: time.Millisecond}}
		}, "no read, write or sync"},
		{"no operations", func(t *Trace) { t.Threads[0].Ops = nil }, "no read, write or sync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr := good()
			tc.edit(tr)
			err := tr.Validate()
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want ErrInvalid with %q", err, tc.want)
			}
		})
	}
	if got, want := good().Space(), uint64(1<<20+4096); got != want {
		t.Errorf("Space() = %d, want %d (the write past the end counts)", got, want)
	}
}

func TestIolog(t *testing.T) {
	tr := &Trace{Files: []File{{Name: "f0001", Size: 1 << 20}, {Name: "f0002", Size: 1 << 20}},
		Threads: []Thread{{Name: "t0001", Ops: []Op{
			{Kind: Write, File: 1, Offset: 8192, Length: 4096, At: 1500 * time.Microsecond},
			{Kind: Read, Offset: 4096, Length: 4096, At: 2 * time.Millisecond, Direct: true},
			{Kind: Fdatasync, File: 1, At: 3 * time.Millisecond},
			{Kind: Fault, File: 1, Offset: 65536, Length: 4096, At: 4 * time.Millisecond},
			{Kind: Fsync, File: 1, At: 5 * time.Second}}}}}
	streams := tr.Streams()
	if len(streams) != 2 || streams[0].Name != "t0001" || streams[1].Name != "t0001-direct" || !streams[1].Direct {
		t.Fatalf("Streams() = %+v, want t0001 and t0001-direct", streams)
	}
	want := `fio version 3 iolog
1 f0002 add
1 f0002 open
1501 f0002 write 8192 4096
3001 f0002 datasync 0 0
4001 f0002 read 65536 4096
5000001 f0002 sync 0 0
5000001 f0002 close
`
	if d := cmp.Diff(want, string(tr.Iolog(streams[0]))); d != "" {
		t.Errorf("Iolog (-want +got):\n%s", d)
	}
	job, err := JobFile(streams, AFAP)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"replay_no_stall=1", "[t0001-direct]\nread_iolog=t0001-direct.iolog\ndirect=1", "invalidate=0"} {
		if !strings.Contains(string(job), w) {
			t.Errorf("job file lacks %q:\n%s", w, job)
		}
	}
	if job, _ := JobFile(streams, FioTimed); strings.Contains(string(job), "replay_no_stall") {
		t.Errorf("fio-timed job file stalls nothing:\n%s", job)
	}
	if _, err := JobFile(streams, Timed); err == nil {
		t.Error("JobFile(Timed) = nil error: the timed mode is slowpath's own")
	}
}

// testTrace is a small search-incident shape: a psync writer with an
// fdatasync now and then, a random reader, and a thread faulting pages of
// a mapped file; every op 1 ms apart per thread.
func testTrace(n int) *Trace {
	rng := rand.New(rand.NewPCG(1, 2))
	tr := &Trace{Files: []File{{Name: "f0001", Size: 0}, {Name: "f0002", Size: 16 << 20, Resident: []Range{{0, 1 << 20}}}, {Name: "f0003", Size: 8 << 20}}}
	var w, r, m Thread
	w.Name, r.Name, m.Name = "t0001", "t0002", "t0003"
	for i := range n {
		at := time.Duration(i) * time.Millisecond
		w.Ops = append(w.Ops, Op{Kind: Write, File: 0, Offset: int64(i) * 65536, Length: 65536, At: at})
		if i%16 == 15 {
			w.Ops = append(w.Ops, Op{Kind: Fdatasync, File: 0, At: at})
		}
		r.Ops = append(r.Ops, Op{Kind: Read, File: 1, Offset: rng.Int64N(4096) * 4096, Length: 4096 << rng.IntN(3), At: at})
		m.Ops = append(m.Ops, Op{Kind: Fault, File: 2, Offset: rng.Int64N(2048) * 4096, Length: 4096, At: at})
	}
	tr.Threads = []Thread{w, r, m}
	return tr
}

func residentPages(t *testing.T, path string) (resident, total int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	if st.Size() == 0 {
		return 0, 0
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	vec := make([]byte, (len(m)+4095)/4096)
	// mincore(2): bit 0 of each byte says the page is resident.
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec)
}

func TestLayout(t *testing.T) {
	dir := t.TempDir()
	tr := testTrace(10)
	if err := tr.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := Layout(context.Background(), dir, tr); err != nil {
		t.Fatal(err)
	}
	for _, f := range tr.Files {
		st, err := os.Stat(filepath.Join(dir, f.Name))
		if err != nil || st.Size() != f.Size {
			t.Fatalf("%s: %v, size %d, want %d", f.Name, err, st.Size(), f.Size)
		}
	}
	// f0002: its first MiB resident, little else (the read of the range
	// may read ahead a little; a page cache under pressure may drop some).
	res, total := residentPages(t, filepath.Join(dir, "f0002"))
	if res < 200 || res > 256+32 || total != 4096 {
		t.Errorf("f0002: %d of %d pages resident, want about 256", res, total)
	}
	if res, _ := residentPages(t, filepath.Join(dir, "f0003")); res > 128 {
		t.Errorf("f0003: %d pages resident, want none restored", res)
	}
	// Incompressible: no 4 KiB block of f0003 repeats another.
	b, _ := os.ReadFile(filepath.Join(dir, "f0003"))
	seen := map[string]bool{}
	for off := 0; off < len(b); off += 4096 {
		k := string(b[off : off+4096])
		if seen[k] {
			t.Fatalf("f0003: block at %d repeats an earlier one", off)
		}
		seen[k] = true
	}
	// Laying out again over the same names is refused, not overwritten.
	if err := Layout(context.Background(), dir, tr); !errors.Is(err, os.ErrExist) {
		t.Errorf("second Layout = %v, want ErrExist", err)
	}
}

func TestLayoutNoSpace(t *testing.T) {
	dir := t.TempDir()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	free := int64(st.Bavail * uint64(st.Bsize))
	tr := &Trace{Files: []File{{Name: "f0001", Size: free + 1<<30}}, Threads: []Thread{{Name: "t0001", Ops: []Op{{Kind: Fsync}}}}}
	err := Layout(context.Background(), dir, tr)
	if !errors.Is(err, ErrNoSpace) || !strings.Contains(err.Error(), "MiB (") || !strings.Contains(err.Error(), "free: replay on a larger") {
		t.Fatalf("Layout of a file beyond free space = %v, want ErrNoSpace with the numbers", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused layout left %d files", len(ents))
	}
}

// counts sums what a trace asks for per op: ops and bytes.
func counts(tr *Trace) map[string][2]uint64 {
	out := map[string][2]uint64{}
	for _, th := range tr.Threads {
		for _, o := range th.Ops {
			k := o.Kind.String()
			if o.Kind == Fsync || o.Kind == Fdatasync {
				k = "sync"
			}
			c := out[k]
			c[0]++
			if o.Kind == Read || o.Kind == Write || o.Kind == Fault {
				c[1] += uint64(o.Length)
			}
			out[k] = c
		}
	}
	return out
}

func TestFioReplay(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	tr := testTrace(200)
	if err := Layout(context.Background(), dir, tr); err != nil {
		t.Fatal(err)
	}
	streams, err := WriteIologs(dir, tr, AFAP)
	if err != nil {
		t.Fatal(err)
	}
	job, err := JobFile(streams, AFAP)
	if err != nil {
		t.Fatal(err)
	}
	res, err := fio.Invocation{JobFile: job, Dir: dir}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]uint64{}
	for _, j := range res.Jobs {
		add := func(k string, n, b uint64) {
			if n > 0 {
				c := got[k]
				got[k] = [2]uint64{c[0] + n, c[1] + b}
			}
		}
		read := "read"
		if j.Name == "t0003" {
			read = "fault" // fio replays faults as preads of the page
		}
		add(read, j.Read.IOs, j.Read.Bytes)
		add("write", j.Write.IOs, j.Write.Bytes)
		add("sync", j.Sync.Count, 0)
	}
	if d := cmp.Diff(counts(tr), got); d != "" {
		t.Errorf("fio's replay did other I/O than the trace's (-want +got):\n%s", d)
	}
}

func TestTimedReplay(t *testing.T) {
	dir := t.TempDir()
	tr := testTrace(200)
	if err := Layout(context.Background(), dir, tr); err != nil {
		t.Fatal(err)
	}
	out, err := Replay(context.Background(), dir, tr)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]uint64{}
	for _, s := range out.Streams {
		k := s.Op
		if strings.HasSuffix(s.Name, "-mmap") {
			k = "fault"
		}
		c := got[k]
		got[k] = [2]uint64{c[0] + s.Ops, c[1] + s.Bytes}
		if s.Latency == nil || s.Latency.Count != s.Ops {
			t.Errorf("stream %s %s: latency %+v for %d ops", s.Name, s.Op, s.Latency, s.Ops)
		}
	}
	if d := cmp.Diff(counts(tr), got); d != "" {
		t.Errorf("the replay did other I/O than the trace's (-want +got):\n%s", d)
	}
	if out.Timing.Ops != 200*3+200/16 {
		t.Errorf("Timing.Ops = %d, want every op", out.Timing.Ops)
	}
	// The schedule is absolute: the replay cannot end before the last
	// operation's time (a bound that holds however loaded the machine).
	if out.Elapsed < tr.Span() {
		t.Errorf("replay took %v, less than the schedule's %v", out.Elapsed, tr.Span())
	}
	t.Logf("timed replay: %v for a %v schedule; lateness p50 %v p99 %v max %v", out.Elapsed, tr.Span(),
		time.Duration(out.Timing.LateP50NS), time.Duration(out.Timing.LateP99NS), time.Duration(out.Timing.LateMaxNS))
	if st, _ := os.Stat(filepath.Join(dir, "f0001")); st.Size() != 200*65536 {
		t.Errorf("f0001 is %d bytes after the writes, want %d", st.Size(), 200*65536)
	}
}

func TestTimedReplayCancel(t *testing.T) {
	dir := t.TempDir()
	tr := &Trace{Files: []File{{Name: "f0001", Size: 1 << 20}}, Threads: []Thread{{Name: "t0001", Ops: []Op{
		{Kind: Read, Length: 4096}, {Kind: Read, Length: 4096, At: time.Hour}}}}}
	if err := Layout(context.Background(), dir, tr); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	var out *Outcome
	var err error
	go func() { out, err = Replay(ctx, dir, tr); close(done) }()
	// The first read is due at once; cancel while the thread waits for
	// the second (due in an hour). Whenever the cancel lands, the replay
	// must return the outcome so far with ctx's error.
	time.Sleep(10 * time.Millisecond)
	select {
	case <-done:
		t.Fatalf("replay of an hour-long schedule ended before the cancel: %v", err)
	default:
	}
	cancel()
	<-done
	if !errors.Is(err, context.Canceled) || out == nil {
		t.Fatalf("Replay after cancel = %v, %v; want the partial outcome and context.Canceled", out, err)
	}
}

// TestSpanReplay: in a span replay the thread still busy at the capture's
// end (the reader, its last read 1 ms before it) repeats its reads for as
// long as it was busy (from its first read at 100 ms to the end at 300
// ms: 200 ms), fio cutting it there; the writer, done at 110 ms, writes
// its 10 writes once. The capture's own count is 50 reads.
func TestSpanReplay(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	tr := &Trace{Files: []File{{Name: "f0001"}, {Name: "f0002", Size: 1 << 20}}, End: 300 * time.Millisecond}
	w, r := Thread{Name: "t0001"}, Thread{Name: "t0002"}
	for i := range 10 {
		w.Ops = append(w.Ops, Op{Kind: Write, File: 0, Offset: int64(i) << 16, Length: 1 << 16, At: 100*time.Millisecond + time.Duration(i)*time.Millisecond})
	}
	w.LastEnd = 110 * time.Millisecond
	for i := range 50 {
		r.Ops = append(r.Ops, Op{Kind: Read, File: 1, Offset: int64(i%256) << 12, Length: 4096, At: 100*time.Millisecond + time.Duration(i)*4*time.Millisecond})
	}
	r.LastEnd = 299 * time.Millisecond
	tr.Threads = []Thread{w, r}
	if tr.Busy(&tr.Threads[0]) || !tr.Busy(&tr.Threads[1]) {
		t.Fatalf("busy: writer %v, reader %v; want the reader only", tr.Busy(&tr.Threads[0]), tr.Busy(&tr.Threads[1]))
	}
	streams := tr.StreamsFor(Span)
	if streams[0].Runtime != 0 || streams[1].Runtime != 200*time.Millisecond || streams[1].Repeat != maxRepeat {
		t.Fatalf("span streams %+v", streams)
	}
	if once := tr.StreamsFor(AFAP); once[1].Runtime != 0 || once[1].Repeat != 0 {
		t.Fatalf("afap streams repeat: %+v", once[1])
	}
	// A busy thread whose stream starts at the end has no span to fill
	// (and fio no runtime to stop it by): it runs once.
	late := &Trace{Files: tr.Files, End: 300 * time.Millisecond, Threads: []Thread{{Name: "t0003", LastEnd: 300 * time.Millisecond,
		Ops: []Op{{Kind: Read, File: 1, Length: 4096, At: 300 * time.Millisecond}}}}}
	if s := late.StreamsFor(Span); s[0].Runtime != 0 || s[0].Repeat != 0 {
		t.Errorf("a stream starting at the end repeats: %+v", s[0])
	}
	dir := t.TempDir()
	if err := Layout(context.Background(), dir, tr); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteIologs(dir, tr, Span); err != nil {
		t.Fatal(err)
	}
	job, err := JobFile(streams, Span)
	if err != nil {
		t.Fatal(err)
	}
	// The repeated log is read gradually (its parsing stays out of the CPU
	// per I/O); the writer's, once, as afap reads it.
	if !strings.Contains(string(job), "runtime=200000us") || strings.Count(string(job), "runtime=") != 1 ||
		strings.Count(string(job), "read_iolog_chunked=1") != 1 {
		t.Fatalf("job file:\n%s", job)
	}
	res, err := fio.Invocation{JobFile: job, Dir: dir}.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range res.Jobs {
		switch j.Name {
		case "t0001":
			if j.Write.IOs != 10 {
				t.Errorf("the writer wrote %d times, want its 10", j.Write.IOs)
			}
		case "t0002":
			// 16 repetitions of 50 page-cache reads take far less than
			// 200 ms: all of them, then the log ends.
			if j.Read.IOs <= 50 || j.Read.IOs > 50*maxRepeat {
				t.Errorf("the busy reader read %d times, want more than the capture's 50, at most %d", j.Read.IOs, 50*maxRepeat)
			}
		}
	}
}
