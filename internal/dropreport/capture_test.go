package dropreport

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestDecodeCapture: a recording says what it is; one recorded before it
// did (the committed flood capture) still reads; another slowpath file is
// refused by name.
func TestDecodeCapture(t *testing.T) {
	old, err := os.ReadFile("testdata/flood.capture.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := DecodeCapture(old)
	if err != nil || len(c.Records) == 0 {
		t.Fatalf("the committed capture: %v, %d records", err, len(c.Records))
	}
	c.Stamp()
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(b), `{"kind":"slowpath-drops","schema_version":1,`) {
		t.Errorf("recorded as %.80s", b)
	}
	if back, err := DecodeCapture(b); err != nil || len(back.Records) != len(c.Records) {
		t.Errorf("read back: %v", err)
	}
	for doc, want := range map[string]string{
		`{"kind":"slowpath-bench-result","schema_version":1}`: "not a slowpath drop recording: it is a slowpath bench result",
		`{"kind":"slowpath-drops","schema_version":9}`:        "version 9 (written by a newer slowpath)",
		`[1]`: "cannot unmarshal",
	} {
		if _, err := DecodeCapture([]byte(doc)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
