package tracefs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestFind(t *testing.T) {
	dir := t.TempDir()
	if _, err := Find(dir); !errors.Is(err, ErrNotMounted) {
		t.Errorf("empty dir: err = %v, want ErrNotMounted", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "events"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Find(dir); err != nil || got != dir {
		t.Errorf("dir with events/: %q, %v", got, err)
	}
	// An explicit directory is never replaced by a mount of Do's own.
	called := false
	err := Do(filepath.Join(dir, "none"), nil, func(string) error { called = true; return nil })
	if !errors.Is(err, ErrNotMounted) || called {
		t.Errorf("Do on a missing explicit dir: err %v, fn called %v", err, called)
	}
	if err := Do(dir, nil, func(d string) error {
		if d != dir {
			return fmt.Errorf("fn got %q", d)
		}
		return nil
	}); err != nil {
		t.Error(err)
	}
}

// childEnv makes TestMain play the child of TestDoPrivate.
const childEnv = "SLOWPATH_TRACEFS_CHILD"

// TestDoPrivate runs Do for real where no tracefs is mounted: in a child
// test binary inside a mount namespace of its own (unshare -m) with every
// tracefs and debugfs unmounted, whatever this host has. The child checks
// that fn saw tracefs's events, that its process never saw the mount (its
// mountinfo, read during fn and after), and that the loading thread, with
// its namespace, is gone after Do.
func TestDoPrivate(t *testing.T) {
	testenv.RequireRoot(t)
	unshare := testenv.RequireTool(t, "unshare", "util-linux")
	script := `for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do umount -l "$m" 2>/dev/null; done; exec "$0" -test.run '^TestDoPrivate$'`
	cmd := exec.Command(unshare, "-m", "--propagation", "slave", "sh", "-c", script, os.Args[0])
	cmd.Env = append(os.Environ(), childEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "child ok") {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "mounted a private one") {
		t.Errorf("Do did not log its mount:\n%s", out)
	}
}

func child() error {
	if _, err := Find(""); err == nil {
		return errors.New("tracefs still mounted in the child's namespace")
	}
	var events []os.DirEntry
	err := Do("", func(msg string) { fmt.Println("log:", msg) }, func(dir string) error {
		var err error
		if events, err = os.ReadDir(filepath.Join(dir, "events")); err != nil {
			return err
		}
		return noTracefsMount("during fn")
	})
	if err != nil {
		return err
	}
	if len(events) < 5 {
		return fmt.Errorf("fn saw %d entries in events/, want the kernel's event groups", len(events))
	}
	if _, err := Find(""); err == nil {
		return errors.New("after Do, tracefs is visible to the process")
	}
	return noTracefsMount("after Do")
}

// noTracefsMount fails when the process's mountinfo (its main thread's
// namespace, which the host shares) lists a tracefs.
func noTracefsMount(when string) error {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return err
	}
	if strings.Contains(string(b), " - tracefs ") {
		return fmt.Errorf("%s: the process's mountinfo lists a tracefs", when)
	}
	return nil
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		if err := child(); err != nil {
			fmt.Println("child failed:", err)
			os.Exit(1)
		}
		fmt.Println("child ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}
