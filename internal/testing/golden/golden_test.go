package golden

import (
	"os"
	"path/filepath"
	"testing"
)

// recorder captures failures without failing the outer test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Fatal(...any)          { r.failed = true }

func TestCompare(t *testing.T) {
	t.Setenv("SLOWPATH_UPDATE", "")
	p := filepath.Join(t.TempDir(), "g.txt")
	if err := os.WriteFile(p, []byte("same\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path, got string
		fail      bool
	}{
		{p, "same\n", false},
		{p, "other\n", true},
		{p + ".absent", "x", true},
	} {
		r := &recorder{TB: t}
		Compare(r, tt.path, []byte(tt.got))
		if r.failed != tt.fail {
			t.Errorf("Compare(%s, %q) failed=%v, want %v", tt.path, tt.got, r.failed, tt.fail)
		}
	}
	t.Setenv("SLOWPATH_UPDATE", "1")
	Compare(t, p, []byte("new\n"))
	if b, _ := os.ReadFile(p); string(b) != "new\n" {
		t.Errorf("update wrote %q", b)
	}
}
