package hostfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestClassify(t *testing.T) {
	_, enoent := os.Open("/nonexistent/slowpath")
	tests := []struct {
		err  error
		want Kind
	}{
		{nil, ""},
		{enoent, KindMissing},
		{fmt.Errorf("read x: %w", syscall.EACCES), KindPermission},
		{fmt.Errorf("ioctl: %w", syscall.EPERM), KindPermission},
		{fmt.Errorf("ioctl: %w", syscall.ENOTTY), KindUnsupported},
		{fmt.Errorf("ioctl: %w", syscall.EOPNOTSUPP), KindUnsupported},
		{fmt.Errorf("parse: bad"), KindError},
	}
	for _, tt := range tests {
		if got := Classify(tt.err); got != tt.want {
			t.Errorf("Classify(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestNew(t *testing.T) {
	f := New("/fx")
	if f.ProcPath("net", "dev") != "/fx/proc/net/dev" || f.SysPath("block") != "/fx/sys/block" || f.RootPath("dev", "vda") != "/fx/dev/vda" {
		t.Fatalf("unexpected paths: %+v", f)
	}
}

// TestWithLiveSources: auto compares the roots as files, not names.
func TestWithLiveSources(t *testing.T) {
	link := filepath.Join(t.TempDir(), "sys")
	if err := os.Symlink("/sys", link); err != nil {
		t.Fatal(err)
	}
	tree := New(t.TempDir())
	tests := []struct {
		name string
		fs   FS
		mode LiveSources
		live bool
		why  string
	}{
		{"default", Default(), LiveAuto, true, ""},
		{"zero mode is auto", Default(), "", true, ""},
		{"trailing slash and symlink", FS{Proc: "/proc/", Sys: link, Root: "/"}, LiveAuto, true, ""},
		{"tree", tree, LiveAuto, false, "--path.procfs " + tree.Proc},
		{"foreign sys only", FS{Proc: "/proc", Sys: t.TempDir(), Root: "/"}, LiveAuto, false, "is not this host's /sys"},
		{"root named like / but elsewhere", FS{Proc: "/proc", Sys: "/sys", Root: "/tmp/.."}, LiveAuto, true, ""},
		{"on", tree, LiveOn, true, ""},
		{"off", Default(), LiveOff, false, "--live-sources off"},
	}
	for _, tt := range tests {
		f := tt.fs.WithLiveSources(tt.mode)
		if f.Live != tt.live {
			t.Errorf("%s: Live = %v, want %v", tt.name, f.Live, tt.live)
		}
		err := f.NotLive()
		if (err == nil) != tt.live || (err != nil && (!errors.Is(err, ErrNotLive) || !strings.Contains(err.Error(), tt.why))) {
			t.Errorf("%s: NotLive() = %v, want one naming %q", tt.name, err, tt.why)
		}
		if err != nil && Classify(fmt.Errorf("wrapped: %w", err)) != KindSkipped {
			t.Errorf("%s: not classified as skipped", tt.name)
		}
	}
	var m LiveSources
	if err := m.Set("maybe"); err == nil || m.String() != "auto" {
		t.Errorf("Set(maybe) = %v, mode %q", err, m.String())
	}
}
