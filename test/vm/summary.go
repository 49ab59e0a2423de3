package vm

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"
)

// SummaryEnv names the file the lab writes its summary to at the end of a
// test run: which kernel each pin became (and why it departs from the
// pin), how long each lab took to prepare and each scenario's boot. `make
// test` prints it, so a kernel the archive moved shows on a green run too.
const SummaryEnv = "SLOWPATH_VM_SUMMARY"

// labSummary collects the lines; the zero value is ready.
type labSummary struct {
	mu      sync.Mutex
	kernels []string
	boots   map[string][]bootTime
}

type bootTime struct {
	test string
	d    time.Duration
}

var summary labSummary

func (s *labSummary) kernel(name string, k *Kernel, prep time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := fmt.Sprintf("kernel %s: %s %s, lab ready in %v", name, k.Release, k.Version, prep.Round(time.Second))
	if k.Resolved != nil && len(k.Resolved.Changed) > 0 {
		line += " (not the pin: " + strings.Join(k.Resolved.Changed, "; ") + ")"
	} else {
		line += " (as pinned)"
	}
	s.kernels = append(s.kernels, line)
}

func (s *labSummary) boot(kernel, test string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.boots == nil {
		s.boots = map[string][]bootTime{}
	}
	s.boots[kernel] = append(s.boots[kernel], bootTime{test, d})
}

// String is the summary: kernels, then per kernel each boot's time
// (TCG wall time: what the suite costs, not a performance figure).
func (s *labSummary) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.kernels) == 0 && len(s.boots) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("vm lab summary\n")
	kernels := append([]string(nil), s.kernels...)
	sort.Strings(kernels)
	for _, k := range kernels {
		fmt.Fprintf(&b, "  %s\n", k)
	}
	var names []string
	for n := range s.boots {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		bs := append([]bootTime(nil), s.boots[n]...)
		sort.Slice(bs, func(i, j int) bool { return bs[i].test < bs[j].test })
		var total time.Duration
		for _, bt := range bs {
			total += bt.d
		}
		fmt.Fprintf(&b, "  boots on %s: %d, %v in all\n", n, len(bs), total.Round(time.Second))
		for _, bt := range bs {
			fmt.Fprintf(&b, "    %-48s %v\n", bt.test, bt.d.Round(100*time.Millisecond))
		}
	}
	return b.String()
}

// write puts the summary where SummaryEnv says, if it says; nothing is
// written when no lab was prepared.
func (s *labSummary) write() error {
	path := os.Getenv(SummaryEnv)
	text := s.String()
	if path == "" || text == "" {
		return nil
	}
	return os.WriteFile(path, []byte(text), 0o644)
}
