package netcmd

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/model/netmodel"
)

func runNet(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &clienv.Env{Stdout: &out, Stderr: &errb}
	cmd := NewCmdNet(env)
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	err := cmd.Execute()
	return out.String(), err
}

func TestNetFromSnapshot(t *testing.T) {
	const fx = "../../../testdata/hosts/net-azure-accelnet.json"
	out, err := runNet(t, "--from", fx, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m netmodel.Model
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	top, ok := netmodel.Top(m.Counters)
	if !ok || top.Layer != netmodel.LayerRing || top.Counter != "rx_out_of_buffer" || m.IntervalSeconds != 1 {
		t.Errorf("top offender %+v (interval %v)", top, m.IntervalSeconds)
	}
	out, err = runNet(t, "--from", fx)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ring rx 1024/8192", "SR-IOV VF of eth0", "net.core.netdev_max_backlog = 1000", "rates over 1.0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
}

func TestNetErrors(t *testing.T) {
	if _, err := runNet(t, "--format", "xml"); err == nil {
		t.Error("--format xml accepted")
	}
	if _, err := runNet(t, "--from", "/nonexistent/snap.json"); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing snapshot: %v", err)
	}
}

func TestNetIntervalFlag(t *testing.T) {
	var got *Options
	cmd := NewCmdNet(&clienv.Env{}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs([]string{"--net-interval", "0"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Net.Interval != 0 {
		t.Errorf("--net-interval 0 gave %v", got.Net.Interval)
	}
	got = nil
	cmd = NewCmdNet(&clienv.Env{}, func(_ context.Context, o *Options) error { got = o; return nil })
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Net.Interval != time.Second {
		t.Errorf("default interval %v, want 1s", got.Net.Interval)
	}
}
