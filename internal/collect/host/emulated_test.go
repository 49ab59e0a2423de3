package host

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
)

func TestEmulated(t *testing.T) {
	dir := t.TempDir()
	fs := hostfs.FS{Proc: dir}
	if Emulated(fs) {
		t.Error("no cpuinfo: emulated")
	}
	for _, tc := range []struct {
		cpuinfo string
		want    bool
	}{
		{"processor\t: 0\nmodel name\t: QEMU TCG CPU version 2.5+\n", true},
		{"processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t: aes hypervisor\n", false},
		// Only the first model name counts; TCG elsewhere does not.
		{"processor\t: 0\nmodel name\t: Intel Xeon\nflags\t: TCG\n", false},
		{"", false},
	} {
		if err := os.WriteFile(filepath.Join(dir, "cpuinfo"), []byte(tc.cpuinfo), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := Emulated(fs); got != tc.want {
			t.Errorf("%q: %v", tc.cpuinfo, got)
		}
	}
}
