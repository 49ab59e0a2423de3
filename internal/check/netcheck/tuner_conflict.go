package netcheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/tunermodel"
)

// net.tuner-conflict: another tuner drives a knob slowpath tunes. bpftune
// raises netdev_max_backlog and netdev_budget(_usecs) by itself as it
// sees drops and squeezes; tuned sets its profile's [sysctl] and ring=
// at every start; slowpath's own node-tuning DaemonSet at every pod
// start. One tuner per knob: an A/B of a knob another tuner moves
// measures that tuner, and a value slowpath persists is set back. `fix`
// refuses such knobs (internal/fix plan.go ownedBy); this check names
// them and how to take each one away from its tuner.
func init() {
	check.Register(check.Check{
		ID:       "net.tuner-conflict",
		Title:    "Another tuner drives a setting slowpath tunes",
		Severity: check.Warning,
		Run:      tunerConflict,
	})
}

// tunedKnobs are the sysctls slowpath's network checks change (their
// Fix); every NIC ring is one too.
var tunedKnobs = []string{"net.core.netdev_max_backlog", "net.core.netdev_budget", "net.core.netdev_budget_usecs", "net.core.rmem_max"}

func tunerConflict(in *check.Input) []check.Finding {
	s := in.Snapshot
	if s == nil || s.Host == nil {
		return nil
	}
	var unread []string
	for _, e := range s.Manifest.Errors {
		if e.Collector == "host.tuners" {
			unread = append(unread, e.Path+": "+e.Message)
		}
	}
	byTuner := map[string][]tunermodel.Claim{}
	var order []string
	for _, c := range tunermodel.All(s.Host) {
		if !slices.Contains(tunedKnobs, c.Knob) && !strings.HasPrefix(c.Knob, "ring ") {
			continue
		}
		if _, ok := byTuner[c.Tuner]; !ok {
			order = append(order, c.Tuner)
		}
		byTuner[c.Tuner] = append(byTuner[c.Tuner], c)
	}
	// Which tuners claim each knob: a knob two tuners drive is named in
	// both findings, each naming the other.
	byKnob := map[string][]string{}
	for _, t := range order {
		for _, c := range byTuner[t] {
			if !slices.Contains(byKnob[c.Knob], t) {
				byKnob[c.Knob] = append(byKnob[c.Knob], t)
			}
		}
	}
	var out []check.Finding
	for _, t := range order {
		f := conflictFinding(byTuner[t])
		var shared []string
		for _, c := range byTuner[t] {
			for _, other := range byKnob[c.Knob] {
				if other != t {
					shared = append(shared, fmt.Sprintf("%s by %s", c.Knob, other))
				}
			}
		}
		if len(shared) > 0 {
			f.Summary += " Another tuner drives the same settings: " + strings.Join(shared, ", ") + "; each must give them up."
		}
		out = append(out, f)
	}
	if len(out) == 0 {
		if len(unread) > 0 {
			return []check.Finding{{Status: check.Unknown, Severity: check.Info, Subject: "tuners",
				Summary: "whether another tuner drives the settings slowpath tunes is unknown: " + strings.Join(unread, "; ")}}
		}
		return []check.Finding{{Status: check.Pass, Subject: "tuners",
			Summary: "no other tuner (bpftune, tuned, slowpath's node-tuning DaemonSet) drives the settings slowpath tunes"}}
	}
	return out
}

func conflictFinding(claims []tunermodel.Claim) check.Finding {
	c0 := claims[0]
	who := c0.Tuner
	if c0.PID != 0 {
		who = fmt.Sprintf("%s (pid %d)", c0.Tuner, c0.PID)
	}
	var knobs, excludes []string
	var ev []check.Evidence
	for _, c := range claims {
		knobs = append(knobs, c.Knob)
		obs := c.Why
		if c.Value != "" {
			obs += ": sets " + c.Value
		}
		ev = append(ev, check.Evidence{Source: c.Seen, Key: c.Knob, Observed: obs, Expected: "one tuner per setting"})
		if ex := bullet(c.Exclude, 72); !slices.Contains(excludes, ex) {
			excludes = append(excludes, ex)
		}
	}
	f := check.Finding{
		Subject:  c0.Tuner,
		Evidence: ev,
		References: []string{"https://github.com/oracle/bpftune", "https://github.com/redhat-performance/tuned",
			"https://docs.kernel.org/admin-guide/sysctl/net.html"},
	}
	switch {
	case c0.Running() || c0.Tuner == "slowpath-node-tuning":
		f.Summary = fmt.Sprintf("%s drives %s, which slowpath tunes: `slowpath fix --apply` refuses them, since an A/B of a setting another tuner moves "+
			"measures that tuner, not the change, and it may set the value back.", who, strings.Join(knobs, ", "))
	default:
		f.Severity = check.Info
		f.Summary = fmt.Sprintf("%s is not running, but its active profile sets %s, which slowpath tunes: when it starts (at boot) it sets them to its values, "+
			"over what slowpath fix persists.", c0.Tuner, strings.Join(knobs, ", "))
	}
	f.Remediation = "Keep one tuner per setting. To let slowpath change them:\n" + strings.Join(excludes, "\n") +
		"\nOr keep the tuner and write slowpath's values into its configuration\n(slowpath fix --format tuned writes a tuned profile)."
	return f
}

// bullet words s into a "- " item of lines at most width wide (a longer
// word stands alone), so the text report need not break it mid-word.
func bullet(s string, width int) string {
	var b strings.Builder
	line := "-"
	for _, w := range strings.Fields(s) {
		if len(line)+1+len(w) > width && line != "-" && line != " " {
			b.WriteString(line + "\n")
			line = " "
		}
		line += " " + w
	}
	b.WriteString(line)
	return b.String()
}
