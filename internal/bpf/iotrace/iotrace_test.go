package iotrace

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
	// The tracer never traces its own process: the I/O is a child's,
	// which waits for a line on stdin.
	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), "SLOWPATH_IOTRACE_CHILD="+p)
	in, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	tr, err := Start(Options{Major: unix.Major(st.Dev), Minor: unix.Minor(st.Dev), PID: uint32(child.Process.Pid)})
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	in.Write([]byte("go\n"))
	if err := child.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
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

// TestMain runs the child of TestPreadEvent when asked to: after a line on
// stdin it opens the file, preads a page at 8 KiB and fsyncs.
func TestMain(m *testing.M) {
	if p := os.Getenv("SLOWPATH_IOTRACE_CHILD"); p != "" {
		bufio.NewReader(os.Stdin).ReadString('\n')
		f, err := os.Open(p)
		if err == nil {
			_, err = f.ReadAt(make([]byte, 4096), 8192)
		}
		if err == nil {
			err = f.Sync()
		}
		if err != nil {
			fmt.Println(err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}
