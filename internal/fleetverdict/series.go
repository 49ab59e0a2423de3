package fleetverdict

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/slowpath/slowpath/internal/canary"
	"github.com/slowpath/slowpath/internal/check"
	// The check packages register their checks, and their fleet series,
	// in init.
	_ "github.com/slowpath/slowpath/internal/check/netcheck"
	_ "github.com/slowpath/slowpath/internal/check/storagecheck"
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

// FindingSeries is the default primary series of the change id: the
// finding's own evidence, per node by the label node, as its check
// declares it (check.Check.Series), lower being better.
func FindingSeries(id, node string) (Series, bool) {
	c, ok := check.Lookup(id)
	if !ok || c.Series == nil {
		return Series{}, false
	}
	return Series{Name: c.Series.Name, Expr: strings.ReplaceAll(c.Series.Expr, "$node", node),
		Role: canary.RolePrimary, Better: Lower, Lookback: c.Series.Lookback}, true
}

// FindingIDs are the change ids with a default series, sorted.
func FindingIDs() []string {
	var ids []string
	for _, c := range check.All() {
		if c.Series != nil {
			ids = append(ids, c.ID)
		}
	}
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
