package vm

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// parseEthtoolG reads `ethtool -g` output into the pre-set maximums and the
// current settings.
func parseEthtoolG(out string) (snapshot.Ring, error) {
	var r snapshot.Ring
	section := ""
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(line, "Pre-set maximums"):
			section = "max"
			continue
		case strings.HasPrefix(line, "Current hardware settings"):
			section = "cur"
			continue
		}
		k, v, ok := strings.Cut(line, ":")
		if !ok || (k != "RX" && k != "TX") {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 32)
		if err != nil {
			return r, fmt.Errorf("ethtool -g line %q: %w", line, err)
		}
		switch section + k {
		case "maxRX":
			r.RXMax = uint32(n)
		case "maxTX":
			r.TXMax = uint32(n)
		case "curRX":
			r.RX = uint32(n)
		case "curTX":
			r.TX = uint32(n)
		default:
			continue
		}
		seen++
	}
	if seen != 4 {
		return r, fmt.Errorf("ethtool -g: found %d of RX/TX current/maximum in:\n%s", seen, out)
	}
	return r, nil
}

// TestNetdevsimRing is scenario e: a netdevsim port's RX ring set to 512 with
// ethtool -G; slowpath's ring reader (ETHTOOL_GRINGPARAM) reports the same
// current and maximum sizes as ethtool, and a size over the maximum is
// refused by the kernel.
func TestNetdevsimRing(t *testing.T) {
	t.Parallel()
	onKernels(t, everyKernel, testNetdevsimRing)
}

func testNetdevsimRing(t *testing.T, k *kernelLab) {
	if !k.Expect.NetdevsimRing {
		testenv.NotOnThisKernel(t, k.Name, k.Expect.NetdevsimRingWhy)
	}
	res := boot(t, k, Scenario{Name: "netdevsim-ring", Script: prelude + `
netdevsim_up
ethtool -g $dev > /results/ethtool-g-before
ethtool -G $dev rx 512
ethtool -g $dev > /results/ethtool-g-after
if ethtool -G $dev rx 1000000 2> /results/over-max; then echo "ring size over the maximum accepted"; exit 1; fi
sp collect --cloud none --net-interval 0 -o - > /results/snapshot.json
echo 1 > /sys/bus/netdevsim/del_device
rmmod netdevsim
`})
	dev := strings.TrimSpace(string(res.Files["dev"]))
	before, err := parseEthtoolG(string(res.Files["ethtool-g-before"]))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseEthtoolG(string(res.Files["ethtool-g-after"]))
	if err != nil {
		t.Fatal(err)
	}
	if after.RX != 512 || after.RXMax <= 512 || after.RXMax != before.RXMax {
		t.Fatalf("ethtool in the guest: before %+v after %+v; want rx 512 below an unchanged maximum", before, after)
	}
	var s snapshot.Snapshot
	if err := json.Unmarshal(res.Files["snapshot.json"], &s); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	if s.Net == nil {
		t.Fatalf("snapshot has no net section; errors %+v", s.Manifest.Errors)
	}
	var got *snapshot.NetInterface
	for i := range s.Net.Interfaces {
		if s.Net.Interfaces[i].Name == dev {
			got = &s.Net.Interfaces[i]
		}
	}
	if got == nil {
		t.Fatalf("snapshot has no interface %s: %+v", dev, s.Net.Interfaces)
	}
	if got.Driver != "netdevsim" {
		t.Errorf("%s driver %q, want netdevsim", dev, got.Driver)
	}
	if got.Ring == nil {
		t.Fatalf("slowpath read no ring for %s (unsupported: %v; errors %+v)", dev, got.Unsupported, s.Manifest.Errors)
	}
	if diff := cmp.Diff(after, *got.Ring); diff != "" {
		t.Errorf("slowpath ring for %s vs ethtool -g (-ethtool +slowpath):\n%s", dev, diff)
	}
	t.Logf("%s: ethtool -g %+v, slowpath %+v; over-max refused: %s", dev, after, *got.Ring, strings.TrimSpace(string(res.Files["over-max"])))

	// net.ring-undersized on the real reader's output. As collected it is
	// silent: the ring is below its maximum but netdevsim has no overflow
	// counter and no link speed, so there is no evidence of a problem.
	if f := ringFinding(t, &s, dev); f != nil && f.Status == check.Fail {
		t.Errorf("net.ring-undersized fired without evidence: %+v", f)
	}
	// The same 512-of-4096 ring on a 25 Gb/s link is undersized.
	speed := int64(25000)
	got.SpeedMbps = &speed
	if f := ringFinding(t, &s, dev); f == nil || f.Status != check.Fail {
		t.Errorf("net.ring-undersized on a 25 Gb/s link with ring %d of %d: %+v, want fail", got.Ring.RX, got.Ring.RXMax, f)
	}
}

// ringFinding runs the analysis on s and returns net.ring-undersized for dev.
func ringFinding(t *testing.T, s *snapshot.Snapshot, dev string) *check.Finding {
	t.Helper()
	r, err := analyze.Run(s, check.Config{})
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range r.Findings {
		if f.ID == "net.ring-undersized" && f.Subject == dev {
			return &r.Findings[i]
		}
	}
	return nil
}
