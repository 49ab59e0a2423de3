// Package neighbour is lab crypt's latency-sensitive co-runner
// (--neighbour): one OS thread that sleeps a fixed period to an absolute
// deadline and records how late each wake-up comes. dm-crypt's kcryptd
// and dmcrypt_write threads run on the CPUs everything else uses, and
// high_priority makes its workqueues high-priority ones: the cost to
// other tenants is the neighbour's lateness, which a variant can raise
// while it lowers its own latency.
package neighbour

import (
	"time"

	"github.com/slowpath/slowpath/internal/stats"
	"github.com/slowpath/slowpath/internal/workload/timerslack"
)

// Period is the neighbour's sleep: a service ticking every millisecond.
const Period = time.Millisecond

// maxSamples bounds memory: over an hour of 1 ms ticks.
const maxSamples = 4 << 20

// Neighbour is a running co-runner.
type Neighbour struct {
	stop chan struct{}
	done chan []int64
}

// Start starts the co-runner on its own OS thread.
func Start(period time.Duration) *Neighbour {
	n := &Neighbour{stop: make(chan struct{}), done: make(chan []int64, 1)}
	go n.run(period)
	return n
}

// Stop ends the co-runner and returns each wake-up's lateness in ns, in
// order.
func (n *Neighbour) Stop() []int64 {
	close(n.stop)
	return <-n.done
}

func (n *Neighbour) run(period time.Duration) {
	// The thread is the neighbour: its wake-ups must not wait for the Go
	// scheduler nor for timer slack.
	defer timerslack.Lock()()
	var late []int64
	next := timerslack.Now() + period.Nanoseconds()
	for {
		select {
		case <-n.stop:
			n.done <- late
			return
		default:
		}
		timerslack.SleepUntil(next)
		woke := timerslack.Now()
		if len(late) < maxSamples {
			late = append(late, max(0, woke-next))
		}
		// The next deadline is a period after this wake-up: a late tick
		// does not make the following ones early.
		next = woke + period.Nanoseconds()
	}
}

// P99 is the 99th percentile of lateness in seconds (stats' quantile);
// false without samples.
func P99(late []int64) (float64, bool) {
	if len(late) == 0 {
		return 0, false
	}
	v := make([]float64, len(late))
	for i, l := range late {
		v[i] = float64(l) / 1e9
	}
	q, err := stats.Exact(v).Quantile(0.99)
	return q, err == nil
}
