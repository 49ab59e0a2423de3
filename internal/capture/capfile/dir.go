package capfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/slowpath/slowpath/internal/stdfile"
)

// ErrNotEmpty is returned by Create for a directory that already holds files.
var ErrNotEmpty = errors.New("output directory is not empty: give a new or empty directory")

// DirWriter writes a capture directory: the streams as records come, the
// manifest last, so a directory without manifest.json is an unfinished
// capture.
type DirWriter struct {
	dir        string
	opsF, blkF *os.File
	Ops        *OpWriter
	Block      *BlockWriter
	done       bool
}

// Create makes dir (or uses it when it exists and is empty) and opens the
// streams.
func Create(dir string) (*DirWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create capture directory: %w", err)
	}
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read capture directory: %w", err)
	}
	if len(ents) != 0 {
		return nil, fmt.Errorf("%s: %w", dir, ErrNotEmpty)
	}
	w := &DirWriter{dir: dir}
	if w.opsF, err = os.OpenFile(filepath.Join(dir, OpsName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		return nil, err
	}
	if w.blkF, err = os.OpenFile(filepath.Join(dir, BlockName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil {
		w.opsF.Close()
		return nil, err
	}
	w.Ops = NewOpWriter(w.opsF)
	w.Block = NewBlockWriter(w.blkF)
	return w, nil
}

// Finish closes the streams, fills m.Streams and m.Events.Ops/Block from
// what was written, and writes manifest.json.
func (w *DirWriter) Finish(m *Manifest) error {
	if w.done {
		return errors.New("capture directory already finished")
	}
	w.done = true
	defer w.opsF.Close()
	defer w.blkF.Close()
	so, err := w.Ops.Close()
	if err != nil {
		return fmt.Errorf("write %s: %w", OpsName, err)
	}
	sb, err := w.Block.Close()
	if err != nil {
		return fmt.Errorf("write %s: %w", BlockName, err)
	}
	for _, f := range []*os.File{w.opsF, w.blkF} {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	m.Kind, m.SchemaVersion = Kind, SchemaVersion
	m.Streams.Ops = Stream{File: OpsName, Records: so.Records, Bytes: so.Bytes, SHA256: so.SHA256}
	m.Streams.Block = Stream{File: BlockName, Records: sb.Records, Bytes: sb.Bytes, SHA256: sb.SHA256}
	m.Events.Ops, m.Events.Block = so.Records, sb.Records
	data, err := EncodeManifest(m)
	if err != nil {
		return err
	}
	return stdfile.WriteFile(filepath.Join(w.dir, ManifestName), func(out io.Writer) error { _, err := out.Write(data); return err })
}

// Abort closes the streams without a manifest (the directory stays, as an
// unfinished capture that Open refuses).
func (w *DirWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.opsF.Close()
	w.blkF.Close()
}

// Capture is an opened capture directory with a valid manifest. Its
// streams are checked as they are read.
type Capture struct {
	Dir      string
	Manifest *Manifest
}

// Open reads and validates dir's manifest.
func Open(dir string) (*Capture, error) {
	f, err := os.Open(filepath.Join(dir, ManifestName))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w: no %s (an unfinished capture, or not a capture directory)", dir, ErrTruncated, ManifestName)
		}
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxManifestBytes+1))
	if err != nil {
		return nil, err
	}
	m, err := DecodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, ManifestName), err)
	}
	return &Capture{Dir: dir, Manifest: m}, nil
}

// StreamFile reads one stream file of a capture and checks it against the
// manifest: every record's references exist (check), and at the end the
// count, size and SHA-256 match.
type StreamFile[T any] struct {
	f     *os.File
	r     *RecordReader[T]
	path  string
	want  Stream
	check func(T) error
}

// OpStream reads ops.bin: every record's thread and file exist.
// BlockStream reads block.bin: every record's device exists.
type (
	OpStream    = StreamFile[Op]
	BlockStream = StreamFile[Block]
)

// Ops opens ops.bin. Close it.
func (c *Capture) Ops() (*OpStream, error) {
	m := c.Manifest
	return openStream(c, OpsName, NewOpReader, m.Streams.Ops, func(o Op) error {
		if o.Thread > uint32(len(m.Threads)) || o.File > uint32(len(m.Files)) {
			return fmt.Errorf("%w: %s record of thread %d, file %d: the manifest has %d threads, %d files",
				ErrCorrupt, o.Kind, o.Thread, o.File, len(m.Threads), len(m.Files))
		}
		return nil
	})
}

// Block opens block.bin. Close it.
func (c *Capture) Block() (*BlockStream, error) {
	m := c.Manifest
	return openStream(c, BlockName, NewBlockReader, m.Streams.Block, func(b Block) error {
		if b.Device > uint32(len(m.Devices)) {
			return fmt.Errorf("%w: %s record of device %d: the manifest has %d devices",
				ErrCorrupt, b.Op, b.Device, len(m.Devices))
		}
		return nil
	})
}

func openStream[T any](c *Capture, name string, newReader func(io.Reader) (*RecordReader[T], error), want Stream, check func(T) error) (*StreamFile[T], error) {
	p := filepath.Join(c.Dir, name)
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	r, err := newReader(f)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", p, err)
	}
	return &StreamFile[T]{f: f, r: r, path: p, want: want, check: check}, nil
}

// Next returns the next record, io.EOF at the verified end.
func (s *StreamFile[T]) Next() (T, error) {
	var zero T
	v, err := s.r.Next()
	if err == io.EOF {
		if err := checkEnd(s.r.Summary(), s.want); err != nil {
			return zero, fmt.Errorf("%s: %w", s.path, err)
		}
		return zero, io.EOF
	}
	if err == nil {
		err = s.check(v)
	}
	if err != nil {
		return zero, fmt.Errorf("%s: %w", s.path, err)
	}
	return v, nil
}

// Close closes the file.
func (s *StreamFile[T]) Close() error { return s.f.Close() }

func checkEnd(got Summary, want Stream) error {
	if got.Records != want.Records || got.Bytes != want.Bytes || got.SHA256 != want.SHA256 {
		return fmt.Errorf("%w: stream has %d records in %d bytes (sha256 %s); the manifest says %d in %d (%s)",
			ErrCorrupt, got.Records, got.Bytes, got.SHA256, want.Records, want.Bytes, want.SHA256)
	}
	return nil
}

// EachOp calls fn for every file-level record, in file order, then checks
// the stream's end.
func (c *Capture) EachOp(fn func(Op) error) error { return each(c.Ops, fn) }

// EachBlock calls fn for every block record, in file order, then checks the
// stream's end.
func (c *Capture) EachBlock(fn func(Block) error) error { return each(c.Block, fn) }

func each[T any](open func() (*StreamFile[T], error), fn func(T) error) error {
	s, err := open()
	if err != nil {
		return err
	}
	defer s.Close()
	for {
		v, err := s.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := fn(v); err != nil {
			return err
		}
	}
}

// Verify reads both streams to their end: nil means the whole capture is
// intact.
func (c *Capture) Verify() error {
	if err := c.EachOp(func(Op) error { return nil }); err != nil {
		return err
	}
	return c.EachBlock(func(Block) error { return nil })
}
