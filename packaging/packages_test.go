package packaging_test

import (
	"bytes"
	"compress/gzip"
	"debug/buildinfo"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// unit is the agent's unit; wants is the link `systemctl enable` makes.
const (
	unit  = "slowpath-agent.service"
	wants = "/etc/systemd/system/multi-user.target.wants/" + unit
)

// throwaway is this host's own Debian root under a copy-on-write overlay,
// in a mount namespace of each command's own: dpkg, rpm and rpmlint run
// chrooted in it with the real maintainer scripts and deb-systemd-helper,
// and what they write lands in the test's directory, never in /. /run is
// empty there, so the scripts see no running systemd, as in any chroot.
type throwaway struct{ dir string }

const overlay = `set -e
d=$1; shift
mount -t overlay overlay -o "lowerdir=/,upperdir=$d/upper,workdir=$d/work" "$d/root"
mount -t proc proc "$d/root/proc"
mount --rbind /dev "$d/root/dev"
mount -t tmpfs tmpfs "$d/root/run"
exec chroot "$d/root" "$@"
`

func newThrowaway(t *testing.T) *throwaway {
	t.Helper()
	testenv.RequireTool(t, "unshare", "util-linux")
	r := &throwaway{t.TempDir()}
	for _, d := range []string{"upper", "work", "root"} {
		if err := os.Mkdir(filepath.Join(r.dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// put copies a file to /NAME in the root.
func (r *throwaway) put(t *testing.T, src, name string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.dir, "upper", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (r *throwaway) cmd(args ...string) *exec.Cmd {
	return exec.Command("unshare", append([]string{"--mount", "--propagation", "slave", "sh", "-c", overlay, "sh", r.dir}, args...)...)
}

func (r *throwaway) run(t *testing.T, args ...string) []byte {
	t.Helper()
	out, err := r.cmd(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("in the throwaway root: %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// exists says whether path is in the root, a dangling link included.
func (r *throwaway) exists(t *testing.T, path string) bool {
	t.Helper()
	return r.cmd("sh", "-c", `test -e "$1" || test -L "$1"`, "sh", path).Run() == nil
}

func (r *throwaway) read(t *testing.T, path string) []byte {
	t.Helper()
	return r.run(t, "cat", path)
}

// checkLicences: the file names every module of the binary's build info
// with its licence (scripts/thirdparty fails on one it cannot name).
func checkLicences(t *testing.T, bin, licences string) {
	t.Helper()
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(licences)
	if err != nil {
		t.Fatal(err)
	}
	checkLicenceText(t, bi, b)
}

func checkLicenceText(t *testing.T, bi *buildinfo.BuildInfo, b []byte) {
	t.Helper()
	if len(bi.Deps) == 0 {
		t.Fatal("the binary's build info lists no modules")
	}
	for _, d := range bi.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(d.Path+" "+d.Version) + `\nLicense: \S+.*\n\n--- `).Match(b) {
			t.Errorf("LICENSES-THIRD-PARTY lacks %s %s with its licence", d.Path, d.Version)
		}
	}
	for _, want := range []string{"go (standard library) " + bi.GoVersion + "\nLicense: BSD-3-Clause\n", "internal/report/htmlpage/third_party/echarts vendored\nLicense: "} {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("LICENSES-THIRD-PARTY lacks %q", want)
		}
	}
}

// checkTarball: its unit runs the binary where docs/install.md's steps put
// it, and those steps install the unit and its arguments file too.
func checkTarball(t *testing.T, top string) {
	u, err := os.ReadFile(filepath.Join(top, unit))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^ExecStart=(\S+) agent `).FindSubmatch(u)
	if m == nil {
		t.Fatalf("tarball's unit has no ExecStart=... agent:\n%s", u)
	}
	doc, err := os.ReadFile(filepath.Join(testenv.ModuleRoot(t), "docs/install.md"))
	if err != nil {
		t.Fatal(err)
	}
	sec := doc[bytes.Index(doc, []byte("## Release tarball")):bytes.Index(doc, []byte("## .deb and .rpm"))]
	for _, want := range []string{
		"slowpath " + filepath.Dir(string(m[1])) + "/\n",
		"slowpath-agent.service /etc/systemd/system/\n",
		"slowpath-agent.default /etc/default/slowpath-agent\n",
	} {
		if !bytes.Contains(sec, []byte(want)) {
			t.Errorf("docs/install.md's tarball steps lack %q (the tarball's unit runs %s)", strings.TrimSpace(want), m[1])
		}
	}
}

func checkDeb(t *testing.T, deb, bin string) {
	dpkgDeb := testenv.RequireTool(t, "dpkg-deb", "dpkg")
	lintian := testenv.RequireTool(t, "lintian", "lintian")
	shellcheck := testenv.RequireTool(t, "shellcheck", "shellcheck")
	analyze := testenv.RequireTool(t, "systemd-analyze", "systemd")

	// The maintainer scripts are in the control archive and shellcheck-clean.
	ctrl := t.TempDir()
	run(t, dpkgDeb, "--control", deb, ctrl)
	scripts := []string{filepath.Join(ctrl, "postinst"), filepath.Join(ctrl, "prerm"), filepath.Join(ctrl, "postrm")}
	run(t, shellcheck, append([]string{"--shell=sh"}, scripts...)...)

	start := time.Now()
	if out, err := exec.Command(lintian, "--fail-on", "error,warning", deb).CombinedOutput(); err != nil {
		t.Errorf("lintian: %v\n%s", err, out)
	}
	t.Logf("lintian: %.1f s", time.Since(start).Seconds())

	r := newThrowaway(t)
	r.put(t, deb, "slowpath.deb")
	r.run(t, "dpkg", "--install", "/slowpath.deb")
	if st := r.run(t, "dpkg", "--status", "slowpath"); !bytes.Contains(st, []byte("Status: install ok installed")) {
		t.Errorf("dpkg --status:\n%s", st)
	}
	for _, f := range []string{"/usr/share/man/man1/slowpath.1.gz", "/usr/share/man/man1/slowpath-agent.1.gz",
		"/usr/share/bash-completion/completions/slowpath", "/usr/share/zsh/vendor-completions/_slowpath",
		"/usr/share/fish/vendor_completions.d/slowpath.fish", "/etc/default/slowpath-agent", "/usr/share/doc/slowpath/copyright",
		"/lib/systemd/system/" + unit, "/var/lib/systemd/deb-systemd-helper-enabled/" + unit + ".dsh-also"} {
		if !r.exists(t, f) {
			t.Errorf("installed package: no %s", f)
		}
	}
	if v := r.run(t, "slowpath", "version", "--format", "json"); !bytes.Contains(v, []byte(`"platform": "linux/amd64"`)) {
		t.Errorf("installed slowpath version:\n%s", v)
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(r.read(t, "/usr/share/doc/slowpath/LICENSES-THIRD-PARTY.gz")))
	if err != nil {
		t.Fatal(err)
	}
	lic, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	checkLicenceText(t, bi, lic)

	// The unit as installed: systemd-analyze checks its directives and
	// that ExecStart's binary is executable. It runs against this host's
	// units (the root's /run has no systemd), so ExecStart names the binary
	// where dpkg put it; nothing else is changed.
	u := r.read(t, "/lib/systemd/system/"+unit)
	installed := filepath.Join(t.TempDir(), "slowpath")
	if err := os.WriteFile(installed, r.read(t, "/usr/bin/slowpath"), 0o755); err != nil {
		t.Fatal(err)
	}
	check := filepath.Join(t.TempDir(), unit)
	if err := os.WriteFile(check, bytes.ReplaceAll(u, []byte("ExecStart=/usr/bin/slowpath "), []byte("ExecStart="+installed+" ")), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(analyze, "verify", "--man=no", check).CombinedOutput(); err != nil || len(bytes.TrimSpace(out)) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
	for _, want := range []string{"\nCapabilityBoundingSet=\n", "\nNoNewPrivileges=yes\n", "\nProtectSystem=strict\n",
		"\nExecStart=/usr/bin/slowpath agent ", "\nEnvironmentFile=-/etc/default/slowpath-agent\n"} {
		if !bytes.Contains(u, []byte(want)) {
			t.Errorf("unit lacks %q", strings.TrimSpace(want))
		}
	}

	// The agent is opt-in: installing enables nothing. An admin's enable
	// survives an upgrade; purge leaves no link, mask or state behind.
	if r.exists(t, wants) {
		t.Errorf("installing the .deb enabled %s", unit)
	}
	r.run(t, "systemctl", "enable", unit)
	r.run(t, "dpkg", "--install", "/slowpath.deb")
	if !r.exists(t, wants) {
		t.Errorf("upgrading the .deb disabled %s", unit)
	}
	r.run(t, "dpkg", "--remove", "slowpath")
	r.run(t, "dpkg", "--purge", "slowpath")
	for _, f := range []string{wants, "/etc/systemd/system/" + unit, "/etc/default/slowpath-agent", "/lib/systemd/system/" + unit,
		"/usr/bin/slowpath", "/var/lib/systemd/deb-systemd-helper-enabled/" + unit + ".dsh-also",
		"/var/lib/systemd/deb-systemd-helper-masked/" + unit} {
		if r.exists(t, f) {
			t.Errorf("after purge: %s is left", f)
		}
	}
}

// fedoraDirs are the directories of the .rpm's files that Fedora's
// filesystem and systemd packages own.
var fedoraDirs = map[string]bool{
	"/etc": true, "/etc/sysconfig": true, "/usr/bin": true, "/usr/lib/systemd/system": true,
	"/usr/share": true, "/usr/share/man/man1": true, "/usr/share/licenses": true, "/usr/share/doc": true,
}

func checkRPM(t *testing.T, rpm, bin string) {
	rpmq := testenv.RequireTool(t, "rpm", "rpm")
	testenv.RequireTool(t, "rpm2cpio", "rpm2cpio")
	testenv.RequireTool(t, "rpmlint", "rpmlint")

	// Fedora's places, and every file's directory owned by the package or
	// by Fedora's filesystem or systemd.
	list := run(t, rpmq, "--query", "--package", "--queryformat", "[%{FILEMODES:perms} %{FILENAMES}\n]", rpm)
	files := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		mode, name, _ := strings.Cut(l, " ")
		files[name] = mode
	}
	for _, f := range []string{"/usr/bin/slowpath", "/usr/lib/systemd/system/" + unit, "/etc/sysconfig/slowpath-agent",
		"/usr/share/zsh/site-functions/_slowpath", "/usr/share/licenses/slowpath/LICENSE", "/usr/share/licenses/slowpath/LICENSES-THIRD-PARTY"} {
		if _, ok := files[f]; !ok {
			t.Errorf(".rpm lacks %s", f)
		}
	}
	for name := range files {
		if strings.HasPrefix(name, "/lib/") || strings.HasPrefix(name, "/etc/default") || strings.Contains(name, "vendor-completions") {
			t.Errorf(".rpm has Debian's %s", name)
		}
		if d := filepath.Dir(name); !fedoraDirs[d] && !strings.HasPrefix(files[d], "d") {
			t.Errorf(".rpm owns no %s (for %s)", d, name)
		}
	}

	// The scriptlets are systemd's macros for the unit.
	scripts := run(t, rpmq, "--query", "--package", "--scripts", rpm)
	for _, want := range []string{
		"postinstall scriptlet (using /bin/sh):", "install-system-units " + unit, "--no-reload preset " + unit,
		"preuninstall scriptlet (using /bin/sh):", "remove-system-units " + unit, "--no-reload disable --now " + unit,
		"postuninstall scriptlet (using /bin/sh):", "mark-restart-system-units " + unit, "try-restart " + unit,
	} {
		if !bytes.Contains(scripts, []byte(want)) {
			t.Errorf(".rpm's scriptlets lack %q:\n%s", want, scripts)
		}
	}
	for _, s := range []string{"post", "preun", "postun"} {
		run(t, "shellcheck", "--shell=sh", filepath.Join(testenv.ModuleRoot(t), "packaging/rpm", s))
	}

	// The payload's members are relative, as rpmbuild writes them, so
	// `rpm2cpio | cpio -id` unpacks here, and rpm2cpio copies it whole
	// (packaging/third_party/rpmpack).
	archive := run(t, "rpm2cpio", rpm)
	c := exec.Command("cpio", "--list", "--quiet")
	c.Stdin = bytes.NewReader(archive)
	members, err := c.Output()
	if err != nil {
		t.Fatalf("cpio --list: %v", err)
	}
	for _, m := range strings.Fields(string(members)) {
		if !strings.HasPrefix(m, "./") {
			t.Errorf(".rpm's payload names %s, not ./%s", m, strings.TrimPrefix(m, "/"))
		}
	}

	// rpmlint unpacks the payload with `rpm2cpio | cpio -id`, which would
	// follow an absolute member name out of its directory: it runs in a
	// throwaway root all the same, with the filters packaging/rpmlintrc
	// justifies.
	r := newThrowaway(t)
	r.put(t, rpm, filepath.Base(rpm))
	r.put(t, filepath.Join(testenv.ModuleRoot(t), "packaging/rpmlintrc"), "rpmlintrc")
	if out, err := r.cmd("rpmlint", "--rpmlintrc", "/rpmlintrc", "/"+filepath.Base(rpm)).CombinedOutput(); err != nil {
		t.Errorf("rpmlint: %v\n%s", err, out)
	}

	// rpm installs it (Debian's rpm wants --force-debian, and its empty
	// database provides nothing) and runs the scriptlets: the unit reads
	// /etc/sysconfig, and erasing the package disables an enabled agent.
	r.run(t, "rpm", "--install", "--nodeps", "--force-debian", "/"+filepath.Base(rpm))
	u := r.read(t, "/usr/lib/systemd/system/"+unit)
	for _, want := range []string{"\nEnvironmentFile=-/etc/sysconfig/slowpath-agent\n", "\nExecStart=/usr/bin/slowpath agent "} {
		if !bytes.Contains(u, []byte(want)) {
			t.Errorf(".rpm's unit lacks %q", strings.TrimSpace(want))
		}
	}
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	checkLicenceText(t, bi, r.read(t, "/usr/share/licenses/slowpath/LICENSES-THIRD-PARTY"))
	r.run(t, "systemctl", "enable", unit)
	if !r.exists(t, wants) {
		t.Fatalf("systemctl enable made no %s", wants)
	}
	r.run(t, "rpm", "--erase", "--nodeps", "--force-debian", "slowpath")
	for _, f := range []string{wants, "/usr/lib/systemd/system/" + unit, "/usr/bin/slowpath", "/usr/share/licenses/slowpath"} {
		if r.exists(t, f) {
			t.Errorf("after rpm --erase: %s is left", f)
		}
	}
}
