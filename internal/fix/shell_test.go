package fix

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// The shell format's text-processing commands run with the real awk and
// sh on inputs shaped like dmsetup's table output and /etc/crypttab.
func TestShellCommandsRun(t *testing.T) {
	awk := testenv.RequireTool(t, "awk", "mawk")
	sh := testenv.RequireTool(t, "sh", "dash")
	s := &snapshot.Snapshot{Host: &snapshot.Host{KernelRelease: "6.1.0"}}
	p, err := Build(s, []check.Finding{{ID: "dmcrypt.workqueue", Status: check.Fail, Subject: "/dev/mapper/data",
		Fix: &check.Fix{Crypt: &check.CryptChange{Name: "data", Format: "plain", Add: []string{"no_read_workqueue", "no_write_workqueue"}}}}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	script := Shell(p)

	// The table rewrite between `dmsetup table --showkeys` and `dmsetup reload`.
	cmd := p.Entries[0].Steps[0].Command
	start, end := strings.Index(cmd, "awk '"), strings.Index(cmd, "' | dmsetup reload")
	if start < 0 || end < 0 {
		t.Fatalf("no awk stage in %q", cmd)
	}
	prog := cmd[start+len("awk '") : end]
	for in, want := range map[string]string{
		"0 2048 crypt aes-xts-plain64 00ff 0 7:0 0":                  "0 2048 crypt aes-xts-plain64 00ff 0 7:0 0 2 no_read_workqueue no_write_workqueue",
		"0 2048 crypt aes-xts-plain64 00ff 0 7:0 0 1 allow_discards": "0 2048 crypt aes-xts-plain64 00ff 0 7:0 0 3 allow_discards no_read_workqueue no_write_workqueue",
	} {
		c := exec.Command(awk, prog)
		c.Stdin = strings.NewReader(in + "\n")
		out, err := c.CombinedOutput()
		if err != nil || strings.TrimSpace(string(out)) != want {
			t.Errorf("awk on %q: %q (%v), want %q", in, out, err, want)
		}
	}

	// The crypttab edit.
	var line string
	for _, l := range strings.Split(script, "\n") {
		if strings.HasPrefix(l, "n=data o=") {
			line = l
		}
	}
	if line == "" {
		t.Fatalf("no crypttab edit in:\n%s", script)
	}
	tab := filepath.Join(t.TempDir(), "crypttab")
	if err := os.WriteFile(tab, []byte("# data /dev/x\ndata /dev/sdb none plain,discard\nswap /dev/sdc /dev/urandom swap\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sh, "-c", strings.ReplaceAll(line, "/etc/crypttab", tab)).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got, _ := os.ReadFile(tab)
	want := "# data /dev/x\ndata /dev/sdb none plain,discard,no-read-workqueue,no-write-workqueue\nswap /dev/sdc /dev/urandom swap\n"
	if string(got) != want {
		t.Errorf("crypttab:\n%s\nwant\n%s", got, want)
	}
}

// The crypttab edit receives the name byte-exact (through ENVIRON, not
// awk -v, which would turn \t into a tab): a name with backslashes, a
// quote and shell syntax edits its own line and no other. The first line
// is the decoy: awk -v would read the name a\\b as a\b and edit it.
func TestCrypttabEditExactName(t *testing.T) {
	testenv.RequireTool(t, "awk", "mawk")
	sh := testenv.RequireTool(t, "sh", "dash")
	for _, name := range []string{`a\\b`, `a\tb`, `it's`, "$(id)", "x;touch${IFS}/tmp/PWNED;#", `a\`} {
		tab := filepath.Join(t.TempDir(), "crypttab")
		in := `a\b /dev/sda none discard` + "\n" + name + " /dev/sdb none plain\n"
		if err := os.WriteFile(tab, []byte(in), 0o600); err != nil {
			t.Fatal(err)
		}
		line := crypttabEdit(File{Kind: "crypttab", Path: tab, Name: name, Options: []string{"no-read-workqueue"}})
		if out, err := exec.Command(sh, "-c", line).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", line, err, out)
		}
		got, _ := os.ReadFile(tab)
		want := `a\b /dev/sda none discard` + "\n" + name + " /dev/sdb none plain,no-read-workqueue\n"
		if string(got) != want {
			t.Errorf("name %q:\n%s\nwant\n%s", name, got, want)
		}
	}
}
