package cli

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/golden"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// TestHelpGolden walks the command tree and compares every command's
// --help with testdata/help/<command path>.txt (SLOWPATH_UPDATE=1 rewrites
// them), so a flag, placeholder or example that changes shows in review
// instead of drifting from the docs unseen.
func TestHelpGolden(t *testing.T) {
	root := NewRootCmd(&clienv.Env{FS: hostfs.Default(), Version: "test"})
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		paths = append(paths, path)
		for _, s := range c.Commands() {
			if s.IsAvailableCommand() || s.Name() == "help" {
				walk(s, append(append([]string{}, path...), s.Name()))
			}
		}
	}
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	walk(root, nil)
	if len(paths) < 15 {
		t.Fatalf("only %d commands walked", len(paths))
	}
	for _, p := range paths {
		name := strings.Join(append([]string{"slowpath"}, p...), "-")
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}
			if code := Run(env, append(append([]string{}, p...), "--help")); code != clienv.ExitOK {
				t.Fatalf("exit %d: %s", code, errb.String())
			}
			golden.Compare(t, filepath.Join("testdata", "help", name+".txt"), out.Bytes())
		})
	}
}

// TestBenchHelpListsEveryProfile: bench --help names every profile the
// binary accepts (replay:DIR and replay-afap:DIR were missing).
func TestBenchHelpListsEveryProfile(t *testing.T) {
	code, out, stderr := run(t, "bench", "--help")
	if code != clienv.ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, p := range profile.Names() {
		if !strings.Contains(out, "  "+p+" ") {
			t.Errorf("bench --help does not list profile %s:\n%s", p, out)
		}
	}
}
