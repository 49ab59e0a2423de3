package flamegraph

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWriteFolded: one line a stack, frames root first, a semicolon in a
// name written as a colon; ParseFolded reads back what was written.
func TestWriteFolded(t *testing.T) {
	stacks := []Stack{
		{Frames: []string{"CPU_BACKLOG", "[no stack]", "enqueue_to_backlog"}, Count: 3},
		{Frames: []string{"CPU_BACKLOG", "net_rx_action", "enqueue_to_backlog", "sk_skb_reason_drop"}, Count: 15},
		{Frames: []string{"a;b", "func (inlined)"}, Count: 1},
	}
	var buf bytes.Buffer
	if err := WriteFolded(&buf, stacks); err != nil {
		t.Fatal(err)
	}
	want := "CPU_BACKLOG;[no stack];enqueue_to_backlog 3\n" +
		"CPU_BACKLOG;net_rx_action;enqueue_to_backlog;sk_skb_reason_drop 15\n" +
		"a:b;func (inlined) 1\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("folded (-want +got)\n%s", diff)
	}
	back, err := ParseFolded(&buf)
	if err != nil {
		t.Fatal(err)
	}
	stacks[2].Frames[0] = "a:b"
	if diff := cmp.Diff(stacks, back); diff != "" {
		t.Errorf("read back (-want +got)\n%s", diff)
	}
}
