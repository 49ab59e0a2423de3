package neighbour

import (
	"math"
	"testing"
	"time"
)

// TestNeighbour: the co-runner wakes about once a period while it runs,
// never more often (each deadline is a period after the last wake-up),
// and every lateness is a duration, not negative.
func TestNeighbour(t *testing.T) {
	n := Start(Period)
	start := time.Now()
	time.Sleep(200 * time.Millisecond)
	late := n.Stop()
	elapsed := time.Since(start)
	if len(late) == 0 {
		t.Fatal("no wake-up recorded in 200 ms")
	}
	if max := int(elapsed/Period) + 1; len(late) > max {
		t.Errorf("%d wake-ups in %v, at most %d can happen", len(late), elapsed, max)
	}
	for i, l := range late {
		if l < 0 {
			t.Fatalf("wake-up %d: lateness %d ns", i, l)
		}
	}
	p, ok := P99(late)
	if !ok || p < 0 || math.IsNaN(p) {
		t.Errorf("p99 %v %v", p, ok)
	}
	t.Logf("%d wake-ups in %v, lateness p99 %.1f µs", len(late), elapsed, p*1e6)
}

// TestP99: stats' inverted-CDF quantile of the samples, in seconds.
func TestP99(t *testing.T) {
	late := make([]int64, 100)
	for i := range late {
		late[i] = int64(i+1) * 1000 // 1..100 µs
	}
	if p, ok := P99(late); !ok || math.Abs(p-99e-6) > 1e-12 {
		t.Errorf("p99 of 1..100 µs = %v, want 99 µs", p)
	}
	if _, ok := P99(nil); ok {
		t.Error("a p99 of nothing")
	}
}
