package replay_test

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/capture"
	"github.com/slowpath/slowpath/internal/testing/testenv"
	"github.com/slowpath/slowpath/internal/workload/dbserver"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// TestFidelityMariaDB captures Debian's MariaDB under sysbench OLTP, with
// a buffer pool (8 MiB) smaller than its tables (about 40 MiB), so InnoDB
// reads and writes its data files through its asynchronous I/O (io_uring
// or native AIO, as its log says), and replays the capture with fio: the
// capture must hold asynchronous records, and the replay's block bytes be
// within 5% of the capture's.
func TestFidelityMariaDB(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "fio", "fio")
	if err := dbserver.MariaDBTools(false); err != nil {
		testenv.Unavailable(t, err.Error())
	}
	mnt := loopExt4(t, 1<<30)
	// The server's account (mysql) must reach its directory.
	// The test's own temporary directories, up to the system's.
	for d := mnt; len(d) > len(os.TempDir())+1; d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o711); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	db, err := dbserver.StartMariaDBWith(ctx, mnt, false, "--innodb-buffer-pool-size=8M")
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	t.Cleanup(func() {
		if !closed {
			db.Close()
		}
	})
	o := dbserver.SysbenchOptions{Tables: 4, TableSize: 40000, Threads: 4, Duration: 5 * time.Second}
	if err := db.SysbenchPrepare(ctx, o); err != nil {
		t.Fatal(err)
	}
	capDir := filepath.Join(t.TempDir(), "cap")
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	ready, done := make(chan struct{}), make(chan error, 1)
	go func() {
		_, err := capture.Run(cctx, capture.Options{Mount: mnt, PID: uint32(db.PID()), Ready: func() { close(ready) }}, capDir)
		done <- err
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("capture: %v", err)
	}
	_, runErr := db.SysbenchRun(ctx, o)
	stop()
	if err := <-done; err != nil {
		t.Fatalf("capture: %v", err)
	}
	if runErr != nil {
		t.Fatal(runErr)
	}
	elog, _ := db.ErrorLog()
	for _, l := range bytes.Split(elog, []byte("\n")) {
		if bytes.Contains(l, []byte("liburing")) || bytes.Contains(l, []byte("io_uring")) || bytes.Contains(l, []byte("native AIO")) {
			t.Logf("mariadbd: %s", l)
		}
	}
	closed = true
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if d := os.Getenv("SLOWPATH_KEEP_CAPTURE"); d != "" {
		// For a look at a failure: cp -r of the capture.
		if out, err := exec.Command("cp", "-r", capDir, d).CombinedOutput(); err != nil {
			t.Logf("keep the capture: %v: %s", err, out)
		}
	}
	src, err := replay.Load(capDir)
	if err != nil {
		t.Fatal(err)
	}
	ev := src.Manifest.Events
	t.Logf("capture: %d ops (%d aio, %d io_uring), %d block records, missed %+v, kernel %+v", ev.Ops, ev.AIO, ev.IOURing, ev.Block, ev.Missed, src.Manifest.Kernel)
	if ev.AIO+ev.IOURing == 0 {
		t.Errorf("no asynchronous record: InnoDB's data-file I/O was not captured")
	}
	for _, th := range src.Trace.Threads {
		if th.Engine != "" {
			t.Logf("thread %s: %s, depth %d, %d ops", th.Name, th.Engine, th.Depth, len(th.Ops))
		}
	}
	_, f := replayAFAP(ctx, t, mnt, src)
	logDiffs(t, f.Capture, *f.Replay)
	t.Logf("skipped: %v problems: %v", f.Skipped, f.Problems)
	for _, d := range replay.Differences(f.Capture, *f.Replay) {
		if d.Name == "bytes" && (math.IsNaN(d.Relative) || math.Abs(d.Relative) > 0.05) {
			t.Errorf("bytes: capture %g, replay %g: %+.2f%%, bound ±5%%", d.Capture, d.Replay, d.Relative*100)
		}
	}
}
