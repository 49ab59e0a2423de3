// Package recordkind is how the files slowpath writes and reads back say
// what they are: "kind" names the format, "schema_version" its version,
// and every reader checks both here, before decoding the rest (a newer
// schema may not decode into this build's types), so a file of another
// kind is refused by name ("not a slowpath bench result: it is a slowpath
// snapshot") and one of another version by which is newer.
//
// The snapshot alone keeps its version where it always had it,
// manifest.format_version (docs/snapshot.md): every saved snapshot and
// fixture carries it. Its reader asks Envelope.What to name a file that
// is not a snapshot.
package recordkind

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// The kinds, and what people call them.
const (
	BenchResult = "slowpath-bench-result"
	Capture     = "slowpath-capture"
	FixState    = "slowpath-fix-state"
	Drops       = "slowpath-drops"
)

var names = map[string]string{
	BenchResult: "bench result",
	Capture:     "capture",
	FixState:    "fix state",
	Drops:       "drop recording",
}

// Errors of Check; tell them apart with errors.Is.
var (
	ErrKind    = errors.New("not the kind of file expected")
	ErrVersion = errors.New("unsupported schema version")
)

// kindError says what a document is instead; errors.Is(err, ErrKind).
type kindError string

func (e kindError) Error() string        { return string(e) }
func (e kindError) Is(target error) bool { return target == ErrKind }

// Envelope is what a document says it is.
type Envelope struct {
	Kind          *string `json:"kind"`
	SchemaVersion *int    `json:"schema_version"`
	// Manifest is a snapshot's.
	Manifest *struct {
		FormatVersion *int `json:"format_version"`
	} `json:"manifest"`
	// FormatVersion opens doctor's, fix's and the other commands' JSON
	// output (docs/json.md).
	FormatVersion *int `json:"format_version"`

	// Fields that name the files written before they said their kind,
	// and lab crypto-limit's, which never did.
	Algorithm *string         `json:"algorithm"`
	PerCore   *float64        `json:"bytes_per_sec_per_core"`
	Records   json.RawMessage `json:"records"`
	Kernel    json.RawMessage `json:"kernel"`
	BootID    *string         `json:"boot_id"`
	Changes   json.RawMessage `json:"changes"`
}

// Read reads the envelope of a JSON document; an error when b is no JSON
// object.
func Read(b []byte) (Envelope, error) {
	var e Envelope
	err := json.Unmarshal(b, &e)
	return e, err
}

// Describe names what b is, for an error about a file given where another
// was wanted: "a slowpath snapshot", "a gzip archive (what slowpath
// collect -o FILE.tar.gz writes)", ...; "" when it is JSON slowpath knows
// nothing of, or not JSON at all.
func Describe(b []byte) string {
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		return "a gzip archive (what slowpath collect -o FILE.tar.gz writes: a snapshot)"
	}
	e, err := Read(b)
	if err != nil {
		return ""
	}
	return e.What()
}

// What names the document for an error about it; "" when it says nothing
// slowpath knows.
func (e Envelope) What() string {
	switch {
	case e.Kind != nil && names[*e.Kind] != "":
		return "a slowpath " + names[*e.Kind]
	case e.Kind != nil:
		return fmt.Sprintf("a document of kind %q", *e.Kind)
	case e.Manifest != nil && e.Manifest.FormatVersion != nil:
		return "a slowpath snapshot"
	case e.FormatVersion != nil:
		return "a command's JSON output (doctor, fix, compare or another --format json), not a file slowpath reads back"
	case e.Algorithm != nil && e.PerCore != nil:
		return "the cipher's limit (slowpath lab crypto-limit --format json)"
	case e.unkinded() != "":
		return "a slowpath " + names[e.unkinded()]
	}
	return ""
}

// Check says whether e is of kind want in version current. With legacy, a
// document that says nothing of what it is, or is recognised as want by
// its fields, is taken as want's version 1: the fix state and drop
// recordings were written without kind and version before they carried
// them.
func (e Envelope) Check(want string, current int, legacy bool) error {
	name := names[want]
	if name == "" {
		name = want
	}
	what := e.What()
	if legacy && e.Kind == nil && e.SchemaVersion == nil && (what == "" || e.unkinded() == want) {
		return nil
	}
	if e.Kind == nil || *e.Kind != want {
		if what != "" {
			return kindError(fmt.Sprintf("not a slowpath %s: it is %s", name, what))
		}
		return kindError(fmt.Sprintf("not a slowpath %s (no \"kind\": %q)", name, want))
	}
	if e.SchemaVersion == nil {
		return fmt.Errorf("the %s has no schema_version", name)
	}
	if v := *e.SchemaVersion; v != current {
		newer := "an older"
		if v > current {
			newer = "a newer"
		}
		return fmt.Errorf("%s: %w %d (written by %s slowpath): this slowpath reads version %d", name, ErrVersion, v, newer, current)
	}
	return nil
}

// unkinded is the kind of a file written before its kind was, known by
// its fields: a drop recording or a fix state; "" for any other.
func (e Envelope) unkinded() string {
	switch {
	case e.Kind != nil:
		return ""
	case e.Records != nil && e.Kernel != nil:
		return Drops
	case e.BootID != nil && e.Changes != nil:
		return FixState
	}
	return ""
}

// Header is the two fields every record but the snapshot opens with.
type Header struct {
	Kind          string `json:"kind"`
	SchemaVersion int    `json:"schema_version"`
}

// Check is Envelope.Check for a header already decoded.
func (h Header) Check(want string, current int) error {
	k, v := h.Kind, h.SchemaVersion
	return Envelope{Kind: &k, SchemaVersion: &v}.Check(want, current, false)
}
