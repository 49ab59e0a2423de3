package comparison

import (
	"fmt"
	"strings"
)

// Gates of `compare --fail-on`.
const (
	GateNone      = "none"
	GateWorse     = "worse"     // a side significantly worse: its verdict, a guard, or (no primary declared) a row
	GateDifferent = "different" // a side significantly different in either direction
)

// Gates lists the values --fail-on takes.
var Gates = []string{GateNone, GateWorse, GateDifferent}

// Fails says whether the comparison trips gate, and why. It reads only
// decided verdicts: a side whose verdict is "too few runs" or "no
// significant difference" passes, so a gate needs enough runs per side to
// mean anything (Result.MinRuns).
func (r *Result) Fails(gate string) (bool, string, error) {
	switch gate {
	case GateNone, "":
		return false, "", nil
	case GateWorse, GateDifferent:
	default:
		return false, "", fmt.Errorf("unknown gate %q: use %s", gate, strings.Join(Gates, ", "))
	}
	var why []string
	for i, v := range r.Verdicts {
		switch {
		case v.Outcome == OutcomeWorse || v.Outcome == OutcomeMixed || len(v.GuardsWorse) > 0,
			v.Outcome == OutcomeBetter && gate == GateDifferent:
			why = append(why, VerdictLine(v))
		case v.Outcome == OutcomeNoPrimary:
			// No declared verdict: any significant row decides.
			for _, row := range r.Rows {
				c := row.Cells[i+1].Change
				if c == "worse" || (c == "better" && gate == GateDifferent) {
					why = append(why, fmt.Sprintf("%s vs %s: %s %s", v.Side, v.Versus, row.Metric, c))
				}
			}
		}
	}
	if len(why) == 0 {
		return false, "", nil
	}
	return true, "--fail-on " + gate + ": " + strings.Join(why, "; "), nil
}
