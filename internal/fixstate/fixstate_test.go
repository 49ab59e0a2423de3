package fixstate

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestHolding: runtime changes hold on the boot they were made in; a
// reboot, or a record without a boot id on a host that has one, resets
// them; without this host's boot id nothing can be told apart.
func TestHolding(t *testing.T) {
	s := &State{BootID: "a", Changes: []Change{{Key: "sysctl x"}}}
	for _, tc := range []struct {
		recorded, now string
		want          int
	}{{"a", "a", 1}, {"a", "b", 0}, {"", "b", 0}, {"a", "", 1}} {
		s.BootID = tc.recorded
		if got := len(s.Holding(tc.now)); got != tc.want {
			t.Errorf("recorded under %q, now %q: %d changes hold, want %d", tc.recorded, tc.now, got, tc.want)
		}
	}
}

// TestDecode: what fix writes reads back, the step and its time with it;
// another document is refused by name.
func TestDecode(t *testing.T) {
	at := time.Date(2026, 11, 27, 8, 0, 0, 0, time.UTC)
	step := `{"kind":"sysctl","sysctl":{"key":"net.core.netdev_max_backlog","to":32768}}`
	key := "sysctl:net.core.netdev_max_backlog"
	b, err := json.Marshal(State{BootID: "a", Changes: []Change{{Key: key, ID: "net.backlog-drops", Subject: "host",
		Step: json.RawMessage(step), Previous: "1000", Applied: "32768", AppliedAt: at}}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if c := s.Changes[0]; c.ID != "net.backlog-drops" || !c.AppliedAt.Equal(at) || string(c.Step) != step || c.Key != key {
		t.Errorf("change %+v", c)
	}
	if _, err := Decode([]byte(`[1]`)); err == nil || !strings.Contains(err.Error(), "not slowpath's fix state") {
		t.Errorf("a list: %v", err)
	}
}

// TestDecodeKind: a state written now says what it is; one written before
// it did still reads; another slowpath file or a newer state is refused
// by name.
func TestDecodeKind(t *testing.T) {
	s := State{BootID: "a", Changes: []Change{}, Files: []FileChange{}}
	s.Stamp()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"kind":"slowpath-fix-state","schema_version":1,`) {
		t.Errorf("written as %s", b)
	}
	for doc, want := range map[string]string{
		string(b): "",
		`{"boot_id":"a","changes":[],"files":[]}`:                       "",
		`{"kind":"slowpath-fix-state","schema_version":2,"changes":[]}`: "version 2 (written by a newer slowpath)",
		`{"kind":"slowpath-bench-result","schema_version":1}`:           "not a slowpath fix state: it is a slowpath bench result",
		`{"manifest":{"format_version":1}}`:                             "it is a slowpath snapshot",
	} {
		_, err := Decode([]byte(doc))
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
