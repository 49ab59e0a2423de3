// Package packaging_test checks what `make release` writes
// (scripts/release.sh): the checksums, the static linux/amd64 and
// linux/arm64 tarballs (the arm64 binary run under qemu-user-static) with
// the licences of what each binary links, and (packages_test.go) the .deb
// and the .rpm: lintian and rpmlint, their maintainer scripts run by dpkg
// and rpm in a throwaway root, and the systemd unit of each.
package packaging_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// releaseDir is `make release`'s output when make test passes it
// (SLOWPATH_RELEASE_DIR), or a release of this tree built for the test.
func releaseDir(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("SLOWPATH_RELEASE_DIR"); d != "" {
		return d
	}
	testenv.RequireTool(t, "go", "golang-go")
	dir := t.TempDir()
	start := time.Now()
	cmd := exec.Command(filepath.Join(testenv.ModuleRoot(t), "scripts/release.sh"), dir, "v0.0.0-releasetest")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("scripts/release.sh: %v\n%s", err, out)
	}
	t.Logf("scripts/release.sh: %.1f s", time.Since(start).Seconds())
	return dir
}

func one(t *testing.T, dir, pattern string) string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(dir, pattern))
	if err != nil || len(m) != 1 {
		t.Fatalf("%s in %s: %v %v", pattern, dir, m, err)
	}
	return m[0]
}

func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func TestRelease(t *testing.T) {
	testenv.RequireRoot(t)
	qemu := testenv.RequireTool(t, "qemu-aarch64-static", "qemu-user-static")
	sha256sum := testenv.RequireTool(t, "sha256sum", "coreutils")
	dir := releaseDir(t)
	fixture := filepath.Join(testenv.ModuleRoot(t), "testdata/hosts/azure-e16dv5-eah.json")

	// Every artefact is in the checksums, and they match.
	sums, err := os.ReadFile(filepath.Join(dir, "sha256sums.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sha256sum, "--check", "--strict", "sha256sums.txt")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("sha256sum --check: %v\n%s", err, out)
	}
	var doctor = map[string][]byte{}
	tarballs := t.TempDir()
	for _, arch := range []string{"amd64", "arm64"} {
		tgz := one(t, dir, "slowpath-*.linux-"+arch+".tar.gz")
		deb := one(t, dir, "slowpath_*_"+arch+".deb")
		rpm := one(t, dir, "slowpath-*."+map[string]string{"amd64": "x86_64", "arm64": "aarch64"}[arch]+".rpm")
		for _, f := range []string{tgz, deb, rpm} {
			if !bytes.Contains(sums, []byte("  "+filepath.Base(f)+"\n")) {
				t.Errorf("%s not in sha256sums.txt", filepath.Base(f))
			}
		}
		if b, err := os.ReadFile(rpm); err != nil || !bytes.HasPrefix(b, []byte{0xed, 0xab, 0xee, 0xdb}) {
			t.Errorf("%s is not an RPM (lead magic): %v", rpm, err)
		}
		x := tarballs
		run(t, "tar", "-xzf", tgz, "-C", x)
		top := one(t, x, "slowpath-*.linux-"+arch)
		for _, f := range []string{"slowpath", "LICENSE", "LICENSES-THIRD-PARTY", "README.md", "slowpath-agent.service", "slowpath-agent.default", "man/man1/slowpath-agent.1.gz", "completions/slowpath.bash"} {
			if _, err := os.Stat(filepath.Join(top, f)); err != nil {
				t.Errorf("%s: %v", filepath.Base(tgz), err)
			}
		}
		bin := filepath.Join(top, "slowpath")
		checkLicences(t, bin, filepath.Join(top, "LICENSES-THIRD-PARTY"))
		if info := run(t, "file", bin); !bytes.Contains(info, []byte("statically linked")) {
			t.Errorf("%s: %s", arch, info)
		}
		// The arm64 binary runs under qemu-user-static.
		argv := []string{bin}
		if arch == "arm64" {
			argv = []string{qemu, bin}
		}
		v := run(t, argv[0], append(argv[1:], "--version")...)
		if !bytes.Contains(v, []byte("platform:         linux/"+arch)) {
			t.Errorf("%s --version:\n%s", arch, v)
		}
		c := exec.Command(argv[0], append(argv[1:], "doctor", "--from", fixture, "--format", "json")...)
		out, err := c.Output()
		if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 1) {
			t.Fatalf("%s doctor --from: %v\n%s", arch, err, out)
		}
		if !bytes.Contains(out, []byte(`"id": "storage.stacked-encryption"`)) {
			t.Errorf("%s doctor --from %s: the fixture's finding is missing:\n%.2000s", arch, filepath.Base(fixture), out)
		}
		doctor[arch] = out
	}
	if !bytes.Equal(doctor["amd64"], doctor["arm64"]) {
		t.Errorf("doctor --from the same fixture differs between amd64 and arm64")
	}

	bin := filepath.Join(one(t, tarballs, "slowpath-*.linux-amd64"), "slowpath")
	t.Run("tarball", func(t *testing.T) { checkTarball(t, filepath.Dir(bin)) })
	t.Run("deb", func(t *testing.T) { checkDeb(t, one(t, dir, "slowpath_*_amd64.deb"), bin) })
	t.Run("rpm", func(t *testing.T) { checkRPM(t, one(t, dir, "slowpath-*.x86_64.rpm"), bin) })
}
