// Package vm is slowpath's real-kernel test lab: it boots a pinned stock
// Debian kernel under qemu TCG with an initramfs holding busybox, the
// device-mapper, brd, loop and netdevsim modules, cryptsetup, dmsetup, fio,
// ethtool and a freshly built slowpath, runs one scenario script per boot
// and hands its exit status, console and result files back to go test.
//
// This host's kernel has no device-mapper, brd or netdevsim and KVM does not
// work, so the VM is the only place the live dm ioctl path, the crypt lab and
// the ring reader meet a real kernel. Under TCG the AES instructions are
// emulated: anything measured in the VM is functional evidence, never a
// performance figure. See docs/testing.md.
package vm

import (
	"encoding/hex"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strings"
)

// Pin names one kernel under test: kernels/NAME.pin in this directory.
type Pin struct {
	Name    string // the file's base name without .pin: 5.10, 6.1, 6.12
	Release string // uname -r of the guest, e.g. 6.1.0-56-cloud-amd64
	Version string // Debian package version, e.g. 6.1.192-2
	// Suite is the apt source line (URI SUITE COMPONENT) the packages come
	// from; the lab writes it into its own sources list (aptLab), never
	// into the host's.
	Suite string
	// CC overrides the compiler the kernel's kbuild names for out-of-tree
	// modules (netdevsim), when that one is not installable on the host.
	CC string
	// CPU is qemu's -cpu for this kernel (`cpu MODEL[,FEATURES]`); "max"
	// when the pin says nothing. See the pin's comment for why it differs.
	CPU  string
	Debs []Deb // packages to fetch, in file order
}

// Deb is one pinned Debian package.
type Deb struct {
	Package string
	SHA256  string // hex
	// Version, when set, is this package's own version: the suite may list
	// a package rebuilt alone (kbuild 6.1.192-3 beside image 6.1.192-2).
	Version string
}

// ImagePackage is the linux-image package of the pin.
func (p *Pin) ImagePackage() string { return "linux-image-" + p.Release }

// ReadPin parses the pin file at path.
func ReadPin(path string) (*Pin, error) {
	p, err := parseFile(path, parsePin)
	if err != nil {
		return nil, err
	}
	p.Name = strings.TrimSuffix(filepath.Base(path), ".pin")
	return p, nil
}

// suiteLine is "URI SUITE COMPONENT" of Debian's archive: plain http is
// what Debian's own sources use; apt checks the signed Release file.
// qemuCPU is a -cpu argument: a model and +/-/= features, no other options.
var qemuCPU = regexp.MustCompile(`^[a-zA-Z0-9_.-]+(,[a-z0-9_.+-]+(=(on|off))?)*$`)

var suiteLine = regexp.MustCompile(`^http://deb\.debian\.org/debian(-security)? [a-z]+(-[a-z]+)? main$`)

// parsePin reads "release R", "version V" and "deb PACKAGE SHA256
// [VERSION]" lines (VERSION where the package's differs from V); '#'
// starts a comment.
func parsePin(r io.Reader) (*Pin, error) {
	p := &Pin{}
	err := scanDirectives(r, func(n int, line string, f []string) error {
		switch {
		case f[0] == "release" && len(f) == 2:
			p.Release = f[1]
		case f[0] == "version" && len(f) == 2:
			p.Version = f[1]
		case f[0] == "suite" && len(f) == 4:
			p.Suite = strings.Join(f[1:], " ")
			if !suiteLine.MatchString(p.Suite) {
				return fmt.Errorf("line %d: suite %q is not `http://deb.debian.org/debian[-security] SUITE main`", n, p.Suite)
			}
		case f[0] == "cc" && len(f) == 2:
			p.CC = f[1]
		case f[0] == "cpu" && len(f) == 2 && qemuCPU.MatchString(f[1]):
			p.CPU = f[1]
		case f[0] == "deb" && (len(f) == 3 || len(f) == 4):
			if b, err := hex.DecodeString(f[2]); err != nil || len(b) != 32 {
				return fmt.Errorf("line %d: %q is not a sha256 in hex", n, f[2])
			}
			d := Deb{Package: f[1], SHA256: strings.ToLower(f[2])}
			if len(f) == 4 {
				d.Version = f[3]
			}
			p.Debs = append(p.Debs, d)
		default:
			return fmt.Errorf("line %d: want `release R`, `version V`, `suite URI SUITE main`, `cc GCC`, `cpu MODEL[,FEATURES]` or `deb PACKAGE SHA256 [VERSION]`, got %q", n, line)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if p.CPU == "" {
		p.CPU = "max"
	}
	if p.Release == "" || p.Version == "" || p.Suite == "" {
		return nil, fmt.Errorf("release, version and suite lines are required")
	}
	var hasImage bool
	for _, d := range p.Debs {
		hasImage = hasImage || d.Package == p.ImagePackage()
	}
	if !hasImage {
		return nil, fmt.Errorf("no deb line for %s", p.ImagePackage())
	}
	return p, nil
}
