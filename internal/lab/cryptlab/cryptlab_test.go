package cryptlab

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

func TestParseVariants(t *testing.T) {
	vs, err := ParseVariants(DefaultVariants)
	if err != nil {
		t.Fatal(err)
	}
	if len(vs) != len(DefaultVariants) || vs[0].Cipher != "aes-xts-plain64" || vs[0].KeyBytes != 64 {
		t.Fatalf("default matrix %+v", vs)
	}
	c, err := ParseVariants([]string{"cipher:aes-cbc-essiv:sha256:256"})
	if err != nil || c[0].Cipher != "aes-cbc-essiv:sha256" || c[0].KeyBytes != 32 {
		t.Fatalf("cipher variant %+v, %v", c, err)
	}
	for _, bad := range [][]string{{"turbo"}, {"default", "default"}, {"cipher:aes-xts-plain64"}, {"cipher:aes xts:256"}, {"cipher:aes-xts-plain64:12"}, {""}} {
		if _, err := ParseVariants(bad); err == nil {
			t.Errorf("ParseVariants(%q) accepted", bad)
		}
	}
	if _, err := ParseVariants([]string{"turbo"}); err == nil || !strings.Contains(err.Error(), "same_cpu_crypt") {
		t.Errorf("unknown variant error does not list the known ones: %v", err)
	}
}

func TestTable(t *testing.T) {
	vs, _ := ParseVariants([]string{"default", "no_workqueue", "sector_4096"})
	key := []byte("00112233")
	want := []string{
		"0 2048 crypt aes-xts-plain64 00112233 0 1:0 0\n",
		"0 2048 crypt aes-xts-plain64 00112233 0 1:0 0 2 no_read_workqueue no_write_workqueue\n",
		"0 2048 crypt aes-xts-plain64 00112233 0 1:0 0 1 sector_size:4096\n",
	}
	for i, v := range vs {
		if got := string(v.Table(2048, "1:0", key)); got != want[i] {
			t.Errorf("%s: table %q, want %q", v.Name, got, want[i])
		}
	}
}

// TestNullCipherTable: the null cipher has no key ("-" in the table, and
// ParseVariants gives it none) and is not counted as encryption.
func TestNullCipherTable(t *testing.T) {
	vs, err := ParseVariants([]string{"null_cipher", "null_cipher_no_workqueue", "no_read_workqueue"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"0 2048 crypt cipher_null-ecb - 0 1:0 0\n",
		"0 2048 crypt cipher_null-ecb - 0 1:0 0 2 no_read_workqueue no_write_workqueue\n",
		"0 2048 crypt aes-xts-plain64 0011 0 1:0 0 1 no_read_workqueue\n",
	}
	keys := [][]byte{nil, nil, []byte("0011")}
	for i, v := range vs {
		if got := string(v.Table(2048, "1:0", keys[i])); got != want[i] {
			t.Errorf("%s: table %q, want %q", v.Name, got, want[i])
		}
		if v.Encrypts() != (i == 2) || (v.KeyBytes == 0) != (i < 2) {
			t.Errorf("%s: encrypts %v, key %d bytes", v.Name, v.Encrypts(), v.KeyBytes)
		}
	}
}

func TestSupported(t *testing.T) {
	debian61 := Version{1, 24, 0} // the VM lab's 6.1 kernel
	vs, _ := ParseVariants(DefaultVariants)
	var unsupported []string
	for _, v := range vs {
		if ok, why := v.Supported(debian61); !ok {
			unsupported = append(unsupported, v.Name+": "+why)
		}
	}
	if diff := cmp.Diff([]string{"high_priority: needs dm-crypt target v1.26.0, kernel has v1.24.0 (high_priority came with Linux 6.10): unsupported on this kernel"}, unsupported); diff != "" {
		t.Error(diff)
	}
	if ok, _ := vs[4].Supported(Version{1, 21, 9}); ok {
		t.Error("no_workqueue accepted on crypt v1.21.9")
	}
}

// TestCatalogueByKernel: the variant list on each kernel of the VM lab
// follows its crypt target version (drivers/md/dm-crypt.c .version:
// Debian 5.10 1.22.0, 6.1 1.24.0, 6.12 1.28.0), and the refusal names the
// version the kernel has and the one the variant needs.
func TestCatalogueByKernel(t *testing.T) {
	all := []string{"default", "same_cpu_crypt", "submit_from_crypt_cpus", "both", "no_workqueue", "no_read_workqueue", "no_write_workqueue",
		"null_cipher", "null_cipher_no_workqueue", "high_priority", "sector_4096", "xts_256", "stacked"}
	without := func(names ...string) []string {
		return slices.DeleteFunc(slices.Clone(all), func(n string) bool { return slices.Contains(names, n) })
	}
	tests := []struct {
		kernel      string
		have        Version
		runs        []string
		unsupported map[string]string
	}{
		{"5.10 (crypt 1.22.0)", Version{1, 22, 0}, without("high_priority"),
			map[string]string{"high_priority": "needs dm-crypt target v1.26.0, kernel has v1.22.0 (high_priority came with Linux 6.10): unsupported on this kernel"}},
		{"6.1 (crypt 1.24.0)", Version{1, 24, 0}, without("high_priority"),
			map[string]string{"high_priority": "needs dm-crypt target v1.26.0, kernel has v1.24.0 (high_priority came with Linux 6.10): unsupported on this kernel"}},
		{"6.12 (crypt 1.28.0)", Version{1, 28, 0}, all, map[string]string{}},
		{"5.4 (crypt 1.19.0)", Version{1, 19, 0}, without("high_priority", "no_workqueue", "no_read_workqueue", "no_write_workqueue", "null_cipher_no_workqueue"), map[string]string{
			"high_priority":            "needs dm-crypt target v1.26.0, kernel has v1.19.0 (high_priority came with Linux 6.10): unsupported on this kernel",
			"no_workqueue":             "needs dm-crypt target v1.22.0, kernel has v1.19.0 (no_read_workqueue came with Linux 5.9; no_write_workqueue came with Linux 5.9): unsupported on this kernel",
			"no_read_workqueue":        "needs dm-crypt target v1.22.0, kernel has v1.19.0 (no_read_workqueue came with Linux 5.9): unsupported on this kernel",
			"no_write_workqueue":       "needs dm-crypt target v1.22.0, kernel has v1.19.0 (no_write_workqueue came with Linux 5.9): unsupported on this kernel",
			"null_cipher_no_workqueue": "needs dm-crypt target v1.22.0, kernel has v1.19.0 (no_read_workqueue came with Linux 5.9; no_write_workqueue came with Linux 5.9): unsupported on this kernel",
		}},
		{"1.26.0 exactly", Version{1, 26, 0}, all, map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.kernel, func(t *testing.T) {
			var runs []string
			unsupported := map[string]string{}
			for _, a := range Catalogue(tt.have) {
				if a.Supported {
					runs = append(runs, a.Name)
				} else {
					unsupported[a.Name] = a.Unsupported
				}
			}
			if diff := cmp.Diff(tt.runs, runs); diff != "" {
				t.Errorf("runs (-want +got)\n%s", diff)
			}
			if diff := cmp.Diff(tt.unsupported, unsupported); diff != "" {
				t.Errorf("unsupported (-want +got)\n%s", diff)
			}
		})
	}
}

// TestFlagsInTable: every optional parameter a catalogue variant passes
// has a row in cryptFlags, so none escapes the version gate.
func TestFlagsInTable(t *testing.T) {
	for _, v := range catalogue {
		for _, f := range v.Flags {
			if _, ok := flagSupport(f); !ok {
				t.Errorf("variant %s: flag %q has no cryptFlags row", v.Name, f)
			}
		}
	}
}

func TestParseTargets(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Version
		ok   bool
		err  bool
	}{
		{"striped          v1.6.0\ncrypt            v1.24.0\nlinear           v1.4.0\n", Version{1, 24, 0}, true, false},
		{"linear v1.4.0\nerror v1.6.0\n", Version{}, false, false},
		{"crypt v1.x.0\n", Version{}, false, true},
		{"crypt 1.2\n", Version{}, false, true},
		{"", Version{}, false, false},
	} {
		v, ok, err := parseTargets(tc.in)
		if v != tc.want || ok != tc.ok || (err != nil) != tc.err {
			t.Errorf("parseTargets(%q) = %v %v %v", tc.in, v, ok, err)
		}
	}
}

func FuzzParseTargets(f *testing.F) {
	f.Add("crypt v1.24.0\n")
	f.Add("crypt v4294967296.0.0\n")
	f.Fuzz(func(t *testing.T, s string) {
		v, ok, err := parseTargets(s)
		if ok && err != nil || !ok && v != (Version{}) {
			t.Fatalf("inconsistent answer %v %v %v", v, ok, err)
		}
	})
}

func TestParseBacking(t *testing.T) {
	b, err := ParseBacking("ram:1G")
	if err != nil || b != (Backing{Kind: "ram", Size: 1 << 30}) {
		t.Fatalf("%+v %v", b, err)
	}
	b, err = ParseBacking("file:/var/tmp/x:y.img:64M")
	if err != nil || b != (Backing{Kind: "file", Path: "/var/tmp/x:y.img", Size: 64 << 20}) {
		t.Fatalf("%+v %v", b, err)
	}
	if b.String() != "file:/var/tmp/x:y.img:64M" {
		t.Errorf("String %q", b.String())
	}
	for _, bad := range []string{"ram", "ram:1", "ram:8M", "disk:1G", "file:rel.img:1G", "file:/x", "ram:-1G", "ram:1.5G"} {
		if _, err := ParseBacking(bad); err == nil {
			t.Errorf("ParseBacking(%q) accepted", bad)
		}
	}
}

// TestPlanRecovery: a dead lab's devices are removed, a canary that shares
// the name prefix (or even the name) but not the uuid or device number is
// not, and brd is unloaded only when it is the module the lab loaded.
func TestPlanRecovery(t *testing.T) {
	st := labState{ID: "abc123", Brd: true, BrdParams: map[string]string{"rd_nr": "1", "rd_size": "65536"},
		DM: []dmRecord{
			{Name: "sp-crypt-abc123-0", UUID: "SLOWPATH-CRYPTLAB-abc123-0", Dev: "254:0"},
			{Name: "sp-crypt-abc123-1-lower", UUID: "SLOWPATH-CRYPTLAB-abc123-1-lower", Dev: "254:1"},
			{Name: "sp-crypt-abc123-1", UUID: "SLOWPATH-CRYPTLAB-abc123-1"}, // killed before its number was saved
			{Name: "sp-crypt-abc123-2", UUID: "SLOWPATH-CRYPTLAB-abc123-2"}, // never created
		}}
	devs := []Observed{
		{Name: "dm-0", Dev: "254:0", DMName: "sp-crypt-abc123-0", DMUUID: "SLOWPATH-CRYPTLAB-abc123-0"},
		{Name: "dm-1", Dev: "254:1", DMName: "sp-crypt-abc123-1-lower", DMUUID: "SLOWPATH-CRYPTLAB-abc123-1-lower"},
		{Name: "dm-2", Dev: "254:2", DMName: "sp-crypt-abc123-1", DMUUID: "SLOWPATH-CRYPTLAB-abc123-1"},
		{Name: "dm-3", Dev: "254:3", DMName: "sp-crypt-canary", DMUUID: "CANARY"},
		{Name: "ram0", Dev: "1:0", Holders: []string{"dm-0", "dm-1"}},
	}
	brd := map[string]string{"rd_nr": "1", "rd_size": "65536"}
	acts, skip := planRecovery(st, hostView{Devs: devs, Brd: brd})
	want := []Action{{"dm", "SLOWPATH-CRYPTLAB-abc123-1"}, {"dm", "SLOWPATH-CRYPTLAB-abc123-1-lower"}, {"dm", "SLOWPATH-CRYPTLAB-abc123-0"}, {"brd", "brd"}}
	if diff := cmp.Diff(want, acts); diff != "" || len(skip) != 0 {
		t.Errorf("plan (-want +got):\n%s\nskipped %+v", diff, skip)
	}

	// Someone else now owns the recorded name (a canary made after the
	// crash), and brd was reloaded with other parameters.
	devs[0].DMUUID = "CANARY-2"
	devs[1].Dev = "254:9"
	acts, skip = planRecovery(st, hostView{Devs: devs, Brd: map[string]string{"rd_nr": "4", "rd_size": "65536"}})
	want = []Action{{"dm", "SLOWPATH-CRYPTLAB-abc123-1"}}
	if diff := cmp.Diff(want, acts); diff != "" {
		t.Errorf("plan with impostors (-want +got):\n%s", diff)
	}
	var records []string
	for _, s := range skip {
		records = append(records, s.Record)
	}
	if diff := cmp.Diff([]string{"sp-crypt-abc123-1-lower", "sp-crypt-abc123-0", "brd"}, slices.Compact(records)); diff != "" {
		t.Errorf("skipped %+v, want the renamed dm-0, the renumbered dm-1 and brd (-want +got):\n%s", skip, diff)
	}

	// A forged state naming a device outside the lab's prefix is refused.
	forged := labState{ID: "abc123", DM: []dmRecord{{Name: "sp-crypt-canary", UUID: "CANARY"}}}
	if acts, _ := planRecovery(forged, hostView{Devs: devs}); len(acts) != 0 {
		t.Errorf("forged state: %+v", acts)
	}

	loopState := labState{ID: "abc123", File: "/var/tmp/lab.img", Loop: &loopRecord{Device: "/dev/loop3", Dev: "7:3", File: "/var/tmp/lab.img"}}
	acts, _ = planRecovery(loopState, hostView{Devs: []Observed{{Name: "loop3", Dev: "7:3", Backing: "/var/tmp/lab.img"}}})
	if diff := cmp.Diff([]Action{{"loop", "/dev/loop3"}, {"file", "/var/tmp/lab.img"}}, acts); diff != "" {
		t.Error(diff)
	}
	acts, _ = planRecovery(loopState, hostView{Devs: []Observed{{Name: "loop3", Dev: "7:3", Backing: "/home/db.img"}}})
	if diff := cmp.Diff([]Action{{"file", "/var/tmp/lab.img"}}, acts); diff != "" {
		t.Errorf("loop rebound to another file must stay: %s", diff)
	}
}

// absent in a case's files removes a file of the base tree.
const absent = "<absent>"

// TestRecoveryBrd reads fixture sysfs and procfs trees as a dead lab's
// recovery does (observeHost) and plans on them: brd is unloaded only when
// this lab loaded it and nothing it did not create uses it. Each case
// changes the base tree, where the lab's dm-0 sits on ram0 and only sda1
// is mounted, and says why brd stays.
func TestRecoveryBrd(t *testing.T) {
	base := map[string]string{
		"sys/module/brd/parameters/rd_nr":   "1\n",
		"sys/module/brd/parameters/rd_size": "65536\n",
		"sys/block/ram0/dev":                "1:0\n",
		"sys/block/ram0/holders/dm-0":       "-> ../../dm-0",
		"sys/block/dm-0/dev":                "254:0\n",
		"sys/block/dm-0/dm/name":            "sp-crypt-abc123-0\n",
		"sys/block/dm-0/dm/uuid":            "SLOWPATH-CRYPTLAB-abc123-0\n",
		"sys/block/sda/dev":                 "8:0\n",
		"proc/self/mountinfo": "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n" +
			"23 22 0:21 / /proc rw,nosuid - proc proc rw\n",
	}
	st := labState{ID: "abc123", Brd: true, BrdParams: map[string]string{"rd_nr": "1", "rd_size": "65536"},
		DM: []dmRecord{{Name: "sp-crypt-abc123-0", UUID: "SLOWPATH-CRYPTLAB-abc123-0", Dev: "254:0"}}}
	removeDM := Action{"dm", "SLOWPATH-CRYPTLAB-abc123-0"}
	for _, tc := range []struct {
		name    string
		files   map[string]string
		notOurs bool     // brd was loaded by someone else
		unload  bool     // brd is in the plan
		why     []string // the reasons brd stays, in order
	}{
		{name: "only the lab's device on ram0", unload: true},
		{name: "brd not loaded", files: map[string]string{"sys/module/brd/parameters/rd_nr": absent, "sys/module/brd/parameters/rd_size": absent}},
		{name: "brd loaded by someone else", notOurs: true},
		{
			name: "foreign holder",
			files: map[string]string{
				"sys/block/ram0/holders/dm-5": "-> ../../dm-5",
				"sys/block/dm-5/dev":          "254:5\n",
				"sys/block/dm-5/dm/name":      "vendor-db\n",
				"sys/block/dm-5/dm/uuid":      "CRYPT-LUKS2-0123-vendor-db\n",
			},
			why: []string{`ram0 is held by dm-5 (dm name "vendor-db"), which this lab did not create`},
		},
		{
			name:  "ram0 mounted",
			files: map[string]string{"proc/self/mountinfo": base["proc/self/mountinfo"] + "40 22 1:0 / /mnt/scratch rw - ext4 /dev/ram0 rw\n"},
			why:   []string{"ram0 (1:0) is mounted"},
		},
		{
			name:  "a ramdisk mounted in PID 1's namespace only",
			files: map[string]string{"proc/1/mountinfo": "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n41 22 1:3 / /srv rw - xfs /dev/ram3 rw\n"},
			why:   []string{"a ramdisk (1:3) is mounted"},
		},
		{
			name:  "mount table unreadable",
			files: map[string]string{"proc/self/mountinfo": "not a mount table\n"},
			why:   []string{"cannot tell whether a ramdisk is mounted"},
		},
		{
			name:  "other parameters",
			files: map[string]string{"sys/module/brd/parameters/rd_size": "131072\n"},
			why:   []string{`brd parameter rd_size is "131072", recorded "65536": not the module this lab loaded`},
		},
		{
			name:  "a ramdisk beyond the lab's count",
			files: map[string]string{"sys/block/ram1/dev": "1:1\n"},
			why:   []string{"ramdisk ram1 exists beyond the 1 this lab loaded brd with: someone else created it"},
		},
		{
			name: "mounted, held and reloaded at once: every reason named",
			files: map[string]string{
				"sys/module/brd/parameters/rd_nr": "2\n",
				"sys/block/ram1/dev":              "1:1\n",
				"sys/block/ram1/holders/md0":      "-> ../../md0",
				"proc/self/mountinfo":             base["proc/self/mountinfo"] + "40 22 1:1 / /mnt rw - ext4 /dev/ram1 rw\n",
			},
			why: []string{
				`brd parameter rd_nr is "2", recorded "1"`,
				"ramdisk ram1 exists beyond the 1",
				"ram1 is held by md0, which this lab did not create",
				"ram1 (1:1) is mounted",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			files := maps.Clone(base)
			maps.Copy(files, tc.files)
			for rel, content := range files {
				switch target, link := strings.CutPrefix(content, "-> "); {
				case content == absent:
				case link:
					p := filepath.Join(root, rel)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.Symlink(target, p); err != nil {
						t.Fatal(err)
					}
				default:
					hostfstest.WriteFile(t, root, rel, content)
				}
			}
			if tc.files["sys/module/brd/parameters/rd_nr"] == absent {
				if err := os.RemoveAll(filepath.Join(root, "sys/module/brd")); err != nil {
					t.Fatal(err)
				}
			}
			h, err := observeHost(filepath.Join(root, "sys"), filepath.Join(root, "proc"))
			if err != nil {
				t.Fatal(err)
			}
			s := st
			s.Brd = !tc.notOurs
			acts, skip := planRecovery(s, h)
			want := []Action{removeDM}
			if tc.unload {
				want = append(want, Action{"brd", "brd"})
			}
			if diff := cmp.Diff(want, acts); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if len(skip) != len(tc.why) {
				t.Fatalf("brd kept for %d reasons, want %d: %+v", len(skip), len(tc.why), skip)
			}
			for i, w := range tc.why {
				if skip[i].Record != "brd" || !strings.Contains(skip[i].Reason, w) || !strings.Contains(skip[i].Reason, "brd stays loaded") {
					t.Errorf("reason %d: %+v, want brd: %q...; brd stays loaded", i, skip[i], w)
				}
			}
		})
	}
}
