package watchcmd_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/cli/netcmd/watchcmd"
	"github.com/slowpath/slowpath/internal/testing/netlab"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

type floodRun struct {
	intervals []watchcmd.Interval
	findings  []check.Finding
	before    netlab.Counters
	after     netlab.Counters
}

// floodWatched runs `slowpath net watch --format json` (and optionally
// doctor) inside the receiver namespace around a 3 s iperf3 UDP flood.
// With viaFlag the watch starts in the host namespace and enters the
// receiver's with --netns instead of being started inside it.
func floodWatched(t *testing.T, l *netlab.Lab, bin string, withDoctor, viaFlag bool) floodRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var r floodRun
	var err error
	if r.before, err = l.ReadCounters(); err != nil {
		t.Fatal(err)
	}
	args := []string{"net", "watch", "--format", "json", "--interval", "1s", "--duration", "8500ms"}
	var wcmd *exec.Cmd
	if viaFlag {
		wcmd = exec.CommandContext(ctx, bin, append(args, "--netns", l.Receiver)...)
	} else if wcmd, err = l.Command(ctx, l.Receiver, append([]string{bin}, args...)...); err != nil {
		t.Fatal(err)
	}
	var wout, werr bytes.Buffer
	wcmd.Stdout, wcmd.Stderr = &wout, &werr
	if err := l.Start(wcmd); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1200 * time.Millisecond) // first sample is the baseline
	var dcmd *exec.Cmd
	var dout, derr bytes.Buffer
	if withDoctor {
		// Doctor's two samples (2 s apart) fall inside the flood.
		dcmd, err = l.Command(ctx, l.Receiver, bin, "doctor", "--format", "json", "--net-interval", "2s", "--fail-on", "none", "--cloud", "none")
		if err != nil {
			t.Fatal(err)
		}
		dcmd.Stdout, dcmd.Stderr = &dout, &derr
		go func() {
			time.Sleep(300 * time.Millisecond)
			if err := l.Start(dcmd); err != nil {
				t.Error(err)
			}
		}()
	}
	res, err := l.Flood(ctx, 3*time.Second, netlab.FloodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("flood: %+v", res)
	if err := l.Wait(wcmd); err != nil {
		t.Fatalf("net watch: %v\n%s", err, werr.String())
	}
	if r.after, err = l.ReadCounters(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&wout)
	for sc.Scan() {
		var iv watchcmd.Interval
		if err := json.Unmarshal(sc.Bytes(), &iv); err != nil {
			t.Fatalf("net watch printed a line that is not JSON: %q: %v", sc.Text(), err)
		}
		r.intervals = append(r.intervals, iv)
	}
	if len(r.intervals) < 4 {
		t.Fatalf("net watch printed %d intervals, want at least 4:\n%s\n%s", len(r.intervals), wout.String(), werr.String())
	}
	if withDoctor {
		if err := l.Wait(dcmd); err != nil {
			t.Fatalf("doctor: %v\n%s", err, derr.String())
		}
		var rep struct {
			Findings []check.Finding `json:"findings"`
		}
		if err := json.Unmarshal(dout.Bytes(), &rep); err != nil {
			t.Fatalf("doctor JSON: %v\n%s", err, dout.String())
		}
		r.findings = rep.Findings
	}
	return r
}

// sum adds up counter*interval over all intervals for one layer and counter.
func (r floodRun) sum(layer, counter string) float64 {
	var s float64
	for _, iv := range r.intervals {
		for _, rt := range iv.Rates {
			if string(rt.Layer) == layer && rt.Counter == counter {
				s += rt.PerSecond * iv.IntervalSeconds
			}
		}
	}
	return s
}

// TestReproBacklogDrops is the reproduction of issue 4: two namespaces,
// RPS to one CPU, netdev_max_backlog=16, a UDP flood. The drops must be
// attributed to the backlog layer, socket-buffer drops told apart, doctor
// must report net.backlog-drops, and with the backlog at 1000 the backlog
// drops must stop. netlab restores the sysctl and deletes the namespaces
// in t.Cleanup, also on failure.
func TestReproBacklogDrops(t *testing.T) {
	if testing.Short() {
		t.Skip("real reproduction: netns, iperf3 flood")
	}
	bin := testenv.BuildSlowpath(t)
	l := netlab.New(t, netlab.Options{})
	if err := l.SetBacklog(16); err != nil {
		t.Fatal(err)
	}

	small := floodWatched(t, l, bin, true, false)
	labDropped := float64(small.after.Sub(small.before).TotalSoftnetDropped())
	watchedBacklog := small.sum("backlog", "softnet_dropped")
	t.Logf("backlog 16: lab softnet dropped %.0f, watch backlog softnet_dropped %.0f, socket Udp.RcvbufErrors %.0f",
		labDropped, watchedBacklog, small.sum("socket", "Udp.RcvbufErrors"))
	if labDropped == 0 {
		t.Fatal("the flood caused no backlog drops at netdev_max_backlog=16: the reproduction did not reproduce")
	}
	// Watch covers the whole flood, so it must see (nearly) all the drops.
	if watchedBacklog < 0.9*labDropped {
		t.Errorf("watch attributed %.0f drops to the backlog layer, softnet_stat counted %.0f", watchedBacklog, labDropped)
	}
	dropTops := 0
	for _, iv := range small.intervals {
		// The flood's losses are backlog drops and socket-buffer drops
		// (the iperf3 server cannot keep up); nothing else may be named,
		// except a time squeeze in an interval without drops.
		if iv.Top != nil {
			switch iv.Top.Layer {
			case "backlog", "socket":
				dropTops++
			case "budget":
			default:
				t.Errorf("top offender %+v is neither the backlog nor the socket layer", *iv.Top)
			}
		}
		for _, rt := range iv.Rates {
			// softnet drops belong to the backlog, socket-buffer drops to the socket layer: never mixed.
			if rt.Counter == "softnet_dropped" && rt.Layer != "backlog" || rt.Counter == "Udp.RcvbufErrors" && rt.Layer != "socket" {
				t.Errorf("counter %s attributed to layer %s", rt.Counter, rt.Layer)
			}
		}
	}
	if dropTops == 0 {
		t.Errorf("no interval named a backlog or socket counter as top offender: %+v", small.intervals)
	}
	if watchedBacklog > 1.1*labDropped {
		t.Errorf("watch attributed %.0f drops to the backlog layer, more than softnet_stat counted (%.0f)", watchedBacklog, labDropped)
	}
	if rcv := small.after.UDPRcvbufErrors - small.before.UDPRcvbufErrors; rcv > 0 {
		if got := small.sum("socket", "Udp.RcvbufErrors"); got < 0.9*float64(rcv) {
			t.Errorf("receiver netns counted %d Udp RcvbufErrors, watch attributed %.0f to the socket layer", rcv, got)
		}
	}
	var found bool
	for _, f := range small.findings {
		if f.ID == "net.backlog-drops" && f.Status == check.Fail {
			found = true
		}
	}
	if !found {
		t.Errorf("doctor did not report net.backlog-drops during the flood; findings: %+v", small.findings)
	}

	if err := l.SetBacklog(1000); err != nil {
		t.Fatal(err)
	}
	large := floodWatched(t, l, bin, false, true)
	labDropped = float64(large.after.Sub(large.before).TotalSoftnetDropped())
	watchedBacklog = large.sum("backlog", "softnet_dropped")
	t.Logf("backlog 1000: lab softnet dropped %.0f, watch backlog %.0f, socket Udp.RcvbufErrors %.0f",
		labDropped, watchedBacklog, large.sum("socket", "Udp.RcvbufErrors"))
	if watchedBacklog != 0 || labDropped != 0 {
		t.Errorf("with netdev_max_backlog=1000 backlog drops continue: watch %.0f, softnet_stat %.0f", watchedBacklog, labDropped)
	}
	// This run watched through --netns: it must have seen the receiver
	// namespace's socket counters, which the host namespace does not have.
	if rcv := large.after.UDPRcvbufErrors - large.before.UDPRcvbufErrors; rcv > 0 {
		if got := large.sum("socket", "Udp.RcvbufErrors"); got < 0.9*float64(rcv) {
			t.Errorf("net watch --netns %s saw %.0f Udp RcvbufErrors, the namespace counted %d", l.Receiver, got, rcv)
		}
	}
}
