package apply

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/loopfs"
)

func TestActiveScheduler(t *testing.T) {
	for _, tt := range []struct{ in, want, err string }{
		{"none [mq-deadline] kyber bfq\n", "mq-deadline", ""},
		{"[none] mq-deadline\n", "none", ""},
		{"none\n", "none", ""},
		{"none mq-deadline\n", "", "names no active scheduler"},
		{"", "", "names no active scheduler"},
		{"[]\n", "", "names no active scheduler"},
	} {
		got, err := activeScheduler(tt.in)
		if got != tt.want || (tt.err == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%q: %q, %v; want %q, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
}

// TestSchedulerOnALoopDevice: the scheduler step on a real block device
// (a loop device this test binds): --apply sets it through sysfs, a
// second apply changes nothing, rollback restores the one before.
func TestSchedulerOnALoopDevice(t *testing.T) {
	dev := filepath.Base(loopfs.Device(t, 1<<20))
	h := Live(hostfs.Default())
	if err := h.SetScheduler(dev, "mq-deadline"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.SetScheduler(dev, "none") })
	st := fix.Step{Change: fix.Scheduler(check.SchedulerChange{Device: dev, From: "mq-deadline", To: "none", Available: []string{"none", "mq-deadline"}})}
	st.Command = fix.StepCommand(st)
	e := fix.Entry{ID: "dmcrypt.scheduler", Subject: "/dev/" + dev, Steps: []fix.Step{st}}
	state := filepath.Join(t.TempDir(), "state.json")
	a, err := Open(h, state, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	outs, err := a.ApplyEntry(e)
	if err != nil {
		t.Fatal(err)
	}
	if len(outs) != 1 || !outs[0].Changed {
		t.Fatalf("outcomes %+v", outs)
	}
	if got, err := h.Scheduler(dev); got != "none" || err != nil {
		t.Fatalf("after apply: %q %v", got, err)
	}
	raw, _ := os.ReadFile("/sys/block/" + dev + "/queue/scheduler")
	if !strings.Contains(string(raw), "[none]") {
		t.Errorf("the kernel says %q", raw)
	}
	if outs, err = a.ApplyEntry(e); err != nil || len(outs) != 1 || outs[0].Changed {
		t.Errorf("second apply: %+v %v", outs, err)
	}
	if err := a.Rollback(false); err != nil {
		t.Fatal(err)
	}
	if got, err := h.Scheduler(dev); got != "mq-deadline" || err != nil {
		t.Errorf("after rollback: %q %v", got, err)
	}
}

// A device name from a snapshot that is not one sysfs entry names nothing.
func TestSchedulerStaysInSysBlock(t *testing.T) {
	h := Host{FS: hostfs.New(t.TempDir())}
	for _, dev := range []string{"", ".", "..", "../../etc", "a/b", "x\x00"} {
		if _, err := h.Scheduler(dev); err == nil {
			t.Errorf("%q: read", dev)
		}
		if err := h.SetScheduler(dev, "none"); err == nil {
			t.Errorf("%q: written", dev)
		}
	}
}
