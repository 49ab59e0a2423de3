// Package bpfload holds the steps every slowpath eBPF tracer takes to load
// its bpf2go collection: kernel BTF, the capability check, the memlock limit, the
// constants set in the spec, and the load error said in words.
package bpfload

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

// ErrNoBTF: the kernel does not describe its types, which every tracer
// here needs (CO-RE relocations, tracepoint argument layouts).
var ErrNoBTF = errors.New("kernel BTF not found at /sys/kernel/btf/vmlinux: the kernel needs CONFIG_DEBUG_INFO_BTF=y")

// KernelSpec loads the running kernel's BTF; ErrNoBTF when it has none.
func KernelSpec() (*btf.Spec, error) {
	spec, err := btf.LoadKernelSpec()
	if err != nil {
		if errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.ENOENT) {
			return nil, ErrNoBTF
		}
		return nil, fmt.Errorf("load kernel BTF: %w", err)
	}
	return spec, nil
}

// Linux capability numbers (include/uapi/linux/capability.h).
const (
	capSysAdmin = 21
	capPerfmon  = 38
	capBPF      = 39
)

// CheckPrivileges names the capabilities this process lacks to load a
// tracing program: CAP_BPF and CAP_PERFMON (5.8+), or CAP_SYS_ADMIN which
// covers both. what starts the message: "loading the eBPF drop tracer".
func CheckPrivileges(what string) error {
	eff, err := effective()
	if err != nil {
		return err
	}
	m := missing(eff)
	if len(m) == 0 {
		return nil
	}
	return fmt.Errorf("%s needs %s (or CAP_SYS_ADMIN): run as root or grant them, e.g. setcap cap_bpf,cap_perfmon+ep slowpath", what, strings.Join(m, " and "))
}

// effective is this process's effective capability set as capget(2)'s two
// 32-bit words.
func effective() ([2]uint32, error) {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return [2]uint32{}, fmt.Errorf("read capabilities: %w", err)
	}
	return [2]uint32{data[0].Effective, data[1].Effective}, nil
}

// HasSysAdmin says whether this process holds CAP_SYS_ADMIN, which
// mounting needs (a private tracefs, package tracefs).
func HasSysAdmin() bool {
	eff, err := effective()
	return err == nil && has(eff, capSysAdmin)
}

func has(effective [2]uint32, c uint) bool { return effective[c/32]&(1<<(c%32)) != 0 }

// missing lists the capabilities lacking in an effective set given as capget(2)'s two
// 32-bit words.
func missing(effective [2]uint32) []string {
	if has(effective, capSysAdmin) {
		return nil
	}
	var m []string
	if !has(effective, capBPF) {
		m = append(m, "CAP_BPF")
	}
	if !has(effective, capPerfmon) {
		m = append(m, "CAP_PERFMON")
	}
	return m
}

// License is the licence every slowpath eBPF program declares (the C
// sources' SEC("license")): dual, and GPL-compatible for the kernel, which
// the GPL-only helpers they call (bpf_get_stackid, bpf_probe_read_kernel)
// require.
const License = "Dual MIT/GPL"

// CheckLicense says which programs of spec do not declare License, so a
// regenerated object that lost it fails its package's test.
func CheckLicense(spec *ebpf.CollectionSpec) error {
	if len(spec.Programs) == 0 {
		return errors.New("no programs in the object")
	}
	var bad []string
	for name, p := range spec.Programs {
		if p.License != License {
			bad = append(bad, fmt.Sprintf("program %s: licence %q", name, p.License))
		}
	}
	if len(bad) > 0 {
		sort.Strings(bad)
		return fmt.Errorf("%s, want %s", strings.Join(bad, "; "), License)
	}
	return nil
}

// RemoveMemlock lifts RLIMIT_MEMLOCK: kernels before 5.11 charge BPF
// memory to it.
func RemoveMemlock() error {
	if err := rlimit.RemoveMemlock(); err != nil {
		return fmt.Errorf("raise RLIMIT_MEMLOCK for eBPF maps: %w", err)
	}
	return nil
}

// SetConstants sets the spec's read-only variables (volatile const in the
// C source) by name.
func SetConstants(spec *ebpf.CollectionSpec, consts map[string]any) error {
	for name, v := range consts {
		vs, ok := spec.Variables[name]
		if !ok {
			return fmt.Errorf("set %s: no such variable in the eBPF object", name)
		}
		if err := vs.Set(v); err != nil {
			return fmt.Errorf("set %s: %w", name, err)
		}
	}
	return nil
}

// LoadError says why the kernel did not load the collection of what (such
// as "capture program"): the verifier's log, or the privileges a plain
// EPERM most likely lacks.
func LoadError(what string, err error) error {
	var ve *ebpf.VerifierError
	if errors.As(err, &ve) {
		return fmt.Errorf("kernel refused the %s: %+v", what, ve)
	}
	if errors.Is(err, unix.EPERM) {
		return fmt.Errorf("load eBPF %s: %w (needs CAP_BPF and CAP_PERFMON; is kernel.unprivileged_bpf_disabled or a lockdown in force?)", what, err)
	}
	return fmt.Errorf("load eBPF %s: %w", what, err)
}
