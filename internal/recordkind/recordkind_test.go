package recordkind

import (
	"errors"
	"strings"
	"testing"
)

// errAny is an error that wraps neither sentinel.
var errAny = errors.New("any error")

// TestCheck: each document slowpath writes is named for what it is when
// another is wanted; versions are told newer or older; legacy files
// without kind pass only where allowed.
func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		doc, want string
		legacy    bool
		err       error
		says      string
	}{
		{`{"kind":"slowpath-bench-result","schema_version":1}`, BenchResult, false, nil, ""},
		{`{"kind":"slowpath-bench-result","schema_version":2}`, BenchResult, false, ErrVersion, "version 2 (written by a newer slowpath): this slowpath reads version 1"},
		{`{"kind":"slowpath-bench-result","schema_version":0}`, BenchResult, false, ErrVersion, "written by an older slowpath"},
		{`{"kind":"slowpath-bench-result"}`, BenchResult, false, errAny, "has no schema_version"},
		{`{"manifest":{"format_version":1},"storage":{}}`, BenchResult, false, ErrKind, "not a slowpath bench result: it is a slowpath snapshot"},
		{`{"kind":"slowpath-capture","schema_version":1}`, FixState, true, ErrKind, "not a slowpath fix state: it is a slowpath capture"},
		{`{"format_version":1,"findings":[]}`, Drops, true, ErrKind, "it is a command's JSON output"},
		{`{"kind":"nginx"}`, Capture, false, ErrKind, `it is a document of kind "nginx"`},
		{`{}`, Capture, false, ErrKind, `no "kind": "slowpath-capture"`},
		{`{"boot_id":"x","changes":[]}`, FixState, true, nil, ""},
		{`{"boot_id":"x","changes":[]}`, FixState, false, ErrKind, "not a slowpath fix state"},
		{`{"schema_version":1}`, FixState, true, ErrKind, "not a slowpath fix state"},
	} {
		e, err := Read([]byte(tc.doc))
		if err != nil {
			t.Fatal(err)
		}
		err = e.Check(tc.want, 1, tc.legacy)
		if (tc.err == nil) != (err == nil) || (tc.err != nil && tc.err != errAny && !errors.Is(err, tc.err)) {
			t.Errorf("%s as %s: %v, want %v", tc.doc, tc.want, err, tc.err)
			continue
		}
		if err != nil && !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s as %s: %q does not say %q", tc.doc, tc.want, err, tc.says)
		}
	}
	if _, err := Read([]byte(`[1]`)); err == nil {
		t.Error("a list read as an envelope")
	}
	if err := (Header{Kind: Capture, SchemaVersion: 1}).Check(Capture, 1); err != nil {
		t.Error(err)
	}
	if err := (Header{Kind: Capture, SchemaVersion: 3}).Check(Capture, 1); !errors.Is(err, ErrVersion) {
		t.Errorf("header of version 3: %v", err)
	}
}

// FuzzEnvelope: any document is described and checked without a panic,
// and a document Check accepts as a kind says that kind, or (legacy) says
// no other.
func FuzzEnvelope(f *testing.F) {
	for _, s := range []string{`{"kind":"slowpath-drops","schema_version":1}`, `{"records":[],"kernel":{}}`, `{"boot_id":"","changes":[]}`,
		`{"manifest":{"format_version":1}}`, `{"format_version":1}`, `{"algorithm":"xts(aes)","bytes_per_sec_per_core":1}`, "\x1f\x8b", `[`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_ = Describe(b)
		e, err := Read(b)
		if err != nil {
			return
		}
		for _, want := range []string{BenchResult, Capture, FixState, Drops} {
			for _, legacy := range []bool{false, true} {
				if e.Check(want, 1, legacy) != nil {
					continue
				}
				if e.Kind != nil && *e.Kind != want {
					t.Fatalf("%s accepted as %s", b, want)
				}
				if e.Kind == nil && (!legacy || (e.unkinded() != "" && e.unkinded() != want)) {
					t.Fatalf("%s accepted as %s (legacy %v)", b, want, legacy)
				}
			}
		}
	})
}
