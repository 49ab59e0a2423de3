package cli

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// TestREADMEQuickStart runs the README's quick start as written, from the
// repository root: every ./bin/slowpath line of its first code block (what
// make build writes: the commands run in this process), with the
// exit status its comment states ("exit N", else 0), and output on stdout.
func TestREADMEQuickStart(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(b), "\n## Quick start\n")
	if !ok {
		t.Fatal("README has no Quick start section")
	}
	_, block, _ := strings.Cut(section, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	t.Chdir("../..")
	ran := 0
	sc := bufio.NewScanner(strings.NewReader(block))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, comment, _ := strings.Cut(sc.Text(), "#")
		args := strings.Fields(line)
		if len(args) == 0 || args[0] != "./bin/slowpath" {
			continue
		}
		want := 0
		if _, n, ok := strings.Cut(comment, "exit "); ok {
			if want, err = strconv.Atoi(n[:1]); err != nil {
				t.Fatalf("%q: exit status %q", line, n)
			}
		}
		var out, errb bytes.Buffer
		env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}
		if code := Run(env, args[1:]); code != want || out.Len() == 0 {
			t.Errorf("%s: exit %d (want %d), %d bytes out: %s", line, code, want, out.Len(), errb.String())
		}
		ran++
	}
	if ran < 4 {
		t.Errorf("ran %d commands from the quick start", ran)
	}
}
