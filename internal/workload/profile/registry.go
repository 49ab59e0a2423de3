package profile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// A Profile is one kind of bench workload: what it declares (Spec), how it
// is sized for a run (Plan) and the figures its phases give (Figures).
// Each profile, or family of profiles, is one file of this package that
// registers itself in init (docs/adding-a-profile.md); every front end
// (bench, compare, lab crypt, fix --prove), result validation and the docs
// read the registry.
type Profile interface {
	Spec() Spec
	// Plan sizes the profile for p; name is the full name asked for (a
	// family's "fio:job.fio"). New has checked p's common parts.
	Plan(name string, p Params) (*Plan, error)
	// Figures derives the headline figures from a run's phases (lt: the
	// index loader's load times, search-index only).
	Figures(phases []benchresult.Phase, lt *benchresult.LoadTimes) []benchresult.Figure
}

// Spec is what a profile declares.
type Spec struct {
	// Name is what --profile takes ("db-commit"), or for a family whose
	// name carries an argument its prefix ending in ':' ("fio:").
	Name string
	// Usage is the name as usage messages list it ("fio:FILE"); "" is
	// Name. Arg names the argument in a saved result's profile ("the job
	// file", "the capture directory"), for validation's message.
	Usage, Arg string
	// Family groups profiles listed together: "lab" for lab crypt's fio
	// jobs ("lab:randrw-4k"), which usage messages leave out.
	Family      string
	Description string
	// Needs is what the profile runs on: files in a directory, a raw
	// block device, or either.
	Needs Target
	// Metrics are the declared roles of the profile's figures for
	// compare's verdict and fix --prove; nil: none (no verdict).
	Metrics *Metrics
	// Tax is the profile's fixed-size I/O phase, on which the encryption
	// tax is computed; nil: none.
	Tax *TaxShape
	// IO is the shape of every I/O of a profile whose I/O has one size and
	// queue depth (the lab jobs); nil otherwise.
	IO *IOShape
	// Rank orders lists (usage, lab crypt's catalogue, docs): lower first,
	// ties in registration order.
	Rank int
}

// Target is what a profile needs of its target.
type Target int

const (
	// Dir: files in the run's directory on a filesystem.
	Dir Target = 1 << iota
	// Device: a raw block device the caller has checked is expendable.
	Device
)

// IOShape is a fixed I/O size and queue depth.
type IOShape struct {
	BytesPerIO int
	QueueDepth int
}

// TaxShape is a profile's fixed-size I/O phase: its I/O size and queue
// depth are known, so the expected encryption tax follows from the
// phase's IOPS (internal/model/cryptotax).
type TaxShape struct {
	// Phase names the phase ("direct-4k"); "" when the whole workload is.
	Phase string
	// IOPS are the figures whose medians add up to the phase's I/O rate.
	IOPS []Metric
	IOShape
}

var (
	registry []Profile
	ranks    []int // registry's Spec().Rank, in its order
	byName   = map[string]Profile{}
)

// Register adds a profile. It panics on a duplicate or malformed name,
// which is a programming error.
func Register(p Profile) {
	s := p.Spec()
	if s.Name == "" || s.Needs == 0 {
		panic(fmt.Sprintf("profile %q: a profile needs a name and a target", s.Name))
	}
	if _, dup := byName[s.Name]; dup {
		panic("duplicate profile " + s.Name)
	}
	family := ""
	if strings.HasSuffix(s.Name, ":") {
		family = strings.TrimSuffix(s.Name, ":")
	} else if s.Family != "" {
		family = s.Family
		if !strings.HasPrefix(s.Name, s.Family+":") {
			panic(fmt.Sprintf("profile %q of family %s: name it %s:NAME", s.Name, s.Family, s.Family))
		}
	}
	if family != "" {
		benchresult.RegisterProfileFamily(family, s.Arg)
	} else {
		benchresult.RegisterProfileName(s.Name)
	}
	byName[s.Name] = p
	// Inserted after every profile of the same or a lower rank: the
	// order a stable sort gives, without calling every profile's Spec
	// again at each of the init-time registrations.
	i := sort.SearchInts(ranks, s.Rank+1)
	registry = slices.Insert(registry, i, p)
	ranks = slices.Insert(ranks, i, s.Rank)
}

// All returns every registered profile in list order.
func All() []Profile { return slices.Clone(registry) }

// Lookup returns the profile that plans name: one registered under name,
// or the family whose prefix starts it (with a non-empty argument).
func Lookup(name string) (Profile, bool) {
	if p, ok := byName[name]; ok && !strings.HasSuffix(name, ":") {
		return p, true
	}
	if i := strings.IndexByte(name, ':'); i >= 0 && i < len(name)-1 {
		if p, ok := byName[name[:i+1]]; ok {
			return p, true
		}
	}
	return nil, false
}

// Known reports whether New plans a profile called name: the front ends
// check a name with it before anything runs.
func Known(name string) bool {
	_, ok := Lookup(name)
	return ok
}

// Names lists the profiles for usage messages (a family's members, such as
// the lab jobs, are listed by Family).
func Names() []string {
	var out []string
	for _, p := range registry {
		if s := p.Spec(); s.Family == "" {
			out = append(out, s.usage())
		}
	}
	return out
}

// Family lists the members of a family in list order.
func Family(family string) []Profile {
	var out []Profile
	for _, p := range registry {
		if p.Spec().Family == family {
			out = append(out, p)
		}
	}
	return out
}

func (s Spec) usage() string {
	if s.Usage != "" {
		return s.Usage
	}
	return s.Name
}

// Arg is a profile argument resolved before anything runs: the name a
// result carries, and what the name's argument held.
type Arg struct {
	// Name is the profile's name in results, reports and exports: a
	// family's argument cut to its base name (fio:job.fio, replay:cap).
	Name string
	// JobFile is a fio:FILE profile's job file, Capture a replay's loaded
	// capture; the Params of New.
	JobFile []byte
	Capture *replay.Source
}

// argResolver is a family whose argument names something to read and
// check before anything runs (a job file, a capture directory).
type argResolver interface {
	resolve(arg string) (Arg, error)
}

// Resolve checks a --profile argument and reads what its argument names.
// An unknown name wraps ErrUnknown.
func Resolve(arg string) (Arg, error) {
	p, ok := Lookup(arg)
	if !ok {
		return Arg{}, unknown(arg)
	}
	if r, ok := p.(argResolver); ok {
		return r.resolve(arg)
	}
	return Arg{Name: arg}, nil
}

// toolChecker is a profile that runs programs other than fio (the
// database profiles): CheckTools asks it.
type toolChecker interface {
	checkTools(name string) error
}

// CheckTools checks, before anything runs, that the programs profile name
// runs are installed: fio for a job-file profile (fio.Version), a
// database profile's server and client. An unknown name wraps ErrUnknown.
func CheckTools(ctx context.Context, name string) error {
	p, ok := Lookup(name)
	if !ok {
		return unknown(name)
	}
	if c, ok := p.(toolChecker); ok {
		return c.checkTools(name)
	}
	_, err := fio.Version(ctx)
	return err
}

// ErrUnknown is wrapped by New for a profile name it does not know.
var ErrUnknown = errors.New("unknown profile")

// Unknown is the error for a name no profile plans (wrapping ErrUnknown):
// the members of the family its prefix names, or every profile.
func Unknown(name string) error { return unknown(name) }

// unknown is New's error for a name no profile plans: the members of the
// family its prefix names, or every profile.
func unknown(name string) error {
	if fam, _, ok := strings.Cut(name, ":"); ok {
		if ms := Family(fam); len(ms) > 0 {
			var n []string
			for _, p := range ms {
				n = append(n, p.Spec().Name)
			}
			return fmt.Errorf("%w %q: the %s profiles are %s", ErrUnknown, name, fam, strings.Join(n, ", "))
		}
	}
	return fmt.Errorf("%w %q: use one of %s", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Metric names a figure by its phase and name, as a result holds it.
type Metric struct {
	// Phase is "" for a figure of the whole run, or of a profile with
	// one phase.
	Phase, Figure string
}

// Row is the metric's row name in a comparison: "PHASE figure" when it
// has a phase (internal/comparison FromResults).
func (m Metric) Row() string {
	if m.Phase == "" {
		return m.Figure
	}
	return m.Phase + " " + m.Figure
}

// Rows are the row names of ms.
func Rows(ms []Metric) []string {
	out := make([]string, 0, len(ms))
	for _, m := range ms {
		out = append(out, m.Row())
	}
	return out
}

// Metrics are a profile's declared roles for compare's verdict and fix
// --prove.
type Metrics struct {
	// Primary metrics decide the verdict, tested in this order at the
	// full alpha, each only once the one before it was significant (a
	// fixed sequence): the first is the one the profile exists for.
	Primary []Metric
	// Guards must not be significantly worse for fix --prove to keep a
	// change: the tail (p99.9) and the CPU the data path spends per I/O.
	Guards []Metric
}

// CPUPerIO is the row compare derives from a result's CPU figures and its
// I/O count (benchresult.CPUPerIO): a guard of every profile, since a
// change that buys latency with CPU (an inline dm-crypt) must say so.
const CPUPerIO = benchresult.CPUPerIO

// MetricsOf returns the declared roles of profile name; ok is false for a
// name New does not know or a profile that declares none.
func MetricsOf(name string) (Metrics, bool) {
	p, ok := Lookup(name)
	if !ok || p.Spec().Metrics == nil {
		return Metrics{}, false
	}
	return *p.Spec().Metrics, true
}

// TaxShapeOf returns the fixed-size I/O phase of profile name, if it
// declares one.
func TaxShapeOf(name string) (TaxShape, bool) {
	p, ok := Lookup(name)
	if !ok || p.Spec().Tax == nil {
		return TaxShape{}, false
	}
	return *p.Spec().Tax, true
}
