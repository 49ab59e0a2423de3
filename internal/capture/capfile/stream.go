package capfile

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
)

// A stream file (ops.bin, block.bin) is a header and CRC-framed batches:
//
//	header  "SLOWPCAP" | u16 schema | u8 stream ('o' ops, 'b' block) | u8 0 | u32 0
//	frame   u8 type (1 data, 2 end) | 3 bytes 0 | u32 payload length | u32 records | u32 CRC-32C
//	        of the frame's first 12 bytes and the payload | payload
//
// All integers little-endian. A data frame's payload is its records back to
// back (see records.go); the end frame's payload is the u64 number of records
// in the stream. A stream without its end frame was cut short; a CRC that does
// not match, a record that does not decode or bytes after the end frame are
// corruption. The manifest also holds each stream's SHA-256, which catches a
// consistent rewrite of a frame that the CRC alone would not.

const (
	magic         = "SLOWPCAP"
	headerLen     = 16
	frameHdrLen   = 16
	frameData     = 1
	frameEnd      = 2
	maxPayload    = 1 << 20
	flushAt       = 64 << 10
	streamOps     = 'o'
	streamBlock   = 'b'
	minRecordSize = 8 // the smallest encoding of either record (a block record of zeros)
)

// Errors of a capture that cannot be read. Each is wrapped with the file and
// what was wrong; tell them apart with errors.Is.
var (
	ErrNotCapture = errors.New("not a slowpath capture")
	ErrVersion    = errors.New("capture schema version not supported by this slowpath")
	ErrTruncated  = errors.New("capture truncated: it was cut short (copy it again, or capture again)")
	ErrCorrupt    = errors.New("capture corrupt: a checksum or record does not match (copy it again, or capture again)")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Summary is what a closed stream writer wrote.
type Summary struct {
	Records uint64
	Bytes   uint64
	SHA256  string // hex
}

// tally is the size and SHA-256 of a stream's bytes so far.
type tally struct {
	h hash.Hash
	n uint64
}

func newTally() tally { return tally{h: sha256.New()} }

func (t *tally) add(p []byte) {
	t.h.Write(p)
	t.n += uint64(len(p))
}

func (t *tally) summary(records uint64) Summary {
	return Summary{Records: records, Bytes: t.n, SHA256: hex.EncodeToString(t.h.Sum(nil))}
}

type countingWriter struct {
	w io.Writer
	tally
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.add(p[:n])
	return n, err
}

// streamWriter batches encoded records into frames.
type streamWriter struct {
	cw      *countingWriter
	bw      *bufio.Writer
	payload []byte
	inFrame uint32
	total   uint64
	err     error
	closed  bool
}

func newStreamWriter(w io.Writer, kind byte) *streamWriter {
	cw := &countingWriter{w: w, tally: newTally()}
	s := &streamWriter{cw: cw, bw: bufio.NewWriterSize(cw, 128<<10), payload: make([]byte, 0, flushAt+256)}
	var h [headerLen]byte
	copy(h[:], magic)
	binary.LittleEndian.PutUint16(h[8:], SchemaVersion)
	h[10] = kind
	_, s.err = s.bw.Write(h[:])
	return s
}

func (s *streamWriter) frame(typ byte, payload []byte, records uint32) {
	if s.err != nil {
		return
	}
	var h [frameHdrLen]byte
	h[0] = typ
	binary.LittleEndian.PutUint32(h[4:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(h[8:], records)
	crc := crc32.Update(crc32.Checksum(h[:12], castagnoli), castagnoli, payload)
	binary.LittleEndian.PutUint32(h[12:], crc)
	if _, err := s.bw.Write(h[:]); err != nil {
		s.err = err
		return
	}
	_, s.err = s.bw.Write(payload)
}

func (s *streamWriter) added() error {
	if s.err != nil {
		return s.err
	}
	s.inFrame++
	s.total++
	if len(s.payload) >= flushAt {
		s.flushFrame()
	}
	return s.err
}

func (s *streamWriter) flushFrame() {
	if s.inFrame == 0 {
		return
	}
	s.frame(frameData, s.payload, s.inFrame)
	s.payload = s.payload[:0]
	s.inFrame = 0
}

// Flush writes the records so far as a frame and hands them to the
// underlying writer, so a reader of a capture in progress (or a crash) loses
// at most what came after.
func (s *streamWriter) Flush() error {
	if s.closed {
		return errors.New("stream writer closed")
	}
	s.flushFrame()
	if s.err == nil {
		s.err = s.bw.Flush()
	}
	return s.err
}

func (s *streamWriter) close() (Summary, error) {
	if s.closed {
		return Summary{}, errors.New("stream writer closed twice")
	}
	s.flushFrame()
	var end [8]byte
	binary.LittleEndian.PutUint64(end[:], s.total)
	s.frame(frameEnd, end[:], 0)
	if s.err == nil {
		s.err = s.bw.Flush()
	}
	s.closed = true
	if s.err != nil {
		return Summary{}, s.err
	}
	return s.cw.summary(s.total), nil
}

// RecordWriter writes one stream.
type RecordWriter[T any] struct {
	s        *streamWriter
	what     string
	validate func(*T) error
	append   func([]byte, *T) []byte
}

// OpWriter writes ops.bin; BlockWriter writes block.bin.
type (
	OpWriter    = RecordWriter[Op]
	BlockWriter = RecordWriter[Block]
)

// NewOpWriter starts an ops stream on w.
func NewOpWriter(w io.Writer) *OpWriter {
	return &OpWriter{s: newStreamWriter(w, streamOps), what: "op", validate: validateOp, append: appendOp}
}

// NewBlockWriter starts a block stream on w.
func NewBlockWriter(w io.Writer) *BlockWriter {
	return &BlockWriter{s: newStreamWriter(w, streamBlock), what: "block", validate: validateBlock, append: appendBlock}
}

// Write appends one record; it refuses a record a reader would refuse.
func (w *RecordWriter[T]) Write(v T) error {
	if w.s.closed {
		return fmt.Errorf("%s writer closed", w.what)
	}
	if err := w.validate(&v); err != nil {
		return fmt.Errorf("%s record: %w", w.what, err)
	}
	w.s.payload = w.append(w.s.payload, &v)
	return w.s.added()
}

// Flush hands the records so far to the underlying writer.
func (w *RecordWriter[T]) Flush() error { return w.s.Flush() }

// Close writes the end frame; the stream is complete only then.
func (w *RecordWriter[T]) Close() (Summary, error) { return w.s.close() }

// streamReader reads frames and hands out their payload record by record.
type streamReader struct {
	r *bufio.Reader
	tally
	payload []byte
	d       dec
	left    uint32 // records left in the current frame
	total   uint64
	done    bool
	err     error
}

func (s *streamReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	s.add(p[:n])
	return n, err
}

func newStreamReader(r io.Reader, kind byte) (*streamReader, error) {
	s := &streamReader{r: bufio.NewReaderSize(r, 128<<10), tally: newTally()}
	var h [headerLen]byte
	if _, err := io.ReadFull(s, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("%w: %d-byte header incomplete", ErrTruncated, headerLen)
		}
		return nil, err
	}
	if string(h[:8]) != magic {
		return nil, fmt.Errorf("%w: no %q header", ErrNotCapture, magic)
	}
	if v := binary.LittleEndian.Uint16(h[8:]); v != SchemaVersion {
		return nil, fmt.Errorf("%w: stream schema %d, this slowpath reads %d", ErrVersion, v, SchemaVersion)
	}
	if h[10] != kind {
		return nil, fmt.Errorf("%w: stream kind %q where %q was expected", ErrNotCapture, h[10], kind)
	}
	if h[11] != 0 || binary.LittleEndian.Uint32(h[12:]) != 0 {
		return nil, fmt.Errorf("%w: reserved header bytes set", ErrCorrupt)
	}
	return s, nil
}

// next returns a decoder positioned on the next record, or io.EOF after a
// valid end frame.
func (s *streamReader) next() (*dec, error) {
	if s.err != nil {
		return nil, s.err
	}
	for s.left == 0 {
		if len(s.d.b) != 0 {
			return nil, s.fail(fmt.Errorf("%w: %d bytes after the last record of a frame", ErrCorrupt, len(s.d.b)))
		}
		if s.done {
			return nil, io.EOF
		}
		if err := s.readFrame(); err != nil {
			return nil, s.fail(err)
		}
	}
	s.left--
	return &s.d, nil
}

func (s *streamReader) fail(err error) error {
	s.err = err
	return err
}

func (s *streamReader) readFrame() error {
	var h [frameHdrLen]byte
	if _, err := io.ReadFull(s, h[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: no end frame after %d records", ErrTruncated, s.total)
		}
		return err
	}
	typ, size, records := h[0], binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint32(h[8:])
	if h[1] != 0 || h[2] != 0 || h[3] != 0 {
		return fmt.Errorf("%w: reserved frame bytes set", ErrCorrupt)
	}
	switch {
	case typ != frameData && typ != frameEnd:
		return fmt.Errorf("%w: frame type %d", ErrCorrupt, typ)
	case size > maxPayload:
		return fmt.Errorf("%w: frame of %d bytes, at most %d", ErrCorrupt, size, maxPayload)
	case typ == frameData && (records == 0 || uint64(records)*minRecordSize > uint64(size)):
		return fmt.Errorf("%w: %d records cannot fill a %d-byte frame", ErrCorrupt, records, size)
	case typ == frameEnd && (size != 8 || records != 0):
		return fmt.Errorf("%w: end frame of %d bytes and %d records", ErrCorrupt, size, records)
	}
	if cap(s.payload) < int(size) {
		s.payload = make([]byte, size)
	}
	p := s.payload[:size]
	if _, err := io.ReadFull(s, p); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: frame of %d bytes cut short after %d records", ErrTruncated, size, s.total)
		}
		return err
	}
	if crc := crc32.Update(crc32.Checksum(h[:12], castagnoli), castagnoli, p); crc != binary.LittleEndian.Uint32(h[12:]) {
		return fmt.Errorf("%w: frame CRC after %d records", ErrCorrupt, s.total)
	}
	if typ == frameEnd {
		if n := binary.LittleEndian.Uint64(p); n != s.total {
			return fmt.Errorf("%w: end frame counts %d records, the stream held %d", ErrCorrupt, n, s.total)
		}
		var one [1]byte
		if n, _ := io.ReadFull(s.r, one[:]); n != 0 {
			return fmt.Errorf("%w: data after the end frame", ErrCorrupt)
		}
		s.done = true
		return nil
	}
	s.d = dec{b: p}
	s.left = records
	s.total += uint64(records)
	return nil
}

func (s *streamReader) summary() Summary {
	return s.tally.summary(s.total)
}

// RecordReader reads one stream record by record, in constant memory.
type RecordReader[T any] struct {
	s      *streamReader
	what   string
	decode func(*dec) (T, error)
}

// OpReader reads ops.bin; BlockReader reads block.bin.
type (
	OpReader    = RecordReader[Op]
	BlockReader = RecordReader[Block]
)

// NewOpReader checks the stream's header.
func NewOpReader(r io.Reader) (*OpReader, error) {
	return newRecordReader(r, streamOps, "op", decodeOp)
}

// NewBlockReader checks the stream's header.
func NewBlockReader(r io.Reader) (*BlockReader, error) {
	return newRecordReader(r, streamBlock, "block", decodeBlock)
}

func newRecordReader[T any](r io.Reader, kind byte, what string, decode func(*dec) (T, error)) (*RecordReader[T], error) {
	s, err := newStreamReader(r, kind)
	if err != nil {
		return nil, err
	}
	return &RecordReader[T]{s: s, what: what, decode: decode}, nil
}

// Next returns the next record; io.EOF only after the end frame was read
// and checked.
func (r *RecordReader[T]) Next() (T, error) {
	var zero T
	d, err := r.s.next()
	if err != nil {
		return zero, err
	}
	v, err := r.decode(d)
	if err != nil {
		return zero, r.s.fail(fmt.Errorf("%w: %s record %d: %v", ErrCorrupt, r.what, r.s.total-uint64(r.s.left), err))
	}
	return v, nil
}

// Summary is what was read so far: after io.EOF, the whole stream.
func (r *RecordReader[T]) Summary() Summary { return r.s.summary() }
