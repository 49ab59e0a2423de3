package fix

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// TestTunedProfileWithTunedsLoader reads every fixture's --format tuned
// output, and plans with odd interface names, with tuned's own profile
// loader (Debian's tuned 2.20, unpacked, never installed): each sysctl
// comes back with its value in the merged [sysctl] unit, each ring in a
// net unit that selects exactly its interface, comes before every other
// net unit (tuned offers a NIC to the first that matches) and has
// dynamic tuning off; an included stock profile keeps its own settings.
func TestTunedProfileWithTunedsLoader(t *testing.T) {
	stock := testenv.TunedStock(t)
	plans := map[string]*Plan{}
	for _, name := range fixtureHosts(t) {
		plans[name] = fixturePlan(t, name, Options{})
	}
	// Interface names tuned's devices= can and cannot hold; the active
	// stock profile powersave, whose [net] takes every NIC, is included,
	// as on a host where the snapshot saw it active.
	odd := &Plan{TunedProfile: "powersave", Entries: []Entry{{ID: "net.ring-undersized", Subject: "odd", Steps: []Step{
		{Change: Ring(check.RingChange{Interface: "ens1f0.100", RX: 4096, RXMax: 8192})},
		{Change: Ring(check.RingChange{Interface: "we,ird", RX: 4096, RXMax: 8192})},
		{Change: Ring(check.RingChange{Interface: "eth*", RX: 4096, RXMax: 8192})},
		{Change: Sysctl(check.SysctlChange{Key: "net.core.netdev_max_backlog", To: 32768})},
	}}}}
	plans["odd-names"] = odd
	checked := 0
	for name, p := range plans {
		b, err := Tuned(p)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "[main]") {
			continue // nothing to tune: comments only
		}
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, TunedProfileName), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, TunedProfileName, "tuned.conf"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		got := testenv.LoadTuned(t, []string{stock, dir}, TunedProfileName)
		checked++
		var rings []Ring
		for _, e := range p.Entries {
			for _, s := range e.Steps {
				switch c := s.Change.(type) {
				case Sysctl:
					if v := got.Units["sysctl"].Options[c.Key]; v != strconv.FormatInt(c.To, 10) {
						t.Errorf("%s: tuned reads %s=%q, want %d\n%s", name, c.Key, v, c.To, b)
					}
				case Ring:
					rings = append(rings, c)
				}
			}
		}
		for _, r := range rings {
			unit := ""
			for n, u := range got.Units {
				if u.Type == "net" && u.Devices == r.Interface {
					unit = n
				}
			}
			bad := strings.ContainsAny(r.Interface, ",*")
			switch {
			case bad && unit != "":
				t.Errorf("%s: interface %q written into devices=, which tuned reads as a list or pattern", name, r.Interface)
			case bad:
				if !strings.Contains(string(b), "# - ring of "+r.Interface+": not written") {
					t.Errorf("%s: ring of %q left out without a comment saying so:\n%s", name, r.Interface, b)
				}
			case unit == "":
				t.Errorf("%s: no net unit with devices=%s in tuned's reading:\n%s", name, r.Interface, b)
			default:
				u := got.Units[unit]
				if u.Options["ring"] != "rx "+strconv.FormatUint(uint64(r.RX), 10) || u.Options["dynamic"] != "0" {
					t.Errorf("%s: unit %s options %v, want ring=rx %d and dynamic=0", name, unit, u.Options, r.RX)
				}
				for _, n := range got.NetOrder {
					if !strings.HasPrefix(n, "slowpath_net_") {
						if slices.Index(got.NetOrder, n) < slices.Index(got.NetOrder, unit) {
							t.Errorf("%s: tuned offers NICs to net unit %s before %s: order %v", name, n, unit, got.NetOrder)
						}
					}
				}
			}
		}
		if p.TunedProfile != "" {
			// Every unit of the included profile stays in the merge.
			inc := testenv.LoadTuned(t, []string{stock}, strings.Fields(p.TunedProfile)...)
			for n := range inc.Units {
				if _, ok := got.Units[n]; !ok {
					t.Errorf("%s: unit [%s] of the included profile %s is gone from the merge", name, n, p.TunedProfile)
				}
			}
			if len(inc.NetOrder) == 0 && name == "odd-names" {
				t.Errorf("%s: %s has no net unit: the order test proved nothing", name, p.TunedProfile)
			}
		}
	}
	if checked < 2 {
		t.Fatalf("only %d profile(s) had something to tune: the test proved little", checked)
	}
}
