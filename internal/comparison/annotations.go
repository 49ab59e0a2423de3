package comparison

import (
	"fmt"
	"math"
	"slices"

	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/units"
)

// Annotations are what the front end that made the sides knows beyond
// their runs: how they ran, what kind of figures they are, what could not
// run, and the expected encryption tax. Compare leaves them empty; every
// renderer shows whatever is set, so text, Markdown, JSON and HTML say the
// same (docs/json.md).
type Annotations struct {
	// Title names the command ("slowpath lab crypt"); "" is "slowpath
	// compare".
	Title string `json:"title,omitempty"`
	// Setup are facts of the whole comparison (profile, backing, runs),
	// in the order the front end gives them.
	Setup []Fact `json:"setup,omitempty"`
	// Figures is "measured", "emulated" (qemu TCG: functional evidence)
	// or "icount-model" (an instruction-count model); "" when the front
	// end does not know (saved results). FiguresNote is the label over the
	// table, IcountShift qemu's -icount shift of a model.
	Figures     string `json:"figures,omitempty"`
	FiguresNote string `json:"figures_note,omitempty"`
	IcountShift *int   `json:"icount_shift,omitempty"`
	// NotRun are sides that were asked for and could not run.
	NotRun []NotRun `json:"not_run,omitempty"`
	// Tax is the expected encryption tax against the overhead observed.
	Tax *Tax `json:"encryption_tax,omitempty"`
	// Split is the tax measured in parts, where the sides allow it.
	Split *TaxSplit `json:"tax_split,omitempty"`
}

// NotRun is a side that could not run, and why.
type NotRun struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

// TaxShape is a fixed-size I/O phase of a workload: its I/O size and queue
// depth are known, so the expected encryption tax follows from its IOPS
// (internal/model/cryptotax).
type TaxShape struct {
	// Phase names the phase in the tax line ("direct-4k"); "" when the
	// whole workload is the phase.
	Phase string `json:"phase,omitempty"`
	// IOPS are the rows whose medians add up to the phase's I/O rate.
	IOPS []string `json:"-"`
	// CPU is the row of the machine's CPU over the same span as the IOPS
	// (for the CPU form of the tax); "" when there is none.
	CPU        string  `json:"-"`
	BytesPerIO float64 `json:"bytes_per_io"`
	QueueDepth int     `json:"queue_depth"`
}

// Tax is the expected encryption tax of every side with more encryption
// layers than the first, set against the overhead observed.
type Tax struct {
	// The cipher's cost on one core: bytes per second, what was measured
	// (the kernel's driver through AF_ALG or the user-space bound) and,
	// when the measurement speaks only for some results, a caveat.
	CipherBytesPerSecPerCore float64 `json:"cipher_bytes_per_sec_per_core"`
	Cipher                   string  `json:"cipher"`
	Caveat                   string  `json:"caveat,omitempty"`
	// Shape is the phase the tax is computed on; nil with NotComputed.
	Shape       *TaxShape `json:"shape,omitempty"`
	NotComputed string    `json:"not_computed,omitempty"`
	Sides       []TaxSide `json:"sides"`
}

// TaxSide is one side's tax. Times are seconds per I/O, CPU seconds per
// GiB moved.
type TaxSide struct {
	Name       string `json:"name"`
	LayersMore int    `json:"layers_more"` // encryption layers more than the first side
	// NotComputed says why there is no verdict; the figures are then absent.
	NotComputed          string   `json:"not_computed,omitempty"`
	ExpectedPerIOSeconds float64  `json:"expected_per_io_seconds,omitempty"`
	ObservedPerIOSeconds float64  `json:"observed_per_io_seconds,omitempty"`
	Ratio                *float64 `json:"ratio,omitempty"`
	ExpectedCPUPerGiB    float64  `json:"expected_cpu_s_per_gib,omitempty"`
	// ObservedCPUPerGiB is the CPU beyond the first side's per GiB moved,
	// absent when the shape has no CPU row.
	ObservedCPUPerGiB *float64 `json:"observed_extra_cpu_s_per_gib,omitempty"`
	Verdict           string   `json:"verdict"`
	// Line is the one-line form the text prints (cryptotax.Tax.Line).
	Line string `json:"line"`
}

// TaxInput is what AssessTax needs beyond the comparison.
type TaxInput struct {
	Limit   cryptotax.Limit
	Caveat  string
	Cores   int   // cores that can encrypt; 0: unknown (counts as 1)
	Layers  []int // encryption layers on each side's target, in side order; <0: unknown
	Shape   *TaxShape
	NoShape string // why there is no shape, when Shape is nil
}

// NeedsTax reports whether some side has more encryption layers than the
// first (layers in side order, <0 unknown): only then is the tax worth a
// cipher measurement.
func NeedsTax(layers []int) bool {
	if len(layers) < 2 || layers[0] < 0 {
		return false
	}
	return slices.ContainsFunc(layers[1:], func(n int) bool { return n > layers[0] })
}

// AssessTax computes the tax of every side of r with more encryption layers
// than the first from the medians of the shape's rows (cryptotax.Assess),
// and sets r.Tax.
func AssessTax(r *Result, in TaxInput) error {
	if len(in.Layers) != len(r.Sides) {
		return fmt.Errorf("tax: %d layer counts for %d sides", len(in.Layers), len(r.Sides))
	}
	t := &Tax{CipherBytesPerSecPerCore: in.Limit.BytesPerSecPerCore, Cipher: in.Limit.Source, Caveat: in.Caveat, Sides: []TaxSide{}}
	r.Tax = t
	if in.Shape == nil {
		t.NotComputed = in.NoShape
		if t.NotComputed == "" {
			t.NotComputed = "the workload has no fixed-size I/O phase"
		}
		return nil
	}
	shape := *in.Shape
	t.Shape = &shape
	median := func(metrics []string, side int) float64 {
		var sum float64
		for _, row := range r.Rows {
			if slices.Contains(metrics, row.Metric) && side < len(row.Cells) && row.Cells[side].N > 0 {
				sum += row.Cells[side].Median
			}
		}
		return sum
	}
	base := in.Layers[0]
	if base < 0 {
		t.NotComputed = "the encryption layers of " + r.Sides[0].Name + " are unknown"
		return nil
	}
	plainIOPS := median(shape.IOPS, 0)
	for i := 1; i < len(r.Sides); i++ {
		n := in.Layers[i]
		if n <= base {
			continue
		}
		ts := TaxSide{Name: r.Sides[i].Name, LayersMore: n - base}
		obs := cryptotax.Observation{Layers: n - base, BytesPerIO: shape.BytesPerIO, QueueDepth: shape.QueueDepth, Cores: in.Cores,
			PlainIOPS: plainIOPS, IOPS: median(shape.IOPS, i)}
		if shape.CPU != "" {
			obs.PlainCPU, obs.CPU = median([]string{shape.CPU}, 0), median([]string{shape.CPU}, i)
			obs.PlainBytesPerSec, obs.BytesPerS = obs.PlainIOPS*shape.BytesPerIO, obs.IOPS*shape.BytesPerIO
		}
		tax, err := cryptotax.Assess(in.Limit, obs)
		switch {
		case !(in.Limit.BytesPerSecPerCore > 0):
			ts.NotComputed = "no cipher throughput"
		case err != nil || math.IsNaN(tax.Ratio) || math.IsInf(tax.Ratio, 0):
			ts.NotComputed = "no " + shapeName(shape) + " IOPS on both sides"
		}
		if ts.NotComputed != "" {
			ts.Verdict = cryptotax.VerdictUnknown
			ts.Line = "not computed: " + ts.NotComputed
			t.Sides = append(t.Sides, ts)
			continue
		}
		ts.ExpectedPerIOSeconds, ts.ObservedPerIOSeconds = tax.ExpectedPerIO.Seconds(), tax.ObservedPerIO.Seconds()
		ts.Ratio = ptr(tax.Ratio)
		ts.ExpectedCPUPerGiB = tax.ExpectedCPUPerGiB
		if shape.CPU != "" {
			ts.ObservedCPUPerGiB = ptr(tax.ObservedCPUPerGiB)
		}
		ts.Verdict, ts.Line = tax.Verdict, tax.Line()
		t.Sides = append(t.Sides, ts)
	}
	return nil
}

func shapeName(s TaxShape) string {
	if s.Phase != "" {
		return s.Phase
	}
	return "the workload's"
}

// Heading is the tax's heading line in text.
func (t *Tax) Heading() string { return "Encryption tax (" + t.Basis() + ")" }

// Basis says what the tax expects from: the cipher's cost per core, and
// what was measured.
func (t *Tax) Basis() string {
	return fmt.Sprintf("expected from the cipher's cost, %s per core: %s", units.Throughput(t.CipherBytesPerSecPerCore), t.Cipher)
}

// Subject names a side's tax line: the layers it adds over the first
// side, and the phase.
func (t *Tax) Subject(s TaxSide, baseline string) string {
	what := fmt.Sprintf("%d encryption layer(s) more than %s", s.LayersMore, baseline)
	if t.Shape != nil && t.Shape.Phase != "" {
		what += ", " + t.Shape.Phase
	}
	return fmt.Sprintf("%s (%s)", s.Name, what)
}

// Columns heads the tax table whose rows Cells gives.
func (t *Tax) Columns(baseline string) []string {
	return []string{"side", "layers more than " + baseline, "cipher per I/O", "observed per I/O", "ratio", "verdict"}
}

// Cells is one side's tax as table cells: side, layers more (and the
// phase), cipher per I/O, observed per I/O, ratio, verdict. The Markdown and
// HTML renderers draw the same table.
func (t *Tax) Cells(s TaxSide) []string {
	layers := fmt.Sprint(s.LayersMore)
	if t.Shape != nil && t.Shape.Phase != "" {
		layers += " (" + t.Shape.Phase + ")"
	}
	if s.NotComputed != "" {
		return []string{s.Name, layers, "-", "-", "-", "not computed: " + s.NotComputed}
	}
	ratio := "-"
	if s.Ratio != nil {
		ratio = fmt.Sprintf("%.1fx", *s.Ratio)
	}
	observed := units.Format(s.ObservedPerIOSeconds, units.Seconds)
	if s.ObservedPerIOSeconds >= 0 {
		observed = "+" + observed
	}
	return []string{s.Name, layers, units.Format(s.ExpectedPerIOSeconds, units.Seconds), observed,
		ratio, s.Verdict}
}

// StorageLayers are the encryption layers on each side's target from the
// storage path its results recorded, in side order; -1 where a side
// recorded none.
func StorageLayers(sides []Side) []int {
	out := make([]int, len(sides))
	for i, s := range sides {
		out[i] = -1
		if len(s.Storage) > 0 {
			out[i] = s.Storage[0].EncryptionLayers
		}
	}
	return out
}

// FactValue is the value of a side's fact, "" when it has none.
func (s Side) FactValue(key string) string {
	for _, f := range s.Facts {
		if f.Key == key {
			return f.Value
		}
	}
	return ""
}
