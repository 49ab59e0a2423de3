package vm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
)

// DefaultCache is where fetched packages and built artefacts live: outside
// the repository, shared by every checkout. SLOWPATH_VM_CACHE overrides it.
const DefaultCache = "/var/cache/slowpath-vm"

// CacheDir returns the cache directory in use.
func CacheDir() string {
	if d := os.Getenv("SLOWPATH_VM_CACHE"); d != "" {
		return d
	}
	return DefaultCache
}

// Kernel is an unpacked pinned kernel with netdevsim built for it.
type Kernel struct {
	Release string
	Image   string // bzImage (vmlinuz) or the vmlinux extracted from it
	Root    string // unpacked packages; modules under lib/modules/Release
}

// ModulesDir is the kernel's module tree.
func (k *Kernel) ModulesDir() string {
	return filepath.Join(k.Root, "lib/modules", k.Release)
}

// PrepareKernel fetches the pinned packages into cache (verifying each
// against the pin), unpacks them and builds netdevsim. Each step is skipped
// when its result is already in the cache; log receives progress lines.
func PrepareKernel(cache string, pin *Pin, log func(string, ...any)) (*Kernel, error) {
	debDir := filepath.Join(cache, "debs")
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return nil, err
	}
	debs := map[string]string{}
	for _, d := range pin.Debs {
		p, err := fetchDeb(debDir, d, pin.Version, log)
		if err != nil {
			return nil, err
		}
		debs[d.Package] = p
	}
	k := &Kernel{
		Release: pin.Release,
		Root:    filepath.Join(cache, "kernel-"+pin.Release+"_"+pin.Version),
	}
	k.Image = filepath.Join(k.Root, "boot", "vmlinux-"+pin.Release)
	if _, err := os.Stat(filepath.Join(k.Root, ".complete")); err == nil {
		return k, nil
	}
	log("vm: unpacking %s %s and building netdevsim (once per kernel)", pin.Release, pin.Version)
	tmp := k.Root + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := unpackKernel(tmp, pin, debs); err != nil {
		return nil, err
	}
	if err := os.RemoveAll(k.Root); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, k.Root); err != nil {
		return nil, err
	}
	// Paths inside the tree were built for tmp; the build is over, and only
	// the image and modules are used from here on.
	return k, os.WriteFile(filepath.Join(k.Root, ".complete"), nil, 0o644)
}

// debFile finds PACKAGE_VERSION_ARCH.deb in dir; apt escapes an epoch's
// colon as %3a.
func debFile(dir, pkg, version string) string {
	v := strings.ReplaceAll(version, ":", "%3a")
	m, _ := filepath.Glob(filepath.Join(dir, pkg+"_"+v+"_*.deb"))
	if len(m) == 1 {
		return m[0]
	}
	return ""
}

func fetchDeb(dir string, d Deb, version string, log func(string, ...any)) (string, error) {
	if p := debFile(dir, d.Package, version); p != "" {
		if err := checkSHA256(p, d.SHA256); err == nil {
			return p, nil
		}
		log("vm: cached %s does not match the pin, fetching again", p)
		os.Remove(p)
	}
	spec := d.Package + "=" + version
	// apt's own signed index must agree with the pin before we download.
	idx, err := exec.Command("apt-cache", "show", spec).CombinedOutput()
	if err != nil {
		log("vm: %s unknown to apt, running apt-get update", spec)
		if out, err := exec.Command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-get update: %v: %s", err, out)
		}
		if idx, err = exec.Command("apt-cache", "show", spec).CombinedOutput(); err != nil {
			return "", fmt.Errorf("apt-cache show %s: %v: %s (is the pin in test/vm/kernel.pin still in the archive?)", spec, err, idx)
		}
	}
	if !bytes.Contains(idx, []byte("SHA256: "+d.SHA256)) {
		return "", fmt.Errorf("apt index for %s does not list the pinned sha256 %s", spec, d.SHA256)
	}
	log("vm: apt-get download %s", spec)
	cmd := exec.Command("apt-get", "download", "-qq", spec)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %v: %s", spec, err, out)
	}
	p := debFile(dir, d.Package, version)
	if p == "" {
		return "", fmt.Errorf("apt-get download %s: no .deb appeared in %s", spec, dir)
	}
	if err := checkSHA256(p, d.SHA256); err != nil {
		os.Remove(p)
		return "", err
	}
	return p, nil
}

func checkSHA256(path, want string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		return fmt.Errorf("%s: sha256 %s, pinned %s", path, got, want)
	}
	return nil
}

func run(dir string, name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, tail(out, 4000))
	}
	return nil
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func unpackKernel(root string, pin *Pin, debs map[string]string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	var source string
	for pkg, p := range debs {
		if strings.HasPrefix(pkg, "linux-source-") {
			source = p
			continue
		}
		if err := run("", "dpkg-deb", "-x", p, root); err != nil {
			return err
		}
	}
	vmlinuz := filepath.Join(root, "boot", "vmlinuz-"+pin.Release)
	if err := extractVmlinux(vmlinuz, filepath.Join(root, "boot", "vmlinux-"+pin.Release)); err != nil {
		return err
	}
	if source == "" {
		return errors.New("kernel.pin has no linux-source package: netdevsim cannot be built")
	}
	ko, err := buildNetdevsim(root, pin, source)
	if err != nil {
		return err
	}
	extra := filepath.Join(root, "lib/modules", pin.Release, "extra")
	if err := os.MkdirAll(extra, 0o755); err != nil {
		return err
	}
	if err := copyFile(ko, filepath.Join(extra, "netdevsim.ko")); err != nil {
		return err
	}
	// The host has no kmod; busybox's depmod writes modules.dep.
	return run("", "busybox", "depmod", "-b", root, pin.Release)
}

// buildNetdevsim builds drivers/net/netdevsim out of tree: Debian does not
// enable CONFIG_NETDEVSIM in any flavour. The module is unsigned, which the
// kernel accepts with a taint (CONFIG_MODULE_SIG_FORCE is not set).
func buildNetdevsim(root string, pin *Pin, sourceDeb string) (string, error) {
	src := filepath.Join(root, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	series := strings.TrimPrefix(debPackageOf(sourceDeb), "linux-source-")
	// Only drivers/net/netdevsim is needed from the 130 MB tarball.
	script := fmt.Sprintf(`dpkg-deb --fsys-tarfile %q | tar -xO ./usr/src/linux-source-%s.tar.xz | xz -dc | tar -x -C %q linux-source-%s/drivers/net/netdevsim`,
		sourceDeb, series, src, series)
	if err := run("", "sh", "-c", script); err != nil {
		return "", err
	}
	hdr := filepath.Join(root, "usr/src", "linux-headers-"+pin.Release)
	// The flavour's Makefile includes the common tree by absolute path.
	mk := filepath.Join(hdr, "Makefile")
	b, err := os.ReadFile(mk)
	if err != nil {
		return "", err
	}
	b = bytes.ReplaceAll(b, []byte("include /usr/src/"), []byte("include "+filepath.Join(root, "usr/src")+"/"))
	if err := os.WriteFile(mk, b, 0o644); err != nil {
		return "", err
	}
	m := filepath.Join(src, "linux-source-"+series, "drivers/net/netdevsim")
	if err := run("", "make", "-s", "-C", hdr, "M="+m, "CONFIG_NETDEVSIM=m", "modules"); err != nil {
		return "", fmt.Errorf("building netdevsim (needs gcc and make): %w", err)
	}
	return filepath.Join(m, "netdevsim.ko"), nil
}

func debPackageOf(path string) string {
	base := filepath.Base(path)
	if i := strings.IndexByte(base, '_'); i >= 0 {
		return base[:i]
	}
	return base
}

// extractVmlinux decompresses the kernel inside a bzImage: qemu boots the
// ELF vmlinux directly (PVH entry, CONFIG_PVH=y), which skips the in-guest
// decompression that is slow under TCG. Debian compresses with LZ4
// (CONFIG_KERNEL_LZ4=y), legacy frame magic 02 21 4c 18, like
// scripts/extract-vmlinux.
func extractVmlinux(bzImage, out string) error {
	b, err := os.ReadFile(bzImage)
	if err != nil {
		return err
	}
	magic := []byte{0x02, 0x21, 0x4c, 0x18}
	for off := 0; ; {
		i := bytes.Index(b[off:], magic)
		if i < 0 {
			return fmt.Errorf("%s: no LZ4-compressed vmlinux found (another CONFIG_KERNEL_* compression?)", bzImage)
		}
		off += i
		cmd := exec.Command("lz4", "-dc")
		cmd.Stdin = bytes.NewReader(b[off:])
		elf, _ := cmd.Output() // trailing bytes after the frame make lz4 complain
		if len(elf) > 4 && string(elf[:4]) == "\x7fELF" {
			return os.WriteFile(out, elf, 0o644)
		}
		off += len(magic)
	}
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// LockCache takes an exclusive lock on cache, so test binaries that share
// it (go test runs packages in parallel) do not unpack or build into the
// same place at once. Call the returned function to release it.
func LockCache(cache string) (func(), error) {
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(cache, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return func() { f.Close() }, nil
}
