package fixcmd_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/cli"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/fixcmd"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
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

func TestProveFlags(t *testing.T) {
	env := &clienv.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}, FS: hostfs.Default()}
	var got *fixcmd.Options
	cmd := fixcmd.NewCmdFix(env, func(_ context.Context, o *fixcmd.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--apply", "--prove", "fio:job.fio", "--dir", "/srv", "--runs", "6", "--html", "p.html", "--runtime", "5s", "--scale", "0.5", "--alpha", "0.01"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	want := fixcmd.ProveOptions{Workload: "fio:job.fio", Dir: "/srv", Runs: 6, HTML: "p.html", Alpha: 0.01, Runtime: 5 * time.Second, Scale: 0.5}
	if d := cmp.Diff(want, got.Prove); d != "" {
		t.Errorf("--prove flags (-want +got):\n%s", d)
	}
	cmd = fixcmd.NewCmdFix(env, func(_ context.Context, o *fixcmd.Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--apply"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Prove.Runs != 0 || got.Prove.Alpha != 0.05 {
		t.Errorf("defaults: %+v", got.Prove)
	}
}

func TestKubernetesFlags(t *testing.T) {
	code, out, stderr := runCLI(t, hostfs.Default(), "fix", "--from", accelnet, "--format", "kubernetes", "--k8s-namespace", "node-tuning", "--k8s-image", "registry.example/tools:1")
	if code != 0 || !strings.Contains(out, "namespace: node-tuning") || !strings.Contains(out, "image: registry.example/tools:1") {
		t.Errorf("exit %d, stderr %s:\n%s", code, stderr, out)
	}
}

// TestKubernetesCanaryFlags: --canary restricts the DaemonSet to the
// label, and --canary-nodes with --by adds the commands that label them
// (internal/fix TestKubernetesCanary runs those).
func TestKubernetesCanaryFlags(t *testing.T) {
	code, out, stderr := runCLI(t, hostfs.Default(), "fix", "--from", accelnet, "--format", "kubernetes",
		"--canary", "slowpath.dev/canary=backlog", "--canary-nodes", "3", "--by", "topology.kubernetes.io/zone")
	if code != 0 || !strings.Contains(out, "nodeSelector:\n        slowpath.dev/canary: backlog") ||
		!strings.Contains(out, "shuf -n 3") || !strings.Contains(out, "runs only on the nodes labelled slowpath.dev/canary=backlog") {
		t.Errorf("exit %d, stderr %s:\n%s", code, stderr, out)
	}
}

func TestUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"fix", "--from", accelnet, "--format", "yaml"}, `unknown --format "yaml"`},
		{[]string{"fix", "--from", accelnet, "--canary", "c=1"}, "--canary applies to --format kubernetes"},
		{[]string{"fix", "--from", accelnet, "--format", "kubernetes", "--canary", "c=$(id)"}, `label value "$(id)"`},
		{[]string{"fix", "--from", accelnet, "--format", "kubernetes", "--canary", "c=1", "--canary-nodes", "3"}, "needs --by"},
		{[]string{"fix", "--from", accelnet, "--format", "kubernetes", "--canary-nodes", "3", "--by", "zone"}, "need --canary"},
		{[]string{"fix", "--from", accelnet, "--only", "net.nope"}, "--only net.nope: no such check"},
		{[]string{"fix", "--rollback", "--apply"}, "cannot be combined"},
		// A state file that is not there records nothing: not "rollback done".
		{[]string{"fix", "--rollback", "--state", "/nonexistent/missing.json"}, "rollback: no state file /nonexistent/missing.json: nothing slowpath applied is recorded there"},
		{[]string{"fix", "--from", "/nonexistent/s.json"}, "no such file"},
		{[]string{"fix", "--from", accelnet, "--watch", "-1s"}, "must not be negative"},
		// One sample, or two too close, cannot verify anything.
		{[]string{"fix", "--from", accelnet, "--apply", "--watch", "0"}, "--watch 0s is too short to verify a change: --apply needs at least 2s"},
		{[]string{"fix", "--from", accelnet, "--apply", "--watch", "1900ms"}, "--apply needs at least 2s"},
		{[]string{"fix", "--from", accelnet, "--prove", "db-commit", "--dir", "/tmp"}, "--prove needs --apply"},
		{[]string{"fix", "--from", accelnet, "--apply", "--prove", "db-commit"}, "--prove needs --dir DIR"},
		{[]string{"fix", "--from", accelnet, "--dir", "/tmp"}, "--dir needs --prove PROFILE"},
		{[]string{"fix", "--from", accelnet, "--runs", "5"}, "--runs needs --prove PROFILE"},
		{[]string{"fix", "--from", accelnet, "--html", "x.html"}, "--html needs --prove PROFILE"},
		{[]string{"fix", "--from", accelnet, "--apply", "--prove", "db-commit", "--dir", "/tmp", "--runs", "3"}, "--runs 3 cannot reach a verdict at --alpha 0.05: the Mann-Whitney U test needs at least 4 runs per side"},
		{[]string{"fix", "--from", accelnet, "--apply", "--prove", "db-commit", "--dir", "/tmp", "--alpha", "1"}, "--alpha 1 outside (0, 1)"},
		{[]string{"fix", "--from", accelnet, "--apply", "--prove", "nope", "--dir", "/tmp"}, `--prove: unknown profile "nope"`},
		{[]string{"fix", "--from", accelnet, "--apply", "--prove", "fio:/nonexistent.fio", "--dir", "/tmp"}, "nonexistent.fio"},
	} {
		code, _, stderr := runCLI(t, hostfs.Default(), tt.args...)
		if code != clienv.ExitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
}

const (
	treeBoot    = "0f4e2b6c-1d2a-4b3c-9e8f-7a6b5c4d3e2f"
	treeMachine = "4c3f1e2d5a6b7c8d9e0f1a2b3c4d5e6f"
	// treeMachineApp is slowpath's app-specific id of treeMachine
	// (internal/collect/host TestCollectIdentity).
	treeMachineApp = "5a94e339d5424f3a808dcfb5934e9f45"
)

// hostTree is a host root for the live side of fix: boot id, machine id
// and the accelnet fixture's VF at ifindex 3.
func hostTree(t *testing.T) hostfs.FS {
	t.Helper()
	dir := t.TempDir()
	hostfstest.WriteFile(t, dir, "proc/sys/kernel/random/boot_id", treeBoot+"\n")
	hostfstest.WriteFile(t, dir, "etc/machine-id", treeMachine+"\n")
	hostfstest.WriteFile(t, dir, "sys/class/net/enP30832s1/ifindex", "3\n")
	return hostfs.New(dir)
}

// withIdentity writes a copy of the snapshot at src with the given host
// ids, as if it had been collected where they hold.
func withIdentity(t *testing.T, src, boot, machine string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	h := m["host"].(map[string]any)
	h["boot_id"], h["machine_id"] = boot, machine
	out := filepath.Join(t.TempDir(), "snapshot.json")
	b, err = json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

// --persist without --apply writes the plan's files under --path.rootfs,
// lists each, does it once; --rollback removes them again. The snapshot
// is of this host (the tree's boot id).
func TestPersistFromSnapshot(t *testing.T) {
	fs := hostTree(t)
	root := fs.Root
	snap := withIdentity(t, accelnet, treeBoot, "")
	state := filepath.Join(t.TempDir(), "state.json")
	args := []string{"fix", "--from", snap, "--persist", "--only", "net.backlog-drops,net.ring-undersized", "--state", state}
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

// fix --from a snapshot of another host prints its plan but refuses
// --apply and --persist, saying why and what to do; nothing is written.
// The same machine after a reboot is accepted when the plan's devices are
// here with the same identity.
func TestFromOtherHost(t *testing.T) {
	for _, tc := range []struct {
		name          string
		boot, machine string
		ifindex       string // of enP30832s1 in the tree; "" removes it
		refused       []string
	}{
		{"no identity", "", "", "3", []string{"its boot id (none) is not this boot's " + treeBoot, "machine id (none)"}},
		{"other boot, other machine", "11111111-2222-4333-8444-555555555555", "0123456789abcdef0123456789abcdef", "3",
			[]string{"boot id 11111111-2222-4333-8444-555555555555", "machine id 0123456789abcdef0123456789abcdef is not this host's " + treeMachineApp}},
		{"same machine, ifindex changed", "11111111-2222-4333-8444-555555555555", treeMachineApp, "7",
			[]string{`interface "enP30832s1" has ifindex 7 here, 3 in the snapshot`}},
		{"same machine, interface gone", "11111111-2222-4333-8444-555555555555", treeMachineApp, "",
			[]string{`interface "enP30832s1" is not on this host`}},
		{"same machine, same devices", "11111111-2222-4333-8444-555555555555", treeMachineApp, "3", nil},
		{"same boot", treeBoot, "", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := hostTree(t)
			ifx := filepath.Join(fs.Root, "sys/class/net/enP30832s1/ifindex")
			if tc.ifindex == "" {
				if err := os.Remove(ifx); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(ifx, []byte(tc.ifindex+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			snap := withIdentity(t, accelnet, tc.boot, tc.machine)
			state := filepath.Join(t.TempDir(), "state.json")
			only := []string{"--only", "net.ring-undersized", "--state", state}

			code, plan, stderr := runCLI(t, fs, append([]string{"fix", "--from", snap}, only...)...)
			if code != 0 || !strings.Contains(plan, "ethtool -G enP30832s1") {
				t.Fatalf("printing the plan: exit %d, %s\n%s", code, stderr, plan)
			}
			code, stdout, stderr := runCLI(t, fs, append([]string{"fix", "--from", snap, "--persist"}, only...)...)
			rule := filepath.Join(fs.Root, "etc/udev/rules.d/60-slowpath-ring-enP30832s1.rules")
			if tc.refused == nil {
				if code != 0 {
					t.Fatalf("exit %d: %s", code, stderr)
				}
				if _, err := os.Stat(rule); err != nil {
					t.Errorf("accepted but not written: %v", err)
				}
				return
			}
			if code != clienv.ExitUsage || stdout != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing printed", code, stdout)
			}
			for _, want := range append(tc.refused, "not of this host", "without --from", "drop --apply and --persist") {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			for _, p := range []string{rule, state} {
				if _, err := os.Stat(p); !os.IsNotExist(err) {
					t.Errorf("%s written although refused: %v", p, err)
				}
			}
			if code, _, stderr := runCLI(t, fs, append([]string{"fix", "--from", snap, "--apply"}, only...)...); code != clienv.ExitUsage || !strings.Contains(stderr, "not of this host") {
				t.Errorf("--apply: exit %d: %s", code, stderr)
			}
		})
	}
}

// A snapshot this host has just collected of itself is accepted.
func TestFromOwnFreshSnapshot(t *testing.T) {
	fs := hostTree(t)
	snap := filepath.Join(t.TempDir(), "self.json")
	if code, _, stderr := runCLI(t, fs, "collect", "--cloud", "none", "--net-interval", "0", "-o", snap); code != 0 {
		t.Fatalf("collect: exit %d: %s", code, stderr)
	}
	s, err := snapshot.Load(snap)
	if err != nil {
		t.Fatal(err)
	}
	if s.Host == nil || s.Host.BootID != treeBoot || s.Host.MachineID != treeMachineApp {
		t.Fatalf("collected identity %+v", s.Host)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	if code, _, stderr := runCLI(t, fs, "fix", "--from", snap, "--persist", "--state", state); code != 0 || strings.Contains(stderr, "not of this host") {
		t.Errorf("own snapshot: exit %d: %s", code, stderr)
	}
}

// A snapshot of this host whose interface has a hostile (kernel-valid)
// name: every format prints it as data, the shell script passes sh -n,
// and --persist writes only inside --path.rootfs.
func TestHostileSnapshotPersist(t *testing.T) {
	sh := testenv.RequireTool(t, "sh", "dash")
	for _, name := range []string{"a;reboot", "..;reboot", "$(id)", "`id`"} {
		t.Run(name, func(t *testing.T) {
			fs := hostTree(t)
			b, err := os.ReadFile(withIdentity(t, accelnet, treeBoot, ""))
			if err != nil {
				t.Fatal(err)
			}
			q, _ := json.Marshal(name)
			snap := filepath.Join(t.TempDir(), "hostile.json")
			if err := os.WriteFile(snap, bytes.ReplaceAll(b, []byte(`"enP30832s1"`), q), 0o644); err != nil {
				t.Fatal(err)
			}
			parent := filepath.Dir(fs.Root)
			before := listTree(t, parent)
			for _, format := range []string{"files", "kubernetes", "json"} {
				if code, _, stderr := runCLI(t, fs, "fix", "--from", snap, "--format", format); code != 0 {
					t.Errorf("--format %s: exit %d: %s", format, code, stderr)
				}
			}
			state := filepath.Join(fs.Root, "var/lib/slowpath/fix/state.json")
			code, script, stderr := runCLI(t, fs, "fix", "--from", snap, "--persist", "--only", "net.ring-undersized", "--state", state)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if out, err := exec.Command(sh, "-n", "-c", script).CombinedOutput(); err != nil {
				t.Errorf("sh -n: %v: %s\n%s", err, out, script)
			}
			if !strings.Contains(script, "ethtool -G '"+strings.ReplaceAll(name, "'", `'\''`)+"' rx") {
				t.Errorf("ethtool line does not quote %q:\n%s", name, script)
			}
			for _, p := range listTree(t, parent) {
				if !strings.HasPrefix(p, fs.Root+string(filepath.Separator)) && !slices.Contains(before, p) {
					t.Errorf("written outside --path.rootfs: %s", p)
				}
			}
		})
	}
}

func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	if err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHTMLName(t *testing.T) {
	for _, tt := range []struct {
		path  string
		n, of int
		want  string
	}{
		{"p.html", 1, 1, "p.html"},
		{"/r/p.html", 2, 3, "/r/p-2.html"},
		{"report", 1, 2, "report-1"},
	} {
		if got := fixcmd.HTMLName(tt.path, tt.n, tt.of); got != tt.want {
			t.Errorf("HTMLName(%q, %d, %d) = %q, want %q", tt.path, tt.n, tt.of, got, tt.want)
		}
	}
}
