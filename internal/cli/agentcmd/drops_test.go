package agentcmd_test

import (
	"context"
	"net/http"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/testing/agenttest"
	"github.com/slowpath/slowpath/internal/testing/netlab"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

var cpuBacklog = regexp.MustCompile(`(?m)^slowpath_skb_drops_total\{layer="backlog",reason="CPU_BACKLOG"\} (\S+)$`)

func backlogDrops(t *testing.T, addr string) uint64 {
	t.Helper()
	code, body := get(t, http.DefaultClient, "http://"+addr+"/metrics", "", "")
	if code != 200 {
		t.Fatalf("status %d", code)
	}
	if m := cpuBacklog.FindStringSubmatch(body); m != nil {
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return uint64(v)
	}
	return 0 // no CPU_BACKLOG drop seen yet: the series appears with the first
}

// TestDropsCollectorFlood: with --collector.drops, the agent's CPU_BACKLOG
// counter grows by exactly the softnet_stat dropped delta of an iperf3
// flood into a veth whose RPS CPU has a 16-packet backlog (internal/testing/netlab).
func TestDropsCollectorFlood(t *testing.T) {
	testenv.RequireRoot(t)
	testenv.RequireTool(t, "iperf3", "iperf3")
	lab := netlab.New(t, netlab.Options{RPSCPU: 0})
	if err := lab.SetBacklog(16); err != nil {
		t.Fatal(err)
	}
	addr := agenttest.Start(t, "--from", filepath.Join(hostsDir, "plain-host.json"), "--collector.drops")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	first := backlogDrops(t, addr)
	res, d, err := lab.FloodCounted(ctx, 3*time.Second, netlab.FloodOptions{})
	if err != nil {
		t.Fatal(err)
	}
	last := backlogDrops(t, addr)
	softnet := d.TotalSoftnetDropped()
	t.Logf("flood: %d sent, %d received; softnet dropped %d; slowpath_skb_drops_total CPU_BACKLOG %d → %d",
		res.SentPackets, res.ReceivedPackets, softnet, first, last)
	if softnet == 0 {
		t.Fatal("the flood caused no backlog drops")
	}
	if last-first != softnet {
		t.Errorf("CPU_BACKLOG grew by %d, softnet_stat dropped by %d", last-first, softnet)
	}
}
