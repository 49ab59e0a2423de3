package bpfload

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/cilium/ebpf"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestMissing(t *testing.T) {
	bit := func(c uint) [2]uint32 {
		var e [2]uint32
		e[c/32] |= 1 << (c % 32)
		return e
	}
	or := func(a, b [2]uint32) [2]uint32 { return [2]uint32{a[0] | b[0], a[1] | b[1]} }
	for _, tc := range []struct {
		name string
		eff  [2]uint32
		want []string
	}{
		{"none", [2]uint32{}, []string{"CAP_BPF", "CAP_PERFMON"}},
		{"sys_admin", bit(capSysAdmin), nil},
		{"bpf only", bit(capBPF), []string{"CAP_PERFMON"}},
		{"perfmon only", bit(capPerfmon), []string{"CAP_BPF"}},
		{"bpf and perfmon", or(bit(capBPF), bit(capPerfmon)), nil},
		{"all", [2]uint32{^uint32(0), ^uint32(0)}, nil},
	} {
		if diff := cmp.Diff(tc.want, missing(tc.eff)); diff != "" {
			t.Errorf("%s: (-want +got)\n%s", tc.name, diff)
		}
	}
}

// TestCheckPrivilegesRoot: root holds CAP_SYS_ADMIN, so nothing is
// missing. (The message naming what is missing is tested in a child
// without capabilities: capturecmd's and dropcounter's TestPrivilegeErrors.)
func TestCheckPrivilegesRoot(t *testing.T) {
	testenv.RequireRoot(t)
	if err := CheckPrivileges("test"); err != nil {
		t.Errorf("root: %v", err)
	}
}

func TestLoadError(t *testing.T) {
	perm := LoadError("drop tracer", fmt.Errorf("map create: %w", unix.EPERM))
	if !errors.Is(perm, unix.EPERM) || !strings.HasPrefix(perm.Error(), "load eBPF drop tracer: map create: operation not permitted (needs CAP_BPF and CAP_PERFMON") {
		t.Errorf("EPERM: %v", perm)
	}
	other := LoadError("capture program", unix.E2BIG)
	if !errors.Is(other, unix.E2BIG) || other.Error() != "load eBPF capture program: argument list too long" {
		t.Errorf("other: %v", other)
	}
}

func TestSetConstantsUnknown(t *testing.T) {
	spec := &ebpf.CollectionSpec{Variables: map[string]*ebpf.VariableSpec{}}
	err := SetConstants(spec, map[string]any{"no_such": uint32(1)})
	if err == nil || err.Error() != "set no_such: no such variable in the eBPF object" {
		t.Errorf("got %v", err)
	}
	if err := SetConstants(spec, nil); err != nil {
		t.Errorf("no constants: %v", err)
	}
}

func TestCheckLicense(t *testing.T) {
	ok := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"a": {License: License}, "b": {License: License}}}
	if err := CheckLicense(ok); err != nil {
		t.Errorf("all dual: %v", err)
	}
	bad := &ebpf.CollectionSpec{Programs: map[string]*ebpf.ProgramSpec{"a": {License: License}, "b": {License: "MIT"}}}
	if err := CheckLicense(bad); err == nil || !strings.Contains(err.Error(), `program b: licence "MIT"`) {
		t.Errorf("one MIT: %v", err)
	}
	if err := CheckLicense(&ebpf.CollectionSpec{}); err == nil {
		t.Error("no programs: no error")
	}
}
