package comparecmd

import (
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/model/cryptotax"
	"github.com/slowpath/slowpath/internal/workload/cipherlimit"
)

// taxShape is a profile phase whose I/O size and queue depth are fixed, so
// the expected encryption tax can be computed from its IOPS: db-commit's
// direct-4k phase is 4 KiB psync I/O by one job (internal/workload/profile).
type taxShape struct {
	profile, phase string
	bytesPerIO     float64
	queueDepth     int
}

var taxShapes = []taxShape{{"db-commit", "direct-4k", 4096, 1}}

// needsTax reports whether the profile has a fixed-size I/O phase and some
// side has more encryption layers on its target than the baseline, so the
// tax is worth a cipher measurement. Other comparisons print nothing more,
// and their output stays deterministic.
func needsTax(sides []comparison.Side) bool {
	base, ok := layers(sides[0])
	profile := fact(sides[0], "profile")
	if !ok || !slices.ContainsFunc(taxShapes, func(t taxShape) bool { return t.profile == profile }) {
		return false
	}
	for _, s := range sides[1:] {
		if n, ok := layers(s); ok && n > base {
			return true
		}
	}
	return false
}

func layers(s comparison.Side) (int, bool) {
	if len(s.Storage) == 0 {
		return 0, false
	}
	return s.Storage[0].EncryptionLayers, true
}

func fact(s comparison.Side, key string) string {
	i := slices.IndexFunc(s.Facts, func(f comparison.Fact) bool { return f.Key == key })
	if i < 0 {
		return ""
	}
	return s.Facts[i].Value
}

// measureLimit measures one core's cipher on this machine for the tax (per
// core is all the tax uses).
func measureLimit(ctx context.Context, fs hostfs.FS) (cryptotax.Limit, error) {
	r, err := cipherlimit.Measure(ctx, fs, cipherlimit.Options{Duration: 300 * time.Millisecond, PerCoreOnly: true})
	if err != nil {
		return cryptotax.Limit{}, err
	}
	return cryptotax.Limit{BytesPerSecPerCore: r.PerCore, Source: r.What}, nil
}

// writeTax prints the expected encryption tax of each side with more
// encryption layers than the baseline against the overhead observed
// (docs/lab.md, "The tax line"). The cipher is measured where compare runs,
// which speaks for the results only if they ran on the same CPU: the line
// says so.
func writeTax(w io.Writer, res *comparison.Result, sides []comparison.Side, limit cryptotax.Limit) {
	base, _ := layers(sides[0])
	profile := fact(sides[0], "profile")
	i := slices.IndexFunc(taxShapes, func(t taxShape) bool { return t.profile == profile })
	fmt.Fprintf(w, "\nEncryption tax (cipher measured now on this machine, %.2f GB/s per core: %s; valid for results from this CPU)\n", limit.BytesPerSecPerCore/1e9, limit.Source)
	if i < 0 {
		fmt.Fprintf(w, "  not computed: profile %q has no fixed-size I/O phase (db-commit's direct-4k has)\n", profile)
		return
	}
	shape := taxShapes[i]
	iops := func(side int) float64 {
		var sum float64
		for _, row := range res.Rows {
			if row.Metric == shape.phase+" read_iops" || row.Metric == shape.phase+" write_iops" {
				if side < len(row.Cells) && row.Cells[side].N > 0 {
					sum += row.Cells[side].Median
				}
			}
		}
		return sum
	}
	for si, s := range sides[1:] {
		n, ok := layers(s)
		if !ok || n <= base {
			continue
		}
		tax, err := cryptotax.Assess(limit, cryptotax.Observation{Layers: n - base, BytesPerIO: shape.bytesPerIO,
			QueueDepth: shape.queueDepth, PlainIOPS: iops(0), IOPS: iops(si + 1)})
		if err != nil {
			fmt.Fprintf(w, "  %s: not computed: no %s IOPS on both sides\n", s.Name, shape.phase)
			continue
		}
		fmt.Fprintf(w, "  %s (%d encryption layer(s) more than %s, %s): %s\n", s.Name, n-base, sides[0].Name, shape.phase, tax.Line())
	}
}
