package cli

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/agenttest"
	"github.com/slowpath/slowpath/internal/testing/prometheustest"
)

// step is one command of a newcomer's first hour: what it exits with
// (live ones may find something: 0 or 1) and, for an error, what the
// message says.
type step struct {
	args []string
	exit []int  // the codes allowed; every code is 0, 1 or 2
	says string // a part of stderr, for exit 2
}

// quickStart is every ./bin/slowpath line of the README's quick start
// (what make build writes), with the exit status its comment states
// ("exit N", else 0), to run from the repository root.
func quickStart(t *testing.T) []step {
	t.Helper()
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
	var steps []step
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
		steps = append(steps, step{args: args[1:], exit: []int{want}})
	}
	if len(steps) < 4 {
		t.Fatalf("%d commands in the README's quick start", len(steps))
	}
	return steps
}

// TestNewcomerPath runs a newcomer's first hour as one script, from the
// repository root: the README's quick start as written, then on this host
// the commands one tries next (doctor, collect -o, doctor --from, diff,
// the help of bench, net drops and fleet, compare of two files, fleet on
// a real Prometheus), and the mistakes of issue 44 (a file of the wrong
// kind, a negative duration, an unknown command, diff - -, a namespace or
// label that is not there). Each exits 0, 1 or 2 as the step says; a
// success prints something, and an error is one message that starts with
// "slowpath: ". Live steps pass --cloud none (no real metadata service
// from a test) and --net-interval 0 (one sample).
func TestNewcomerPath(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the live host and starts Prometheus (-short)")
	}
	// One agent serving a fixture, scraped with a node pool label, is the
	// fleet a newcomer points fleet at.
	prom := prometheustest.Start(t, []prometheustest.Target{{
		Addr:   agenttest.Start(t, "--from", "../../testdata/hosts/azure-e16dv5-eah.json"),
		Labels: map[string]string{"node_pool": "pool-a"},
	}})
	tmp := t.TempDir()
	snap := filepath.Join(tmp, "node.tar.gz")
	readme := quickStart(t)
	t.Chdir("../..")
	prom.WaitFor(t, "count(slowpath_node_info) == 1", 20*time.Second)

	const (
		host   = "testdata/hosts/azure-e16dv5-eah.json"
		result = "testdata/results/db-plain-1.json"
	)
	ok, found, usage := []int{0}, []int{0, 1}, []int{2}
	steps := append(readme,
		step{args: []string{"--help"}, exit: ok},
		// The live host: what it finds is the host's business.
		step{args: []string{"doctor", "--cloud", "none", "--net-interval", "0"}, exit: found},
		step{args: []string{"collect", "-o", snap, "--cloud", "none", "--net-interval", "0"}, exit: ok},
		step{args: []string{"doctor", "--from", snap}, exit: found},
		step{args: []string{"diff", snap, host}, exit: ok},
		step{args: []string{"net", "--cloud", "none"}, exit: usage, says: "unknown flag: --cloud"},
		step{args: []string{"net", "--net-interval", "0"}, exit: ok},
		step{args: []string{"bench", "--help"}, exit: ok},
		step{args: []string{"net", "drops", "--help"}, exit: ok},
		step{args: []string{"fleet", "--help"}, exit: ok},
		step{args: []string{"compare", "a=" + result, "b=testdata/results/db-luks-1.json"}, exit: ok},
		step{args: []string{"fleet", "--prometheus", prom.URL}, exit: ok},
		step{args: []string{"fleet", "--prometheus", prom.URL, "--by", "node_pool"}, exit: ok},
		// Files of the wrong kind are named.
		step{args: []string{"doctor", "--from", result}, exit: usage, says: "this is a bench result"},
		step{args: []string{"compare", "a=" + host, "b=" + result}, exit: usage, says: "not a slowpath bench result: it is a slowpath snapshot"},
		step{args: []string{"diff", result, host}, exit: usage, says: "this is a bench result"},
		step{args: []string{"fix", "--from", "testdata/results/crypto-limit.json"}, exit: usage, says: "this is the cipher's limit"},
		step{args: []string{"net", "--from", result}, exit: usage, says: "this is a bench result"},
		step{args: []string{"doctor", "--from", "testdata"}, exit: usage, says: "is a directory"},
		// Negative durations.
		step{args: []string{"doctor", "--net-interval", "-1s"}, exit: usage, says: "--net-interval -1s"},
		step{args: []string{"net", "watch", "--duration", "-1s"}, exit: usage, says: "--duration -1s"},
		step{args: []string{"net", "drops", "--duration", "-1s"}, exit: usage, says: "--duration -1s is negative"},
		step{args: []string{"capture", "-o", filepath.Join(tmp, "cap"), "--duration", "-1s"}, exit: usage, says: "--duration -1s is negative"},
		step{args: []string{"bench", "db-commit", "--runtime", "-1s"}, exit: usage, says: "--runtime -1s"},
		step{args: []string{"fleet", "--prometheus", prom.URL, "--timeout", "-1s"}, exit: usage, says: "--timeout -1s"},
		// Unknown commands, arguments, namespaces and labels.
		step{args: []string{"nosuch"}, exit: usage, says: `unknown command "nosuch" for "slowpath": use one of`},
		step{args: []string{"doctor", "extra"}, exit: usage, says: `unknown command "extra" for "slowpath doctor"`},
		step{args: []string{"collect"}, exit: usage, says: `required flag(s) "output" not set`},
		step{args: []string{"diff", "-", "-"}, exit: usage, says: "given more than once"},
		step{args: []string{"net", "watch", "--netns", "nosuchns"}, exit: usage, says: "--netns nosuchns: no such network namespace"},
		step{args: []string{"fleet", "--prometheus", prom.URL, "--by", "nosuchlabel"}, exit: usage, says: "--by nosuchlabel: no node's slowpath_node_info has the label nosuchlabel; labels it has: "},
		step{args: []string{"fleet"}, exit: usage, says: "--prometheus URL is required"},
	)
	for _, s := range steps {
		for _, c := range s.exit {
			if c < 0 || c > 2 {
				t.Fatalf("%v: exit %d is no status of slowpath's (0, 1, 2)", s.args, c)
			}
		}
		var out, errb bytes.Buffer
		env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}
		code := Run(env, s.args)
		name := strings.Join(s.args, " ")
		if !slices.Contains(s.exit, code) {
			t.Errorf("slowpath %s: exit %d, want %v; stderr:\n%s", name, code, s.exit, errb.String())
			continue
		}
		if code == clienv.ExitUsage {
			if !strings.HasPrefix(errb.String(), "slowpath: ") || !strings.Contains(errb.String(), s.says) || out.Len() != 0 {
				t.Errorf("slowpath %s: stderr %q, %d bytes out; want one error starting \"slowpath: \" that says %q, nothing out", name, errb.String(), out.Len(), s.says)
			}
			continue
		}
		// collect says where it wrote on stderr, the rest on stdout; a
		// gate met (exit 1) may say why, as an error.
		if out.Len()+errb.Len() == 0 || code == 1 && errb.Len() > 0 && !strings.HasPrefix(errb.String(), "slowpath: ") {
			t.Errorf("slowpath %s: exit %d, %d bytes out; stderr:\n%s", name, code, out.Len(), errb.String())
		}
	}
	if _, err := os.Stat(snap); err != nil {
		t.Errorf("collect -o: %v", err)
	}
}
