package netcheck

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/units"
)

// Shared helpers of the network checks; each check is in its own file.

const (
	srcSoftnet = "/proc/net/softnet_stat"
	srcSysctl  = "/proc/sys/net/core"
	srcSNMP    = "/proc/net/snmp"
)

// oneSampleNote is appended to summaries when a check could not see rates.
const oneSampleNote = "only one counter sample was taken, so it cannot tell whether this is happening now: run doctor live (--net-interval 1s, the default) or `slowpath net watch`"

// counters returns the model's counters matching layer and name (any name
// when names is empty).
func counters(m *netmodel.Model, layer netmodel.Layer, names ...string) []netmodel.Counter {
	var out []netmodel.Counter
	for _, c := range m.Counters {
		if c.Layer != layer {
			continue
		}
		if len(names) > 0 && !contains(names, c.Counter) {
			continue
		}
		out = append(out, c)
	}
	return out
}

// watched returns the counters of w, on every subject.
func watched(m *netmodel.Model, w *check.Watch) []netmodel.Counter {
	return counters(m, w.Layer, w.Counters...)
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func rising(cs []netmodel.Counter) []netmodel.Counter {
	var out []netmodel.Counter
	for _, c := range cs {
		if c.Rising() {
			out = append(out, c)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return *out[i].PerSecond > *out[j].PerSecond })
	return out
}

func sumRate(cs []netmodel.Counter) float64 {
	var r float64
	for _, c := range cs {
		if c.PerSecond != nil {
			r += *c.PerSecond
		}
	}
	return r
}

func sumTotal(cs []netmodel.Counter) uint64 {
	var t uint64
	for _, c := range cs {
		t += c.Total
	}
	return t
}

func rateEvidence(source string, cs []netmodel.Counter, max int) []check.Evidence {
	var out []check.Evidence
	for i, c := range cs {
		if i == max {
			out = append(out, check.Evidence{Source: source, Observed: fmt.Sprintf("%d more rising", len(cs)-max)})
			break
		}
		ev := check.Evidence{Source: source, Key: c.Subject + " " + c.Counter, Observed: fmt.Sprintf("total %d", c.Total)}
		if c.PerSecond != nil {
			ev.Observed = fmt.Sprintf("%s/s (total %d)", units.Rate(*c.PerSecond), c.Total)
			ev.Expected = "0/s"
		}
		out = append(out, ev)
	}
	return out
}

func sysctlEvidence(m *netmodel.Model, name, expected string) check.Evidence {
	v, ok := m.Sysctls[name]
	obs := "not read"
	if ok {
		obs = strconv.FormatInt(v, 10)
	}
	return check.Evidence{Source: srcSysctl, Key: name, Observed: obs, Expected: expected}
}

// comment wraps text into "# " shell comment lines that fit a terminal
// when the report indents them.
func comment(text string) string {
	const width = 72
	var lines []string
	line := "#"
	for _, w := range strings.Fields(text) {
		if len(line) > 1 && len(line)+1+len(w) > width {
			lines = append(lines, line)
			line = "#"
		}
		line += " " + w
	}
	return strings.Join(append(lines, line), "\n")
}
