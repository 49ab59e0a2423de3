package cli

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/cli/clienv"
)

// hostileFixture writes testdata/hosts/net-azure-accelnet.json with the
// first interface renamed to name (every place the name appears: the
// interface, its VF's master, and the counter samples), the way an edited
// snapshot attached to a ticket would hold it.
func hostileFixture(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hosts", "net-azure-accelnet.json"))
	if err != nil {
		t.Fatal(err)
	}
	old, err := json.Marshal("eth0")
	if err != nil {
		t.Fatal(err)
	}
	repl, err := json.Marshal(name)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), string(old)) {
		t.Fatal("fixture no longer names eth0")
	}
	p := filepath.Join(dir, "hostile.json")
	if err := os.WriteFile(p, []byte(strings.ReplaceAll(string(b), string(old), string(repl))), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// listTree returns every path under dir.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostileSnapshotExit2: a snapshot whose interface name the kernel
// would refuse is a named error with exit 2 for every command that reads a
// snapshot, nothing is printed on stdout and no file is written.
func TestHostileSnapshotExit2(t *testing.T) {
	const kernel, own = "(net/core/dev.c dev_valid_name)", "(slowpath: a control character"
	names := map[string]struct{ name, source string }{
		"newline":    {"a\nb", kernel},
		"slash":      {"../../etc", kernel},
		"colon":      {"eth0:1", kernel},
		"space":      {"x y", kernel},
		"16 bytes":   {"abcdefghijklmnop", kernel},
		"NUL":        {"a\x00b", kernel},
		"dot-dot":    {"..", kernel},
		"empty":      {"", kernel},
		"escape seq": {"\x1b[2Jx", own},
		"C1 CSI":     {"a\u009b2J", own},
	}
	for what, tc := range names {
		name := tc.name
		t.Run(what, func(t *testing.T) {
			dir := t.TempDir()
			p := hostileFixture(t, dir, name)
			root := filepath.Join(dir, "root")
			if err := os.Mkdir(root, 0o700); err != nil {
				t.Fatal(err)
			}
			before := listTree(t, dir)
			cmds := [][]string{
				{"doctor", "--from", p},
				{"doctor", "--from", p, "--format", "json"},
				{"diff", p, p},
				{"agent", "--from", p, "--web.listen-address", "127.0.0.1:0"},
				{"fix", "--from", p, "--persist", "--path.rootfs", root},
			}
			for _, f := range []string{"shell", "files", "kubernetes", "json"} {
				cmds = append(cmds, []string{"fix", "--from", p, "--format", f})
			}
			for _, args := range cmds {
				code, stdout, stderr := run(t, args...)
				if code != clienv.ExitUsage {
					t.Errorf("%q: exit %d, want 2; stderr %q", args, code, stderr)
				}
				if !strings.Contains(stderr, "snapshot: net.interfaces[0].name ") || !strings.Contains(stderr, tc.source) {
					t.Errorf("%q: stderr %q does not name net.interfaces[0].name and %s", args, stderr, tc.source)
				}
				if stdout != "" {
					t.Errorf("%q: wrote to stdout: %q", args, stdout)
				}
				if strings.ContainsAny(name, "\n\x00\x1b") && strings.Contains(stderr, name) {
					t.Errorf("%q: stderr carries the raw value: %q", args, stderr)
				}
			}
			if after := listTree(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Errorf("files changed under %s:\nbefore %q\nafter  %q", dir, before, after)
			}
		})
	}
}

// TestShellWordNameIsAValidSnapshot: the kernel accepts ';', '$' and
// backquotes in interface names, so a snapshot holding them loads; quoting
// them is the renderers' job (docs/fix.md), not the validator's.
func TestShellWordNameIsAValidSnapshot(t *testing.T) {
	for _, name := range []string{"a;reboot", "$(id)", "`id`", "x|y&z"} {
		p := hostileFixture(t, t.TempDir(), name)
		code, _, stderr := run(t, "doctor", "--from", p)
		if code == clienv.ExitUsage {
			t.Errorf("%q: doctor refused a name the kernel accepts: %s", name, stderr)
		}
	}
}

// TestHostileStorageSnapshotExit2: the same for the storage fields a plan
// or a file uses (a dm name, a mount point, a block device name), set in a
// LUKS fixture; doctor and fix refuse it, naming the field.
func TestHostileStorageSnapshotExit2(t *testing.T) {
	for _, tc := range []struct {
		path string
		set  func(s map[string]any)
	}{
		{"storage.block_devices[5].dm.name", func(s map[string]any) { dev(s, 5)["dm"].(map[string]any)["name"] = "../../etc/x" }},
		{"storage.block_devices[5].dm.name", func(s map[string]any) { dev(s, 5)["dm"].(map[string]any)["name"] = "x\nrm -rf /" }},
		{"storage.mounts[5].mount_point", func(s map[string]any) {
			s["storage"].(map[string]any)["mounts"].([]any)[5].(map[string]any)["mount_point"] = "/data/../../etc"
		}},
		{"storage.block_devices[4].name", func(s map[string]any) { dev(s, 4)["name"] = "nvme1n1/../../x" }},
	} {
		b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "hosts", "aws-i4i-luks-default.json"))
		if err != nil {
			t.Fatal(err)
		}
		var s map[string]any
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatal(err)
		}
		tc.set(s)
		if b, err = json.Marshal(s); err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		p := filepath.Join(dir, "hostile.json")
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		before := listTree(t, dir)
		for _, args := range [][]string{{"doctor", "--from", p}, {"fix", "--from", p, "--format", "shell"}, {"fix", "--from", p, "--persist", "--path.rootfs", dir}} {
			code, stdout, stderr := run(t, args...)
			if code != clienv.ExitUsage || stdout != "" || !strings.Contains(stderr, "snapshot: "+tc.path+" ") {
				t.Errorf("%q: exit %d, stdout %q, stderr %q; want exit 2, nothing on stdout and an error naming %s", args, code, stdout, stderr, tc.path)
			}
		}
		if after := listTree(t, dir); strings.Join(after, "\n") != strings.Join(before, "\n") {
			t.Errorf("files changed under %s: %q", dir, after)
		}
	}
}

func dev(s map[string]any, i int) map[string]any {
	return s["storage"].(map[string]any)["block_devices"].([]any)[i].(map[string]any)
}
