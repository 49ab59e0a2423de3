package benchcmd

import (
	"time"

	"github.com/jedib0t/go-pretty/v6/progress"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// bar shows the run's progress on a terminal (go-pretty's progress
// writer); it does nothing when stdout is not a TTY.
type bar struct {
	pw      progress.Writer
	tracker *progress.Tracker
	plan    *profile.Plan
	quit    chan struct{}
	stopped chan struct{}
}

func newProgress(env *clienv.Env, plan *profile.Plan) *bar {
	b := &bar{plan: plan}
	if !env.StdoutTTY {
		return b
	}
	var total time.Duration
	for _, p := range plan.Phases {
		total += p.Expected
	}
	b.pw = progress.NewWriter()
	b.pw.SetOutputWriter(env.Stdout)
	b.pw.SetAutoStop(false)
	b.pw.SetTrackerLength(30)
	b.pw.SetMessageLength(32)
	b.pw.Style().Visibility.ETA = true
	b.pw.Style().Visibility.Value = false
	b.pw.SetUpdateFrequency(200 * time.Millisecond)
	b.pw.Style().Visibility.Percentage = true
	b.tracker = &progress.Tracker{Message: plan.Profile, Total: int64(total / time.Millisecond), Units: progress.UnitsDefault}
	b.pw.AppendTracker(b.tracker)
	go b.pw.Render()
	b.quit, b.stopped = make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(b.stopped)
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-b.quit:
				return
			case <-t.C:
				// Wall-clock progress against the expected time, held
				// below 100% until the run says it is done.
				v := int64(time.Since(start) / time.Millisecond)
				b.tracker.SetValue(min(v, b.tracker.Total*99/100))
			}
		}
	}()
	return b
}

func (b *bar) phase(i int, name string) {
	if b.tracker != nil {
		b.tracker.UpdateMessage(b.plan.Profile + ": " + name)
	}
}

func (b *bar) done(ok bool) {
	if b.tracker == nil {
		return
	}
	close(b.quit)
	<-b.stopped
	if ok {
		b.tracker.SetValue(b.tracker.Total)
		b.tracker.MarkAsDone()
	} else {
		b.tracker.MarkAsErrored()
	}
	// Let the writer draw the final state before it stops.
	time.Sleep(250 * time.Millisecond)
	b.pw.Stop()
	for b.pw.IsRenderInProgress() {
		time.Sleep(10 * time.Millisecond)
	}
}
