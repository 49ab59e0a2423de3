package vm

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Tool is a host program copied into the guest with its shared libraries.
type Tool struct {
	Name    string // as found on PATH
	Package string // Debian package that provides it
}

// GuestTools are the host binaries every scenario may use.
var GuestTools = []Tool{
	{"cryptsetup", "cryptsetup-bin"},
	{"dmsetup", "dmsetup"},
	{"fio", "fio"},
	{"ethtool", "ethtool"},
	{"losetup", "util-linux"},
	{"lsblk", "util-linux"}, // the reference in TestDMTimingVsDmsetup
	{"mke2fs", "e2fsprogs"},
	// The backlog-drop scenario: a veth pair across a namespace (busybox
	// ip has no netns or veth) and a UDP flood over it.
	{"ip", "iproute2"},
	{"iperf3", "iperf3"},
}

// GuestModules are loaded at boot, with their dependencies from modules.dep.
// brd is not among them: scenarios load it with the size they need and
// unload it, so a ramdisk left behind shows up.
var GuestModules = []string{
	"dm_mod", "dm_crypt", "loop",
	"xts", "ecb", "cbc", "aesni_intel",
	// lab crypt's null_cipher (ecb(cipher_null)): a module on 6.12,
	// built in (CONFIG_CRYPTO_NULL2=y) on 5.10 and 6.1.
	"crypto_null",
	"af_alg", "algif_skcipher", "algif_hash",
}

// OnDemandModules are in the image for scenarios to modprobe.
var OnDemandModules = []string{"brd", "netdevsim", "veth"}

// Base is the scenario-independent part of the initramfs.
type Base struct {
	Path  string            // the cpio file
	Tools map[string]string // tool name -> its path in the guest
}

// BuildBase writes the scenario-independent part of the initramfs to a file
// in cache named after a hash of its inputs. It holds static busybox, /init,
// the modules and the host tools; slowpath and the scenario are appended per
// boot as a second archive.
func BuildBase(cache string, k *Kernel) (*Base, error) {
	base := &Base{Tools: map[string]string{}}
	entries := map[string]cpioEntry{}
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return nil, fmt.Errorf("busybox not found: apt-get install busybox-static")
	}
	if out, _ := exec.Command("file", "-L", busybox).Output(); len(out) > 0 && !bytes.Contains(out, []byte("statically linked")) {
		return nil, fmt.Errorf("%s is not static: apt-get install busybox-static", busybox)
	}
	for _, d := range []string{"bin", "sbin", "usr/bin", "usr/sbin", "lib", "lib64", "etc", "proc", "sys", "dev", "tmp", "run", "mnt", "results", "root"} {
		addDir(entries, d)
	}
	if err := addHostFile(entries, busybox, "bin/busybox"); err != nil {
		return nil, err
	}
	// The kernel's request_module runs /sbin/modprobe (crypto templates).
	entries["sbin/modprobe"] = cpioEntry{Mode: cpioSymlink | 0o777, Data: []byte("/bin/busybox")}
	entries["init"] = cpioEntry{Mode: cpioFile | 0o755, Data: []byte(initScript)}
	entries["etc/passwd"] = cpioEntry{Mode: cpioFile | 0o644, Data: []byte("root:x:0:0:root:/root:/bin/sh\n")}
	entries["etc/group"] = cpioEntry{Mode: cpioFile | 0o644, Data: []byte("root:x:0:\n")}
	if _, err := os.Stat("/etc/mke2fs.conf"); err == nil {
		if err := addHostFile(entries, "/etc/mke2fs.conf", "etc/mke2fs.conf"); err != nil {
			return nil, err
		}
	}
	for _, t := range GuestTools {
		p, err := exec.LookPath(t.Name)
		if err != nil {
			return nil, fmt.Errorf("%s not found: apt-get install %s", t.Name, t.Package)
		}
		if err := addBinary(entries, p); err != nil {
			return nil, err
		}
		base.Tools[t.Name] = p
	}
	entries["usr/sbin/mkfs.ext4"] = cpioEntry{Mode: cpioSymlink | 0o777, Data: []byte("mke2fs")}
	if err := addModules(entries, k, append(append([]string{}, GuestModules...), OnDemandModules...)); err != nil {
		return nil, err
	}

	h := sha256.New()
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(h, "%s %o %x\n", n, entries[n].Mode, sha256.Sum256(entries[n].Data))
	}
	out := filepath.Join(cache, "initramfs", k.Release+"-"+hex.EncodeToString(h.Sum(nil))[:16]+".cpio")
	base.Path = out
	if _, err := os.Stat(out); err == nil {
		return base, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := writeCPIO(&buf, entries); err != nil {
		return nil, err
	}
	// Older bases of this kernel are stale: drop them.
	if old, _ := filepath.Glob(filepath.Join(cache, "initramfs", k.Release+"-*.cpio")); len(old) > 0 {
		for _, o := range old {
			os.Remove(o)
		}
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return nil, err
	}
	return base, os.Rename(tmp, out)
}

func addDir(entries map[string]cpioEntry, d string) {
	for d != "." && d != "/" && d != "" {
		if _, ok := entries[d]; ok {
			return
		}
		entries[d] = cpioEntry{Mode: cpioDir | 0o755}
		d = filepath.Dir(d)
	}
}

// addHostFile copies the content of host path (symlinks followed) to name.
func addHostFile(entries map[string]cpioEntry, path, name string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	st, err := os.Stat(path)
	if err != nil {
		return err
	}
	addDir(entries, filepath.Dir(name))
	entries[name] = cpioEntry{Mode: cpioFile | uint32(st.Mode().Perm()), Data: b}
	return nil
}

// addProgram copies a script as it is (its interpreter is busybox sh in
// the guest) and a binary with its libraries.
func addProgram(entries map[string]cpioEntry, path string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if bytes.HasPrefix(b, []byte("#!")) {
		return addHostFile(entries, path, strings.TrimPrefix(path, "/"))
	}
	return addBinary(entries, path)
}

// addHostTree copies host directory dir whole, at its own path: regular
// files with their modes, symlinks as symlinks.
func addHostTree(entries map[string]cpioEntry, dir string) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := strings.TrimPrefix(p, "/")
		switch {
		case d.IsDir():
			addDir(entries, name)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			addDir(entries, filepath.Dir(name))
			entries[name] = cpioEntry{Mode: cpioSymlink | 0o777, Data: []byte(target)}
		case d.Type().IsRegular():
			return addHostFile(entries, p, name)
		}
		return nil
	})
}

// lddPath matches "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and
// "/lib64/ld-linux-x86-64.so.2 (0x...)".
var lddPath = regexp.MustCompile(`(?:=>\s*)?(/\S+)\s+\(0x`)

// addBinary copies a dynamically linked program and the libraries ldd
// resolves for it, each at the path ldd printed.
func addBinary(entries map[string]cpioEntry, path string) error {
	if err := addHostFile(entries, path, strings.TrimPrefix(path, "/")); err != nil {
		return err
	}
	out, err := exec.Command("ldd", path).Output()
	if err != nil {
		return fmt.Errorf("ldd %s: %w", path, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		m := lddPath.FindStringSubmatch(sc.Text())
		if m == nil {
			if strings.Contains(sc.Text(), "not found") {
				return fmt.Errorf("ldd %s: %s", path, strings.TrimSpace(sc.Text()))
			}
			continue
		}
		name := strings.TrimPrefix(m[1], "/")
		if _, ok := entries[name]; ok {
			continue
		}
		if err := addHostFile(entries, m[1], name); err != nil {
			return err
		}
	}
	return nil
}

// addModules copies the named modules and everything they depend on, as
// modules.dep lists it, plus the module index files busybox modprobe reads.
func addModules(entries map[string]cpioEntry, k *Kernel, names []string) error {
	dir := k.ModulesDir()
	depFile, err := os.ReadFile(filepath.Join(dir, "modules.dep"))
	if err != nil {
		return err
	}
	deps, err := parseModulesDep(bytes.NewReader(depFile))
	if err != nil {
		return err
	}
	builtin, err := os.ReadFile(filepath.Join(dir, "modules.builtin"))
	if err != nil {
		return err
	}
	byName := map[string]string{} // module name -> path relative to dir
	for p := range deps {
		byName[moduleName(p)] = p
	}
	isBuiltin := map[string]bool{}
	for _, l := range strings.Fields(string(builtin)) {
		isBuiltin[moduleName(l)] = true
	}
	want := map[string]bool{}
	var visit func(p string)
	visit = func(p string) {
		if want[p] {
			return
		}
		want[p] = true
		for _, d := range deps[p] {
			visit(d)
		}
	}
	for _, n := range names {
		n = strings.ReplaceAll(n, "-", "_")
		if p, ok := byName[n]; ok {
			visit(p)
		} else if !isBuiltin[n] {
			return fmt.Errorf("module %s is neither in %s/modules.dep nor built in", n, dir)
		}
	}
	base := filepath.Join("lib/modules", k.Release)
	for p := range want {
		if err := addHostFile(entries, filepath.Join(dir, p), filepath.Join(base, p)); err != nil {
			return err
		}
	}
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if filepath.Dir(p) == dir && strings.HasPrefix(d.Name(), "modules.") && !strings.HasSuffix(d.Name(), ".modinfo") {
			return addHostFile(entries, p, filepath.Join(base, d.Name()))
		}
		return nil
	})
}

// moduleName is the kernel's name for a module file: basename without .ko
// (and compression suffix), dashes as underscores.
func moduleName(p string) string {
	b := filepath.Base(p)
	if i := strings.Index(b, ".ko"); i >= 0 {
		b = b[:i]
	}
	return strings.ReplaceAll(b, "-", "_")
}

// parseModulesDep reads modules.dep: "path: dep1 dep2" per line, paths
// relative to the module directory (modules.dep(5)).
func parseModulesDep(r *bytes.Reader) (map[string][]string, error) {
	deps := map[string][]string{}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		mod, rest, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("modules.dep: no colon in %q", line)
		}
		deps[mod] = strings.Fields(rest)
	}
	return deps, sc.Err()
}
