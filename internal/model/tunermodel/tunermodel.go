// Package tunermodel says which kernel knobs another tuner on the host
// drives (bpftune, tuned, slowpath's own node-tuning DaemonSet), from the
// tuners a snapshot saw. It is pure: what each bpftune tuner changes is
// knowledge written here from bpftune's source; tuned's and the
// DaemonSet's come from their files, read by the collector.
package tunermodel

import (
	"path"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Claim is one knob a tuner drives.
type Claim struct {
	Tuner string `json:"tuner"` // bpftune, tuned, slowpath-node-tuning
	// PID is the tuner's running process; 0 when it does not run now (its
	// configuration sets the knob when it next starts).
	PID int `json:"pid,omitempty"`
	// Knob is a dotted sysctl, or "ring <devices>" for NIC rings.
	Knob string `json:"knob"`
	// Value is what the tuner sets, when its configuration says
	// ("" for bpftune, which picks values as it goes).
	Value string `json:"value,omitempty"`
	// Seen is the file that showed the tuner; Why says what in it drives
	// the knob (a bpftune tuner, a tuned profile).
	Seen string `json:"seen"`
	Why  string `json:"why"`
	// Exclude is how to take the knob away from the tuner.
	Exclude string `json:"exclude"`
}

// Running reports whether the claim's tuner runs now, so a change of the
// knob would be measured against it.
func (c Claim) Running() bool { return c.PID != 0 }

// SysctlClaims returns the tuners that drive sysctl key on host h.
func SysctlClaims(h *snapshot.Host, key string) []Claim {
	var out []Claim
	for _, c := range All(h) {
		if c.Knob == key {
			out = append(out, c)
		}
	}
	return out
}

// RingClaims returns the tuners that set the rings of interface iface.
func RingClaims(h *snapshot.Host, iface string) []Claim {
	var out []Claim
	for _, c := range All(h) {
		if devs, ok := strings.CutPrefix(c.Knob, "ring "); ok && DevicesMatch(devs, iface) {
			out = append(out, c)
		}
	}
	return out
}

// All returns every claim of every tuner h saw, in the snapshot's order.
func All(h *snapshot.Host) []Claim {
	if h == nil {
		return nil
	}
	var out []Claim
	for _, t := range h.Tuners {
		switch t.Name {
		case "bpftune":
			out = append(out, bpftuneClaims(t)...)
		case "tuned":
			out = append(out, tunedClaims(t)...)
		case "slowpath-node-tuning":
			out = append(out, nodeTuningClaims(t)...)
		}
	}
	return out
}

func seen(t snapshot.Tuner) string {
	if len(t.Seen) == 0 {
		return ""
	}
	return t.Seen[0]
}

func tunedClaims(t snapshot.Tuner) []Claim {
	var out []Claim
	where := "/etc/tuned/active_profile"
	for _, s := range t.Seen {
		if strings.HasSuffix(s, "/active_profile") {
			where = s
		}
	}
	for _, s := range t.Sysctls {
		out = append(out, Claim{Tuner: "tuned", PID: t.PID, Knob: s.Key, Value: s.Value, Seen: where,
			Why: "the [sysctl] unit of tuned profile " + t.Profile,
			Exclude: "remove " + s.Key + " from the [sysctl] unit of a profile of your own that includes " + t.Profile +
				" (/etc/tuned/NAME/tuned.conf with include=" + t.Profile + ", then tuned-adm profile NAME), " +
				"or set it there to the value you choose, so tuned and slowpath agree"})
	}
	for _, r := range t.Rings {
		devs := r.Devices
		if devs == "" {
			devs = "*"
		}
		out = append(out, Claim{Tuner: "tuned", PID: t.PID, Knob: "ring " + devs, Value: r.Value, Seen: where,
			Why:     "the ring option of a net unit of tuned profile " + t.Profile,
			Exclude: "drop ring= from that net unit (or narrow its devices=) in a profile of your own that includes " + t.Profile})
	}
	return out
}

func nodeTuningClaims(t snapshot.Tuner) []Claim {
	var out []Claim
	const exclude = "change the setting in the DaemonSet (slowpath fix --format kubernetes) and roll it out, not on one node"
	for _, s := range t.Sysctls {
		out = append(out, Claim{Tuner: t.Name, Knob: s.Key, Value: s.Value, Seen: seen(t),
			Why: "slowpath's node-tuning DaemonSet sets it at every pod start", Exclude: exclude})
	}
	for _, r := range t.Rings {
		out = append(out, Claim{Tuner: t.Name, Knob: "ring " + r.Devices, Value: r.Value, Seen: seen(t),
			Why: "slowpath's node-tuning DaemonSet sets it at every pod start", Exclude: exclude})
	}
	return out
}

// DevicesMatch reports whether tuned's devices= option selects iface: a
// comma-separated list of names or shell patterns, "!" negating one
// (tuned/plugins/base.py _get_matching_devices); empty or "*" is all.
func DevicesMatch(devices, iface string) bool {
	devices = strings.TrimSpace(devices)
	if devices == "" || devices == "*" {
		return true
	}
	var pos, neg []string
	for _, d := range strings.Split(devices, ",") {
		d = strings.TrimSpace(d)
		if n, ok := strings.CutPrefix(d, "!"); ok {
			neg = append(neg, n)
		} else if d != "" {
			pos = append(pos, d)
		}
	}
	// tuned matches with Python's fnmatch, where a backslash is an
	// ordinary character; in path.Match it escapes, so it is doubled.
	match := func(pats []string) bool {
		return slices.ContainsFunc(pats, func(p string) bool {
			ok, _ := path.Match(strings.ReplaceAll(p, `\`, `\\`), iface)
			return ok
		})
	}
	if match(neg) {
		return false
	}
	return len(pos) == 0 || match(pos)
}
