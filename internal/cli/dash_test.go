package cli

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// TestEveryFileAcceptsDash walks the command tree: every flag whose value
// is a FILE, and every file argument, takes "-" for standard input (read
// flags) or standard output (written flags), and is run that way here on
// the shipped fixtures, or is named with the test that runs it (it needs
// fio, eBPF or a device), or with why "-" cannot mean anything for it. A
// FILE flag in none of the lists fails the test, so a new one is
// classified when it is added.
func TestEveryFileAcceptsDash(t *testing.T) {
	const host = "../../testdata/hosts/azure-e16dv5-eah-luks.json"
	const other = "../../testdata/hosts/azure-e16dv5-eah.json"
	const res = "../../testdata/results/"
	const capture = "../dropreport/testdata/flood.capture.json"
	sides := []string{"a=" + res + "db-plain-1.json," + res + "db-plain-2.json", "b=" + res + "db-luks-1.json," + res + "db-luks-2.json"}
	type dash struct {
		args  []string // with "-" in place
		stdin string   // a file fed to stdin; "" for an output
		// want is what stdout starts with for an output ("" for an
		// input: exit 0 is the check, as the fixture was read).
		want string
	}
	runs := map[string]dash{
		"collect --output":       {args: []string{"collect", "-o", "-", "--cloud", "none", "--net-interval", "0"}, want: "{"},
		"doctor --from":          {args: []string{"doctor", "--from", "-", "--fail-on", "none"}, stdin: host},
		"doctor --config":        {args: []string{"doctor", "--from", host, "--config", "-", "--fail-on", "none"}, stdin: "testdata/policy.json"},
		"net --from":             {args: []string{"net", "--from", "-"}, stdin: host},
		"fix --from":             {args: []string{"fix", "--from", "-"}, stdin: host},
		"diff A":                 {args: []string{"diff", "-", other}, stdin: host},
		"compare NAME=FILE":      {args: []string{"compare", "a=-," + res + "db-plain-2.json", sides[1]}, stdin: res + "db-plain-1.json"},
		"compare --cipher-limit": {args: append(append([]string{"compare"}, sides...), "--cipher-limit", "-"), stdin: res + "crypto-limit.json"},
		"compare --html":         {args: append(append([]string{"compare"}, sides...), "--html", "-"), want: "<!DOCTYPE html>"},
		"net drops --replay":     {args: []string{"net", "drops", "--replay", "-", "--format", "json"}, stdin: capture, want: "{"},
		"net drops --folded":     {args: []string{"net", "drops", "--replay", capture, "--folded", "-"}, want: "CPU_BACKLOG;"},
		"net drops --svg":        {args: []string{"net", "drops", "--replay", capture, "--svg", "-"}, want: "<?xml"},
	}
	// Accept "-" through the same code, run for real by the named test.
	elsewhere := map[string]string{
		"agent --from":          "snapshot.Load, as doctor --from above (a daemon)",
		"bench --output":        "benchcmd TestExport: -o - prints the result, export --result - reads it (runs fio)",
		"bench --cipher-limit":  "cipherlimit.ReadFile, as compare --cipher-limit above (runs fio)",
		"bench export --result": "benchcmd TestExport (the result of a real fio run, from stdin)",
		"net drops --record":    "the drops writer of --folded above (traces this host with eBPF)",
		"lab crypt --html":      "comparereport.Print, as compare --html above (builds dm-crypt devices)",
	}
	cannot := map[string]string{
		"fix --state":                "read, rewritten and removed in place by --apply and --rollback: a pipe cannot be all three",
		"fix --html":                 "--prove writes one page per proven change (FILE-N.html)",
		"agent --web.config.file":    "exporter-toolkit opens it by name, again for every connection",
		"agent --ready-file":         "a marker: created once listening, its name is the signal",
		"fleet verdict --kubeconfig": "client-go's loading rules read it by name (and resolve the files it names next to it)",
		"capture --ready-file":       "a marker: created once attached, its name is the signal",
		"net drops --ready-file":     "a marker: created once attached, its name is the signal",
	}
	root := NewRootCmd(&clienv.Env{FS: hostfs.Default(), Version: "test"})
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
			path := strings.TrimPrefix(s.CommandPath(), "slowpath ")
			s.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if name, _ := pflag.UnquoteUsage(f); name != "FILE" {
					return
				}
				key := path + " --" + f.Name
				seen[key] = true
				_, r := runs[key]
				_, e := elsewhere[key]
				_, n := cannot[key]
				if !r && !e && !n {
					t.Errorf("%s takes a FILE: run it with - here, or name where it is, or why - cannot apply", key)
				}
			})
		}
	}
	walk(root)
	for _, k := range []string{"diff A", "compare NAME=FILE"} {
		seen[k] = true // file arguments, not flags
	}
	for _, m := range []map[string]string{elsewhere, cannot} {
		for k := range m {
			if !seen[k] {
				t.Errorf("%s is listed but no such FILE flag exists", k)
			}
		}
	}
	for key, d := range runs {
		t.Run(strings.ReplaceAll(key, " ", "_"), func(t *testing.T) {
			if !seen[key] {
				t.Fatalf("%s is listed but no such FILE flag exists", key)
			}
			if d.stdin != "" {
				f, err := os.Open(d.stdin)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				old := stdfile.Stdin
				stdfile.Stdin = f
				defer func() { stdfile.Stdin = old }()
			}
			code, stdout, stderr := run(t, d.args...)
			if code != clienv.ExitOK {
				t.Fatalf("%v: exit %d: %s", d.args, code, stderr)
			}
			switch {
			case d.want != "" && !strings.HasPrefix(strings.TrimSpace(stdout), d.want):
				t.Errorf("%v: stdout does not start with %q:\n%.300s", d.args, d.want, stdout)
			case d.want == "{" && !json.Valid([]byte(stdout)):
				t.Errorf("%v: stdout is not one JSON document", d.args)
			case d.stdin != "" && strings.Contains(stderr, "no such file"):
				t.Errorf("%v: - was opened as a file: %s", d.args, stderr)
			}
		})
	}
}
