package comparecmd

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestSideNames(t *testing.T) {
	for _, tt := range []struct {
		name string
		ok   bool
	}{
		{"plain", true}, {"crypt-2", true}, {"a.b_c", true}, {"A1", true}, {strings.Repeat("x", 64), true},
		{"", false}, {"../../escape", false}, {"a/b", false}, {".hidden", false}, {"-flag", false}, {"a|b", false},
		{"a b", false}, {"a\nb", false}, {"<script>", false}, {strings.Repeat("x", 65), false}, {"é", false},
	} {
		if err := validSideName(tt.name); (err == nil) != tt.ok {
			t.Errorf("%q: %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}

// TestHostileSideNames: a side name outside the alphabet is refused before
// anything runs or is written, whether given to --target or derived from a
// result file's name.
func TestHostileSideNames(t *testing.T) {
	dir := t.TempDir()
	save := filepath.Join(dir, "save")
	a, b := fixture("plain", 4), fixture("crypt", 4)
	odd := filepath.Join(dir, "a|b.json")
	whole, err := os.ReadFile(filepath.Join(resultsDir, "plain-1.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(odd, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--profile", "db-commit", "--save", save, "--target", "../../escape=" + dir, "--target", "y=" + dir}, `--target side name "../../escape"`},
		{[]string{"--profile", "db-commit", "--save", save, "--target", "x/y=" + dir, "--target", "y=" + dir}, `side name "x/y"`},
		{[]string{"--profile", "db-commit", "--target", "a\nb=" + dir, "--target", "y=" + dir}, `side name "a\nb"`},
		{[]string{a, "<b>=" + filepath.Join(resultsDir, "crypt-1.json")}, `side name "<b>"`},
		{[]string{a, odd}, `side name "a|b": use 1-64 letters`},
		{[]string{"x|y=" + filepath.Join(resultsDir, "plain-1.json"), b}, `side name "x|y"`},
	} {
		code, _, errOut := runCompare(t, tc.args...)
		if code != clienv.ExitUsage || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
	if _, err := os.Stat(save); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("--save created by a refused run: %v", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "escape-1.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("escape-1.json written: %v", err)
	}
}

// TestDuplicateResults: one file given twice, by name, by a copy of its
// bytes, or by a re-encoded copy (same run, other bytes), is an error
// naming both arguments; distinct runs pass.
func TestDuplicateResults(t *testing.T) {
	dir := t.TempDir()
	p1 := filepath.Join(resultsDir, "plain-1.json")
	whole, err := os.ReadFile(p1)
	if err != nil {
		t.Fatal(err)
	}
	copyBytes := filepath.Join(dir, "copy.json")
	if err := os.WriteFile(copyBytes, whole, 0o644); err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(whole, &v); err != nil {
		t.Fatal(err)
	}
	reindented, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(reindented, whole) {
		t.Fatal("re-indented copy has the same bytes: the test would not test decoding")
	}
	reenc := filepath.Join(dir, "reindented.json")
	if err := os.WriteFile(reenc, reindented, 0o644); err != nil {
		t.Fatal(err)
	}
	p2 := filepath.Join(resultsDir, "plain-2.json")
	for _, tc := range []struct {
		args []string
		want string // "" = accepted
	}{
		{[]string{p1, p1, p1}, p1 + " and " + p1 + " have the same content"},
		{[]string{"a=" + p1 + "," + p1, "b=" + p2}, p1 + " and " + p1 + " have the same content"},
		{[]string{"a=" + p1, "b=" + copyBytes}, p1 + " and " + copyBytes + " have the same content"},
		{[]string{"a=" + p1 + "," + p2, "b=" + reenc}, p1 + " and " + reenc + " are the same run"},
		{[]string{"a=" + p1, "b=" + p2}, ""},
	} {
		code, _, errOut := runCompare(t, tc.args...)
		switch {
		case tc.want == "" && code != 0:
			t.Errorf("%v: exit %d, %q", tc.args, code, errOut)
		case tc.want != "" && (code != clienv.ExitUsage || !strings.Contains(errOut, tc.want)):
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}

// TestSaveStaysInside: a symbolic link already in --save under a result's
// name is not followed out of it.
func TestSaveStaysInside(t *testing.T) {
	save, outside := t.TempDir(), t.TempDir()
	res := &benchresult.Result{Profile: "db-commit", Status: benchresult.StatusComplete}
	root, err := os.OpenRoot(save)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if err := saveInto(root, "ok-1.json", res); err != nil {
		t.Fatalf("plain copy: %v", err)
	}
	if err := os.Symlink(filepath.Join(outside, "victim"), filepath.Join(save, "a-1.json")); err != nil {
		t.Fatal(err)
	}
	if err := saveInto(root, "a-1.json", res); err == nil {
		t.Error("copied through a symbolic link that leaves --save")
	}
	if _, err := os.Stat(filepath.Join(outside, "victim")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("file written outside --save: %v", err)
	}
	for _, bad := range []string{"../x", "a/b", ".."} {
		if _, err := saveName(bad, 1); err == nil {
			t.Errorf("saveName(%q) accepted", bad)
		}
	}
}

// TestTempDirRemoved: interleaved runs refused (a job file that does not
// exist) leave nothing in TMPDIR.
func TestTempDirRemoved(t *testing.T) {
	bin := testenv.BuildSlowpath(t)
	tmp, d := t.TempDir(), t.TempDir()
	cmd := exec.Command(bin, "compare", "--profile", "fio:"+filepath.Join(d, "missing.fio"), "--runs", "1", "--target", "a="+d, "--target", "b="+d)
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != clienv.ExitUsage {
		t.Fatalf("compare: %v: %s", err, out)
	}
	if ents, _ := os.ReadDir(tmp); len(ents) != 0 {
		t.Errorf("left in TMPDIR: %v (%s)", ents, out)
	}
}

// The example: the secondary rows of 4+4 runs over three rows say
// they cannot decide, never "~"; --fail-on worse exits 1 on the worse
// verdict, --fail-on different too, none and the default exit 0; a typo in
// the gate and results of two profiles are refused (exit 2) with the names.
func TestFailOnAndUndecided(t *testing.T) {
	plain, luks := fixture("db-plain", 4), fixture("db-luks", 4)
	limit := "--cipher-limit=" + filepath.Join(resultsDir, "crypto-limit.json")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{plain, luks, limit}, clienv.ExitOK, "direct-4k read_iops"},
		{[]string{plain, luks, limit, "--fail-on", "none"}, clienv.ExitOK, "Verdict: db-luks vs db-plain: worse"},
		{[]string{plain, luks, limit, "--fail-on", "worse"}, clienv.ExitFindings, "--fail-on worse: db-luks vs db-plain: worse"},
		{[]string{plain, luks, limit, "--fail-on", "different"}, clienv.ExitFindings, "--fail-on different"},
		{[]string{plain, luks, limit, "--fail-on", "slower"}, clienv.ExitUsage, `unknown gate "slower"`},
		{[]string{plain, fixture("plain", 4)}, clienv.ExitUsage, `side "db-plain" ran profile "db-commit" but side "plain" ran "search-index"`},
	} {
		code, out, errOut := runCompare(t, tc.args...)
		if code != tc.code || !strings.Contains(out+errOut, tc.want) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", tc.args[2:], code, tc.code, tc.want, out, errOut)
		}
		if code == clienv.ExitUsage {
			continue
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "direct-4k read_iops") && (strings.Contains(line, "~") || !strings.Contains(line, "cannot decide: needs 5 runs per side")) {
				t.Errorf("undecidable row: %q", line)
			}
		}
	}
}
