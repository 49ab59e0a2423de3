package hostile_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestFioJobFiles: a job file that names a file or program outside --dir
// is refused, naming the option, before fio starts; the confined control
// runs (where fio is installed).
func TestFioJobFiles(t *testing.T) {
	slowpath(t)
	root := corpusRoot(t)
	for _, c := range fioCases {
		t.Run(strings.TrimSuffix(c.File, ".fio"), func(t *testing.T) {
			t.Parallel()
			if c.Expect != refused {
				testenv.RequireTool(t, "fio", "fio")
			}
			s := newSandbox(t)
			calls := s.fioWrapper(t)
			work := s.dir(t, "work")
			raw, err := os.ReadFile(filepath.Join(root, "fio", c.File))
			if err != nil {
				t.Fatal(err)
			}
			job := filepath.Join(s.in, c.File)
			if err := os.WriteFile(job, bytes.ReplaceAll(raw, []byte("@OUT@"), []byte(s.out)), 0o644); err != nil {
				t.Fatal(err)
			}
			exportRepro(t, s, job, c.Expect, c.Option)
			r := s.run(t, []string{"bench", "fio:" + job, "--dir", work, "--runtime", "1s", "--cloud", "none"}, work, calls)
			ran := fioJobs(t, calls)
			if c.Expect == refused && ran > 0 {
				t.Errorf("%s: fio ran the job file (%d times): it must be refused before fio starts", r, ran)
			}
			if c.Expect == quoted && calls != "" && ran == 0 {
				t.Errorf("%s: fio never ran the job", r)
			}
			if c.Expect == refused && r.code == 2 && strings.Contains(r.stderr, "fio not found") {
				t.Errorf("%s: refused for a missing fio, not for %s: a job file that cannot be confined needs no fio to be refused", r, c.Option)
				return
			}
			if !outcome(t, r, c.Expect, c.Option, 0) {
				return
			}
			if ents, _ := os.ReadDir(work); len(ents) > 0 {
				var names []string
				for _, e := range ents {
					names = append(names, e.Name())
				}
				t.Errorf("%s: left in --dir: %s", r, strings.Join(names, ", "))
			}
		})
	}
}

// results are testdata/results files, two sides of four runs.
func results(t *testing.T, prefix string) []string {
	var out []string
	for _, n := range []string{"1", "2", "3", "4"} {
		out = append(out, filepath.Join(testenv.ModuleRoot(t), "testdata", "results", prefix+"-"+n+".json"))
	}
	return out
}

// TestCompareNames: a side name outside the safe alphabet is refused
// (given with a result file and as --target, which would write NAME-N.json
// into --save); a valid one comes back as one value.
func TestCompareNames(t *testing.T) {
	slowpath(t)
	for _, c := range loadSides(t) {
		t.Run(strings.ReplaceAll(c.Name, "/", "∕"), func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			rep := s.dir(t, "report")
			html := filepath.Join(rep, "report.html")
			crypt := strings.Join(results(t, "crypt"), ",")
			plain := "plain=" + strings.Join(results(t, "plain"), ",")
			r := s.run(t, []string{"compare", c.Name + "=" + crypt, plain, "--format", "json", "--html", html}, rep)
			if outcome(t, r, c.Expect, "name|"+c.Name, 0) {
				doc := decodeJSON(t, "compare --format json", r.stdout)
				want := c.Name
				if want == "" {
					want = "crypt-1"
				}
				if doc != nil && !hasValue(doc, want, true) {
					t.Errorf("%s: no value of the JSON is the side name %q", r, want)
				}
				if b, err := os.ReadFile(html); err != nil {
					t.Errorf("%s: %v", r, err)
				} else {
					checkHTML(t, "compare --html", string(b), c.Name)
				}
			}
			if c.Expect == quoted {
				return // a real interleaved run: bench's own tests cover it
			}
			save := s.dir(t, "save")
			t1, t2 := s.dir(t, "t1"), s.dir(t, "t2")
			calls := s.fioWrapper(t)
			// The smallest job there is, should the name pass: one 1 MiB
			// file per run, inside each target.
			job := filepath.Join(s.in, "ok.fio")
			raw, err := os.ReadFile(filepath.Join(corpusRoot(t), "fio", "ok.fio"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(job, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			r = s.run(t, []string{"compare", "--profile", "fio:" + job, "--target", c.Name + "=" + t1, "--target", "b=" + t2,
				"--runs", "1", "--runtime", "1s", "--cloud", "none", "--save", save, "--format", "json"}, save, t1, t2, calls)
			if ran := fioJobs(t, calls); ran > 0 && c.Expect == refused {
				t.Errorf("%s: ran %d benches before refusing the name", r, ran)
			}
			if r.code == 2 && strings.Contains(r.stderr, "fio not found") {
				t.Errorf("%s: refused for a missing fio, not for the name: the name is checked before any run", r)
				return
			}
			if c.Expect == refused || r.code == 2 {
				outcome(t, r, refused, "name|target", 0)
			}
		})
	}
}

// TestCompareDuplicates: the same result file twice (by name or by
// content) is an error, not two runs.
func TestCompareDuplicates(t *testing.T) {
	slowpath(t)
	crypt, plain := results(t, "crypt"), results(t, "plain")
	cases := []struct {
		name    string
		args    func(copy string) []string
		refuse  bool
		mention string
	}{
		{"control", func(string) []string {
			return []string{"a=" + strings.Join(crypt, ","), "b=" + strings.Join(plain, ",")}
		}, false, ""},
		// Refused today as three sides of one name; either reason names it.
		{"same file three times", func(string) []string { return []string{crypt[0], crypt[0], crypt[0]} }, true, "crypt-1"},
		{"same file in one side", func(string) []string {
			return []string{"a=" + crypt[0] + "," + crypt[0] + "," + crypt[1], "b=" + strings.Join(plain, ",")}
		}, true, "crypt-1.json"},
		{"same file in two sides", func(string) []string {
			return []string{"a=" + strings.Join(crypt, ","), "b=" + strings.Join(plain[1:], ",") + "," + crypt[0]}
		}, true, "crypt-1.json"},
		{"same content under another name", func(copy string) []string {
			return []string{"a=" + strings.Join(crypt, ","), "b=" + strings.Join(plain[1:], ",") + "," + copy}
		}, true, "copy.json|crypt-1.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			copy := filepath.Join(s.in, "copy.json")
			b, err := os.ReadFile(crypt[0])
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(copy, b, 0o644); err != nil {
				t.Fatal(err)
			}
			r := s.run(t, append(append([]string{"compare"}, c.args(copy)...), "--format", "json"))
			expect := quoted
			if c.refuse {
				expect = refused
			}
			if outcome(t, r, expect, c.mention, 0) {
				decodeJSON(t, "compare", r.stdout)
			}
		})
	}
}

// exportRepro runs bench export on the job file: refused like bench, or a
// reproduction whose run.sh holds to the shell rules.
func exportRepro(t *testing.T, s *sandbox, job, expect, hint string) {
	t.Helper()
	dir := s.dir(t, "export")
	repro := filepath.Join(dir, "repro")
	r := s.run(t, []string{"bench", "export", "fio:" + job, "-o", repro, "--runtime", "1s"}, dir)
	if !outcome(t, r, expect, hint, 0) {
		return
	}
	b, err := os.ReadFile(filepath.Join(repro, "run.sh"))
	if err != nil {
		t.Errorf("%s: %v", r, err)
		return
	}
	checkShell(t, "bench export run.sh", string(b), shellRules{commands: exportCommands, cmdSubst: true, script: true})
}

// TestFioFileNames: a job file's own name reaches bench's result and
// bench export's run.sh, as one word or not at all.
func TestFioFileNames(t *testing.T) {
	slowpath(t)
	raw, err := os.ReadFile(filepath.Join(corpusRoot(t), "fio", "ok.fio"))
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range fioNames {
		// Not the name itself: t.TempDir is named after the test, and a
		// directory named PWNED is what the filesystem oracle looks for.
		t.Run(fmt.Sprintf("name%d", i+1), func(t *testing.T) {
			t.Parallel()
			s := newSandbox(t)
			job := filepath.Join(s.in, n.Name)
			if err := os.WriteFile(job, raw, 0o644); err != nil {
				t.Fatal(err)
			}
			exportRepro(t, s, job, n.Expect, "name")
			testenv.RequireTool(t, "fio", "fio")
			work, res := s.dir(t, "work"), s.dir(t, "result")
			out := filepath.Join(res, "result.json")
			r := s.run(t, []string{"bench", "fio:" + job, "--dir", work, "--runtime", "1s", "--cloud", "none", "-o", out}, work, res)
			if !outcome(t, r, n.Expect, "name", 0) {
				return
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Errorf("%s: %v", r, err)
				return
			}
			if doc := decodeJSON(t, "bench -o", string(b)); doc != nil && !hasValue(doc, n.Name, false) {
				t.Errorf("%s: the result names the job file %q nowhere", r, n.Name)
			}
		})
	}
}
