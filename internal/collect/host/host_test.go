package host

import (
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// fixture writes a txtar archive from testdata into a temporary root.
func fixture(t *testing.T, name string) hostfs.FS {
	t.Helper()
	return hostfstest.Materialise(t, filepath.Join("testdata", name))
}

func TestCollectAzure(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		testenv.Unavailable(t, "procfs parses cpuinfo in the format of the build architecture; the fixture is x86")
	}
	fs := fixture(t, "azure.txtar")
	var s snapshot.Snapshot
	Collect(fs, &s)
	want := &snapshot.Host{
		KernelRelease: "6.8.0-1021-azure",
		Arch:          "x86_64",
		NumCPU:        2,
		CPUModel:      "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz",
		CPUFlags:      []string{"aes", "avx2", "avx512f", "fpu", "sha_ni", "sse2", "vaes", "vme"},
		DMI: &snapshot.DMI{
			SysVendor: "Microsoft Corporation", ProductName: "Virtual Machine", ProductVersion: "7.0",
			BoardVendor: "Microsoft Corporation", BIOSVendor: "Microsoft Corporation",
			ChassisAssetTag: "7783-7084-3265-9085-8269-3286-77",
		},
		Crypto: []snapshot.CryptoAlg{
			{Name: "aes", Driver: "aes-aesni", Module: "aesni_intel", Priority: 300, Type: "cipher"},
			{Name: "aes", Driver: "aes-generic", Module: "kernel", Priority: 100, Type: "cipher"},
			{Name: "xts(aes)", Driver: "xts-aes-aesni", Module: "aesni_intel", Priority: 401, Type: "skcipher"},
		},
		OS: &snapshot.OS{ID: "ubuntu", VersionID: "24.04", PrettyName: "Ubuntu 24.04.1 LTS"},
	}
	if diff := cmp.Diff(want, s.Host); diff != "" {
		t.Errorf("host (-want +got):\n%s", diff)
	}
	if len(s.Manifest.Errors) != 0 {
		t.Errorf("unexpected errors: %+v", s.Manifest.Errors)
	}
}

func TestCollectBrokenHost(t *testing.T) {
	fs := fixture(t, "truncated.txtar")
	var s snapshot.Snapshot
	Collect(fs, &s)
	if s.Host == nil || s.Host.KernelRelease != "5.15.0" {
		t.Fatalf("kernel release not kept from a partial host: %+v", s.Host)
	}
	want := []string{
		"host.cpuinfo error proc/cpuinfo",
		"host.crypto error proc/crypto",
		"host.dmi missing sys/class/dmi/id",
		"host.kernel missing proc/sys/kernel/arch",
		"host.os missing usr/lib/os-release",
	}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "386" {
		testenv.Unavailable(t, "cpuinfo parse differs by architecture; the fixture is x86")
	}
	if diff := cmp.Diff(want, hostfstest.ErrorLines(&s, fs.Root)); diff != "" {
		t.Errorf("errors (-want +got):\n%s\n%+v", diff, s.Manifest.Errors)
	}
}

func TestCollectEmptyRoot(t *testing.T) {
	fs := hostfs.New(t.TempDir())
	var s snapshot.Snapshot
	Collect(fs, &s)
	want := []string{
		"host.cpuinfo missing proc/cpuinfo",
		"host.crypto missing proc/crypto",
		"host.dmi missing sys/class/dmi/id",
		"host.kernel missing proc/sys/kernel/arch",
		"host.kernel missing proc/sys/kernel/osrelease",
		"host.os missing usr/lib/os-release",
		"host.tuners missing proc",
	}
	if diff := cmp.Diff(want, hostfstest.ErrorLines(&s, fs.Root)); diff != "" {
		t.Errorf("errors (-want +got):\n%s\n%+v", diff, s.Manifest.Errors)
	}
}

// TestCollectLive reads this machine: no mocks.
func TestCollectLive(t *testing.T) {
	var s snapshot.Snapshot
	Collect(hostfs.Default(), &s)
	h := s.Host
	if h.KernelRelease == "" || h.Arch == "" {
		t.Fatalf("kernel release/arch empty: %+v, errors %+v", h, s.Manifest.Errors)
	}
	if h.NumCPU != runtime.NumCPU() {
		// NumCPU counts the affinity mask; cpuinfo lists online CPUs.
		t.Logf("cpuinfo lists %d CPUs, runtime.NumCPU %d", h.NumCPU, runtime.NumCPU())
	}
	if h.NumCPU < 1 || len(h.CPUFlags) == 0 {
		t.Errorf("no CPUs or flags: %+v", h)
	}
	if !slices.IsSorted(h.CPUFlags) {
		t.Errorf("flags not sorted")
	}
	for _, c := range h.Crypto {
		if !interestingCrypto(c.Name) {
			t.Errorf("uninteresting crypto entry kept: %+v", c)
		}
	}
	for _, e := range s.Manifest.Errors {
		if e.Collector != "host.dmi" {
			t.Errorf("unexpected error on this host: %+v", e)
		}
	}
}
