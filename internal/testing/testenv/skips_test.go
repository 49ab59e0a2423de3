package testenv

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// skipRE finds a test that stops itself as skipped.
var skipRE = regexp.MustCompile(`\.(Skip|Skipf|SkipNow)\(`)

// TestNoPlainSkips: under SLOWPATH_STRICT=1 a test that cannot run must
// fail, so CI cannot go green on tests that never ran. Every skip in the
// module goes through Unavailable (RequireRoot, RequireTool), except a
// skip guarded by testing.Short(), which is the user asking for less.
func TestNoPlainSkips(t *testing.T) {
	root := ModuleRoot(t)
	var found int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || path == filepath.Join(root, "internal", "testing", "testenv", "testenv.go") {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		var prev []string
		sc := bufio.NewScanner(f)
		n := 0
		for sc.Scan() {
			n++
			line := sc.Text()
			if skipRE.MatchString(line) && !strings.HasPrefix(strings.TrimSpace(line), "//") {
				found++
				guarded := false
				for _, p := range prev {
					if strings.Contains(p, "testing.Short()") {
						guarded = true
					}
				}
				if !guarded && !strings.HasSuffix(path, "skips_test.go") {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s:%d: plain skip stays green under SLOWPATH_STRICT=1: use testenv.Unavailable (or fail): %s", rel, n, strings.TrimSpace(line))
				}
			}
			prev = append(prev, line)
			if len(prev) > 2 {
				prev = prev[1:]
			}
		}
		return sc.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Error("no skip found at all: the scan no longer sees the module")
	}
}
