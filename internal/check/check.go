// Package check defines findings and the registry of checks. A check is a
// pure function of the analysis input: no I/O, no clock. Checks live one per
// file in the storagecheck and netcheck packages and register themselves here.
package check

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Severity orders findings. Its JSON form is the lower-case name.
type Severity int

const (
	Info Severity = iota + 1
	Warning
	Critical
)

var severityNames = map[Severity]string{Info: "info", Warning: "warning", Critical: "critical"}

func (s Severity) String() string {
	if n, ok := severityNames[s]; ok {
		return n
	}
	return fmt.Sprintf("severity(%d)", int(s))
}

// ParseSeverity reads info, warning or critical; "none" gives 0, which no finding reaches.
func ParseSeverity(s string) (Severity, error) {
	if s == "none" {
		return Severity(100), nil
	}
	for k, v := range severityNames {
		if v == strings.ToLower(s) {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown severity %q: use info, warning, critical or none", s)
}

func (s Severity) MarshalJSON() ([]byte, error) { return json.Marshal(s.String()) }

func (s *Severity) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err != nil {
		return err
	}
	v, err := ParseSeverity(str)
	*s = v
	return err
}

// Status says whether a check found a problem.
type Status string

const (
	Fail    Status = "fail"    // the problem is present
	Pass    Status = "pass"    // the check ran and found nothing
	Unknown Status = "unknown" // the check could not decide; Summary says why
	Skipped Status = "skipped" // the check does not apply to this host
)

// Evidence is one observed fact behind a finding.
type Evidence struct {
	Source   string `json:"source"`             // file, ioctl or metadata path the value came from
	Key      string `json:"key,omitempty"`      // field within the source
	Observed string `json:"observed"`           // what was seen
	Expected string `json:"expected,omitempty"` // what a healthy host shows
}

// Finding is one result of one check about one subject.
type Finding struct {
	ID          string     `json:"id"`
	Status      Status     `json:"status"`
	Severity    Severity   `json:"severity"`
	Subject     string     `json:"subject"` // mount point, device or interface
	Summary     string     `json:"summary"`
	Evidence    []Evidence `json:"evidence"`    // always present: part of the JSON contract
	Remediation string     `json:"remediation"` // "" when there is nothing to change
	References  []string   `json:"references,omitempty"`
	// Fix is the remediation in structured form, for `slowpath fix`; nil
	// when there is no host or cloud setting to change.
	Fix *Fix `json:"fix,omitempty"`
	// Cost is what the finding costs the host now, as its check measured
	// it: the most its fix can win back. fix orders its plan by it. nil
	// when the check measures no cost (a setting, a layer count).
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is a failing finding's measured cost.
type Cost struct {
	// Share is the part of the work the finding spoils, from 0 to 1: the
	// packets a layer dropped of those that reached it, or the part of
	// each I/O's wait through dm-crypt that neither the device beneath
	// nor the cipher explains. nil when the check has a figure but
	// nothing to take a share of.
	Share *float64 `json:"share,omitempty"`
	// Figure says it with the measured numbers.
	Figure string `json:"figure"`
}

// Input is what every check reads. Models are built once from the snapshot.
type Input struct {
	Snapshot *snapshot.Snapshot
	Storage  *storagemodel.Model
	Network  *netmodel.Model
	Config   Config
}

// Config is user policy that changes how findings are graded.
type Config struct {
	// RequiredStacks marks subjects (mount points or device names) whose
	// stacked encryption is required by compliance: the finding is kept,
	// graded info, and still states the cost.
	RequiredStacks []string `json:"required_stacks,omitempty"`
}

// Check is one registered check. Besides its finding it declares, as plain
// data, the facts other packages need about it, so that no other package
// names a check id: the counters its fix should lower, its fleet series
// and the kernel drop reasons it explains.
type Check struct {
	ID       string // stable dotted id: part of the JSON contract
	Title    string
	Severity Severity // default severity of a failing finding
	Run      func(*Input) []Finding
	// Watch is the counters `fix --apply` samples before and after the
	// change to judge it; nil when no counter measures the fix (dm-crypt
	// flags).
	Watch *Watch
	// Series is what `fleet verdict` compares across nodes by default;
	// nil when the agent exports nothing the fix moves.
	Series *Series
	// DropReasons are the kernel skb drop reasons (names as `net drops`
	// shows them: CPU_BACKLOG) that count the problem this check finds.
	DropReasons []string
}

// Watch is the network counters a fix should lower: the ones its check
// reads (internal/fix judges the change by their rates).
type Watch struct {
	Layer netmodel.Layer
	// Counters are counter names within Layer (softnet_dropped,
	// Udp.RcvbufErrors); all of the layer when empty.
	Counters []string
	// PerInterface keeps only the counters of the finding's subject
	// interface.
	PerInterface bool
}

// Series is the per-node Prometheus series a fix should lower, lower being
// better: one of the agent's own series (docs/agent.md) or a recording rule
// of deploy/kubernetes/prometheusrule.yaml.
type Series struct {
	Name string
	// Expr is an instant PromQL query with one value per node: $node
	// stands for the node label, $__rate_interval for the rate window.
	Expr string
	// Lookback is how far back a value of Expr reaches beyond
	// $__rate_interval (a recording rule's own range).
	Lookback time.Duration
}

var registry = map[string]Check{}

// Register adds a check. It panics on a duplicate id, which is a programming
// error caught by any test that imports the check packages.
func Register(c Check) {
	if _, dup := registry[c.ID]; dup {
		panic("check: duplicate id " + c.ID)
	}
	if c.Run == nil || c.ID == "" || c.Severity == 0 {
		panic("check: incomplete registration " + c.ID)
	}
	registry[c.ID] = c
}

// Lookup returns the check registered as id.
func Lookup(id string) (Check, bool) {
	c, ok := registry[id]
	return c, ok
}

// All returns the registered checks sorted by id.
func All() []Check {
	out := make([]Check, 0, len(registry))
	for _, c := range registry {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// Run evaluates every registered check and returns the findings sorted by
// severity (worst first), then id and subject, so output is deterministic.
// Passing results are kept only when keepPass is set.
func Run(in *Input, keepPass bool) []Finding {
	var out []Finding
	for _, c := range All() {
		for _, f := range c.Run(in) {
			if f.ID == "" {
				f.ID = c.ID
			}
			if f.Status == "" {
				f.Status = Fail
			}
			if f.Severity == 0 {
				f.Severity = c.Severity
				// Missing evidence is not itself a problem: an unknown that
				// does not grade itself is info, so it is shown with its
				// reason but does not fail --fail-on warning on its own.
				if f.Status == Unknown {
					f.Severity = Info
				}
			}
			if f.Status == Pass && !keepPass {
				continue
			}
			out = append(out, f)
		}
	}
	Sort(out)
	return out
}

// Evaluate builds the storage and network models of s and runs every
// registered check on them (Run): what doctor reports, and what fix runs
// again on a snapshot its plan has changed. With no check registered it is
// an error, never an empty, clean result: the check packages register
// themselves when imported (internal/analyze imports them all).
func Evaluate(s *snapshot.Snapshot, cfg Config) (*Input, []Finding, error) {
	return EvaluateStorage(s, storagemodel.Build(s), cfg)
}

// EvaluateStorage is Evaluate with the storage model given: built from
// s's topology already (storagemodel.Build(s) of a snapshot whose storage
// section differs from s's only in block counters, which the model does
// not hold). The agent builds it once per topology read, not per scrape.
func EvaluateStorage(s *snapshot.Snapshot, sm *storagemodel.Model, cfg Config) (*Input, []Finding, error) {
	if len(registry) == 0 {
		return nil, nil, fmt.Errorf("no check is registered (import internal/analyze)")
	}
	nm, err := netmodel.Build(s)
	if err != nil {
		return nil, nil, fmt.Errorf("network model: %w", err)
	}
	in := &Input{Snapshot: s, Storage: sm, Network: nm, Config: cfg}
	return in, Run(in, false), nil
}

// Sort orders findings worst first, then by id and subject.
func Sort(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.Severity != b.Severity {
			return a.Severity > b.Severity
		}
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Subject < b.Subject
	})
}

// Worst returns the highest severity among failing or unknown findings, 0 if none.
func Worst(fs []Finding) Severity {
	var w Severity
	for _, f := range fs {
		if (f.Status == Fail || f.Status == Unknown) && f.Severity > w {
			w = f.Severity
		}
	}
	return w
}

// IsRequiredStack reports whether subject is marked as a compliance-required stack.
func (c Config) IsRequiredStack(subject string) bool {
	for _, s := range c.RequiredStacks {
		if s == subject {
			return true
		}
	}
	return false
}
