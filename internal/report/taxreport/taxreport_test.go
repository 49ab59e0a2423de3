package taxreport

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/fleettax"
)

func TestRatio(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{{2677.917, "2678x"}, {1.068, "1.1x"}, {10, "10x"}, {9.94, "9.9x"}, {0.5, "0.5x"}} {
		if got := ratio(tc.in); got != tc.want {
			t.Errorf("ratio(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestMount: a mount whose agent read no dm table says its figures rest
// on an inferred span and an assumed cipher.
func TestMount(t *testing.T) {
	m := &fleettax.Mount{Instance: "node-a:9877", MountPoint: "/data", Ratio: 2677.917, AddedPerIOSeconds: 0.01755}
	if got, want := mount(m), "node-a:9877 /data 2678x (+17.6 ms)"; got != want {
		t.Errorf("table read: %q, want %q", got, want)
	}
	m.TableUnread = true
	if got, want := mount(m), "node-a:9877 /data 2678x (+17.6 ms; dm table unread: dm-crypt inferred from its uuid, cipher assumed)"; got != want {
		t.Errorf("table unread: %q, want %q", got, want)
	}
}

// TestWriteMarkdown: a label value from Prometheus stays one cell (the
// table writer's escaping, not only of '|'), and a group with nothing
// judged leaves its figures empty.
func TestWriteMarkdown(t *testing.T) {
	m := &fleettax.Mount{Instance: "n<1>:9877", MountPoint: "/data", Ratio: 2, AddedPerIOSeconds: 1e-5}
	s := &fleettax.Summary{By: "pool", Groups: []fleettax.Group{
		{Value: "a|b", Nodes: 1, Mounts: 1, AddedPerIOSeconds: 1e-5, CipherPerIOSeconds: 5e-6, Ratio: fleettax.Spread{Min: 2, Median: 2, Max: 2}, Highest: m, Lowest: m},
		{Value: "", NotJudged: 3},
	}}
	var b strings.Builder
	if err := WriteMarkdown(&b, s); err != nil {
		t.Fatal(err)
	}
	want := "| pool | nodes | added per I/O | cipher per I/O | ratio min / median / max | highest | lowest | not judged |\n" +
		"|---|---:|---:|---:|---|---|---|---:|\n" +
		"| a&#124;b | 1 | 10 µs | 5 µs | 2.0x / 2.0x / 2.0x | n&lt;1&gt;:9877 /data 2.0x (+10 µs) | n&lt;1&gt;:9877 /data 2.0x (+10 µs) | 0 |\n" +
		"| (no pool) | 0 |  |  |  |  |  | 3 |\n"
	if got := b.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
