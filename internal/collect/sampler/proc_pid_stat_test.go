package sampler

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// TestThreadStates: this test's own process, counted by state and wait
// channel, has one entry per group and as many threads in all as
// /proc/self/task lists (threads may come and go between the two reads
// only in the Go runtime's own pool, which a count at rest keeps).
func TestThreadStates(t *testing.T) {
	got, err := ThreadStates(hostfs.Default(), os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	entry := regexp.MustCompile(`^([0-9]+) [RSDTtZXIPWK] ?[a-z0-9_.]*$`)
	n := 0
	for _, part := range strings.Split(got, ", ") {
		m := entry.FindStringSubmatch(part)
		if m == nil {
			t.Fatalf("entry %q of %q: want COUNT STATE WCHAN", part, got)
		}
		c, _ := strconv.Atoi(m[1])
		n += c
	}
	if n == 0 {
		t.Errorf("%q counts no thread", got)
	}
	if _, err := ThreadStates(hostfs.Default(), 1<<30); err == nil {
		t.Error("a pid that does not exist: no error")
	}
}
