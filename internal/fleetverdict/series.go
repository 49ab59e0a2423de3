package fleetverdict

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/canary"
)

// Series is one per-node PromQL expression the verdict compares: an
// instant query giving one value per node (the node label kept), which the
// verdict averages over each window.
type Series struct {
	Name string `json:"name"`
	// Expr is as given; $__rate_interval stands for --rate-interval and,
	// in the finding's own series, $node for --node-label.
	Expr   string `json:"expr"`
	Role   string `json:"role"`   // canary.RolePrimary or canary.RoleGuard
	Better string `json:"better"` // "higher" or "lower"
	// Lookback is how far back a value of Expr reaches beyond
	// $__rate_interval (a recording rule's own range): the window after
	// the change starts no earlier than that after it.
	Lookback time.Duration `json:"-"`
}

// Directions of a series.
const (
	Higher = "higher"
	Lower  = "lower"
)

// findingSeries is the series each check's fix is meant to move, lower
// being better for all of them: the agent's own counters (docs/agent.md),
// or for dm-crypt's flags the tax recording rule of
// deploy/kubernetes/prometheusrule.yaml.
var findingSeries = map[string]Series{
	"net.backlog-drops": {Name: "backlog_drops_per_second",
		Expr: `sum by ($node) (rate(slowpath_net_drops_total{layer="backlog"}[$__rate_interval]))`},
	"net.ring-undersized": {Name: "ring_drops_per_second",
		Expr: `sum by ($node) (rate(slowpath_net_drops_total{layer="ring"}[$__rate_interval]))`},
	"net.time-squeeze": {Name: "time_squeezes_per_second",
		Expr: `sum by ($node) (rate(slowpath_net_time_squeeze_total[$__rate_interval]))`},
	"dmcrypt.workqueue": {Name: "dmcrypt_added_await_seconds", Lookback: 5 * time.Minute,
		Expr: `avg by ($node) (instance_mountpoint:slowpath_dmcrypt_added_await_seconds:rate5m)`},
	"dmcrypt.same-cpu-crypt": {Name: "dmcrypt_added_await_seconds", Lookback: 5 * time.Minute,
		Expr: `avg by ($node) (instance_mountpoint:slowpath_dmcrypt_added_await_seconds:rate5m)`},
}

// FindingSeries is the default primary series of the change id: the
// finding's own evidence, per node by the label node.
func FindingSeries(id, node string) (Series, bool) {
	s, ok := findingSeries[id]
	if !ok {
		return Series{}, false
	}
	s.Expr = strings.ReplaceAll(s.Expr, "$node", node)
	s.Role, s.Better = canary.RolePrimary, Lower
	return s, true
}

// FindingIDs are the change ids with a default series, sorted.
func FindingIDs() []string {
	ids := make([]string, 0, len(findingSeries))
	for id := range findingSeries {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// ParseSeries reads --metric NAME[,higher|lower][,primary|guard]=PROMQL.
// A series the user names is higher-is-better and a guard unless said:
// the service must not get worse while the finding's series improves.
func ParseSeries(spec string) (Series, error) {
	head, expr, ok := strings.Cut(spec, "=")
	expr = strings.TrimSpace(expr)
	if !ok || expr == "" {
		return Series{}, fmt.Errorf("--metric %q: want NAME[,higher|lower][,primary|guard]=PROMQL", spec)
	}
	parts := strings.Split(head, ",")
	s := Series{Name: parts[0], Expr: expr, Role: canary.RoleGuard, Better: Higher}
	if err := checkName(s.Name); err != nil {
		return Series{}, fmt.Errorf("--metric %q: %w", spec, err)
	}
	for _, p := range parts[1:] {
		switch p {
		case Higher, Lower:
			s.Better = p
		case canary.RolePrimary, canary.RoleGuard:
			s.Role = p
		default:
			return Series{}, fmt.Errorf("--metric %q: unknown option %q: use higher or lower, primary or guard", spec, p)
		}
	}
	return s, nil
}

// checkName keeps a series name printable as is in every format (a
// Markdown cell, an HTML heading, a terminal).
func checkName(n string) error {
	if n == "" || len(n) > 64 {
		return fmt.Errorf("name %q: want 1 to 64 characters", n)
	}
	for _, r := range n {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_.:/-", r)) {
			return fmt.Errorf("name %q: only letters, digits and _ . : / -", n)
		}
	}
	return nil
}

// CheckLabelName is Prometheus's legacy rule for a label name, the one a
// label in PromQL's `by (...)` may be written without quotes.
func CheckLabelName(flag, n string) error {
	if n == "" {
		return fmt.Errorf("%s: empty label name", flag)
	}
	if !model.LegacyValidation.IsValidLabelName(n) {
		return fmt.Errorf("%s %q: not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*)", flag, n)
	}
	return nil
}
