package fixcmd_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/cli"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/fixcmd"
	"github.com/slowpath/slowpath/internal/hostfs"
)

const accelnet = "../../../testdata/hosts/net-azure-accelnet.json"

func runCLI(t *testing.T, fs hostfs.FS, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: fs, Version: "test"}
	return cli.Run(env, args), out.String(), errb.String()
}

func TestFlags(t *testing.T) {
	env := &clienv.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, FS: hostfs.Default()}
	var got *fixcmd.Options
	cmd := fixcmd.NewCmdFix(env, func(_ context.Context, o *fixcmd.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--only", "net.backlog-drops,net.ring-undersized", "--only", "dmcrypt.workqueue", "--apply", "--watch", "3s"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"net.backlog-drops", "net.ring-undersized", "dmcrypt.workqueue"}, got.Only); d != "" {
		t.Errorf("--only (-want +got):\n%s", d)
	}
	if !got.Apply || got.Persist || got.Rollback || got.Watch != 3*time.Second || got.Format != "shell" || got.StatePath != "/var/lib/slowpath/fix/state.json" {
		t.Errorf("options %+v", got)
	}
}

func TestKubernetesFlags(t *testing.T) {
	code, out, stderr := runCLI(t, hostfs.Default(), "fix", "--from", accelnet, "--format", "kubernetes", "--k8s-namespace", "node-tuning", "--k8s-image", "registry.example/tools:1")
	if code != 0 || !strings.Contains(out, "namespace: node-tuning") || !strings.Contains(out, "image: registry.example/tools:1") {
		t.Errorf("exit %d, stderr %s:\n%s", code, stderr, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"fix", "--from", accelnet, "--format", "yaml"}, `unknown --format "yaml"`},
		{[]string{"fix", "--from", accelnet, "--only", "net.nope"}, "--only net.nope: no such check"},
		{[]string{"fix", "--rollback", "--apply"}, "cannot be combined"},
		{[]string{"fix", "--from", "/nonexistent/s.json"}, "no such file"},
		{[]string{"fix", "--from", accelnet, "--watch", "-1s"}, "must not be negative"},
	} {
		code, _, stderr := runCLI(t, hostfs.Default(), tt.args...)
		if code != clienv.ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

// --persist without --apply writes the plan's files under --path.rootfs,
// lists each, does it once; --rollback removes them again.
func TestPersistFromSnapshot(t *testing.T) {
	root := t.TempDir()
	fs := hostfs.Default()
	fs.Root = root
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"fix", "--from", accelnet, "--persist", "--only", "net.backlog-drops,net.ring-undersized", "--state", state}
	code, stdout, stderr := runCLI(t, fs, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	files := []string{"/etc/sysctl.d/60-slowpath-net-backlog-drops.conf", "/etc/udev/rules.d/60-slowpath-ring-enP30832s1.rules"}
	for _, f := range files {
		if !strings.Contains(stderr, "wrote "+f) {
			t.Errorf("%s not listed:\n%s", f, stderr)
		}
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stdout, string(b)) {
			t.Errorf("%s differs from the plan's heredoc:\n%s", f, b)
		}
	}
	if _, _, stderr = runCLI(t, fs, args...); !strings.Contains(stderr, "already up to date") || strings.Contains(stderr, "wrote") {
		t.Errorf("second --persist:\n%s", stderr)
	}
	if code, _, stderr = runCLI(t, fs, "fix", "--rollback", "--state", state); code != 0 {
		t.Fatalf("rollback exit %d: %s", code, stderr)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(root, f)); !os.IsNotExist(err) {
			t.Errorf("%s left after --rollback: %v", f, err)
		}
	}
}
