package comparecmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/report/htmlpage"
	"github.com/slowpath/slowpath/internal/testing/comparisontest"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

const resultsDir = "../../../testdata/results"

// fixtureSpecs are the committed result files: search-index on a plain
// disk and on dm-crypt, 4 runs each (the fewest that can reach alpha 0.05),
// and one run of a tuned dm-crypt.
var fixtureSpecs = []comparisontest.Spec{
	{Name: "plain", Runs: 4, IOPS: 12000, Noise: 0.02, Seconds: 8, Buckets: 120, Requests: 20000, LoadMs: 4, Seed: 1},
	{Name: "crypt", Runs: 4, IOPS: 9000, Noise: 0.02, Seconds: 8, Buckets: 120, Requests: 20000, LoadMs: 9, Crypt: true, Seed: 2},
	{Name: "tuned", Runs: 1, IOPS: 11000, Noise: 0.02, Seconds: 8, Buckets: 120, Requests: 20000, LoadMs: 5, Crypt: true, Seed: 3},
}

// TestFixtureResults keeps testdata/results in step with the generator
// (SLOWPATH_UPDATE=1 rewrites them) and proves each file reads back as a
// valid bench result.
// dbCommitSpecs are db-commit results on a plain target, one encryption
// layer and two (crypt on crypt), 4 runs each: the encryption tax's case.
var dbCommitSpecs = []comparisontest.DBCommitSpec{
	{Name: "db-plain", Runs: 4, IOPS: 171e3, CommitP99: 400 * time.Microsecond, Noise: 0.01, Layers: 0, Seed: 11},
	{Name: "db-luks", Runs: 4, IOPS: 26.6e3, CommitP99: 900 * time.Microsecond, Noise: 0.01, Layers: 1, Seed: 12},
	{Name: "db-crypt-on-crypt", Runs: 4, IOPS: 15e3, CommitP99: 1500 * time.Microsecond, Noise: 0.01, Layers: 2, Seed: 13},
}

func TestFixtureResults(t *testing.T) {
	type named struct {
		name string
		rs   []*benchresult.Result
	}
	var all []named
	for _, sp := range fixtureSpecs {
		all = append(all, named{sp.Name, comparisontest.Results(sp)})
	}
	for _, sp := range dbCommitSpecs {
		all = append(all, named{sp.Name, comparisontest.DBCommitResults(sp)})
	}
	for _, sp := range all {
		for i, r := range sp.rs {
			p := filepath.Join(resultsDir, fmt.Sprintf("%s-%d.json", sp.name, i+1))
			var buf bytes.Buffer
			if err := benchresult.Write(&buf, r); err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, p, buf.Bytes())
			if _, err := benchresult.ReadFile(p); err != nil {
				t.Error(err)
			}
		}
	}
}

func runCompare(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default(), Version: "test"}
	cmd := NewCmdCompare(env, nil)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(context.Background())
	var ee *clienv.ExitError
	switch {
	case err == nil:
		return 0, out.String(), errb.String()
	case errors.As(err, &ee):
		return ee.Code, out.String(), errb.String() + fmt.Sprint(ee.Err)
	default:
		return clienv.ExitUsage, out.String(), errb.String() + err.Error()
	}
}

func fixture(name string, n int) string {
	var f []string
	for i := 1; i <= n; i++ {
		f = append(f, filepath.Join(resultsDir, fmt.Sprintf("%s-%d.json", name, i)))
	}
	return name + "=" + strings.Join(f, ",")
}

// goldenCompare runs compare with args in every format and compares each
// output, and the --html report, with testdata/golden/NAME.{txt,md,json,html}.
func goldenCompare(t *testing.T, name string, args ...string) {
	t.Helper()
	for _, f := range []struct{ format, ext string }{{"text", "txt"}, {"markdown", "md"}, {"json", "json"}} {
		html := filepath.Join(t.TempDir(), "r.html")
		code, out, errOut := runCompare(t, append([]string{"--format", f.format, "--html", html}, args...)...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", f.format, code, errOut)
		}
		golden.Compare(t, filepath.Join("../../../testdata/golden", name+"."+f.ext), []byte(out))
		if f.format == "json" {
			b, err := os.ReadFile(html)
			if err != nil {
				t.Fatal(err)
			}
			golden.Compare(t, filepath.Join("../../../testdata/golden", name+".html"), htmlpage.ElideLibrary(b))
		}
	}
}

func TestGolden(t *testing.T) {
	goldenCompare(t, "compare-search-index", fixture("plain", 4), fixture("crypt", 4), fixture("tuned", 1))
}

// TestGoldenTax: db-commit on a plain target, one layer and crypt on crypt,
// with the cipher from a crypto-limit file: the tax is in every format.
func TestGoldenTax(t *testing.T) {
	goldenCompare(t, "compare-db-commit-tax", "--cipher-limit", filepath.Join(resultsDir, "crypto-limit.json"),
		fixture("db-plain", 4), fixture("db-luks", 4), fixture("db-crypt-on-crypt", 4))
	code, out, _ := runCompare(t, "--cipher-limit", filepath.Join(resultsDir, "crypto-limit.json"), fixture("db-plain", 4), fixture("db-luks", 4))
	for _, want := range []string{
		"Encryption tax (expected from the cipher's cost, 1.50 GB/s per core: ",
		"db-luks (1 encryption layer(s) more than db-plain, direct-4k): cipher 2.731µs/IO, observed +",
		cryptotax.VerdictFarAbove,
	} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	// Same layers on both sides: no tax (and no cipher measurement).
	code, out, _ = runCompare(t, fixture("db-luks", 2), "again="+filepath.Join(resultsDir, "db-luks-3.json")+","+filepath.Join(resultsDir, "db-luks-4.json"))
	if code != 0 || strings.Contains(out, "Encryption tax") {
		t.Errorf("exit %d, a tax without a difference in layers:\n%s", code, out)
	}
	// A file that is not crypto-limit's JSON is refused by name.
	code, _, errOut := runCompare(t, "--cipher-limit", filepath.Join(resultsDir, "db-plain-1.json"), fixture("db-plain", 4), fixture("db-luks", 4))
	if code != clienv.ExitUsage || !strings.Contains(errOut, "not the JSON of slowpath lab crypto-limit") && !strings.Contains(errOut, "want the JSON of slowpath lab crypto-limit") {
		t.Errorf("exit %d: %s", code, errOut)
	}
}

func TestHTMLFile(t *testing.T) {
	html := filepath.Join(t.TempDir(), "r.html")
	code, out, errOut := runCompare(t, "--html", html, "--format", "json", fixture("plain", 4), fixture("crypt", 4))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if !strings.HasPrefix(out, "{") {
		t.Errorf("stdout is not the JSON document: %.80s", out)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte("<!DOCTYPE html>")) || !bytes.Contains(b, []byte("read_iops")) {
		t.Errorf("not the HTML report: %.100s", b)
	}
	ents, _ := os.ReadDir(filepath.Dir(html))
	if len(ents) != 1 {
		t.Errorf("temporary files left beside the report: %v", ents)
	}
}

func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	notResult := filepath.Join(dir, "snapshot.json")
	if err := os.WriteFile(notResult, []byte(`{"manifest": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "cut.json")
	whole, err := os.ReadFile(filepath.Join(resultsDir, "plain-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(truncated, whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	a, b := fixture("plain", 4), fixture("crypt", 4)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{a}, "at least two results"},
		{[]string{"--alpha", "1.5", a, b}, "--alpha 1.5"},
		{[]string{"--format", "yaml", a, b}, `unknown --format "yaml"`},
		{[]string{"--target", "x=" + dir, "--target", "y=" + dir}, "--target needs --profile"},
		{[]string{"--profile", "db-commit", "--target", "x=" + dir}, "at least two --target"},
		{[]string{"--profile", "db-commit", "--target", "x", "--target", "y=" + dir}, `want NAME=DIR`},
		{[]string{"--profile", "db-commit", "--target", "x=/nonexistent", "--target", "y=" + dir}, "not a directory"},
		{[]string{"--profile", "db-commit", "--target", "x=" + dir, "--target", "x=" + dir}, "given twice"},
		{[]string{"--profile", "db-commit", "--target", "x=" + dir, "--target", "y=" + dir, a}, "not both"},
		{[]string{"--profile", "db-commit", "--target", "x=" + dir, "--target", "y=" + dir, "--runs", "0"}, "--runs 0"},
		{[]string{"--profile", "db-commit", "--target", "x=" + dir, "--target", "y=" + dir, "--cloud", "azrue"}, `unknown --cloud "azrue"`},
		{[]string{"--profile", "db-commit", "--target", "x=" + dir, "--target", "y=" + dir, "--scale", "0"}, "--scale 0"},
		{[]string{"--profile", "db-commit", "--target", "x=" + dir, "--target", "y=" + dir, "--runtime", "0s"}, "--runtime 0s"},
		{[]string{"--profile", "dbcommit", "--target", "x=" + dir, "--target", "y=" + dir}, `unknown profile "dbcommit"`},
		{[]string{a, "/nonexistent/r.json"}, "no such file"},
		{[]string{a, notResult}, "not a slowpath bench result"},
		{[]string{a, truncated}, "truncated"},
		{[]string{a, "plain=" + filepath.Join(resultsDir, "crypt-1.json")}, `two sides are named "plain"`},
	} {
		code, _, errOut := runCompare(t, tc.args...)
		if code != clienv.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
