// Package nettree writes, for tests, a node's host tree whose per-CPU
// backlog drops (/proc/net/softnet_stat) the test keeps moving at a rate
// it can change, and whose fix state file it can write as `slowpath fix
// --apply` would: a node of a fleet whose canary verdict the agent and
// Prometheus read, on a test host that drops nothing. Each node also
// serves its service's throughput counter (indexed_docs_total), as the
// user's own exporter would.
package nettree

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/fixstate"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/stdfile"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// BootID is every tree's boot id, the one the state file records.
const BootID = "6b1c2f0e-31a4-4c2b-9d6e-2f6a7c0b1d31"

// Tick is how often Keep advances the counters.
const Tick = 50 * time.Millisecond

// Tree is one node. Its rates may change while an agent reads it.
type Tree struct {
	Root string
	FS   hostfs.FS // not live: the tree is not this host's
	// Service is the URL of the node's service exporter.
	Service string

	cpus int
	mu   sync.Mutex
	// The counters grow with the time since the rates were last set, not
	// with the ticks: a tick a loaded machine skips does not slow them.
	since                    time.Time
	dropRate, docRate        float64 // per second: backlog drops per CPU, documents
	baseDropped, baseDocs    float64 // at since
	processed, dropped, docs uint64
	backlog                  int
}

// Write makes the tree with cpus processors, netdev_max_backlog 1000, and
// starts the service exporter.
func Write(t testing.TB, cpus int) *Tree {
	t.Helper()
	root := t.TempDir()
	var ci strings.Builder
	for i := range cpus {
		fmt.Fprintf(&ci, "processor\t: %d\nmodel name\t: Test CPU\nflags\t\t: fpu sse2 aes avx2\n\n", i)
	}
	hostfstest.WriteFile(t, root, "proc/cpuinfo", ci.String())
	hostfstest.WriteFile(t, root, "proc/sys/kernel/random/boot_id", BootID+"\n")
	hostfstest.WriteFile(t, root, "proc/sys/kernel/osrelease", "6.18.0-test\n")
	tr := &Tree{Root: root, FS: hostfs.New(root), cpus: cpus, backlog: 1000}
	tr.mu.Lock()
	err := tr.write()
	tr.mu.Unlock()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		tr.mu.Lock()
		docs := tr.docs
		tr.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP indexed_docs_total Documents indexed.\n# TYPE indexed_docs_total counter\nindexed_docs_total %d\n", docs)
	}))
	t.Cleanup(srv.Close)
	tr.Service = strings.TrimPrefix(srv.URL, "http://")
	return tr
}

// SetRates sets the backlog drops per second (spread over the CPUs) and
// the documents indexed per second from now on.
func (tr *Tree) SetRates(dropsPerSecond, docsPerSecond float64) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	now := time.Now()
	tr.baseDropped, tr.baseDocs = tr.at(now)
	tr.since = now
	tr.dropRate, tr.docRate = dropsPerSecond/float64(tr.cpus), docsPerSecond
}

// at is the counters' values at t. Caller holds mu.
func (tr *Tree) at(t time.Time) (dropped, docs float64) {
	if tr.since.IsZero() {
		return tr.baseDropped, tr.baseDocs
	}
	d := t.Sub(tr.since).Seconds()
	return tr.baseDropped + tr.dropRate*d, tr.baseDocs + tr.docRate*d
}

// Apply records in the state file that fix --apply set the sysctl key to
// value for the check id at time at (and sets it in the tree), as
// internal/fix/apply writes it.
func (tr *Tree) Apply(id, key string, value int64, at time.Time) error {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	step := fix.Step{Change: fix.Sysctl{Key: key, To: value}}
	raw, err := json.Marshal(step)
	if err != nil {
		return err
	}
	st := fixstate.State{BootID: BootID, Changes: []fixstate.Change{{
		Key: step.Key(), ID: id, Subject: "cpu", Step: raw, Previous: fmt.Sprint(tr.backlog), Applied: fmt.Sprint(value), AppliedAt: at,
	}}, Files: []fixstate.FileChange{}}
	st.Stamp()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	p := tr.FS.RootPath(fixstate.DefaultPath)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := replace(p, string(b)); err != nil {
		return err
	}
	tr.backlog = int(value)
	return tr.write()
}

// Keep advances the counters every Tick until the test ends.
func (tr *Tree) Keep(t testing.TB) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(Tick)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				tr.mu.Lock()
				tr.processed += 1000
				dropped, docs := tr.at(time.Now())
				tr.dropped, tr.docs = uint64(dropped), uint64(docs)
				// A write error shows in the agent's next scrape.
				_ = tr.write()
				tr.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() { close(stop); <-done })
}

// write replaces the moving files, each whole. Caller holds mu.
func (tr *Tree) write() error {
	var sn strings.Builder
	for cpu := range tr.cpus {
		// net/core/net-procfs.c, 6.x: processed, dropped, time_squeeze,
		// 0 x5, cpu_collision, received_rps, flow_limit_count,
		// backlog length, cpu index, input_qlen, process_qlen.
		fmt.Fprintf(&sn, "%08x %08x 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 00000000 %08x 00000000 00000000\n",
			uint32(tr.processed), uint32(tr.dropped), cpu)
	}
	if err := replace(filepath.Join(tr.Root, "proc/net/softnet_stat"), sn.String()); err != nil {
		return err
	}
	return replace(filepath.Join(tr.Root, "proc/sys/net/core/netdev_max_backlog"), fmt.Sprintf("%d\n", tr.backlog))
}

// replace writes p whole (stdfile.WriteFile), so an agent reading it
// sees the old or the new content, never half of it.
func replace(p, content string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return stdfile.WriteFile(p, func(w io.Writer) error {
		_, err := io.WriteString(w, content)
		return err
	})
}
