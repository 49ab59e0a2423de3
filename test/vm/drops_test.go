package vm

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/dropreport"
)

// TestDropsOnDebianKernel runs `slowpath net drops` on the lab's Debian 6.1
// kernel, whose kfree_skb tracepoint predates rx_sk (the reason sits at
// offset 28, not 36 as on the host's 6.18): the committed eBPF object must
// load there, and five TCP connects to a closed loopback port must come back
// as five NO_SOCKET drops in tcp_v4_rcv on lo, with stacks.
func TestDropsOnDebianKernel(t *testing.T) {
	t.Parallel()
	onKernels(t, fullSet, testDropsOnDebianKernel)
}

func testDropsOnDebianKernel(t *testing.T, k *kernelLab) {
	// slowpath is started with env directly, not through sp(): SIGINT must
	// reach slowpath, not a subshell.
	res := boot(t, k, Scenario{Name: "drops", Script: prelude + `
ip link set lo up
env PATH=/bin /usr/bin/slowpath net drops --duration 60s --ready-file /tmp/ready --format json --stacks --folded /results/drops.folded > /results/drops.json &
pid=$!
i=0; until [ -e /tmp/ready ]; do i=$((i+1)); [ $i -lt 600 ] || { echo "net drops never attached"; exit 1; }; sleep 0.1; done
for i in 1 2 3 4 5; do nc -w 1 127.0.0.1 9 </dev/null 2>/dev/null || true; done
sleep 1
kill -INT $pid
wait $pid
`})
	var rep dropreport.Report
	if err := json.Unmarshal(res.Files["drops.json"], &rep); err != nil {
		t.Fatalf("drops JSON: %v\n%s", err, res.Files["drops.json"])
	}
	if !rep.DropReasons {
		t.Errorf("the 6.1 kernel has drop reasons, the report says it does not")
	}
	i := slices.IndexFunc(rep.Reasons, func(r dropreport.ReasonCount) bool { return r.Reason == "NO_SOCKET" })
	if i < 0 {
		t.Fatalf("no NO_SOCKET reason in %+v", rep.Reasons)
	}
	noSocket := rep.Reasons[i]
	// A TCP SYN to a closed port is dropped once per attempt; nc does not
	// retry within -w 1.
	if noSocket.Count < 5 {
		t.Errorf("NO_SOCKET count %d, want at least 5 (one per connect)", noSocket.Count)
	}
	if !slices.ContainsFunc(noSocket.Locations, func(l dropreport.LocationCount) bool { return l.Function == "tcp_v4_rcv" }) {
		t.Errorf("NO_SOCKET locations %+v, want tcp_v4_rcv", noSocket.Locations)
	}
	if !slices.ContainsFunc(noSocket.Interfaces, func(ifc dropreport.InterfaceCount) bool { return ifc.Name == "lo" }) {
		t.Errorf("NO_SOCKET interfaces %+v, want lo", noSocket.Interfaces)
	}
	if !strings.Contains(string(res.Files["drops.folded"]), "tcp_v4_rcv") {
		t.Errorf("folded stacks lack tcp_v4_rcv:\n%s", res.Files["drops.folded"])
	}
	t.Logf("NO_SOCKET %d at %+v (qemu TCG: functional evidence, not performance)", noSocket.Count, noSocket.Locations)
}
