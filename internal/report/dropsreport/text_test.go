package dropsreport

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/dropreport"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

// The recorded captures and every golden rendering of them stay in
// dropreport's testdata, beside the JSON report of the same captures:
// internal/cli/netcmd/dropscmd's TestReplay reads them there too.
const testdata = "../../dropreport/testdata/"

func readCapture(t *testing.T, name string) *dropreport.Capture {
	t.Helper()
	b, err := os.ReadFile(testdata + name)
	if err != nil {
		t.Fatal(err)
	}
	var c dropreport.Capture
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return &c
}

// kallsyms510 is the symbols of the 5.10 kernel the capture without drop
// reasons was recorded on.
func kallsyms510(t *testing.T) *dropreport.Symbols {
	t.Helper()
	f, err := os.Open(testdata + "kallsyms-5.10.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := dropreport.ParseKallsyms(f)
	if err != nil {
		t.Fatal(err)
	}
	return syms
}

// TestRecordedFlood renders the capture recorded by the real flood test
// (internal/cli/netcmd/dropscmd TestBacklogFlood with SLOWPATH_UPDATE=1)
// as a table, as tab-separated rows and as folded stacks, against golden
// files.
func TestRecordedFlood(t *testing.T) {
	c := readCapture(t, "flood.capture.json")
	syms := dropreport.NewSymbols(c.Symbols)
	rep := dropreport.Summarize(c, syms, dropreport.SummaryOptions{})
	var text, tabs, folded bytes.Buffer
	if err := WriteText(&text, rep, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, testdata+"flood.report.txt", text.Bytes())
	if err := WriteText(&tabs, rep, TextOptions{Tabs: true}); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, testdata+"flood.report.tsv", tabs.Bytes())
	if err := WriteFolded(&folded, dropreport.Fold(c, syms, false)); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(folded.String(), ";enqueue_to_backlog;sk_skb_reason_drop ") {
		t.Errorf("folded stacks lack enqueue_to_backlog")
	}
	golden.Compare(t, testdata+"flood.folded", folded.Bytes())
}

// TestNoReasonsCapture renders a capture shaped as a 5.10 kernel gives it
// (no drop reasons; dropreport's TestNoReasonsCapture) with the fixture
// kallsyms: the text says it attributes by location and names no reason.
func TestNoReasonsCapture(t *testing.T) {
	c := readCapture(t, "nodropreasons-5.10.capture.json")
	syms := kallsyms510(t)
	rep := dropreport.Summarize(c, syms, dropreport.SummaryOptions{IfNames: c.IfNames})
	var text bytes.Buffer
	if err := WriteText(&text, rep, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, reason := range []string{"CPU_BACKLOG", "SOCKET_RCVBUFF", "QDISC_DROP", "REASON"} {
		if strings.Contains(text.String(), reason) {
			t.Errorf("text names %s on a kernel without reasons:\n%s", reason, text.String())
		}
	}
	golden.Compare(t, testdata+"nodropreasons-5.10.report.txt", text.Bytes())
	var folded bytes.Buffer
	if err := WriteFolded(&folded, dropreport.Fold(c, syms, false)); err != nil {
		t.Fatal(err)
	}
	golden.Compare(t, testdata+"nodropreasons-5.10.folded", folded.Bytes())
}

func TestWriteTextEmpty(t *testing.T) {
	two := uint64(2)
	var buf bytes.Buffer
	if err := WriteText(&buf, dropreport.Report{DurationSeconds: 1, DropReasons: true, Interface: "eth0", Reasons: []dropreport.ReasonCount{}, RecursionMisses: &two}, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	want := "Packet drops on eth0 over 1.0s: 0 dropped\nwarning: the kernel skipped the tracer 2 times because it was already running on that CPU (recursion misses, over every skb:kfree_skb hit, drops or not, on any interface): up to 2 drops not seen this way\nNo drops.\n"
	if diff := cmp.Diff(want, buf.String()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestCounterLabels: the tracer's own counters say what they count. A
// failed stack walk is not a lost drop, recursion misses are counted over
// every kfree_skb hit (not only drops, not only the filtered interface),
// and a recursion-miss count that could not be read is unknown, never 0.
func TestCounterLabels(t *testing.T) {
	five := uint64(5)
	reasons := dropreport.Kernel{HasReasons: true, Reasons: map[uint32]string{2: "NOT_SPECIFIED"}}
	tests := []struct {
		name    string
		c       dropreport.Capture
		text    []string
		notText []string
	}{
		{name: "counted",
			c: dropreport.Capture{Kernel: reasons, DurationSeconds: 1, StackEvery: 64, StackWalks: 100, StackWalksFailed: 3, RecursionMisses: &five},
			text: []string{"3 of 100 stack walks failed", "skipped the tracer 5 times", "every skb:kfree_skb",
				"up to 5 drops not seen this way"},
			notText: []string{"drops counted without their stack", "5 drops missed"}},
		{name: "zero misses",
			c:       dropreport.Capture{Kernel: reasons, DurationSeconds: 1, RecursionMisses: new(uint64)},
			notText: []string{"recursion", "skipped"}},
		{name: "stats unreadable",
			c:    dropreport.Capture{Kernel: reasons, DurationSeconds: 1, RecursionMissesError: "read program stats: bad file descriptor"},
			text: []string{"recursion misses unknown", "bad file descriptor"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := dropreport.Summarize(&tt.c, nil, dropreport.SummaryOptions{})
			var text bytes.Buffer
			if err := WriteText(&text, rep, TextOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.text {
				if !strings.Contains(text.String(), w) {
					t.Errorf("text lacks %q:\n%s", w, text.String())
				}
			}
			for _, w := range tt.notText {
				if strings.Contains(text.String(), w) {
					t.Errorf("text has %q:\n%s", w, text.String())
				}
			}
		})
	}
}

// TestWriteSVG: the flame graph's title says which interface and how the
// stacks were sampled.
func TestWriteSVG(t *testing.T) {
	stacks := []dropreport.Stack{{Frames: []string{"CPU_BACKLOG", "net_rx_action", "enqueue_to_backlog"}, Count: 3}}
	for _, tt := range []struct {
		o    SVGOptions
		want string
	}{
		{SVGOptions{}, "Packet drops by reason and kernel stack<"},
		{SVGOptions{Interface: "eth0", StackEvery: 1}, "Packet drops by reason and kernel stack on eth0<"},
		{SVGOptions{StackEvery: 64}, "Packet drops by reason and kernel stack (stacks sampled: 1 walk per 64 drops of a run)<"},
	} {
		var b bytes.Buffer
		if _, err := WriteSVG(&b, stacks, tt.o); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), tt.want) || !strings.Contains(b.String(), "all drops") || !strings.Contains(b.String(), " drops,") {
			t.Errorf("%+v: want title %q, root all drops, counted in drops:\n%.600s", tt.o, tt.want, b.String())
		}
	}
}
