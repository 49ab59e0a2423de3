package experiment

import (
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// Declared is what profile name declares for comparison.ForProfile: its
// primary and guard metrics and its fixed-size I/O phase, as row names;
// empty for a name no profile plans or one that declares nothing.
func Declared(name string) comparison.Declared {
	var d comparison.Declared
	if m, ok := profile.MetricsOf(name); ok {
		d.Primary, d.Guards = profile.Rows(m.Primary), profile.Rows(m.Guards)
	}
	if s, ok := profile.TaxShapeOf(name); ok {
		d.Shape = &comparison.TaxShape{Phase: s.Phase, IOPS: profile.Rows(s.IOPS), BytesPerIO: float64(s.BytesPerIO), QueueDepth: s.QueueDepth}
	}
	return d
}
