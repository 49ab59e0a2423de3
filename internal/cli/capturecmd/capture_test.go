package capturecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/capture"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func testEnv() (*clienv.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}, &out, &errb
}

func TestFlags(t *testing.T) {
	def := Options{Duration: 60 * time.Second, Mount: "/", Output: "cap", MaxRecords: capture.DefaultMaxRecords, RingMiB: 16, Format: "text"}
	for _, tc := range []struct {
		args []string
		want *Options
		err  string
	}{
		{[]string{"-o", "cap"}, &def, ""},
		{[]string{"-o", "cap", "--pid", "42", "--mount", "/srv", "--duration", "5s", "--format", "json"},
			&Options{Duration: 5 * time.Second, PID: 42, Mount: "/srv", Output: "cap", MaxRecords: capture.DefaultMaxRecords, RingMiB: 16, Format: "json"}, ""},
		{[]string{"-o", "cap", "--comm", "postgres", "--ring-size", "64", "--accept-drops", "--max-records", "1000"},
			&Options{Duration: 60 * time.Second, Comm: "postgres", Mount: "/", Output: "cap", MaxRecords: 1000, RingMiB: 64, AcceptDrops: true, Format: "text"}, ""},
		{[]string{"-o", "cap", "--format", "markdown"},
			&Options{Duration: 60 * time.Second, Mount: "/", Output: "cap", MaxRecords: capture.DefaultMaxRecords, RingMiB: 16, Format: "markdown"}, ""},
		{[]string{}, nil, `"output" not set`},
		{[]string{"-o", "cap", "--pid", "1", "--comm", "x"}, nil, "none of the others can be"},
		{[]string{"-o", "cap", "--format", "xml"}, nil, "unknown --format"},
		{[]string{"-o", "cap", "--ring-size", "3"}, nil, "power of two"},
		{[]string{"-o", "cap", "--comm", "a-very-long-thread-name"}, nil, "15 bytes"},
		{[]string{"-o", "cap", "--duration", "-1s"}, nil, "negative"},
		{[]string{"-o", "cap", "--block-only", "--pid", "3"}, nil, "do not apply"},
		{[]string{"-o", "cap", "--max-records", "0"}, nil, "at least 1"},
		{[]string{"-o", "cap", "extra"}, nil, "unknown command"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			env, _, _ := testEnv()
			var got *Options
			cmd := NewCmdCapture(env, func(_ context.Context, o *Options) error { got = o; return nil })
			cmd.SetArgs(tc.args)
			cmd.SetOut(&bytes.Buffer{})
			cmd.SetErr(&bytes.Buffer{})
			err := cmd.Execute()
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestCheckSpace(t *testing.T) {
	dir := t.TempDir()
	if err := checkSpace(filepath.Join(dir, "new", "cap"), 10); err != nil {
		t.Errorf("10 records: %v", err)
	}
	// 2^50 records of 32 bytes fit nowhere.
	err := checkSpace(filepath.Join(dir, "cap"), 1<<50)
	if err == nil || !strings.Contains(err.Error(), "free; a capture of up to 1125899906842624 records may take") {
		t.Errorf("2^50 records: %v", err)
	}
}

func execute(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	env, out, errb := testEnv()
	cmd := NewCmdCapture(env, nil)
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errb)
	err := cmd.Execute()
	code := 0
	var ee *clienv.ExitError
	if errors.As(err, &ee) {
		code = ee.Code
		if ee.Err != nil {
			errb.WriteString(ee.Err.Error())
		}
	} else if err != nil {
		code = -1
		errb.WriteString(err.Error())
	}
	return code, out.String(), errb.String()
}

// TestRefusals: an output directory that is not empty, a --mount that is
// not a mount point, a cgroup that is not one: exit 2 with a named reason,
// before anything is written.
func TestRefusals(t *testing.T) {
	testenv.RequireRoot(t)
	full := t.TempDir()
	if err := os.WriteFile(filepath.Join(full, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-o", full, "--duration", "1s"}, "output directory is not empty"},
		{[]string{"-o", filepath.Join(t.TempDir(), "cap"), "--mount", t.TempDir(), "--duration", "1s"}, "not a mount point"},
		{[]string{"-o", filepath.Join(t.TempDir(), "cap"), "--cgroup", t.TempDir(), "--duration", "1s"}, "not in a cgroup v2 hierarchy"},
	} {
		code, _, errs := execute(t, tc.args...)
		if code != clienv.ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// TestBlockOnlyJSON runs the command for a second on the root filesystem's
// devices and reads its JSON output and directory.
func TestBlockOnlyJSON(t *testing.T) {
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "cap")
	ready := filepath.Join(t.TempDir(), "ready")
	code, out, errs := execute(t, "-o", dir, "--block-only", "--duration", "1s", "--format", "json", "--ready-file", ready, "--accept-drops")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var m capfile.Manifest
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("output: %v\n%s", err, out)
	}
	if !strings.HasPrefix(out, "{\n  \"format_version\": 1,\n") {
		t.Errorf("--format json does not start with format_version:\n%.200s", out)
	}
	c, err := capfile.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Verify(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(ready); err != nil {
		t.Errorf("ready file: %v", err)
	}
	if m.Kind != capfile.Kind || !m.Filters.BlockOnly || m.DurationNS < uint64(time.Second) || len(m.Devices) == 0 || m.Path == nil {
		t.Errorf("manifest: kind %q, filters %+v, duration %d, devices %+v", m.Kind, m.Filters, m.DurationNS, m.Devices)
	}
}

// TestBlockOnlyMarkdown: --format markdown prints the summary of a real
// capture as capturereport's table.
func TestBlockOnlyMarkdown(t *testing.T) {
	testenv.RequireRoot(t)
	dir := filepath.Join(t.TempDir(), "cap")
	code, out, errs := execute(t, "-o", dir, "--block-only", "--duration", "1s", "--format", "markdown", "--accept-drops")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"**slowpath capture** into `" + dir + "`\n\n| what | value |\n|---|---|\n| duration | ", "| status | complete |", "| block records | ", "| device | ", "| dropped events | "} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestPrivilegeErrors runs the command in a child process without
// capabilities, and with only CAP_BPF, and expects the error to name what
// is missing.
func TestPrivilegeErrors(t *testing.T) {
	for _, tc := range []struct {
		caps []string
		want string
	}{
		{nil, "needs CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"},
		{[]string{"--inh-caps=+bpf", "--ambient-caps=+bpf"}, "needs CAP_PERFMON (or CAP_SYS_ADMIN)"},
	} {
		out := testenv.RunUnprivileged(t, "SLOWPATH_CAPTURE_CHILD="+filepath.Join(t.TempDir(), "cap"), tc.caps...)
		if !strings.Contains(string(out), "exit 2: ") || !strings.Contains(string(out), tc.want) {
			t.Errorf("caps %v: want exit 2 and an error containing %q, child said:\n%s", tc.caps, tc.want, out)
		}
	}
}

// TestMain runs the child of TestPrivilegeErrors in place of the tests
// when asked to.
func TestMain(m *testing.M) {
	if dir := os.Getenv("SLOWPATH_CAPTURE_CHILD"); dir != "" {
		env, _, errb := testEnv()
		cmd := NewCmdCapture(env, nil)
		cmd.SetArgs([]string{"-o", dir, "--duration", "1s"})
		err := cmd.Execute()
		var ee *clienv.ExitError
		if errors.As(err, &ee) {
			fmt.Printf("exit %d: %v%s\n", ee.Code, ee.Err, errb)
		} else {
			fmt.Printf("no capture error: %v\n", err)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTracefsUnmounted runs the real binary where no tracefs is mounted: in
// a mount namespace of the test's own with every tracefs unmounted, so the
// host's state does not matter. As root the capture works, says that it
// mounted a private tracefs, and no tracefs shows in its namespace while
// it runs (any of its threads) or after. With CAP_BPF and CAP_PERFMON but
// not CAP_SYS_ADMIN it stops with the named error.
func TestTracefsUnmounted(t *testing.T) {
	testenv.RequireRoot(t)
	unshare := testenv.RequireTool(t, "unshare", "util-linux")
	testenv.RequireTool(t, "setpriv", "util-linux")
	bin := testenv.BuildSlowpath(t)
	// Not t.TempDir: its parent is closed to the unprivileged run, which
	// writes here too.
	dir, err := os.MkdirTemp("", "sp-tracefs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	script := `
for m in /sys/kernel/debug/tracing /sys/kernel/tracing /sys/kernel/debug; do umount -l "$m" 2>/dev/null; done
grep -q ' - tracefs ' /proc/self/mountinfo && echo "tracefs still mounted"
"$BIN" capture --duration 2s --comm sp-nosuch -o "$DIR/cap" --ready-file "$DIR/ready" 2>"$DIR/stderr" & pid=$!
while [ ! -e "$DIR/ready" ] && kill -0 $pid 2>/dev/null; do sleep 0.05; done
cat /proc/self/mountinfo /proc/$pid/task/*/mountinfo 2>/dev/null | grep -q ' - tracefs ' && echo "tracefs visible during the capture"
wait $pid; echo "root exit $?"
grep -q ' - tracefs ' /proc/self/mountinfo && echo "tracefs left behind"
setpriv --reuid=65534 --regid=65534 --clear-groups --inh-caps=+bpf,+perfmon --ambient-caps=+bpf,+perfmon \
	"$BIN" capture --duration 1s --comm sp-nosuch -o "$DIR/cap2"
echo "unprivileged exit $?"
`
	cmd := exec.Command(unshare, "-m", "--propagation", "slave", "sh", "-c", script)
	cmd.Env = append(os.Environ(), "BIN="+bin, "DIR="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	stderr, _ := os.ReadFile(filepath.Join(dir, "stderr"))
	for _, bad := range []string{"tracefs still mounted", "tracefs visible during the capture", "tracefs left behind"} {
		if strings.Contains(string(out), bad) {
			t.Errorf("%s:\n%s", bad, out)
		}
	}
	if !strings.Contains(string(out), "root exit 0") {
		t.Errorf("capture as root failed:\n%s\nits stderr:\n%s", out, stderr)
	}
	if !strings.Contains(string(stderr), "mounted a private one at /sys/kernel/tracing") {
		t.Errorf("capture did not say it mounted tracefs; stderr:\n%s", stderr)
	}
	if _, err := capfile.Open(filepath.Join(dir, "cap")); err != nil {
		t.Errorf("capture as root: %v", err)
	}
	if !strings.Contains(string(out), "unprivileged exit 2") || !strings.Contains(string(out), "tracefs not found") ||
		!strings.Contains(string(out), "CAP_SYS_ADMIN, which it lacks") {
		t.Errorf("without CAP_SYS_ADMIN: want exit 2 and the named error, got:\n%s", out)
	}
}
