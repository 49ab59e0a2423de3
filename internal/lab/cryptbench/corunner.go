package cryptbench

import (
	"github.com/slowpath/slowpath/internal/comparison"
	"github.com/slowpath/slowpath/internal/units"
	"github.com/slowpath/slowpath/internal/workload/neighbour"
)

// NeighbourP99 is the row of the co-runner's wake-up lateness p99.
const NeighbourP99 = "neighbour wake p99"

// coRunner runs the neighbour beside each run of the matrix: started as a
// run starts, stopped when it completes (or when the next starts, or the
// matrix ends, after a run that failed), its p99 kept by the run's name.
type coRunner struct {
	on      bool
	running *neighbour.Neighbour
	name    string
	p99     map[string]float64
}

func newCoRunner(on bool) *coRunner { return &coRunner{on: on, p99: map[string]float64{}} }

func (c *coRunner) start(name string) {
	if !c.on {
		return
	}
	c.stop()
	c.running, c.name = neighbour.Start(neighbour.Period), name
}

func (c *coRunner) stop() {
	if c.running == nil {
		return
	}
	if p, ok := neighbour.P99(c.running.Stop()); ok {
		c.p99[c.name] = p
	}
	c.running = nil
}

// addTo puts the p99 of the run called name into run.
func (c *coRunner) addTo(run *comparison.Run, name string) {
	p, ok := c.p99[name]
	if !ok {
		return
	}
	run.Metrics[NeighbourP99] = comparison.Measure{Unit: units.Seconds, Better: comparison.LowerIsBetter, Value: p}
	run.Order = append(run.Order, NeighbourP99)
}
