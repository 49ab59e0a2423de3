package cli

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// foreignTree builds a host tree that is not this host's but looks like it
// where mixing would show: its interfaces have this host's names (lo and
// every NIC here), its root mount has the device number of the filesystem
// the tree itself lives on (so an fscrypt ioctl on the tree's "/" would
// be answered), it lists a dm device, and its DMI says Azure. Nothing in it
// names a driver, a ring, a qdisc, drop-reason support or a dm table.
func foreignTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	put := func(rel, content string) {
		t.Helper()
		hostfstest.WriteFile(t, dir, rel, content)
	}
	names, err := os.ReadDir("/sys/class/net")
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range names {
		d := "sys/class/net/" + e.Name() + "/"
		put(d+"ifindex", fmt.Sprintf("%d\n", i+1))
		put(d+"iflink", fmt.Sprintf("%d\n", i+1))
		put(d+"mtu", "1500\n")
		put(d+"operstate", "up\n")
		put(d+"statistics/rx_packets", "7\n")
	}
	var st unix.Stat_t
	if err := unix.Stat(dir, &st); err != nil {
		t.Fatal(err)
	}
	put("proc/self/mountinfo", fmt.Sprintf("22 1 %d:%d / / rw,relatime - ext4 /dev/vda1 rw\n", unix.Major(st.Dev), unix.Minor(st.Dev)))
	put("proc/sys/kernel/hostname", "foreign-host\n")
	put("proc/sys/kernel/osrelease", "5.15.0-foreign\n")
	put("proc/net/softnet_stat", "00000010 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000\n")
	put("sys/class/block/dm-0/dev", "253:0\n")
	put("sys/class/block/dm-0/size", "2048\n")
	put("sys/class/block/dm-0/dm/name", "luks-x\n")
	put("sys/class/dmi/id/chassis_asset_tag", "7783-7084-3265-9085-8269-3286-77\n")
	return dir
}

// collectTree runs `slowpath collect -o -` on dir with the extra flags and
// a loopback metadata fake; it returns the snapshot and how many requests
// the fake saw.
func collectTree(t *testing.T, dir string, flags ...string) (*snapshot.Snapshot, int64) {
	t.Helper()
	var hits atomic.Int64
	imds := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, `{"compute": {"vmSize": "Standard_Live", "location": "here"}}`)
	}))
	defer imds.Close()
	args := append([]string{"collect", "-o", "-", "--net-interval", "0", "--metadata-endpoint", imds.URL,
		"--path.procfs", filepath.Join(dir, "proc"), "--path.sysfs", filepath.Join(dir, "sys"), "--path.rootfs", dir}, flags...)
	code, out, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d: %s", args, code, stderr)
	}
	s, err := snapshot.Decode(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	return s, hits.Load()
}

func errorKinds(s *snapshot.Snapshot) map[string]string {
	m := map[string]string{}
	for _, e := range s.Manifest.Errors {
		m[e.Collector] = string(e.Kind)
	}
	return m
}

// TestForeignTreeNothingLive is issue 14's acceptance: collected from a
// foreign tree whose interface names exist here too, nothing of this host
// appears in the snapshot, and every live-only source is recorded as
// skipped; with --live-sources on they come back.
func TestForeignTreeNothingLive(t *testing.T) {
	dir := foreignTree(t)
	s, hits := collectTree(t, dir)

	if ls := s.Manifest.LiveSources; ls == nil || ls.Used || ls.Mode != "auto" || !strings.Contains(ls.Reason, "--path.procfs") {
		t.Errorf("live_sources = %+v, want auto, not used, with the reason", ls)
	}
	if s.Manifest.Hostname != "foreign-host" {
		t.Errorf("hostname %q: want the tree's", s.Manifest.Hostname)
	}
	if hits != 0 {
		t.Errorf("instance metadata asked %d time(s) for a foreign tree", hits)
	}
	if s.Cloud == nil || s.Cloud.Provider != "azure" || s.Cloud.InstanceType != "" || !strings.Contains(s.Cloud.MetadataError, "--live-sources on") {
		t.Errorf("cloud = %+v: want azure from the tree's DMI, no metadata, and why", s.Cloud)
	}
	kinds := errorKinds(s)
	for _, c := range []string{"net.ethtool", "net.netlink", "storage.fscrypt", "storage.dm", "cloud.metadata"} {
		if kinds[c] != "skipped" {
			t.Errorf("%s recorded as %q, want skipped (errors %+v)", c, kinds[c], s.Manifest.Errors)
		}
	}
	if len(s.Net.Interfaces) == 0 {
		t.Fatal("no interfaces read from the tree")
	}
	for _, ifc := range s.Net.Interfaces {
		if ifc.Driver != "" || ifc.Ring != nil || ifc.Channels != nil || ifc.Kind != "" || len(ifc.Unsupported) > 0 || ifc.BusInfo != "" {
			t.Errorf("%s carries this host's ethtool or netlink answers: %+v", ifc.Name, ifc)
		}
	}
	for _, c := range s.Net.Samples[0].Interfaces {
		if c.Qdisc != nil || c.Driver != nil || c.Stats["rx_packets"] != 7 {
			t.Errorf("%s: sample %+v: want the tree's statistics only", c.Name, c)
		}
	}
	if dr := s.Net.DropReasons; dr == nil || dr.Status != "unknown" || (dr.Source != "" && !strings.HasPrefix(dr.Source, dir)) {
		t.Errorf("drop reasons %+v: the tree has no tracefs and no BTF, so unknown", dr)
	}
	if m := s.Storage.Mounts; len(m) != 1 || m[0].FscryptStatus != "" {
		t.Errorf("mounts %+v: the fscrypt ioctl ran on this host's filesystem", m)
	}
	if d := s.Storage.BlockDevices; len(d) != 1 || d[0].DM == nil || len(d[0].DM.Targets) != 0 {
		t.Errorf("block devices %+v: want dm-0 from the tree and no table", d)
	}

	// The same tree declared this host's: the live sources run again.
	s, hits = collectTree(t, dir, "--live-sources", "on")
	if ls := s.Manifest.LiveSources; ls == nil || !ls.Used || ls.Mode != "on" {
		t.Errorf("live_sources = %+v, want on and used", ls)
	}
	if hits == 0 || s.Cloud == nil || s.Cloud.InstanceType != "Standard_Live" {
		t.Errorf("--live-sources on: metadata not read (%d requests, cloud %+v)", hits, s.Cloud)
	}
	kinds = errorKinds(s)
	for _, c := range []string{"net.ethtool", "net.netlink", "storage.fscrypt", "storage.dm", "cloud.metadata"} {
		if kinds[c] == "skipped" {
			t.Errorf("--live-sources on: %s still skipped", c)
		}
	}
	answered := false
	for _, ifc := range s.Net.Interfaces {
		answered = answered || ifc.Driver != "" || len(ifc.Unsupported) > 0
	}
	if !answered {
		t.Errorf("--live-sources on: no interface has an ethtool answer: %+v", s.Net.Interfaces)
	}
	if m := s.Storage.Mounts; len(m) != 1 || m[0].FscryptStatus == "" {
		t.Errorf("--live-sources on: fscrypt not asked: %+v (errors %+v)", m, s.Manifest.Errors)
	}
	// This machine has no device-mapper, and the tree no control node:
	// the DM source ran and said so.
	if kinds["storage.dm"] != "missing" {
		t.Errorf("--live-sources on: storage.dm = %q, want the control node missing", kinds["storage.dm"])
	}

	// off wins even on this host's own roots.
	code, out, stderr := run(t, "collect", "-o", "-", "--net-interval", "0", "--cloud", "none", "--live-sources", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var off snapshot.Snapshot
	if err := json.Unmarshal([]byte(out), &off); err != nil {
		t.Fatal(err)
	}
	if ls := off.Manifest.LiveSources; ls == nil || ls.Used || !strings.Contains(ls.Reason, "--live-sources off") {
		t.Errorf("--live-sources off: %+v", ls)
	}
}

// TestLiveRootsAutoCollectsLive: on this host's own roots, auto uses the
// live sources (ethtool answers for every interface here).
func TestLiveRootsAutoCollectsLive(t *testing.T) {
	code, out, stderr := run(t, "collect", "-o", "-", "--net-interval", "0", "--cloud", "none")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	s, err := snapshot.Decode(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if ls := s.Manifest.LiveSources; ls == nil || !ls.Used || ls.Reason != "" {
		t.Errorf("live_sources = %+v, want used", ls)
	}
	if k := errorKinds(s); k["net.ethtool"] == "skipped" || k["net.netlink"] == "skipped" {
		t.Errorf("live roots but sources skipped: %+v", s.Manifest.Errors)
	}
	for _, ifc := range s.Net.Interfaces {
		if ifc.Driver == "" && len(ifc.Unsupported) == 0 {
			t.Errorf("%s: no ethtool answer on the live host: %+v", ifc.Name, ifc)
		}
	}
}

func TestLiveSourcesFlagValues(t *testing.T) {
	for _, cmd := range [][]string{{"doctor"}, {"collect", "-o", "-"}, {"net"}} {
		code, _, stderr := run(t, append(cmd, "--live-sources", "maybe")...)
		if code != 2 || !strings.Contains(stderr, `unknown --live-sources "maybe": use auto, on or off`) {
			t.Errorf("%v --live-sources maybe: exit %d, %q", cmd, code, stderr)
		}
	}
}

// TestNetForeignTree: `slowpath net` on a foreign tree shows the tree's
// interfaces without this host's drivers, says what it skipped, and
// --live-sources on brings the drivers back.
func TestNetForeignTree(t *testing.T) {
	dir := foreignTree(t)
	args := []string{"net", "--format", "json", "--net-interval", "0",
		"--path.procfs", filepath.Join(dir, "proc"), "--path.sysfs", filepath.Join(dir, "sys"), "--path.rootfs", dir}
	drivers := func(out string) int {
		var m struct {
			Interfaces []struct {
				Name, Driver string
			} `json:"interfaces"`
		}
		if err := json.Unmarshal([]byte(out), &m); err != nil || len(m.Interfaces) == 0 {
			t.Fatalf("net JSON: %v, %d interfaces\n%s", err, len(m.Interfaces), out)
		}
		n := 0
		for _, i := range m.Interfaces {
			if i.Driver != "" {
				n++
			}
		}
		return n
	}
	code, out, stderr := run(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if n := drivers(out); n != 0 {
		t.Errorf("%d interface(s) of the tree carry this host's driver", n)
	}
	if !strings.Contains(stderr, "net.ethtool SIOCETHTOOL: live-only source not used") {
		t.Errorf("stderr does not say ethtool was skipped: %q", stderr)
	}
	code, out, stderr = run(t, append(args, "--live-sources", "on")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var live []string
	if ents, err := os.ReadDir("/sys/class/net"); err == nil {
		for _, e := range ents {
			if _, err := os.Stat(filepath.Join("/sys/class/net", e.Name(), "device", "driver")); err == nil {
				live = append(live, e.Name())
			}
		}
	}
	if n := drivers(out); len(live) > 0 && n == 0 {
		t.Errorf("--live-sources on: no driver for %v", live)
	}
}
