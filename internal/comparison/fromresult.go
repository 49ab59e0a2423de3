package comparison

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/units"
)

// FromResults makes a side of bench results (one run each), sources naming
// them for the report. Facts are the first run's; Mixed lists facts that
// differ between runs (a side that mixes kernels is worth knowing about).
func FromResults(name string, sources []string, results []*benchresult.Result) (Side, error) {
	if len(results) == 0 {
		return Side{}, fmt.Errorf("side %q has no results", name)
	}
	s := Side{Name: name, Profile: results[0].Profile, Sources: sources}
	var facts [][]Fact
	for i, r := range results {
		run, err := runFromResult(r)
		if err != nil {
			src := ""
			if i < len(sources) {
				src = sources[i] + ": "
			}
			return Side{}, fmt.Errorf("%s%w", src, err)
		}
		if i < len(sources) {
			run.Label = strings.TrimSuffix(baseName(sources[i]), ".json")
		}
		s.Runs = append(s.Runs, run)
		facts = append(facts, resultFacts(r))
	}
	s.Facts = facts[0]
	first := map[string]string{}
	for _, f := range facts[0] {
		first[f.Key] = f.Value
	}
	mixed := map[string]bool{}
	for _, fs := range facts[1:] {
		seen := map[string]bool{}
		for _, f := range fs {
			seen[f.Key] = true
			if first[f.Key] != f.Value {
				mixed[f.Key] = true
			}
		}
		for k := range first {
			if !seen[k] {
				mixed[k] = true
			}
		}
	}
	for k := range mixed {
		s.Mixed = append(s.Mixed, k)
	}
	sort.Strings(s.Mixed)
	if t := results[0].Environment.Target; t != nil && t.Storage != nil {
		s.Storage = append(s.Storage, *storagemodel.FromRecord(t.Storage))
	}
	return s, nil
}

func baseName(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[i+1:]
	}
	return p
}

// throughputOp matches figures with a per-second timeline: read_iops,
// write_bytes_per_sec, commit_ops_per_sec. Compiled on first use, not in
// every command's package init.
var throughputOp = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([a-z]+)_(iops|bytes_per_sec|ops_per_sec)$`)
})

// histogramOf is h in seconds, compare's unit.
func histogramOf(h *benchresult.Histogram) *stats.Histogram {
	if h == nil || len(h.Bins) == 0 {
		return nil
	}
	out := h.Stats()
	for i := range out.Values {
		out.Values[i] *= 1e-9
	}
	return &out
}

func runFromResult(r *benchresult.Result) (Run, error) {
	run := Run{Metrics: map[string]Measure{}, Timeline: map[string][]Point{}, Latencies: map[string]stats.Histogram{}}
	phases := map[string]*benchresult.Phase{}
	named := 0
	for i := range r.Phases {
		phases[r.Phases[i].Name] = &r.Phases[i]
	}
	seenPhase := map[string]bool{}
	for _, f := range r.Figures {
		if f.Phase != "" && !seenPhase[f.Phase] {
			seenPhase[f.Phase] = true
			named++
		}
	}
	// With one workload phase the phase adds nothing to a row's name.
	key := func(f benchresult.Figure) string {
		if f.Phase == "" || named <= 1 {
			return f.Name
		}
		return f.Phase + " " + f.Name
	}
	var loads *stats.Histogram
	if lt := r.LoadTimes; lt != nil && len(lt.Loads) > 0 {
		ds := make([]time.Duration, len(lt.Loads))
		for i, l := range lt.Loads {
			ds[i] = time.Duration(l.DurationNS)
			run.Loads = append(run.Loads, Point{T: float64(l.StartNS) * 1e-9, V: float64(l.DurationNS) * 1e-9})
		}
		loads = histogramOf(benchresult.FromDurations(ds))
		run.Latencies["index load"] = *loads
		run.SlowLoadThreshold = float64(lt.SlowNS) * 1e-9
	}
	for _, p := range r.Phases {
		for _, st := range p.Streams {
			if st.Latency == nil {
				continue
			}
			if h := histogramOf(st.Latency.Histogram); h != nil {
				name := st.Op
				if len(r.Phases) > 1 {
					name = p.Name + " " + st.Op
				}
				if prev, ok := run.Latencies[name]; ok {
					merged := stats.Merge(prev, *h)
					h = &merged
				}
				run.Latencies[name] = *h
			}
		}
	}
	for _, f := range r.Figures {
		k := key(f)
		unit, factor := benchresult.DisplayUnit(f.Unit)
		m := Measure{Unit: unit, Better: Better(f.Better), Value: f.Value * factor}
		if sm := throughputOp().FindStringSubmatch(f.Name); sm != nil {
			if ph := phases[f.Phase]; ph != nil {
				if tl := streamTimeline(ph, sm[1], f.Unit); len(tl) > 0 {
					run.Timeline[k] = tl
				}
			}
		}
		run.Metrics[k] = m
		run.Order = append(run.Order, k)
	}
	if v, ok := cpuPerIO(r); ok {
		if _, taken := run.Metrics[benchresult.CPUPerIO]; !taken {
			run.Metrics[benchresult.CPUPerIO] = Measure{Unit: units.Seconds, Better: LowerIsBetter, Value: v}
			run.Order = append(run.Order, benchresult.CPUPerIO)
		}
	}
	return run, nil
}

// cpuPerIO is the CPU time of every thread group where-the-time-went
// accounted (the workload, kcryptd, dmcrypt_write, kworkers, ksoftirqd) per
// read or write the run completed, in seconds: what the data path costs per
// I/O, so a change that trades latency for CPU shows it. Syncs are not
// counted as I/Os (a commit is its write). False when the result has no
// CPU accounting or no I/O.
func cpuPerIO(r *benchresult.Result) (float64, bool) {
	if r.WhereTime == nil || len(r.WhereTime.Threads) == 0 {
		return 0, false
	}
	var cpu float64
	for _, g := range r.WhereTime.Threads {
		if g.CPUNS < 0 {
			return 0, false // not a measurement (a file from elsewhere)
		}
		cpu += float64(g.CPUNS)
	}
	var ios uint64
	for _, p := range r.Phases {
		for _, s := range p.Streams {
			if s.Op == "read" || s.Op == "write" {
				ios += s.Ops
			}
		}
	}
	if ios == 0 {
		return 0, false
	}
	return cpu * 1e-9 / float64(ios), true
}

// streamTimeline is the per-second timeline of the phase's stream doing op
// in unit; the first stream that has one.
func streamTimeline(p *benchresult.Phase, op, unit string) []Point {
	for _, s := range p.Streams {
		if s.Op != op || len(s.Timeline) == 0 {
			continue
		}
		var out []Point
		for _, pt := range s.Timeline {
			if pt.Unit != "" && pt.Unit != unit {
				continue
			}
			out = append(out, Point{T: float64(pt.TMS) / 1e3, V: pt.Value})
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

// resultFacts are the environment facts of one result: what the run was,
// the machine, and the target's storage path.
func resultFacts(r *benchresult.Result) []Fact {
	var out []Fact
	add := func(k, v string) {
		if v != "" {
			out = append(out, Fact{Key: k, Value: v})
		}
	}
	add("profile", r.Profile)
	p := r.Parameters
	add("scale", strconv.FormatFloat(p.Scale, 'g', -1, 64))
	if p.RuntimeNS > 0 {
		add("runtime", time.Duration(p.RuntimeNS).String())
	}
	add("target kind", p.TargetKind)
	settings := make([]string, 0, len(p.Settings))
	for k := range p.Settings {
		settings = append(settings, k)
	}
	sort.Strings(settings)
	for _, k := range settings {
		add("setting "+k, p.Settings[k])
	}
	if r.Status != benchresult.StatusComplete {
		add("status", r.Status)
	}
	if t := r.EncryptionTax; t != nil && t.Load != nil {
		add("dm-crypt load", strings.TrimPrefix(t.Load.Line, "dm-crypt load: "))
	}
	e := r.Environment
	add("machine", e.Hostname)
	if h := e.Host; h != nil {
		add("kernel", h.KernelRelease)
		cpu := h.CPUModel
		if h.NumCPU > 0 {
			cpu = fmt.Sprintf("%s × %d", cpu, h.NumCPU)
		}
		add("cpu", strings.TrimSpace(cpu))
		best := map[string]struct {
			driver string
			prio   int
		}{}
		for _, c := range h.Crypto {
			if b, ok := best[c.Name]; !ok || c.Priority > b.prio {
				best[c.Name] = struct {
					driver string
					prio   int
				}{c.Driver, c.Priority}
			}
		}
		algs := make([]string, 0, len(best))
		for a := range best {
			algs = append(algs, a)
		}
		sort.Strings(algs)
		for _, a := range algs {
			add("crypto "+a, best[a].driver)
		}
	}
	if c := e.Cloud; c != nil {
		add("cloud", strings.TrimSpace(strings.Join([]string{c.Provider, c.InstanceType, c.Region}, " ")))
	}
	add("fio", e.FioVersion)
	top := engineLayer(r.Engine)
	if t := e.Target; t != nil {
		if t.Storage != nil {
			out = append(out, storageFacts(*storagemodel.FromRecord(t.Storage), top)...)
			top = "" // counted among the path's layers
		} else {
			add("filesystem", t.FSType)
		}
	}
	if r.Engine != nil {
		out = append(out, Fact{Key: "engine", Value: engineSettings(r.Engine)})
	}
	if top != "" {
		// No storage path to count it on: the engine's layer alone.
		out = append(out, Fact{Key: "encryption layers", Value: "1: " + top})
	}
	return out
}

// engineSettings is a database profile's engine and its encryption
// settings, for the "engine" fact.
func engineSettings(e *snapshot.Engine) string {
	var set []string
	for _, x := range e.Encryption {
		set = append(set, x.Setting+"="+x.Value)
	}
	if len(set) == 0 {
		return e.Engine + ": no encryption settings"
	}
	return e.Engine + ": " + strings.Join(set, ", ")
}

// engineLayer names a database profile's engine encryption as the top
// layer of "encryption layers", above the storage path's, so each side of
// a none / engine / LUKS / both comparison names its layers; the engine's
// runs in the service's own threads on this machine's CPUs. "" when the
// engine encrypts nothing (or there is none).
func engineLayer(e *snapshot.Engine) string {
	if e == nil {
		return ""
	}
	var on []string
	for _, x := range e.Encryption {
		if x.Enabled {
			on = append(on, x.Covers...)
		}
	}
	if len(on) == 0 {
		return ""
	}
	return fmt.Sprintf("engine %s (%s; service CPU)", e.Engine, strings.Join(slices.Compact(on), " "))
}
