package benchcmd_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/stdfile"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func run(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}
	code = cli.Run(env, args)
	return code, out.String(), errb.String()
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", "search", "--dir", dir}, `unknown profile "search": use one of search-index, db-commit, telemetry-ingest, fio:FILE`},
		{[]string{"bench", "db-commit", "--dir", dir, "--scale", "0"}, "--scale 0"},
		{[]string{"bench", "db-commit", "--dir", dir, "--scale", "1000"}, "--scale 1000"},
		{[]string{"bench", "db-commit", "--dir", dir, "--scale", "abc"}, "invalid argument"},
		{[]string{"bench", "db-commit"}, "give --dir DIR"},
		{[]string{"bench", "db-commit", "--dir", filepath.Join(dir, "nope")}, "no such file"},
		{[]string{"bench", "db-commit", "--device", "/dev/null"}, "add --destroy-data"},
		{[]string{"bench", "db-commit", "--device", "/dev/null", "--destroy-data"}, "is not a block device"},
		{[]string{"bench", "search-index", "--device", "/dev/null", "--destroy-data"}, "needs a filesystem"},
		{[]string{"bench", "fio:" + filepath.Join(dir, "missing.fio"), "--dir", dir}, "missing.fio"},
		{[]string{"bench", "export", "nope", "-o", filepath.Join(dir, "x")}, "unknown profile"},
		{[]string{"bench", "export", "pgbench", "-o", filepath.Join(dir, "x")}, "runs a database server and its client, not fio job files"},
		{[]string{"bench", "mariadb-oltp:nope", "--dir", dir}, "the mariadb-oltp profiles are mariadb-oltp:encrypted"},
		{[]string{"bench", "db-commit", "--dir", dir, "--cipher-limit", filepath.Join(dir, "nope.json")}, "--cipher-limit: open"},
	} {
		code, _, stderr := run(t, tt.args...)
		if code != clienv.ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused runs left %v", ents)
	}
}

// TestFioMissing: without fio on PATH the error says how to install it.
func TestFioMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	code, _, stderr := run(t, "bench", "db-commit", "--dir", t.TempDir())
	if code != 2 || !strings.Contains(stderr, "apt-get install fio") {
		t.Errorf("exit %d, %q", code, stderr)
	}
}

// TestNoSpace: the incident-sized search-index (about 110 GiB) does not
// fit; the refusal has the numbers and leaves nothing behind.
func TestNoSpace(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	dir := t.TempDir()
	code, _, stderr := run(t, "bench", "search-index", "--dir", dir, "--scale", "64")
	if code != 2 || !strings.Contains(stderr, "not enough free space in "+dir+": this run writes up to 110") || !strings.Contains(stderr, "free: lower --scale") {
		t.Errorf("exit %d, %q", code, stderr)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("left %v", ents)
	}
}

// tmpfsDir is a directory on a tmpfs: /dev/shm.
func tmpfsDir(t *testing.T) string {
	t.Helper()
	var sf syscall.Statfs_t
	if err := syscall.Statfs("/dev/shm", &sf); err != nil || sf.Type != 0x01021994 { // TMPFS_MAGIC, include/uapi/linux/magic.h
		testenv.Unavailable(t, "/dev/shm is not a tmpfs")
	}
	d, err := os.MkdirTemp("/dev/shm", "slowpath-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func figure(t *testing.T, r *benchresult.Result, phase, name string) float64 {
	t.Helper()
	f, ok := r.Figure(phase, name)
	if !ok {
		t.Errorf("%s: no figure %s/%s", r.Profile, phase, name)
	}
	return f.Value
}

func stream(r *benchresult.Result, phase, name, op string) *benchresult.Stream {
	for _, p := range r.Phases {
		if p.Name != phase {
			continue
		}
		for i := range p.Streams {
			if p.Streams[i].Name == name && p.Streams[i].Op == op {
				return &p.Streams[i]
			}
		}
	}
	return nil
}

// TestProfiles runs every profile at a small scale for 2 s per phase on a
// directory of the root filesystem and on a tmpfs, and checks the figures
// against what the profiles wrote.
func TestProfiles(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	if testing.Short() {
		t.Skip("real fio runs")
	}
	jobFile := filepath.Join(t.TempDir(), "mine.fio")
	if err := os.WriteFile(jobFile, []byte("[seqread]\nrw=read\nbs=128k\nsize=8m\nfilename=data\nioengine=psync\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, fsys := range []struct{ name, dir string }{{"rootfs", t.TempDir()}, {"tmpfs", tmpfsDir(t)}} {
		for _, prof := range []string{"search-index", "db-commit", "telemetry-ingest", "fio:" + jobFile} {
			t.Run(fsys.name+"/"+filepath.Base(prof), func(t *testing.T) {
				out := filepath.Join(t.TempDir(), "r.json")
				code, stdout, stderr := run(t, "bench", prof, "--dir", fsys.dir, "--scale", "0.05", "--runtime", "2s", "--interval", "500ms", "-o", out)
				if code != 0 {
					t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
				}
				if ents, _ := os.ReadDir(fsys.dir); len(ents) != 0 {
					t.Errorf("left behind in %s: %v", fsys.dir, ents)
				}
				// Not a terminal: no progress bar, no escape sequences.
				if strings.Contains(stdout, "\x1b") || strings.Contains(stdout, "done!") {
					t.Errorf("progress output when not a TTY: %q", stdout)
				}
				r, err := benchresult.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				if r.Status != benchresult.StatusComplete || r.Environment.Host == nil || r.Environment.Target == nil || r.WhereTime == nil {
					t.Fatalf("result %s: status %s, env %+v", out, r.Status, r.Environment)
				}
				wt := r.WhereTime
				if fsys.name == "rootfs" {
					if r.Environment.Target.Storage == nil || len(wt.Devices) == 0 || !strings.Contains(stdout, "where the time went: "+wt.Devices[0].Device) {
						t.Errorf("rootfs: no device path: %+v; %q", r.Environment.Target, wt.Summary)
					}
				} else if r.Environment.Target.FSType != "tmpfs" || len(wt.Devices) != 0 {
					t.Errorf("tmpfs: target %+v, devices %+v", r.Environment.Target, wt.Devices)
				}
				// No dm-crypt on either path: no tax, no cipher measurement.
				if r.EncryptionTax != nil || strings.Contains(stdout, "encryption tax") {
					t.Errorf("a tax on a path without dm-crypt: %+v", r.EncryptionTax)
				}
				if wt.Threads[0].Group != benchresult.GroupWorkload || wt.Threads[0].CPUNS <= 0 {
					t.Errorf("workload CPU %+v", wt.Threads[0])
				}
				checkProfile(t, r)
				t.Logf("%s", strings.SplitN(stdout, "where the time went", 2)[1][:min(200, len(strings.SplitN(stdout, "where the time went", 2)[1]))])
			})
		}
	}
}

// checkProfile asserts each profile's figures are real: non-zero and
// consistent with the sizes it wrote.
func checkProfile(t *testing.T, r *benchresult.Result) {
	t.Helper()
	near := func(what string, got, want, tol float64) {
		if got < want*(1-tol) || got > want*(1+tol) {
			t.Errorf("%s: %g, want %g ±%.0f%%", what, got, want, tol*100)
		}
	}
	switch {
	case r.Profile == "search-index":
		if figure(t, r, "pair", "read_iops") <= 0 || figure(t, r, "pair", "read_p99") < figure(t, r, "pair", "read_p50") {
			t.Errorf("readers: %+v", r.Figures)
		}
		rd := stream(r, "pair", "readers", "read")
		// 4 KiB-1 MiB reads: bytes per read between the two.
		if per := float64(rd.Bytes) / float64(rd.Ops); per < 4096 || per > 1<<20 {
			t.Errorf("readers: %.0f bytes per read", per)
		}
		lt := r.LoadTimes
		if lt == nil || lt.Count == 0 || lt.Slow > lt.Count || lt.P50NS <= 0 || lt.MaxNS < lt.P99NS || lt.PageBytesPerSec <= 0 {
			t.Fatalf("load times %+v", lt)
		}
		for _, l := range lt.Loads {
			if l.Bytes != 2<<20 { // file_size at scale 0.05
				t.Errorf("load %+v: want 2 MiB", l)
			}
		}
		w := stream(r, "pair", "writers", "write")
		if w.Bytes < uint64(lt.Count)*(2<<20) || w.Bytes > 8<<20 || w.Bytes%(2<<20) != 0 {
			t.Errorf("writers wrote %d bytes for %d loads of 2 MiB (8 MiB planned)", w.Bytes, lt.Count)
		}
	case r.Profile == "db-commit":
		for _, op := range []string{"read", "write"} {
			s := stream(r, "direct-4k", "direct", op)
			if s == nil || s.Ops == 0 || s.Bytes != s.Ops*4096 {
				t.Errorf("direct %s: %+v", op, s)
				continue
			}
			near("direct "+op+" IOPS vs ops/runtime", s.OpsPerSec, float64(s.Ops)/time.Duration(s.RuntimeNS).Seconds(), 0.05)
			if s.Latency.Histogram.Count() != s.Ops {
				t.Errorf("direct %s: histogram holds %d of %d", op, s.Latency.Histogram.Count(), s.Ops)
			}
		}
		for _, ph := range []string{"commit-1", "commit-N"} {
			w, s := stream(r, ph, "commit", "write"), stream(r, ph, "commit", "sync")
			if w == nil || s == nil || w.Bytes != w.Ops*8192 || figure(t, r, ph, "commit_ops_per_sec") <= 0 {
				t.Errorf("%s: write %+v sync %+v", ph, w, s)
				continue
			}
			// One fdatasync per 8 KiB write.
			near(ph+" syncs vs writes", float64(s.Ops), float64(w.Ops), 0.02)
			if figure(t, r, ph, "commit_p99") < figure(t, r, ph, "commit_p50") {
				t.Errorf("%s: p99 below p50", ph)
			}
		}
	case r.Profile == "telemetry-ingest":
		w, s := stream(r, "ingest", "ingest", "write"), stream(r, "ingest", "ingest", "sync")
		if w == nil || s == nil || w.Bytes != w.Ops*65536 {
			t.Fatalf("ingest: write %+v sync %+v", w, s)
		}
		// A checkpoint every 8 MiB (128 appends).
		if want := w.Ops / 128; s.Ops < want-1 || s.Ops > want+1 {
			t.Errorf("%d checkpoints for %d appends, want %d", s.Ops, w.Ops, want)
		}
		if figure(t, r, "ingest", "checkpoint_max") < figure(t, r, "ingest", "checkpoint_p50") || figure(t, r, "ingest", "append_ops_per_sec") <= 0 {
			t.Errorf("figures %+v", r.Figures)
		}
	case strings.HasPrefix(r.Profile, "fio:"):
		s := stream(r, "fio", "seqread", "read")
		if s == nil || s.Bytes != 8<<20 || s.Ops != 64 || figure(t, r, "seqread", "read_bytes_per_sec") <= 0 {
			t.Errorf("fio file: %+v", s)
		}
		if !strings.Contains(r.Parameters.JobFile, "[seqread]") {
			t.Errorf("job file not recorded")
		}
	default:
		t.Errorf("unexpected profile %s", r.Profile)
	}
}

// TestInterrupt sends SIGINT to the real binary mid-run: it stops within
// seconds, prints and saves the partial result, exits 2 and leaves no file.
func TestInterrupt(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	if testing.Short() {
		t.Skip("real fio runs")
	}
	bin := testenv.BuildSlowpath(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		// The signal must fall inside the pair phase after the readers
		// have read, and nothing outside fio shows when that is: on a
		// loaded machine laying the files out can take longer than the
		// first wait. An interrupt before any read is a correct partial
		// result too (checked), so wait longer and interrupt again.
		for _, wait := range []time.Duration{3 * time.Second, 8 * time.Second, 20 * time.Second} {
			if interruptBench(t, bin, sig, wait) {
				break
			}
			if wait == 20*time.Second {
				t.Errorf("%v: no read in the pair phase after %v", sig, wait)
			}
		}
	}
}

// interruptBench runs search-index, sends sig after wait and checks the
// interrupted run; it reports whether the partial result had reads.
func interruptBench(t *testing.T, bin string, sig syscall.Signal, wait time.Duration) bool {
	t.Helper()
	dir := t.TempDir()
	out := filepath.Join(t.TempDir(), "r.json")
	cmd := exec.Command(bin, "bench", "search-index", "--dir", dir, "--scale", "0.05", "--runtime", "60s", "-o", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(wait)
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("%v: running: %v in %s, want the run's directory", sig, ents, dir)
	}
	sent := time.Now()
	cmd.Process.Signal(sig)
	err := cmd.Wait()
	if took := time.Since(sent); took > 15*time.Second {
		t.Errorf("%v: stopped after %v", sig, took)
	}
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Errorf("%v: exit %v, want 2; stderr %s", sig, err, stderr.String())
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("%v: left %v", sig, ents)
	}
	if !strings.Contains(stdout.String(), "search-index on "+dir+": interrupted") ||
		!strings.Contains(stderr.String(), "interrupted: the result above is partial") {
		t.Errorf("%v: stdout %s\nstderr %s", sig, stdout.String(), stderr.String())
	}
	r, err := benchresult.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != benchresult.StatusInterrupted {
		t.Errorf("%v: partial result: status %s", sig, r.Status)
	}
	if len(r.Phases) == 0 {
		t.Logf("%v after %v: interrupted before the pair phase ran", sig, wait)
		return false
	}
	if len(r.Phases) != 1 || !r.Phases[0].Partial {
		t.Errorf("%v: partial result: phases %+v", sig, len(r.Phases))
	}
	if read, ok := r.Figure("pair", "read_iops"); !ok || read.Value <= 0 {
		t.Logf("%v after %v: the pair phase had not read yet", sig, wait)
		return false
	}
	if !strings.Contains(stdout.String(), "read_iops") {
		t.Errorf("%v: no read_iops in the summary: %s", sig, stdout.String())
	}
	return true
}

// TestMarkdown: --format markdown prints the summary of a real run as
// Markdown on stdout, the figures a table; -o still writes the result.
func TestMarkdown(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	if testing.Short() {
		t.Skip("real fio runs")
	}
	out := filepath.Join(t.TempDir(), "r.json")
	code, stdout, stderr := run(t, "bench", "telemetry-ingest", "--dir", t.TempDir(), "--scale", "0.05", "--runtime", "1s", "--format", "markdown", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, stdout)
	}
	if !strings.HasPrefix(stdout, "**telemetry-ingest** on `") || !strings.Contains(stdout, "| phase | figure | value |\n|---|---|---|\n") {
		t.Errorf("--format markdown:\n%s", stdout)
	}
	if _, err := benchresult.ReadFile(out); err != nil {
		t.Errorf("-o with --format markdown: %v", err)
	}
}

// TestExport writes a reproduction and runs its script with sh on a tmp
// directory: fio results appear and the script cleans up.
func TestExport(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	if testing.Short() {
		t.Skip("real fio runs")
	}
	// The result on stdout (-o -, the same as --format json): one JSON
	// document with format_version first, the summary on stderr; export
	// reads it back from stdin (--result -).
	dir := t.TempDir()
	code, piped, stderr := run(t, "bench", "telemetry-ingest", "--dir", dir, "--scale", "0.05", "--runtime", "1s", "-o", "-")
	if code != 0 {
		t.Fatal(stderr)
	}
	if !strings.HasPrefix(piped, "{\n  \"format_version\": 1,\n") || !strings.Contains(stderr, "telemetry-ingest on ") {
		t.Fatalf("-o -: stdout %.200q, stderr %.200q", piped, stderr)
	}
	if _, err := benchresult.Read(strings.NewReader(piped)); err != nil {
		t.Fatalf("-o - printed no result: %v", err)
	}
	old := stdfile.Stdin
	t.Cleanup(func() { stdfile.Stdin = old })
	stdfile.Stdin = strings.NewReader(piped)
	out := filepath.Join(t.TempDir(), "repro")
	code, stdout, stderr := run(t, "bench", "export", "telemetry-ingest", "--scale", "0.05", "--runtime", "1s", "-o", out, "--result", "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, f := range []string{"1-ingest.fio", "run.sh", "README.md", "result.json"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	readme, _ := os.ReadFile(filepath.Join(out, "README.md"))
	if !strings.Contains(string(readme), "append_ops_per_sec") || !strings.Contains(string(readme), "./run.sh") {
		t.Errorf("README:\n%s", readme)
	}
	if code, _, _ := run(t, "bench", "export", "telemetry-ingest", "-o", out); code != 2 {
		t.Error("export over an existing directory accepted")
	}
	target := t.TempDir()
	cmd := exec.Command("sh", filepath.Join(out, "run.sh"), target)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("run.sh: %v\n%s", err, b)
	}
	b, err := os.ReadFile(filepath.Join(out, "results", "1-ingest.json"))
	if err != nil || !bytes.Contains(b, []byte(`"jobname" : "ingest"`)) {
		t.Errorf("run.sh result: %v %.200s", err, b)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("run.sh left %v", ents)
	}
	t.Logf("%s", stdout)

	// search-index: the script's own load loop reads finished writer files.
	si := filepath.Join(t.TempDir(), "si")
	if code, _, stderr := run(t, "bench", "export", "search-index", "--scale", "0.05", "--runtime", "2s", "-o", si); code != 0 {
		t.Fatalf("export search-index: %s", stderr)
	}
	if b, err := exec.Command("sh", filepath.Join(si, "run.sh"), target).CombinedOutput(); err != nil {
		t.Fatalf("search-index run.sh: %v\n%s", err, b)
	}
	loads, err := os.ReadFile(filepath.Join(si, "results", "loads.txt"))
	if err != nil || !strings.HasPrefix(string(loads), "writers.0.") {
		t.Errorf("search-index run.sh loads: %v %q", err, loads)
	}
	if ents, _ := os.ReadDir(target); len(ents) != 0 {
		t.Errorf("search-index run.sh left %v", ents)
	}
}

// TestFioJobFileConfined: fio itself writes every file of a ':' list, one
// outside the run's directory included; bench refuses that job file with
// the option and section, runs nothing and leaves nothing behind.
func TestFioJobFileConfined(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	elsewhere := filepath.Join(t.TempDir(), "elsewhere")
	jf := []byte("[leave]\nrw=write\nbs=4k\nsize=64k\nioengine=psync\nfilename=a:" + elsewhere + "/x.dat\n")

	// The threat is real: fio run on it directly creates the outside file.
	scratch := t.TempDir()
	if err := os.MkdirAll(elsewhere, 0o700); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("fio", "--output-format=json", "-")
	cmd.Dir, cmd.Stdin = scratch, bytes.NewReader(jf)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fio: %v: %s", err, out)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "x.dat")); err != nil {
		t.Fatalf("fio did not write the outside file (the test shows nothing): %v", err)
	}
	if err := os.RemoveAll(elsewhere); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	jobFile := filepath.Join(t.TempDir(), "leave.fio")
	if err := os.WriteFile(jobFile, jf, 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := run(t, "bench", "fio:"+jobFile, "--dir", dir, "--runtime", "1s")
	want := `section [leave]: filename="a:` + elsewhere + `/x.dat": ` + elsewhere + `/x.dat: an absolute path`
	if code != clienv.ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	if _, err := os.Lstat(elsewhere); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s exists after the refused run: %v", elsewhere, err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused run left %v in --dir", ents)
	}
	// bench export refuses it too.
	code, _, stderr = run(t, "bench", "export", "fio:"+jobFile, "-o", filepath.Join(dir, "x"))
	if code != clienv.ExitUsage || !strings.Contains(stderr, want) {
		t.Errorf("export: exit %d, stderr %q", code, stderr)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("refused export left %v", ents)
	}
}

// TestExportScripts: the run.sh of every profile, a user's job file
// included, passes `sh -n`; it refuses a DIR that the job files could not
// hold as a value before creating anything; a job file holding the
// placeholder or with a name outside the label alphabet is refused.
func TestExportScripts(t *testing.T) {
	sh := testenv.RequireTool(t, "sh", "dash")
	jobFile := filepath.Join(t.TempDir(), "mine.fio")
	if err := os.WriteFile(jobFile, []byte("[seqread]\nrw=read\nbs=128k\nsize=8m\nfilename=data\nioengine=psync\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, prof := range []string{"search-index", "db-commit", "telemetry-ingest", "fio:" + jobFile} {
		out := filepath.Join(t.TempDir(), "repro")
		if code, _, stderr := run(t, "bench", "export", prof, "--scale", "0.05", "--runtime", "1s", "-o", out); code != 0 {
			t.Fatalf("export %s: exit %d: %s", prof, code, stderr)
		}
		script := filepath.Join(out, "run.sh")
		if b, err := exec.Command(sh, "-n", script).CombinedOutput(); err != nil {
			t.Errorf("%s: sh -n run.sh: %v: %s", prof, err, b)
		}
		for _, dir := range []string{"/tmp/a:b", "/tmp/a\nrw=write", "/tmp/a;b", "/tmp/a#b", "-x", "/tmp/a|b", "/tmp/$(touch x)", ""} {
			target := t.TempDir()
			cmd := exec.Command(sh, script, dir)
			cmd.Dir = target
			b, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(b), "run.sh: DIR") {
				t.Errorf("%s: run.sh %q: %v: %s", prof, dir, err, b)
			}
			if ents, _ := os.ReadDir(target); len(ents) != 0 {
				t.Errorf("%s: run.sh %q left %v", prof, dir, ents)
			}
		}
	}
	dir := t.TempDir()
	placeholder := filepath.Join(dir, "p.fio")
	if err := os.WriteFile(placeholder, []byte("[a]\nfilename=..@DIR@/x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	odd := filepath.Join(dir, "a b.fio")
	if err := os.WriteFile(odd, []byte("[a]\nrw=read\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for jf, want := range map[string]string{placeholder: "holds @DIR@", odd: `NAME "a b.fio": use letters`} {
		code, _, stderr := run(t, "bench", "export", "fio:"+jf, "-o", filepath.Join(dir, "out"))
		if code != clienv.ExitUsage || !strings.Contains(stderr, want) {
			t.Errorf("export %s: exit %d, %q; want %q", jf, code, stderr, want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "out")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused export created its directory: %v", err)
	}
}

// TestHostileJobFiles: every job file of testdata/hostile-fio tries to
// write, run or reach outside the run's directory (@OUT@ is a directory of
// this test, ${SLOWPATH_HOSTILE_OUT} too). bench and bench export refuse
// each, exit 2, and nothing appears in @OUT@ or in --dir.
func TestHostileJobFiles(t *testing.T) {
	files, err := filepath.Glob("testdata/hostile-fio/*.fio")
	if err != nil || len(files) < 10 {
		t.Fatalf("hostile corpus: %v %v", files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			outside, dir := t.TempDir(), t.TempDir()
			t.Setenv("SLOWPATH_HOSTILE_OUT", outside)
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			jf := filepath.Join(t.TempDir(), filepath.Base(f))
			if err := os.WriteFile(jf, bytes.ReplaceAll(b, []byte("@OUT@"), []byte(outside)), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, stderr := run(t, "bench", "fio:"+jf, "--dir", dir, "--runtime", "1s")
			if code != clienv.ExitUsage || !strings.Contains(stderr, "fio job file line ") {
				t.Errorf("bench: exit %d, %q", code, stderr)
			}
			code, _, stderr = run(t, "bench", "export", "fio:"+jf, "-o", filepath.Join(dir, "export"))
			if code != clienv.ExitUsage || !strings.Contains(stderr, "fio job file line ") {
				t.Errorf("export: exit %d, %q", code, stderr)
			}
			for _, d := range []string{outside, dir} {
				if ents, _ := os.ReadDir(d); len(ents) != 0 {
					t.Errorf("%s holds %v after the refusals", d, ents)
				}
			}
		})
	}
}

// TestDirWithColon: fio splits directory= at ':'; with --dir P/a:b an
// unescaped job file names two directories, P/a and b/slowpath-bench-*
// (fio then stops on the second, or with a fixed file name writes in the
// first). Escaped, the run works and its files stay in the run's
// directory, which is removed; a --dir with ';' (fio's comment) is refused.
func TestDirWithColon(t *testing.T) {
	testenv.RequireTool(t, "fio", "fio")
	parent := t.TempDir()
	sibling, dir := filepath.Join(parent, "a"), filepath.Join(parent, "a:b")
	for _, d := range []string{sibling, dir} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(t.TempDir(), "r.json")
	code, _, stderr := run(t, "bench", "telemetry-ingest", "--dir", dir, "--scale", "0.05", "--runtime", "1s", "--interval", "200ms", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r, err := benchresult.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if f := figure(t, r, "ingest", "append_ops_per_sec"); f <= 0 {
		t.Errorf("append_ops_per_sec %v", f)
	}
	for _, d := range []string{sibling, dir} {
		if ents, _ := os.ReadDir(d); len(ents) != 0 {
			t.Errorf("%s holds %v after the run", d, ents)
		}
	}
	semi := filepath.Join(parent, "x;y")
	if err := os.Mkdir(semi, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = run(t, "bench", "telemetry-ingest", "--dir", semi, "--runtime", "1s")
	if code != clienv.ExitUsage || !strings.Contains(stderr, "which an fio job file cannot hold") {
		t.Errorf("--dir with ';': exit %d, %q", code, stderr)
	}
	if ents, _ := os.ReadDir(semi); len(ents) != 0 {
		t.Errorf("refused run left %v", ents)
	}
}
