package vm

import (
	"regexp"
	"strconv"
	"testing"
)

var noSocketLine = regexp.MustCompile(`(?m)^slowpath_skb_drops_total\{layer="[a-z]+",reason="NO_SOCKET"\} (\S+)$`)

// TestAgentDropsAttach runs `slowpath agent --collector.drops` on the lab's
// Debian 6.1 kernel with each attachment: tp_btf on skb:kfree_skb and
// fentry on kfree_skb_reason (the drop function before 6.11, reason as its
// second argument). The host's kernel refuses fentry programs, so this is
// where the fentry path is exercised: five TCP connects to a closed port
// must count as at least five NO_SOCKET drops in a scrape.
func TestAgentDropsAttach(t *testing.T) {
	res := boot(t, Scenario{Name: "agent-drops", Script: prelude + `
ip link set lo up
for a in tp_btf fentry; do
	rm -f /tmp/ready
	env PATH=/bin /usr/bin/slowpath agent --cloud none --collector.drops --collector.drops.attach $a --web.listen-address 127.0.0.1:9877 --ready-file /tmp/ready 2>/results/$a.err &
	pid=$!
	i=0; until [ -e /tmp/ready ]; do i=$((i+1)); [ $i -lt 600 ] || { echo "agent ($a) never listened"; cat /results/$a.err; exit 1; }; sleep 0.1; done
	for i in 1 2 3 4 5; do nc -w 1 127.0.0.1 9 </dev/null 2>/dev/null || true; done
	wget -q -O /results/$a.metrics http://127.0.0.1:9877/metrics
	kill $pid
	wait $pid || true
done
`})
	for _, a := range []string{"tp_btf", "fentry"} {
		m := noSocketLine.FindSubmatch(res.Files[a+".metrics"])
		if m == nil {
			t.Errorf("%s: no NO_SOCKET series in the scrape (stderr: %s)", a, res.Files[a+".err"])
			continue
		}
		n, err := strconv.ParseFloat(string(m[1]), 64)
		if err != nil || n < 5 {
			t.Errorf("%s: NO_SOCKET %s, want at least 5 (one per connect)", a, m[1])
		}
		t.Logf("%s: NO_SOCKET %v (qemu TCG: functional evidence, not performance)", a, n)
	}
}
