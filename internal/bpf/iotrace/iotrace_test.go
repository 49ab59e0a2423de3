package iotrace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/testenv"
)

// TestPreadEvent traces this process's own pread64 and fsync of a file on
// the filesystem of a temporary directory.
func TestPreadEvent(t *testing.T) {
	testenv.RequireRoot(t)
	dir := t.TempDir()
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "f")
	if err := os.WriteFile(p, make([]byte, 65536), 0o600); err != nil {
		t.Fatal(err)
	}
	tr, err := Start(Options{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), PID: uint32(os.Getpid())})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	if _, err := f.ReadAt(buf, 8192); err != nil {
		t.Fatal(err)
	}
	f.Sync()
	f.Close()
	tr.Detach()
	var got []Event
	for {
		var e Event
		err := tr.Read(&e, time.Now().Add(200*time.Millisecond))
		if errors.Is(err, os.ErrDeadlineExceeded) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e)
	}
	var pread, open, fsync bool
	for _, e := range got {
		t.Logf("%+v", e)
		switch {
		case e.Kind == 1 && e.Offset == 8192 && e.Length == 4096 && e.Ret == 4096 && e.Flags == 1<<5:
			pread = true
		case e.Kind == 9 && e.Ret >= 0:
			open = true
		case e.Kind == 3:
			fsync = true
		}
	}
	if !pread || !open || !fsync {
		t.Errorf("pread %v, open %v, fsync %v among %d events", pread, open, fsync, len(got))
	}
}
