package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// TestInputConventions: argument errors print the usage line and the
// valid values, unknown help topics, shells and subcommands exit 2, and a
// bench result given to doctor is named as one.
func TestInputConventions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"bench"}, []string{"give one profile (0 given): use one of search-index, db-commit", "usage: slowpath bench PROFILE --dir DIR"}},
		{[]string{"diff", "a"}, []string{"accepts 2 arg(s), received 1", "usage: slowpath diff A.tar.gz B.tar.gz"}},
		{[]string{"doctor", "--bogus"}, []string{"unknown flag: --bogus", "usage: slowpath doctor"}},
		{[]string{"help", "nosuch"}, []string{`unknown help topic "nosuch": use one of`, "doctor"}},
		{[]string{"completion", "tcsh"}, []string{`unknown shell "tcsh": use one of bash, fish, powershell, zsh`}},
		{[]string{"lab", "nosuch"}, []string{`unknown command "nosuch" for "slowpath lab": use one of crypt, crypto-limit`}},
		{[]string{"doctor", "--from", "../../testdata/results/plain-1.json"}, []string{"this is a bench result (use slowpath compare"}},
		{[]string{"diff", "--path.procfs", "/proc", "a", "b"}, []string{"unknown flag: --path.procfs"}},
		{[]string{"compare", "a=-", "b=-"}, []string{"- (stdin) given more than once"}},
		{[]string{"diff", "-", "-"}, []string{"- (stdin) given more than once"}},
		{[]string{"nosuchcmd"}, []string{`unknown command "nosuchcmd" for "slowpath": use one of agent, bench,`}},
		{[]string{"doctr"}, []string{"(did you mean doctor?)"}},
		{[]string{"collect"}, []string{`required flag(s) "output" not set`, "usage: slowpath collect -o FILE"}},
		// Values checked where they are parsed, whatever reads them.
		{[]string{"doctor", "--net-interval", "-1s"}, []string{"--net-interval -1s: want 0 (one sample) or more"}},
		{[]string{"doctor", "--from", "../../testdata/hosts/plain-host.json", "--cloud", "mars"}, []string{`unknown --cloud "mars"`}},
		{[]string{"bench", "db-commit", "--dir", ".", "--cloud", "mars"}, []string{`unknown --cloud "mars"`}},
		{[]string{"net", "watch", "--netns", "slowpath-no-such-netns"}, []string{"--netns slowpath-no-such-netns: no such network namespace"}},
		{[]string{"net", "watch", "--netns", "../etc"}, []string{`--netns "../etc": not a namespace name`}},
		{[]string{"net", "watch", "--duration", "500ms"}, []string{"--duration 500ms: no interval of 1s would end in it"}},
		// Refused before any query: the address is never asked.
		{[]string{"fleet", "--prometheus", "http://127.0.0.1:1", "--timeout", "0"}, []string{"--timeout 0s: want a time above 0"}},
		{[]string{"fleet", "verdict", "--prometheus", "http://127.0.0.1:1", "--change", "net.backlog-drops", "--timeout", "-1s"}, []string{"--timeout -1s: want a time above 0"}},
		{[]string{"net", "drops", "--replay", "c.json", "--folded", "-", "--svg", "-"}, []string{"--folded and --svg all write to - (stdout), where only one can go"}},
	} {
		code, _, stderr := run(t, tc.args...)
		if code != clienv.ExitUsage {
			t.Errorf("%v: exit %d, want 2: %s", tc.args, code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", tc.args, w, stderr)
			}
		}
	}
	for _, args := range [][]string{{"help", "doctor"}, {"help", "net", "drops"}, {"completion", "bash"}, {"lab"}} {
		if code, _, stderr := run(t, args...); code != clienv.ExitOK {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}

// TestDoctorFromStdin: "-" is stdin, as `collect -o -` writes stdout.
func TestDoctorFromStdin(t *testing.T) {
	f, err := os.Open("../../testdata/hosts/plain-host.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	old := stdfile.Stdin
	stdfile.Stdin = f
	t.Cleanup(func() { stdfile.Stdin = old })
	code, out, stderr := run(t, "doctor", "--from", "-", "--format", "json")
	if code != clienv.ExitOK || !strings.Contains(out, `"kernel": "6.1.0-28-cloud-amd64"`) {
		t.Errorf("exit %d, stderr %s, out:\n%.300s", code, stderr, out)
	}
}

// TestPathFlagsOnlyWhereUsed: --path.* are on the commands that read the
// host's trees (and their subcommands), on no other.
func TestPathFlagsOnlyWhereUsed(t *testing.T) {
	root := NewRootCmd(&clienv.Env{FS: hostfs.Default(), Version: "test"})
	var walk func(c *cobra.Command, uses bool)
	walk = func(c *cobra.Command, uses bool) {
		for _, s := range c.Commands() {
			u := uses || (c == root && slices.Contains(pathFlagCommands, s.Name()))
			has := s.PersistentFlags().Lookup("path.procfs") != nil || s.InheritedFlags().Lookup("path.procfs") != nil
			if has != u {
				t.Errorf("%s: --path.procfs present %v, want %v", s.CommandPath(), has, u)
			}
			walk(s, u)
		}
	}
	walk(root, false)
	for _, name := range []string{"diff", "compare", "fleet", "lab"} {
		if slices.Contains(pathFlagCommands, name) {
			t.Errorf("%s takes --path.*", name)
		}
	}
}

// TestCompareHTMLFormat: html is a --format like the others, printed on
// stdout; the old --html FILE still writes the page beside the text and
// says on stderr that it is deprecated.
func TestCompareHTMLFormat(t *testing.T) {
	const res = "../../testdata/results/"
	// The cipher's cost from a file: measured, it differs between runs.
	sides := []string{"compare", "a=" + res + "db-plain-1.json," + res + "db-plain-2.json", "b=" + res + "db-luks-1.json," + res + "db-luks-2.json", "--cipher-limit", res + "crypto-limit.json"}
	code, out, stderr := run(t, append(sides, "--format", "html")...)
	if code != clienv.ExitOK || !strings.HasPrefix(out, "<!DOCTYPE html>") || strings.Contains(stderr, "deprecated") {
		t.Fatalf("--format html: exit %d, stdout %.100q, stderr %s", code, out, stderr)
	}
	page := filepath.Join(t.TempDir(), "r.html")
	code, text, stderr := run(t, append(sides, "--html", page)...)
	if code != clienv.ExitOK || !strings.HasPrefix(text, "slowpath compare: a vs b") || !strings.Contains(stderr, "--html is deprecated: use --format html") {
		t.Fatalf("--html FILE: exit %d, stdout %.100q, stderr %s", code, text, stderr)
	}
	if b, err := os.ReadFile(page); err != nil || !bytes.Equal(b, []byte(out)) {
		t.Errorf("--html FILE wrote %d bytes (%v), --format html printed %d", len(b), err, len(out))
	}
}

// TestMarkdownFormats: diff and net print Markdown tables, with what a
// snapshot holds escaped.
func TestMarkdownFormats(t *testing.T) {
	const hosts = "../../testdata/hosts/"
	code, out, stderr := run(t, "diff", hosts+"azure-e16dv5-eah-luks.json", hosts+"azure-e16dv5-eah.json", "--format", "markdown")
	if code != clienv.ExitOK || !strings.Contains(out, "| area | what | A | B |\n|---|---|---|---|\n| finding | dmcrypt.workqueue /dev/mapper/data | fires (warning) | - |\n") {
		t.Errorf("diff --format markdown: exit %d %s\n%s", code, stderr, out)
	}
	code, out, stderr = run(t, "net", "--from", hosts+"net-tuned-bpftune.json", "--format", "markdown")
	if code != clienv.ExitOK || !strings.HasPrefix(out, "\n## Network\n\n| interface | driver |") {
		t.Errorf("net --format markdown: exit %d %s\n%s", code, stderr, out)
	}
	code, out, _ = run(t, "net", "--from", hosts+"azure-e16dv5-eah-luks.json", "--format", "markdown")
	if code != clienv.ExitOK || out != "No network section in the snapshot.\n" {
		t.Errorf("net --format markdown without a network section: exit %d %q", code, out)
	}
	// A hostile name stays in its cell: internal/report/diffreport's
	// TestMarkdownEscapes is the Markdown oracle (test/hostile runs every
	// command on the hostile fixtures).
}

// TestWrongFileNamed: every command that reads a file slowpath wrote
// names the file it was given instead when it is of another kind, and
// exits 2 (issue 44's table of command × file kind).
func TestWrongFileNamed(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	s, err := snapshot.Load("../../testdata/hosts/plain-host.json")
	if err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := snapshot.WriteArchive(&archive, s); err != nil {
		t.Fatal(err)
	}
	kinds := []struct{ name, path, says string }{
		{"snapshot", "../../testdata/hosts/plain-host.json", "a slowpath snapshot"},
		{"archive", write("host.tar.gz", archive.String()), "a gzip archive"},
		{"bench result", "../../testdata/results/plain-1.json", "bench result"},
		{"doctor's JSON", "../../testdata/golden/plain-host.json", "a command's JSON output"},
		{"crypto-limit", "../../testdata/results/crypto-limit.json", "the cipher's limit"},
		{"drop recording", "../dropreport/testdata/flood.capture.json", "a slowpath drop recording"},
		{"capture manifest", write("manifest.json", `{"kind":"slowpath-capture","schema_version":1}`), "a slowpath capture"},
		{"fix state", write("state.json", `{"kind":"slowpath-fix-state","schema_version":1,"boot_id":"","changes":[],"files":[]}`), "a slowpath fix state"},
	}
	bench := "../../testdata/results/plain-2.json"
	commands := []struct {
		name  string
		wants string // the kind the command reads: given it, it says nothing of kinds
		args  func(file string) []string
	}{
		{"doctor --from", "snapshot", func(f string) []string { return []string{"doctor", "--from", f} }},
		{"fix --from", "snapshot", func(f string) []string { return []string{"fix", "--from", f} }},
		{"diff", "snapshot", func(f string) []string { return []string{"diff", "../../testdata/hosts/plain-host.json", f} }},
		{"compare", "bench result", func(f string) []string { return []string{"compare", bench, f} }},
		{"compare --cipher-limit", "crypto-limit", func(f string) []string { return []string{"compare", "--cipher-limit", f, bench, bench} }},
		{"net drops --replay", "drop recording", func(f string) []string { return []string{"net", "drops", "--replay", f} }},
	}
	for _, c := range commands {
		for _, k := range kinds {
			if k.name == c.wants || (c.wants == "snapshot" && k.name == "archive") {
				continue
			}
			args := c.args(k.path)
			code, _, stderr := run(t, args...)
			if code != clienv.ExitUsage {
				t.Errorf("%s given a %s: exit %d, want 2: %s", c.name, k.name, code, stderr)
			}
			if !strings.Contains(stderr, k.says) {
				t.Errorf("%s given a %s: stderr does not say %q:\n%s", c.name, k.name, k.says, stderr)
			}
		}
	}
}
