package capfile

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func seedStreams(f *testing.F) {
	var ops, blocks bytes.Buffer
	ow, bw := NewOpWriter(&ops), NewBlockWriter(&blocks)
	for _, o := range sampleOps() {
		ow.Write(o)
	}
	for _, b := range sampleBlocks() {
		bw.Write(b)
	}
	ow.Close()
	bw.Close()
	f.Add(ops.Bytes())
	f.Add(blocks.Bytes())
	f.Add([]byte(magic))
}

// FuzzOpStream: any input decodes to valid records or fails with a named
// error; what decodes re-encodes to a stream that decodes to the same
// records (varints may be spelled longer than the writer spells them, so
// the bytes themselves may differ).
func FuzzOpStream(f *testing.F) {
	seedStreams(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := drainOps(data)
		if err != nil {
			if !named(err) {
				t.Fatalf("unnamed error: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		w := NewOpWriter(&buf)
		for _, o := range ops {
			if err := w.Write(o); err != nil {
				t.Fatalf("decoded record %+v refused by the writer: %v", o, err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		again, err := drainOps(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(ops, again); diff != "" {
			t.Fatalf("(-first +again)\n%s", diff)
		}
	})
}

// FuzzBlockStream is FuzzOpStream for block.bin.
func FuzzBlockStream(f *testing.F) {
	seedStreams(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := NewBlockReader(bytes.NewReader(data))
		var blocks []Block
		for err == nil {
			var b Block
			if b, err = r.Next(); err == nil {
				blocks = append(blocks, b)
			}
		}
		if err.Error() != "EOF" {
			if !named(err) {
				t.Fatalf("unnamed error: %v", err)
			}
			return
		}
		var buf bytes.Buffer
		w := NewBlockWriter(&buf)
		for _, b := range blocks {
			if err := w.Write(b); err != nil {
				t.Fatalf("decoded record %+v refused by the writer: %v", b, err)
			}
		}
		w.Close()
		if err := drainBlocks(buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	})
}

// FuzzManifest: any input is a valid manifest or a named error; a valid one
// encodes and decodes to itself.
func FuzzManifest(f *testing.F) {
	m := sampleManifest()
	m.Kind, m.SchemaVersion = Kind, SchemaVersion
	m.Streams.Ops = Stream{File: OpsName, SHA256: string(bytes.Repeat([]byte("a"), 64)), Records: 10}
	m.Streams.Block = Stream{File: BlockName, SHA256: string(bytes.Repeat([]byte("b"), 64)), Records: 4}
	m.Events.Ops, m.Events.Block = 10, 4
	raw, err := EncodeManifest(m)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw)
	f.Add([]byte(`{"kind":"slowpath-capture","schema_version":1}`))
	f.Add([]byte(`{`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := DecodeManifest(data)
		if err != nil {
			if !named(err) {
				t.Fatalf("unnamed error: %v", err)
			}
			return
		}
		enc, err := EncodeManifest(m)
		if err != nil {
			t.Fatalf("decoded manifest does not encode: %v", err)
		}
		again, err := DecodeManifest(enc)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(m, again); diff != "" {
			t.Fatalf("(-first +again)\n%s", diff)
		}
	})
}
