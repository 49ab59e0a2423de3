package fix

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A step keeps its wire form ({"kind": K, K: {...}, "command": ...}) and
// decodes back to the same change; the state file of an older slowpath
// stays readable.
func TestStepJSON(t *testing.T) {
	from := int64(16)
	for _, s := range []Step{
		{Change: Sysctl{Key: "net.core.netdev_max_backlog", From: &from, To: 1024}},
		{Change: Ring{Interface: "eth0", Driver: "ena", RXFrom: 512, RX: 4096, RXMax: 16384}},
		{Change: Crypt{Name: "data", Format: "plain", Add: []string{"no_read_workqueue"}}},
	} {
		s.Command = StepCommand(s)
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		kind := s.Change.Kind()
		if !strings.HasPrefix(string(b), `{"kind":"`+kind+`","`+kind+`":{`) {
			t.Errorf("%s: wire form %s", kind, b)
		}
		var got Step
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if d := cmp.Diff(s, got); d != "" {
			t.Errorf("%s round trip (-want +got):\n%s", kind, d)
		}
	}
	var s Step
	if err := json.Unmarshal([]byte(`{"kind":"sysctl","sysctl":{"key":"vm.swappiness","to":1},"command":"sysctl -w vm.swappiness=1"}`), &s); err != nil {
		t.Fatal(err)
	}
	if s.Key() != "sysctl:vm.swappiness" || s.Command != "sysctl -w vm.swappiness=1" {
		t.Errorf("decoded %+v", s)
	}
}

func TestStepJSONRejects(t *testing.T) {
	for _, in := range []string{
		`{"kind":"sysfs","sysfs":{}}`,
		`{"kind":"ring","sysctl":{"key":"x","to":1}}`,
		`{"kind":"crypt","crypt":null}`,
		`{"sysctl":{"key":"x","to":1}}`,
	} {
		var s Step
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s decoded: %+v", in, s)
		}
	}
}
