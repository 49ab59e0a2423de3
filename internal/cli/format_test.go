package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// TestEveryResultHasJSON walks the command tree: every command that prints
// a result takes --format json, and where it runs on the shipped fixtures
// its JSON has format_version. A command in none of the lists below fails
// the test, so a new one is classified when it is added.
func TestEveryResultHasJSON(t *testing.T) {
	const host = "../../testdata/hosts/azure-e16dv5-eah-luks.json"
	const res = "../../testdata/results/"
	onFixtures := map[string][]string{
		"doctor":  {"doctor", "--from", host, "--fail-on", "none"},
		"net":     {"net", "--from", host},
		"fix":     {"fix", "--from", host},
		"diff":    {"diff", host, "../../testdata/hosts/azure-e16dv5-eah.json"},
		"compare": {"compare", "a=" + res + "db-plain-1.json," + res + "db-plain-2.json", "b=" + res + "db-luks-1.json," + res + "db-luks-2.json", "--cipher-limit", res + "crypto-limit.json"},
		"version": {"version"},
	}
	// They print a result but need a live host, a server or root: the flag
	// is checked, the output by their own packages' tests (bench: benchcmd
	// TestExport; capture: capturecmd TestBlockOnlyJSON).
	live := []string{"net drops", "net watch", "fleet", "fleet verdict", "lab crypt", "lab crypto-limit", "bench", "capture"}
	// Why these have no --format json.
	exempt := map[string]string{
		"bench export": "writes fio job files, not a result",
		"collect":      "writes a snapshot, a document of its own versioned by manifest.format_version (docs/snapshot.md), to stdout with -o -",
		"agent":        "a daemon serving Prometheus metrics",
		"lab":          "a group",
		"completion":   "a shell script",
		"help":         "help text",
	}
	root := NewRootCmd(&clienv.Env{FS: hostfs.Default(), Version: "test"})
	root.InitDefaultCompletionCmd()
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			path := strings.TrimPrefix(s.CommandPath(), "slowpath ")
			if strings.HasPrefix(path, "completion ") {
				continue
			}
			walk(s)
			if _, ok := exempt[path]; ok {
				continue
			}
			f := s.Flags().Lookup("format")
			if f == nil || !strings.Contains(f.Usage, "json") {
				t.Errorf("%s: no --format json", path)
				continue
			}
			args, ok := onFixtures[path]
			if !ok {
				if !contains(live, path) {
					t.Errorf("%s: not classified: add it to onFixtures, live or exempt", path)
				}
				continue
			}
			var out, errb bytes.Buffer
			env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}
			if code := Run(env, append(args, "--format", "json")); code != clienv.ExitOK {
				t.Errorf("%s: exit %d: %s", path, code, errb.String())
				continue
			}
			var v struct {
				FormatVersion *int `json:"format_version"`
			}
			if err := json.Unmarshal(out.Bytes(), &v); err != nil || v.FormatVersion == nil || *v.FormatVersion < 1 {
				t.Errorf("%s --format json: no format_version (%v):\n%.200s", path, err, out.String())
			}
		}
	}
	walk(root)
}

// TestEveryResultHasMarkdown walks the command tree: every command that
// takes --format json takes markdown too (issue 44), but for those below,
// each with why; and none of those takes it, so the list stays true.
func TestEveryResultHasMarkdown(t *testing.T) {
	noMarkdown := map[string]string{
		"fix":       "prints the plan as artifacts a person or a node runs (shell, files, kubernetes, tuned), not a report",
		"net watch": "a live view, one table or JSON line per interval, and nothing at its end: net and net drops print the ticket's Markdown",
		"version":   "the build's identity in prometheus/common/version's layout, pasted verbatim",
	}
	root := NewRootCmd(&clienv.Env{FS: hostfs.Default(), Version: "test"})
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, s := range c.Commands() {
			walk(s)
			f := s.LocalFlags().Lookup("format")
			if f == nil {
				continue
			}
			path := strings.TrimPrefix(s.CommandPath(), "slowpath ")
			names := f.Annotations[clienv.FormatsAnnotation]
			_, exempt := noMarkdown[path]
			switch {
			case exempt && contains(names, "markdown"):
				t.Errorf("%s takes markdown: take it off the list of those without", path)
			case !exempt && contains(names, "json") && !contains(names, "markdown"):
				t.Errorf("%s: --format json but no markdown (formats %q)", path, names)
			}
		}
	}
	walk(root)
}

func contains(list []string, s string) bool {
	for _, l := range list {
		if l == s {
			return true
		}
	}
	return false
}

// TestEncodeJSON: format_version comes first, in both layouts and for an
// empty object.
func TestEncodeJSON(t *testing.T) {
	for _, tc := range []struct {
		v      any
		indent bool
		want   string
	}{
		{map[string]int{"a": 1}, false, `{"format_version":3,"a":1}` + "\n"},
		{map[string]int{"a": 1}, true, "{\n  \"format_version\": 3,\n  \"a\": 1\n}\n"},
		{struct{}{}, false, `{"format_version":3}` + "\n"},
		{struct{}{}, true, "{\n  \"format_version\": 3}\n"},
		{(*struct{ A int })(nil), false, `{"format_version":3}` + "\n"},
	} {
		var b bytes.Buffer
		if err := clienv.EncodeJSON(&b, 3, tc.v, tc.indent); err != nil || b.String() != tc.want {
			t.Errorf("%v indent %v: %q %v, want %q", tc.v, tc.indent, b.String(), err, tc.want)
		}
		if !json.Valid(b.Bytes()) {
			t.Errorf("invalid JSON %q", b.String())
		}
	}
	if err := clienv.EncodeJSON(&bytes.Buffer{}, 1, []int{1}, false); err == nil {
		t.Error("an array was accepted")
	}
}
