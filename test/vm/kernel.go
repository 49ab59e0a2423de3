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
	Version string // the image's Debian version
	// Resolved says which packages were used and how they depart from the
	// pin (Resolved.Changed).
	Resolved *Resolved
	Image    string // the vmlinux extracted from the bzImage, which qemu boots
	// CPU is qemu's -cpu for this kernel (Pin.CPU).
	CPU  string
	Root string // unpacked packages; modules under lib/modules/Release
}

// ModulesDir is the kernel's module tree.
func (k *Kernel) ModulesDir() string {
	return filepath.Join(k.Root, "lib/modules", k.Release)
}

// AptLab is apt-get and apt-cache pointed at the lab's own sources list,
// package lists and package cache under CACHE/apt: the suites the pins name
// (bullseye, bookworm-backports, ...) are fetched there, and the host's
// /etc/apt and /var/lib/apt are neither read for sources nor written.
// Downloads are verified twice: apt checks the suite's Release file against
// Debian's archive keyring, and fetchDeb checks the .deb's sha256 against
// both apt's index and the pin.
type AptLab struct {
	Dir     string // CACHE/apt
	updated bool
}

// Keyring is Debian's archive keyring (debian-archive-keyring), which
// signs bullseye, bookworm and trixie alike.
const Keyring = "/usr/share/keyrings/debian-archive-keyring.gpg"

// NewAptLab writes CACHE/apt/sources.list for the suites of pins. The
// list is rewritten (and the lists refreshed on first use) only when it
// changes.
func NewAptLab(cache string, pins []*Pin) (*AptLab, error) {
	a := &AptLab{Dir: filepath.Join(cache, "apt")}
	for _, d := range []string{"lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(a.Dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	seen := map[string]bool{}
	var b strings.Builder
	b.WriteString("# Written by slowpath's VM lab (test/vm/kernel.go) from test/vm/kernels/*.pin.\n")
	for _, p := range pins {
		if seen[p.Suite] {
			continue
		}
		seen[p.Suite] = true
		fmt.Fprintf(&b, "deb [signed-by=%s] %s\n", Keyring, p.Suite)
	}
	list := filepath.Join(a.Dir, "sources.list")
	if old, err := os.ReadFile(list); err == nil && string(old) == b.String() {
		return a, nil
	}
	return a, os.WriteFile(list, []byte(b.String()), 0o644)
}

// Args are the options that confine apt to the lab's directory.
func (a *AptLab) Args() []string {
	return []string{
		"-o", "Dir::Etc::sourcelist=" + filepath.Join(a.Dir, "sources.list"),
		"-o", "Dir::Etc::sourceparts=-",
		"-o", "Dir::State::Lists=" + filepath.Join(a.Dir, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(a.Dir, "cache"),
		// Root downloads into the lab's cache, which _apt may not write.
		"-o", "APT::Sandbox::User=root",
	}
}

func (a *AptLab) command(name string, args ...string) *exec.Cmd {
	return exec.Command(name, append(a.Args(), args...)...)
}

// update runs apt-get update on the lab's list, once per AptLab.
func (a *AptLab) update(log func(string, ...any)) error {
	if a.updated {
		return nil
	}
	log("vm: apt-get update on the lab's own list %s", filepath.Join(a.Dir, "sources.list"))
	if out, err := a.command("apt-get", "update", "-qq").CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get update (lab list %s): %v: %s", filepath.Join(a.Dir, "sources.list"), err, out)
	}
	a.updated = true
	return nil
}

// PrepareKernel resolves pin against the lab's suites (ResolvePin: the
// pinned packages, or the newest of the same series where the archive moved
// on), fetches them into cache (each checked against the sha256 of apt's
// signed index), unpacks them and builds netdevsim. Each step is skipped
// when its result is already in the cache; log receives progress lines and
// every departure from the pin.
func PrepareKernel(cache string, apt *AptLab, pin *Pin, log func(string, ...any)) (*Kernel, error) {
	res, err := ResolvePin(pin, aptIndex{apt: apt, log: log})
	if err != nil {
		return nil, err
	}
	for _, c := range res.Changed {
		log("vm: %s", c)
	}
	debDir := filepath.Join(cache, "debs")
	if err := os.MkdirAll(debDir, 0o755); err != nil {
		return nil, err
	}
	debs := map[string]string{}
	for _, d := range res.Debs {
		p, err := fetchDeb(apt, debDir, d, log)
		if err != nil {
			return nil, fmt.Errorf("kernel %s: %w", pin.Name, err)
		}
		debs[d.Package] = p
	}
	rp := res.Pin
	k := &Kernel{
		Release:  rp.Release,
		Version:  rp.Version,
		Resolved: res,
		Root:     filepath.Join(cache, "kernel-"+rp.Release+"_"+debsKey(res)),
	}
	k.Image = filepath.Join(k.Root, "boot", "vmlinux-"+rp.Release)
	k.CPU = pin.CPU
	if _, err := os.Stat(filepath.Join(k.Root, ".complete")); err == nil {
		return k, nil
	}
	log("vm: unpacking %s %s and building netdevsim (once per kernel)", rp.Release, rp.Version)
	tmp := k.Root + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := unpackKernel(tmp, rp, debs); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", pin.Name, err)
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

// debsKey names an unpacked tree by the image's version and a hash of every
// package's sha256, so a newer kbuild beside the same image builds anew.
func debsKey(r *Resolved) string {
	h := sha256.New()
	for _, d := range r.Debs {
		fmt.Fprintf(h, "%s %s\n", d.Package, d.SHA256)
	}
	return r.Pin.Version + "-" + hex.EncodeToString(h.Sum(nil))[:12]
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

// fetchDeb returns d's .deb in dir, downloading it with apt-get (which
// checks it against the signed index) and checking its sha256 again.
func fetchDeb(apt *AptLab, dir string, d ResolvedDeb, log func(string, ...any)) (string, error) {
	if p := debFile(dir, d.Package, d.Version); p != "" {
		if err := checkSHA256(p, d.SHA256); err == nil {
			return p, nil
		}
		log("vm: cached %s does not match apt's index, fetching again", p)
		os.Remove(p)
	}
	spec := d.Package + "=" + d.Version
	log("vm: apt-get download %s", spec)
	cmd := apt.command("apt-get", "download", "-qq", spec)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("apt-get download %s: %v: %s", spec, err, out)
	}
	p := debFile(dir, d.Package, d.Version)
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
		return fmt.Errorf("%s: sha256 %s, apt's index says %s", path, got, want)
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
	// Debian compresses modules with xz since 6.x (CONFIG_MODULE_COMPRESS_XZ).
	// busybox modprobe loads .ko.xz only after a failed first attempt (its
	// finit_module with the compressed file), so they are decompressed here,
	// once; depmod below then lists them as .ko.
	if err := run("", "find", filepath.Join(root, "lib/modules", pin.Release), "-name", "*.ko.xz", "-exec", "xz", "-d", "{}", "+"); err != nil {
		return fmt.Errorf("decompressing modules (needs xz-utils): %w", err)
	}
	if source == "" {
		return errors.New("the pin has no linux-source package: netdevsim cannot be built")
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
	// No BTF for the module: that needs pahole (dwarves) and the tests do
	// not trace netdevsim (scripts/Makefile.modfinal cmd_btf_ko).
	args := []string{"-s", "-C", hdr, "M=" + m, "CONFIG_NETDEVSIM=m", "CONFIG_DEBUG_INFO_BTF_MODULES="}
	if pin.CC != "" {
		// Debian's kbuild stops when the compiler differs from the
		// kernel's own; the pin says this one works (see its comment).
		args = append(args, "CC="+pin.CC, "DEBIAN_KERNEL_NO_CC_VERSION_CHECK=1")
	}
	if err := run("", "make", append(args, "modules")...); err != nil {
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
// decompression that is slow under TCG (seconds of emulated LZ4 or ZSTD per
// boot, and more instructions under -icount). Debian compresses with LZ4
// up to 6.1 (CONFIG_KERNEL_LZ4=y, legacy frame magic 02 21 4c 18) and with
// ZSTD since (CONFIG_KERNEL_ZSTD=y, frame magic 28 b5 2f fd); like
// scripts/extract-vmlinux, each candidate offset is tried until one
// decompresses to an ELF file.
func extractVmlinux(bzImage, out string) error {
	b, err := os.ReadFile(bzImage)
	if err != nil {
		return err
	}
	for _, c := range []struct {
		magic []byte
		tool  string
	}{
		{[]byte{0x02, 0x21, 0x4c, 0x18}, "lz4"},
		{[]byte{0x28, 0xb5, 0x2f, 0xfd}, "zstd"},
	} {
		for off := 0; ; off += len(c.magic) {
			i := bytes.Index(b[off:], c.magic)
			if i < 0 {
				break
			}
			off += i
			cmd := exec.Command(c.tool, "-dc")
			cmd.Stdin = bytes.NewReader(b[off:])
			elf, _ := cmd.Output() // trailing bytes after the frame make the tool complain
			if len(elf) > 4 && string(elf[:4]) == "\x7fELF" {
				return os.WriteFile(out, elf, 0o644)
			}
		}
	}
	return fmt.Errorf("%s: no LZ4- or ZSTD-compressed vmlinux found (another CONFIG_KERNEL_* compression? needs lz4 and zstd)", bzImage)
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
