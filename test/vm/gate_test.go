package vm

import (
	"testing"
	"time"
)

// TestGateLongestFirst: with the slots taken, waiters start longest
// first, equals in arrival order, and never more than the slots at once.
func TestGateLongestFirst(t *testing.T) {
	g := NewGate(2)
	r1 := g.Acquire(time.Second)
	r2 := g.Acquire(time.Second)
	costs := []time.Duration{10, 300, 60, 300, 5}
	started := make(chan int, len(costs))
	for i, c := range costs {
		go func() {
			release := g.Acquire(c * time.Second)
			started <- i
			release()
		}()
		// Each waiter queued before the next arrives: the order of
		// arrival is the test's, not the scheduler's.
		waitQueued(t, g, i+1)
	}
	r1()
	var order []int
	for range costs {
		order = append(order, <-started)
	}
	r2()
	want := []int{1, 3, 2, 0, 4}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("start order %v, want %v (costs %v)", order, want, costs)
		}
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.free != 2 || len(g.waiting) != 0 {
		t.Errorf("after every release: %d free, %d waiting; want 2 and 0", g.free, len(g.waiting))
	}
}

func waitQueued(t *testing.T, g *Gate, n int) {
	t.Helper()
	for range 10000 {
		g.mu.Lock()
		q := len(g.waiting)
		g.mu.Unlock()
		if q == n {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("%d waiters never queued", n)
}

func TestExpectedBoot(t *testing.T) {
	for _, c := range []struct {
		test, kernel string
		want         time.Duration
	}{
		// The kernel's name is dropped: the table's entry for the rest.
		{"TestFixProve/6.1", "6.1", bootCost["TestFixProve"]},
		{"TestCryptLabModel/6.12/boot-b", "6.12", bootCost["TestCryptLabModel/boot-b"]},
		{"TestCryptLabModel/6.1/boot-a", "6.12", time.Minute}, // another kernel's name is not dropped
		{"TestNew", "6.1", time.Minute},
	} {
		if got := expectedBoot(c.test, c.kernel); got != c.want {
			t.Errorf("expectedBoot(%q, %q) = %v, want %v", c.test, c.kernel, got, c.want)
		}
	}
}
