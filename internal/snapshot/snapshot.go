// Package snapshot holds the plain data that collectors gather from a host and
// that all analysis reads. It is versioned and documented in docs/snapshot.md
// so that fixtures can be written by hand and field snapshots replayed.
package snapshot

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/recordkind"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// FormatVersion is the snapshot format this build writes and reads. Bump it
// when a field changes meaning or is removed; adding fields does not bump it.
const FormatVersion = 1

// Snapshot is everything analysis may look at. Sections are pointers: nil
// means the section was not collected (see Manifest.Errors for why).
type Snapshot struct {
	Manifest Manifest `json:"manifest"`
	Host     *Host    `json:"host,omitempty"`
	Storage  *Storage `json:"storage,omitempty"`
	Cloud    *Cloud   `json:"cloud,omitempty"`
	Net      *Net     `json:"net,omitempty"`
	Engines  *Engines `json:"engines,omitempty"`
}

// Manifest describes a snapshot: its format, origin and what is missing.
type Manifest struct {
	FormatVersion int       `json:"format_version"`
	Tool          string    `json:"tool,omitempty"`     // slowpath version that wrote it
	Hostname      string    `json:"hostname,omitempty"` // for people; analysis never uses it
	CollectedAt   time.Time `json:"collected_at,omitzero"`
	// Fixture is set on hand-written snapshots: where their facts come from.
	Fixture string `json:"fixture,omitempty"`
	// LiveSources says whether the live-only sources (ethtool, netlink,
	// DM and fscrypt ioctls, instance metadata) were used; absent on
	// fixtures and older snapshots.
	LiveSources *LiveSources `json:"live_sources,omitempty"`
	// Errors lists what could not be collected and why.
	Errors []CollectError `json:"errors,omitempty"`
}

// LiveSources records the --live-sources decision of a collection.
type LiveSources struct {
	Mode   string `json:"mode"`             // auto, on or off
	Used   bool   `json:"used"`             // the roots were taken as this host's
	Reason string `json:"reason,omitempty"` // why not, when not used
}

// CollectError records one thing a collector could not read.
type CollectError struct {
	Collector string      `json:"collector"`      // e.g. "storage.dm"
	Path      string      `json:"path,omitempty"` // file, ioctl or URL
	Kind      hostfs.Kind `json:"kind"`           // missing, permission, unsupported, error
	Message   string      `json:"message"`
}

// AddError records err against a collector. A nil err is ignored, so callers
// can pass results straight through.
func (s *Snapshot) AddError(collector, path string, err error) {
	if err == nil {
		return
	}
	s.Manifest.Errors = append(s.Manifest.Errors, CollectError{
		Collector: collector, Path: path, Kind: hostfs.Classify(err), Message: err.Error(),
	})
}

// SortErrors orders manifest errors so output is deterministic.
func (s *Snapshot) SortErrors() {
	sort.SliceStable(s.Manifest.Errors, func(i, j int) bool {
		a, b := s.Manifest.Errors[i], s.Manifest.Errors[j]
		if a.Collector != b.Collector {
			return a.Collector < b.Collector
		}
		return a.Path < b.Path
	})
}

// ErrVersion is returned for a snapshot written by an incompatible format.
var ErrVersion = errors.New("unsupported snapshot format version")

// snapshotName is the member of a snapshot archive that holds the JSON.
const snapshotName = "snapshot.json"

// Decode reads a snapshot from JSON, checks its version and validates it
// (Validate): a snapshot that breaks a rule is an error wrapping
// ErrInvalid, and no caller ever sees its content.
func Decode(r io.Reader) (*Snapshot, error) {
	dec := json.NewDecoder(r)
	var s Snapshot
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("decode snapshot: %w", err)
	}
	if s.Manifest.FormatVersion != FormatVersion {
		return nil, fmt.Errorf("%w %d (this slowpath reads version %d): read it with the slowpath that wrote it, or collect again with this one",
			ErrVersion, s.Manifest.FormatVersion, FormatVersion)
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// Encode writes s as indented JSON.
func Encode(w io.Writer, s *Snapshot) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// ErrNotSnapshot is wrapped by Load's error for a slowpath file of another
// kind (a bench result), named so the user knows which command reads it.
var ErrNotSnapshot = errors.New("not a snapshot")

// Load reads a snapshot from a .json file or a .tar.gz archive written by
// WriteArchive, or from standard input when path is "-" (as `collect -o
// -` writes stdout; stdfile). The format is recognised by content, not by
// name.
func Load(path string) (*Snapshot, error) {
	b, err := stdfile.ReadFile(path)
	path = stdfile.Name(path)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", path, err)
	}
	var s *Snapshot
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		s, err = readArchive(bytes.NewReader(b))
	} else {
		s, err = Decode(bytes.NewReader(b))
	}
	if err != nil {
		// Another file slowpath writes (a bench result, a capture
		// manifest, doctor's JSON): named for what it is.
		if env, e := recordkind.Read(b); e == nil {
			switch w := env.What(); {
			case env.Kind != nil && *env.Kind == recordkind.BenchResult:
				return nil, fmt.Errorf("load snapshot %s: %w: this is a bench result (use slowpath compare to compare results; doctor and fix read what slowpath collect writes)", path, ErrNotSnapshot)
			case w != "" && env.Manifest == nil:
				return nil, fmt.Errorf("load snapshot %s: %w: this is %s (doctor, fix and diff read what slowpath collect writes)", path, ErrNotSnapshot, w)
			case env.Manifest == nil:
				return nil, fmt.Errorf("load snapshot %s: %w: it has no \"manifest\" (doctor, fix and diff read what slowpath collect writes)", path, ErrNotSnapshot)
			}
		}
	}
	if errors.Is(err, ErrVersion) {
		return nil, fmt.Errorf("load snapshot %s: %w", path, err)
	}
	if errors.Is(err, ErrInvalid) {
		return nil, fmt.Errorf("load snapshot %s: %w: the snapshot holds a value slowpath refuses (docs/snapshot.md, section Validation); collect it again on the host with `slowpath collect -o FILE`", path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("load snapshot %s: %w: the file is truncated or not a slowpath snapshot; write it again with `slowpath collect -o FILE`", path, err)
	}
	return s, nil
}

func readArchive(r io.Reader) (*Snapshot, error) {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return nil, fmt.Errorf("gzip: %w", err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("archive has no %s", snapshotName)
		}
		if err != nil {
			return nil, fmt.Errorf("tar: %w", err)
		}
		if strings.TrimPrefix(h.Name, "./") == snapshotName {
			// A snapshot is small; a bound keeps a hostile archive from
			// exhausting memory.
			return Decode(io.LimitReader(tr, 256<<20))
		}
	}
}

// WriteArchive writes s as a gzip-compressed tar holding snapshot.json.
// An archive (rather than bare JSON) leaves room for attachments such as
// raw captures without a format change.
func WriteArchive(w io.Writer, s *Snapshot) error {
	var buf bytes.Buffer
	if err := Encode(&buf, s); err != nil {
		return err
	}
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	mt := s.Manifest.CollectedAt
	if mt.IsZero() {
		mt = time.Unix(0, 0)
	}
	if err := tw.WriteHeader(&tar.Header{Name: snapshotName, Mode: 0o600, Size: int64(buf.Len()), ModTime: mt}); err != nil {
		return err
	}
	if _, err := tw.Write(buf.Bytes()); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// Save writes s to path: an archive when path ends in .tar.gz or .tgz, JSON otherwise.
func Save(path string, s *Snapshot) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("write snapshot: %w", err)
	}
	if strings.HasSuffix(path, ".tar.gz") || strings.HasSuffix(path, ".tgz") {
		err = WriteArchive(f, s)
	} else {
		err = Encode(f, s)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write snapshot %s: %w", path, err)
	}
	return nil
}
