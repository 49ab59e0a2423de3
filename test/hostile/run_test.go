// Package hostile_test runs the hostile-input corpus (testdata/hostile)
// through every command of the real binary that accepts it, and checks
// the issue-17 contract: a named error with exit status 2, or output in
// which the hostile value is one quoted word; never a new file outside the
// command's place, never a command run. docs/testing.md describes it.
package hostile_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/quote"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// slowpath builds the binary once for the whole package.
func slowpath(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		goTool, err := exec.LookPath("go")
		if err != nil {
			buildErr = errors.New("go not found")
			return
		}
		dir, err := os.MkdirTemp("", "hostile-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "slowpath")
		if out, err := exec.Command(goTool, "build", "-o", binPath, "github.com/slowpath/slowpath/cmd/slowpath").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build slowpath: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		if strings.Contains(buildErr.Error(), "go not found") {
			testenv.Unavailable(t, "the go tool is needed to build slowpath")
		}
		t.Fatal(buildErr)
	}
	return binPath
}

// modRoot is the module's directory, cut from arguments in messages.
var modRoot string

func TestMain(m *testing.M) {
	if wd, err := os.Getwd(); err == nil {
		modRoot = filepath.Dir(filepath.Dir(wd))
	}
	code := m.Run()
	if binPath != "" {
		os.RemoveAll(filepath.Dir(binPath))
	}
	os.Exit(code)
}

// sandbox is one command's private corner of the filesystem: its TMPDIR,
// HOME, inputs, and the places it may write. Everything else under base
// must be unchanged after the command.
type sandbox struct {
	base, tmp, home, in, out string
	// bin, when set, is put first on PATH (the fio wrapper).
	bin string
}

func newSandbox(t *testing.T) *sandbox {
	t.Helper()
	base := t.TempDir()
	s := &sandbox{base: base, tmp: filepath.Join(base, "tmp"), home: filepath.Join(base, "home"),
		in: filepath.Join(base, "in"), out: filepath.Join(base, "out")}
	for _, d := range []string{s.tmp, s.home, s.in, s.out} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// dir makes (and returns) a directory of the sandbox.
func (s *sandbox) dir(t *testing.T, name string) string {
	t.Helper()
	d := filepath.Join(s.base, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	return d
}

type result struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r result) String() string {
	// The error is the last thing a command says; progress comes before.
	msg := r.stderr
	if i := strings.LastIndex(msg, "slowpath: "); i >= 0 {
		msg = msg[i:]
	}
	return fmt.Sprintf("slowpath %s: exit %d, stderr %s", shortArgs(r.args), r.code, short(msg))
}

func shortArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, modRoot+"/", "")
		if strings.HasPrefix(a, os.TempDir()) {
			out[i] = "…/" + filepath.Base(a)
		}
	}
	return fmt.Sprintf("%q", out)
}

func short(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = s[:400] + "…"
	}
	return fmt.Sprintf("%q", s)
}

// cleanEnv is all a command gets: no variable of the test's own, so a job
// file's ${VAR} and the binary's temp files land in the sandbox.
func (s *sandbox) env() []string {
	path := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	if s.bin != "" {
		path = s.bin + ":" + path
	}
	return []string{"PATH=" + path, "HOME=" + s.home,
		"TMPDIR=" + s.tmp, "LANG=C", "NO_COLOR=1"}
}

// commandTimeout bounds a command that hangs; it is not an assertion.
const commandTimeout = 90 * time.Second

// run runs slowpath with args in the sandbox and applies the filesystem
// oracle: nothing new outside allowed (paths under s.base), TMPDIR left
// empty, nothing named like the corpus's escape targets in os.TempDir().
func (s *sandbox) run(t *testing.T, args []string, allowed ...string) result {
	t.Helper()
	before := s.walk(t)
	tmpBefore := tempMarkers()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, slowpath(t), args...)
	cmd.Env = s.env()
	cmd.Dir = s.home
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	default:
		t.Fatalf("slowpath %s: %v", shortArgs(args), err)
	}
	if ctx.Err() != nil {
		t.Errorf("slowpath %s: still running after %v: killed", shortArgs(args), commandTimeout)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		t.Errorf("%s: panicked", r)
	}
	s.checkFS(t, r, before, tmpBefore, allowed)
	return r
}

// walk lists every path under the sandbox with its size and mode.
func (s *sandbox) walk(t *testing.T) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(s.base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = fmt.Sprintf("%v %d %d", info.Mode(), info.Size(), info.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// markers are the names the corpus gives its escape targets; other
// engineers' tests share os.TempDir(), so only these count there.
var markers = []string{"PWNED", "hostile-escape"}

func tempMarkers() map[string]bool {
	m := map[string]bool{}
	for _, root := range []string{os.TempDir(), "/tmp", "/var/tmp"} {
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), "Test") {
				continue // t.TempDir of a test running beside this one
			}
			for _, mk := range markers {
				if strings.Contains(e.Name(), mk) {
					m[filepath.Join(root, e.Name())] = true
				}
			}
		}
	}
	return m
}

func (s *sandbox) checkFS(t *testing.T, r result, before map[string]string, tmpBefore map[string]bool, allowed []string) {
	t.Helper()
	after := s.walk(t)
	var bad []string
	for p, st := range after {
		if before[p] == st || p == s.base {
			continue
		}
		if _, existed := before[p]; existed && strings.HasPrefix(st, "d") {
			continue // a directory whose entries changed: judged by its entries
		}
		ok := false
		for _, a := range allowed {
			if p == a || strings.HasPrefix(p, a+"/") {
				ok = true
			}
		}
		if !ok {
			rel, _ := filepath.Rel(s.base, p)
			bad = append(bad, rel)
		}
	}
	sort.Strings(bad)
	if len(bad) > 0 {
		t.Errorf("%s: created or changed outside its place: %s", r, strings.Join(bad, ", "))
	}
	if ents, _ := os.ReadDir(s.tmp); len(ents) > 0 {
		var names []string
		for _, e := range ents {
			names = append(names, e.Name())
		}
		t.Errorf("%s: left in TMPDIR: %s", r, strings.Join(names, ", "))
	}
	for p := range tempMarkers() {
		if !tmpBefore[p] {
			t.Errorf("%s: created %s", r, p)
		}
	}
}

// names reports whether msg names one of the |-separated hints.
func names(msg, hint string) bool {
	if hint == "" {
		return true
	}
	for _, h := range strings.Split(hint, "|") {
		if strings.Contains(strings.ToLower(msg), strings.ToLower(h)) {
			return true
		}
	}
	return false
}

// outcome applies the first half of the oracle: a refusal must be exit 2
// with an error naming hint; a quoted value must be accepted. It reports
// whether the command succeeded, so the caller checks the output.
func outcome(t *testing.T, r result, expect, hint string, okCodes ...int) bool {
	t.Helper()
	success := false
	for _, c := range okCodes {
		if r.code == c {
			success = true
		}
	}
	switch {
	case r.code == 2:
		if expect == quoted {
			t.Errorf("%s: refused a value that is valid on a real host", r)
			return false
		}
		if !strings.Contains(r.stderr, "slowpath: ") {
			t.Errorf("%s: exit 2 without a slowpath error", r)
		} else if !names(r.stderr, hint) {
			t.Errorf("%s: the error does not name %s", r, strings.ReplaceAll(hint, "|", " or "))
		}
		return false
	case !success:
		t.Errorf("%s: want exit 2 (refused) or %v, stdout %s", r, okCodes, short(r.stdout))
		return false
	case expect == refused:
		t.Errorf("%s: accepted a value that must be refused (%s)", r, hint)
	}
	return true
}

// fioWrapper puts a fio first on the command's PATH that records each
// call's arguments and then runs the real fio, so the test sees whether a
// job file reached fio at all. It returns the record's path, or "" when
// fio is not installed (then there is nothing to wrap).
func (s *sandbox) fioWrapper(t *testing.T) string {
	t.Helper()
	real, err := exec.LookPath("fio")
	if err != nil {
		return ""
	}
	s.bin = s.dir(t, "bin")
	calls := filepath.Join(s.base, "fio-calls")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >> " + quote.Shell(calls) + "\nexec " + quote.Shell(real) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(s.bin, "fio"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return calls
}

// fioJobs is how many times fio was run for something other than its
// version.
func fioJobs(t *testing.T, calls string) int {
	t.Helper()
	if calls == "" {
		return 0
	}
	b, err := os.ReadFile(calls)
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if l != "" && l != "--version" {
			n++
		}
	}
	return n
}
