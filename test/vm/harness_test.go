package vm

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func TestParsePin(t *testing.T) {
	sum := strings.Repeat("ab", 32)
	tests := []struct {
		name, in string
		want     *Pin
		wantErr  string
	}{
		{name: "ok", in: "# c\nrelease 6.1.0-56-cloud-amd64\nversion 6.1.192-2  # trailing\nsuite http://deb.debian.org/debian-security bookworm-security main\ncc gcc-12\ncpu max,cx16=off\ndeb linux-image-6.1.0-56-cloud-amd64 " + strings.ToUpper(sum) + "\ndeb linux-source-6.1 " + sum + "\n",
			want: &Pin{Release: "6.1.0-56-cloud-amd64", Version: "6.1.192-2", Suite: "http://deb.debian.org/debian-security bookworm-security main", CC: "gcc-12", CPU: "max,cx16=off", Debs: []Deb{
				{Package: "linux-image-6.1.0-56-cloud-amd64", SHA256: sum}, {Package: "linux-source-6.1", SHA256: sum}}}},
		{name: "deb with its own version", in: "release 6.1.0-56-cloud-amd64\nversion 6.1.192-2\nsuite http://deb.debian.org/debian-security bookworm-security main\ndeb linux-image-6.1.0-56-cloud-amd64 " + sum + "\ndeb linux-kbuild-6.1 " + sum + " 6.1.192-3\n",
			want: &Pin{Release: "6.1.0-56-cloud-amd64", Version: "6.1.192-2", Suite: "http://deb.debian.org/debian-security bookworm-security main", CPU: "max", Debs: []Deb{
				{Package: "linux-image-6.1.0-56-cloud-amd64", SHA256: sum}, {Package: "linux-kbuild-6.1", SHA256: sum, Version: "6.1.192-3"}}}},
		{name: "deb with two versions", in: "release r\nversion v\ndeb linux-image-r " + sum + " 1 2\n", wantErr: "line 3"},
		{name: "short sum", in: "release r\nversion v\ndeb linux-image-r abcd\n", wantErr: "not a sha256"},
		{name: "bad cpu", in: "release r\nversion v\ncpu max -smp 4\n", wantErr: "line 3"},
		{name: "cpu with an option", in: "release r\nversion v\ncpu max,-netdev=user\n", wantErr: "line 3"},
		{name: "no suite", in: "release r\nversion v\ndeb linux-image-r " + sum + "\n", wantErr: "required"},
		{name: "foreign suite", in: "release r\nversion v\nsuite http://example.com/debian bullseye main\n", wantErr: "is not"},
		{name: "unknown line", in: "release r\nkernel x\n", wantErr: "line 2"},
		{name: "no version", in: "release r\ndeb linux-image-r " + sum + "\n", wantErr: "required"},
		{name: "no image", in: "release r\nversion v\nsuite http://deb.debian.org/debian bullseye main\ndeb linux-source-6.1 " + sum + "\n", wantErr: "no deb line for linux-image-r"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parsePin(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestKernelPins checks every committed pin parses, names the packages the
// harness needs and has an expectations file that parses.
func TestKernelPins(t *testing.T) {
	names, err := KernelNames("kernels")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"5.10", "6.1", "6.12"}; !cmp.Equal(want, names) {
		t.Errorf("kernels %q, want %q", names, want)
	}
	full := 0
	for _, n := range names {
		p, err := ReadPin("kernels/" + n + ".pin")
		if err != nil {
			t.Fatal(err)
		}
		need := []string{p.ImagePackage(), "linux-headers-" + p.Release, "linux-kbuild-", "linux-source-"}
		for _, pkg := range need {
			var found bool
			for _, d := range p.Debs {
				found = found || strings.HasPrefix(d.Package, pkg)
			}
			if !found {
				t.Errorf("kernels/%s.pin has no package %s*", n, pkg)
			}
		}
		e, err := ReadExpect("kernels/" + n + ".expect")
		if err != nil {
			t.Fatal(err)
		}
		if e.Group == GroupFull {
			full++
		}
	}
	if full != 1 {
		t.Errorf("%d kernels in group full, want exactly one (the reference kernel)", full)
	}
}

func TestParseExpect(t *testing.T) {
	good := `group kernel-dependent
drop_reasons no  # comment
drop_function -
backlog_drop_site enqueue_to_backlog
crypt_target 1.22.0
crypt_variants default stacked
xts_driver xts-aes-aesni
softnet_columns 13
netdevsim_ring no no ring ops before 5.11
model_iops_tolerance 0.0005
`
	got, err := parseExpect(strings.NewReader(good))
	if err != nil {
		t.Fatal(err)
	}
	want := &Expect{Group: GroupKernelDependent, BacklogDropSite: "enqueue_to_backlog", CryptTarget: [3]uint32{1, 22, 0},
		CryptVariants: []string{"default", "stacked"}, XTSDriver: "xts-aes-aesni", SoftnetColumns: 13, NetdevsimRingWhy: "no ring ops before 5.11", ModelIOPSTolerance: 0.0005}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if got.CryptTargetString() != "v1.22.0" {
		t.Errorf("CryptTargetString = %q", got.CryptTargetString())
	}
	bad := []struct{ name, edit, want string }{
		{"missing key", "softnet_columns 13\n", "no softnet_columns line"},
		{"twice", "group kernel-dependent\n", "given twice"},
		{"unknown", "", "unknown key"},
		{"bad version", "crypt_target 1.22.0\n", "a version X.Y.Z"},
		{"ring no reason", "netdevsim_ring no no ring ops before 5.11\n", "the reason"},
		{"reasons without function", "drop_reasons no  # comment\n", "disagree"},
		{"columns", "softnet_columns 13\n", "column count"},
		{"tolerance", "model_iops_tolerance 0.0005\n", "a fraction"},
	}
	repl := map[string]string{
		"missing key": "", "twice": "group kernel-dependent\ngroup full\n", "bad version": "crypt_target 1.22\n",
		"ring no reason": "netdevsim_ring no\n", "reasons without function": "drop_reasons yes\n", "columns": "softnet_columns 3\n", "tolerance": "model_iops_tolerance 1\n",
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			in := good + "mystery 1\n"
			if tt.edit != "" {
				in = strings.Replace(good, tt.edit, repl[tt.name], 1)
			}
			_, err := parseExpect(strings.NewReader(in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestSortVersions(t *testing.T) {
	v := []string{"6.12", "5.10", "6.1", "5.4"}
	sortVersions(v)
	if want := []string{"5.4", "5.10", "6.1", "6.12"}; !cmp.Equal(want, v) {
		t.Errorf("got %q, want %q", v, want)
	}
}

func fileMarker(name string, b []byte) string {
	h := sha256.Sum256(b)
	return markFile + name + " " + hex.EncodeToString(h[:]) + "@@\n" + base64.StdEncoding.EncodeToString(b) + "\n" + markFileEnd + "\n"
}

func TestParseConsole(t *testing.T) {
	snap := []byte(`{"a": 1}` + "\n")
	good := "[    1.0] boot noise\n" + markStart + "\nscenario output\n" + fileMarker("snapshot.json", snap) + fileMarker("empty", nil) + markExit + "3@@\r\n[ 5.0] reboot\n"
	exit, files, err := ParseConsole([]byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if exit != 3 {
		t.Errorf("exit %d, want 3", exit)
	}
	if diff := cmp.Diff(map[string][]byte{"snapshot.json": snap, "empty": {}}, files); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}

	bad := []struct{ name, in, want string }{
		{"no start", "kernel panic\n", "never started"},
		{"no exit", markStart + "\nhung\n", "did not report an exit status"},
		{"garbled", markStart + "\n" + strings.Replace(fileMarker("f", []byte("hello world")), "aGVsbG8", "aGVsbG9", 1) + markExit + "0@@\n", "sha256 mismatch"},
		{"bad base64", markStart + "\n" + markFile + "f 00@@\n!!!\n" + markFileEnd + "\n", "result file f"},
		{"bad exit", markStart + "\n" + markExit + "x@@\n", "bad exit marker"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseConsole([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if got := string(ElideFiles([]byte(good))); !strings.Contains(got, "[1 lines of base64]") || strings.Contains(got, base64.StdEncoding.EncodeToString(snap)) {
		t.Errorf("ElideFiles:\n%s", got)
	}
}

// TestCPIO writes an archive and lists it with cpio(1), the reference
// reader of the newc format.
func TestCPIO(t *testing.T) {
	cpio := testenv.RequireTool(t, "cpio", "cpio")
	var buf bytes.Buffer
	err := writeCPIO(&buf, map[string]cpioEntry{
		"bin":          {Mode: cpioDir | 0o755},
		"bin/sh":       {Mode: cpioSymlink | 0o777, Data: []byte("busybox")},
		"bin/busybox":  {Mode: cpioFile | 0o755, Data: []byte("odd length!")},
		"init":         {Mode: cpioFile | 0o755, Data: []byte("#!/bin/sh\n")},
		"etc/x/y.conf": {Mode: cpioFile | 0o644, Data: []byte("1234")},
	})
	if err != nil {
		t.Fatal(err)
	}
	if buf.Len()%4 != 0 {
		t.Errorf("archive length %d not a multiple of 4: cannot be concatenated", buf.Len())
	}
	cmd := exec.Command(cpio, "-t", "-v", "--quiet")
	cmd.Stdin = &buf
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cpio -t: %v\n%s", err, out)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(l)
		got = append(got, f[0]+" "+f[4]+" "+strings.Join(f[8:], " "))
	}
	want := []string{
		"drwxr-xr-x 0 bin",
		"-rwxr-xr-x 11 bin/busybox",
		"lrwxrwxrwx 7 bin/sh -> busybox",
		"-rw-r--r-- 4 etc/x/y.conf",
		"-rwxr-xr-x 10 init",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cpio -t (-want +got):\n%s", diff)
	}
	if err := writeCPIO(&buf, map[string]cpioEntry{"/abs": {}}); err == nil {
		t.Error("absolute name accepted")
	}
}

func TestParseModulesDep(t *testing.T) {
	in := "kernel/drivers/md/dm-crypt.ko: kernel/drivers/md/dm-mod.ko kernel/crypto/xts.ko\nkernel/drivers/md/dm-mod.ko:\n\n"
	got, err := parseModulesDep(bytes.NewReader([]byte(in)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"kernel/drivers/md/dm-crypt.ko": {"kernel/drivers/md/dm-mod.ko", "kernel/crypto/xts.ko"},
		"kernel/drivers/md/dm-mod.ko":   {},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := parseModulesDep(bytes.NewReader([]byte("no colon here\n"))); err == nil {
		t.Error("line without colon accepted")
	}
	if got := moduleName("kernel/drivers/md/dm-crypt.ko.xz"); got != "dm_crypt" {
		t.Errorf("moduleName = %q", got)
	}
}

// TestLeftoverDetected boots a scenario that does not clean up and checks
// that the harness names every device and module it left: the property that
// makes every other scenario fail when it leaks.
func TestLeftoverDetected(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testLeftoverDetected)
}

func testLeftoverDetected(t *testing.T, k *kernelLab) {
	l := k.setupLab(t)
	res, err := l.Run(context.Background(), Scenario{Name: "leaky", Script: `set -e
modprobe brd rd_nr=1 rd_size=4096
dmsetup create leak --table "0 8192 linear /dev/ram0 0"
dd if=/dev/zero of=/tmp/img bs=1M count=1 2>/dev/null
losetup /dev/loop0 /tmp/img
modprobe netdevsim
echo "7 1" > /sys/bus/netdevsim/new_device
`})
	if err != nil {
		t.Logf("console:\n%s", ElideFiles(res.Console))
		t.Fatal(err)
	}
	want := []string{"block dm-0", "block loop0", "block ram0", "module brd", "module netdevsim", "netdevsim netdevsim7"}
	if res.ExitCode != 0 {
		t.Errorf("exit %d", res.ExitCode)
	}
	if diff := cmp.Diff(want, res.Leftover); diff != "" {
		t.Errorf("leftover (-want +got):\n%s\nconsole:\n%s", diff, ElideFiles(res.Console))
	}
}

func FuzzParseConsole(f *testing.F) {
	f.Add([]byte(markStart + "\n" + fileMarker("a", []byte("x")) + markExit + "0@@\n"))
	f.Add([]byte(markStart + "\n" + markFile + "a 00@@\nAAAA\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		exit, files, err := ParseConsole(b)
		if err == nil && files == nil {
			t.Fatalf("no error and no files (exit %d)", exit)
		}
		_ = ElideFiles(b)
	})
}
