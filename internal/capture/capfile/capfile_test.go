package capfile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/pathrecord"
	"github.com/slowpath/slowpath/internal/snapshot"
)

func sampleOps() []Op {
	return []Op{
		{Kind: OpOpen, Thread: 1, File: 1, Flags: FlagDirect | FlagSync, Start: 10, End: 900},
		{Kind: OpWrite, Thread: 1, File: 1, Flags: FlagDirect | FlagPositional, Offset: 4 << 20, Length: 4 << 20, Result: 4 << 20, Start: 1000, End: 250000},
		{Kind: OpRead, Thread: 2, File: 2, Flags: FlagVectored, Offset: 1 << 40, Length: 8192, Result: -5, Start: 1 << 35, End: 1<<35 + 77},
		{Kind: OpFsync, Thread: 1, File: 1, Start: 300000, End: 900000},
		{Kind: OpFdatasync, Thread: 1, File: 1, Start: 900001, End: 900002},
		{Kind: OpSyncFileRange, Thread: 2, File: 1, Offset: 0, Length: 1 << 20, Arg: 2 | 4, Start: 5, End: 6},
		{Kind: OpFadvise, Thread: 2, File: 2, Length: 0, Arg: 1, Start: 7, End: 7},
		{Kind: OpMmap, Thread: 2, File: 2, Flags: FlagShared, Length: 64 << 20, Arg: 1, Start: 8, End: 9},
		{Kind: OpMadvise, Thread: 2, File: 2, Offset: 4096, Length: 8192, Arg: 1, Start: 10, End: 11},
		{Kind: OpFault, Thread: 2, File: 2, Flags: FlagMajor, Offset: 12 << 12, Length: 4096, Start: 12, End: 12},
		{Kind: OpRead, Thread: 1, File: 2, Flags: FlagAIO | FlagDirect | FlagPositional, Offset: 8192, Length: 4096, Result: 4096, Start: 13, End: 90},
		{Kind: OpWrite, Thread: 2, File: 1, Flags: FlagURing | FlagFixedFile | FlagFixedBuf | FlagLinked | FlagPositional, Offset: 0, Length: 512, Result: 512, Start: 14, End: 15},
		{Kind: OpFdatasync, Thread: 2, File: 1, Flags: FlagURing, Start: 16, End: 30},
	}
}

func sampleBlocks() []Block {
	return []Block{
		{Device: 1, Op: BlockWrite, Flags: BlockFlagSync | BlockFlagFUA, Sector: 2048, Bytes: 4 << 20, Issue: 1000, Latency: 20000},
		{Device: 2, Op: BlockRead, Flags: BlockFlagReadahead, Sector: 1 << 40, Bytes: 4096, Issue: 1 << 36, Latency: 1},
		{Device: 1, Op: BlockFlush, Flags: BlockFlagPreflush, Issue: 5},
		{Device: 2, Op: BlockDiscard, Sector: 8, Bytes: 1 << 30, Error: -5, Issue: 6, Flags: BlockFlagNoComplete},
	}
}

func sampleManifest() *Manifest {
	ra := uint64(128)
	return &Manifest{
		Status:           StatusComplete,
		Started:          time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC),
		StartMonotonicNS: 123456789,
		DurationNS:       60e9,
		Kernel:           Kernel{Release: "6.1.0-test", FaultSource: FaultSourceFilemap},
		Filters:          Filters{PID: 42, MountDevice: "253:0", FSType: "ext4"},
		Limits:           Limits{DurationNS: 60e9, MaxRecords: 1 << 30},
		Path: RedactPath(pathrecord.Path{MountPoint: "/srv/secret", Layers: []pathrecord.Layer{
			{Kind: "filesystem", Name: "/srv/secret", FSType: "ext4", MajorMinor: "253:0"},
			{Kind: "dm-crypt", Name: "dm-0", Device: "dm-0", Depth: 1, Encrypted: true},
			{Kind: "loop", Name: "loop0", Device: "loop0", Depth: 2, BackingFile: "/var/tmp/secret.img"},
		}, Incomplete: []string{"loop device loop0: no mount holds backing file /var/tmp/secret.img"}}),
		Devices: []Device{
			{ID: 1, Name: "dm-0", MajorMinor: "253:0", Kind: "dm-crypt", Source: BlockSourceBio},
			{ID: 2, Name: "loop0", MajorMinor: "7:0", Kind: "loop", Source: BlockSourceRq, ReadaheadKB: &ra},
		},
		Files: []File{
			{ID: 1, Name: "f0001", SizeBytes: 1 << 30, SizeStartBytes: 1 << 29},
			{ID: 2, Name: "f0002", SizeBytes: 64 << 20, ResidentPages: 12, Resident: [][2]uint64{{0, 10}, {100, 2}}},
		},
		Threads: []Thread{{ID: 1, Process: 1}, {ID: 2, Process: 1}},
		System:  System{PageSize: 4096, MemTotalBytes: 8 << 30, Sysctls: map[string]string{"vm.dirty_ratio": "20"}},
		Events:  Events{Faults: 1},
	}
}

// writeSample writes a whole capture directory and returns it.
func writeSample(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cap")
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range sampleOps() {
		if err := w.Ops.Write(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, b := range sampleBlocks() {
		if err := w.Block.Write(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Finish(sampleManifest()); err != nil {
		t.Fatal(err)
	}
	return dir
}

func readAll(t *testing.T, c *Capture) ([]Op, []Block, error) {
	t.Helper()
	var ops []Op
	var blocks []Block
	if err := c.EachOp(func(o Op) error { ops = append(ops, o); return nil }); err != nil {
		return ops, nil, err
	}
	err := c.EachBlock(func(b Block) error { blocks = append(blocks, b); return nil })
	return ops, blocks, err
}

func TestRoundTrip(t *testing.T) {
	dir := writeSample(t)
	c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ops, blocks, err := readAll(t, c)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(sampleOps(), ops); diff != "" {
		t.Errorf("ops (-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(sampleBlocks(), blocks); diff != "" {
		t.Errorf("blocks (-want +got)\n%s", diff)
	}
	m := c.Manifest
	if m.Events.Ops != uint64(len(ops)) || m.Events.Block != uint64(len(blocks)) || m.Kind != Kind {
		t.Errorf("manifest events %+v, kind %q", m.Events, m.Kind)
	}
	// Redaction kept no path.
	raw, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"/srv/secret", "secret.img", "/var/tmp"} {
		if bytes.Contains(raw, []byte(s)) {
			t.Errorf("manifest holds %q", s)
		}
	}
	if m.Path.Layers[0].Name != "(mount)" || m.Path.Layers[0].FSType != "ext4" || m.Path.Layers[1].Name != "dm-0" {
		t.Errorf("redacted layers %+v", m.Path.Layers)
	}
}

// TestManyFrames crosses frame boundaries and checks the size per record.
func TestManyFrames(t *testing.T) {
	var buf bytes.Buffer
	w := NewOpWriter(&buf)
	const n = 100000
	for i := range n {
		o := Op{Kind: OpRead, Thread: uint32(i%7 + 1), File: uint32(i%3 + 1), Flags: FlagPositional,
			Offset: uint64(i*7919%262144) * 4096, Length: 4096, Result: 4096, Start: uint64(i) * 600000, End: uint64(i)*600000 + 15000}
		if err := w.Write(o); err != nil {
			t.Fatal(err)
		}
	}
	sum, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != n || sum.Bytes != uint64(buf.Len()) {
		t.Fatalf("summary %+v for %d bytes", sum, buf.Len())
	}
	// A 4 KiB pread at a random offset of a 1 GiB file, 60 s into a capture:
	// about 20 bytes; a fixed layout would take 56.
	if per := float64(buf.Len()) / n; per > 24 {
		t.Errorf("%.1f bytes per record", per)
	}
	r, err := NewOpReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got := 0
	for {
		o, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if o.Start != uint64(got)*600000 {
			t.Fatalf("record %d starts at %d", got, o.Start)
		}
		got++
	}
	if got != n || r.Summary() != sum {
		t.Errorf("read %d records, summary %+v, wrote %+v", got, r.Summary(), sum)
	}
}

// TestTruncated cuts a stream at every length: always ErrTruncated.
func TestTruncated(t *testing.T) {
	var buf bytes.Buffer
	w := NewBlockWriter(&buf)
	for _, b := range sampleBlocks() {
		if err := w.Write(b); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil { // one frame per record
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	for n := range len(full) {
		err := drainBlocks(full[:n])
		if !errors.Is(err, ErrTruncated) {
			t.Fatalf("cut at %d of %d: %v, want ErrTruncated", n, len(full), err)
		}
	}
	if err := drainBlocks(full); err != nil {
		t.Fatal(err)
	}
	if err := drainBlocks(append(full[:len(full):len(full)], 0)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("trailing byte: %v, want ErrCorrupt", err)
	}
}

func drainBlocks(data []byte) error {
	r, err := NewBlockReader(bytes.NewReader(data))
	if err != nil {
		return err
	}
	for {
		if _, err := r.Next(); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
	}
}

func drainOps(data []byte) ([]Op, error) {
	r, err := NewOpReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var ops []Op
	for {
		o, err := r.Next()
		if err == io.EOF {
			return ops, nil
		}
		if err != nil {
			return ops, err
		}
		ops = append(ops, o)
	}
}

func named(err error) bool {
	return errors.Is(err, ErrTruncated) || errors.Is(err, ErrCorrupt) || errors.Is(err, ErrNotCapture) || errors.Is(err, ErrVersion)
}

// TestTampered flips every bit of a stream: always a named error.
func TestTampered(t *testing.T) {
	var buf bytes.Buffer
	w := NewOpWriter(&buf)
	for _, o := range sampleOps() {
		if err := w.Write(o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	full := buf.Bytes()
	for i := range len(full) * 8 {
		b := bytes.Clone(full)
		b[i/8] ^= 1 << (i % 8)
		if _, err := drainOps(b); !named(err) {
			t.Fatalf("bit %d flipped: %v, want a named error", i, err)
		}
	}
}

// TestRecordsValidated: a frame whose CRC is right but whose record is
// nonsense is refused by the reader, and the writer refuses to write it.
func TestRecordsValidated(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   Op
	}{
		{"unknown op", Op{Kind: 99, Thread: 1, File: 1}},
		{"unknown flag", Op{Kind: OpRead, Thread: 1, File: 1, Flags: 1 << 20}},
		{"thread 0", Op{Kind: OpRead, File: 1}},
		{"file 0", Op{Kind: OpRead, Thread: 1}},
		{"ends before start", Op{Kind: OpRead, Thread: 1, File: 1, Start: 5, End: 4}},
		{"moved more than asked", Op{Kind: OpRead, Thread: 1, File: 1, Length: 10, Result: 11}},
		{"offset beyond files", Op{Kind: OpRead, Thread: 1, File: 1, Offset: 1 << 63}},
		{"aio and io_uring", Op{Kind: OpRead, Thread: 1, File: 1, Flags: FlagAIO | FlagURing}},
		{"async mmap", Op{Kind: OpMmap, Thread: 1, File: 1, Flags: FlagURing}},
		{"fixed file without io_uring", Op{Kind: OpRead, Thread: 1, File: 1, Flags: FlagAIO | FlagFixedFile}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := NewOpWriter(io.Discard).Write(tc.op); err == nil {
				t.Error("writer accepted it")
			}
			// Hand-frame it with a correct CRC.
			var s bytes.Buffer
			s.WriteString(magic)
			s.Write([]byte{SchemaVersion, 0, streamOps, 0, 0, 0, 0, 0})
			payload := appendOp(nil, &tc.op)
			for len(payload) < minRecordSize {
				payload = append(payload, 0)
			}
			var h [frameHdrLen]byte
			h[0] = frameData
			binary.LittleEndian.PutUint32(h[4:], uint32(len(payload)))
			binary.LittleEndian.PutUint32(h[8:], 1)
			binary.LittleEndian.PutUint32(h[12:], crc32.Update(crc32.Checksum(h[:12], castagnoli), castagnoli, payload))
			s.Write(h[:])
			s.Write(payload)
			if _, err := drainOps(s.Bytes()); !errors.Is(err, ErrCorrupt) {
				t.Errorf("reader: %v, want ErrCorrupt", err)
			}
		})
	}
}

// TestDirTampered: a stream rewritten with valid CRCs (a different record)
// is caught by the manifest's SHA-256; references outside the manifest's
// tables, a missing manifest and a cut manifest are named errors.
func TestDirTampered(t *testing.T) {
	t.Run("rewritten stream", func(t *testing.T) {
		dir := writeSample(t)
		ops := sampleOps()
		ops[1].Offset += 4096
		var buf bytes.Buffer
		w := NewOpWriter(&buf)
		for _, o := range ops {
			if err := w.Write(o); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, OpsName), buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Verify(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "the manifest says") {
			t.Errorf("Verify: %v, want ErrCorrupt naming the manifest", err)
		}
	})
	t.Run("file outside the table", func(t *testing.T) {
		dir := writeSample(t)
		c, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		c.Manifest.Files = c.Manifest.Files[:1]
		if err := c.Verify(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "the manifest has") {
			t.Errorf("Verify: %v", err)
		}
	})
	t.Run("no manifest", func(t *testing.T) {
		dir := writeSample(t)
		os.Remove(filepath.Join(dir, ManifestName))
		if _, err := Open(dir); !errors.Is(err, ErrTruncated) {
			t.Errorf("Open: %v, want ErrTruncated", err)
		}
	})
	t.Run("cut manifest", func(t *testing.T) {
		dir := writeSample(t)
		p := filepath.Join(dir, ManifestName)
		raw, _ := os.ReadFile(p)
		for _, n := range []int{1, len(raw) / 2, len(raw) - 2} {
			os.WriteFile(p, raw[:n], 0o644)
			if _, err := Open(dir); !errors.Is(err, ErrTruncated) {
				t.Errorf("manifest cut at %d: %v, want ErrTruncated", n, err)
			}
		}
	})
	t.Run("not empty", func(t *testing.T) {
		dir := writeSample(t)
		if _, err := Create(dir); !errors.Is(err, ErrNotEmpty) {
			t.Errorf("Create on a capture: %v", err)
		}
	})
}

func TestManifestValidate(t *testing.T) {
	ok := func() *Manifest {
		m := sampleManifest()
		m.Kind, m.SchemaVersion = Kind, SchemaVersion
		m.Streams.Ops = Stream{File: OpsName, SHA256: strings.Repeat("a", 64), Records: 10}
		m.Streams.Block = Stream{File: BlockName, SHA256: strings.Repeat("b", 64), Records: 4}
		m.Events.Ops, m.Events.Block = 10, 4
		return m
	}
	if err := ok().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Manifest)
		want error
	}{
		{"kind", func(m *Manifest) { m.Kind = "slowpath-bench-result" }, ErrNotCapture},
		{"schema", func(m *Manifest) { m.SchemaVersion = 2 }, ErrVersion},
		{"status", func(m *Manifest) { m.Status = "" }, ErrCorrupt},
		{"real mount point", func(m *Manifest) { m.Path.MountPoint = "/srv" }, ErrCorrupt},
		{"backing file", func(m *Manifest) { m.Path.Layers[2].BackingFile = "/x.img" }, ErrCorrupt},
		{"file name", func(m *Manifest) { m.Files[0].Name = "data.db" }, ErrCorrupt},
		{"file id", func(m *Manifest) { m.Files[1].ID = 7 }, ErrCorrupt},
		{"residency overlap", func(m *Manifest) { m.Files[1].Resident = [][2]uint64{{0, 10}, {5, 2}} }, ErrCorrupt},
		{"residency count", func(m *Manifest) { m.Files[1].ResidentPages = 13 }, ErrCorrupt},
		{"thread process", func(m *Manifest) { m.Threads[0].Process = 9 }, ErrCorrupt},
		{"device source", func(m *Manifest) { m.Devices[0].Source = "x" }, ErrCorrupt},
		{"device name", func(m *Manifest) { m.Devices[0].Name = "../sda" }, ErrCorrupt},
		{"mount device", func(m *Manifest) { m.Filters.MountDevice = "/dev/sda" }, ErrCorrupt},
		{"page size", func(m *Manifest) { m.System.PageSize = 3000 }, ErrCorrupt},
		{"stream name", func(m *Manifest) { m.Streams.Ops.File = "../../etc/passwd" }, ErrCorrupt},
		{"stream count", func(m *Manifest) { m.Events.Ops = 11 }, ErrCorrupt},
		{"over the limit", func(m *Manifest) { m.Limits.MaxRecords = 5 }, ErrCorrupt},
		{"block only with ops", func(m *Manifest) { m.Filters.BlockOnly = true }, ErrCorrupt},
		{"io_uring state", func(m *Manifest) { m.Kernel.IOURing = "maybe" }, ErrCorrupt},
		{"async beyond ops", func(m *Manifest) { m.Events.AIO, m.Events.IOURing = 6, 5 }, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := ok()
			tc.edit(m)
			if err := m.Validate(); !errors.Is(err, tc.want) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
}

// An engine layer keeps which engine encrypts with which settings, not the
// directories, configuration files or containers it names.
func TestRedactEngineLayer(t *testing.T) {
	p := RedactPath(pathrecord.Path{MountPoint: "/var/lib/mysql", Layers: []pathrecord.Layer{
		{Kind: "engine", Name: "MariaDB InnoDB", Encrypted: true, EncryptedBy: "service-cpu",
			Note: "mariadbd (pid 7) encrypts tables of /var/lib/mysql in its own threads",
			Engines: []pathrecord.EngineProcess{{Engine: "mariadb", PID: 7, Comm: "mariadbd", Container: "containerd 5f1c",
				DataDir: "/var/lib/mysql", Path: "/var/lib/mysql", Settings: []snapshot.EngineEncryption{
					{Setting: "innodb_encrypt_tables", Value: "ON", Enabled: true, Source: "/etc/mysql/secret.cnf"},
					{Setting: "x", Value: "/srv/keys", Enabled: true, Source: "command line", Path: "/srv/enc", Dev: "253:1"}}}}},
		{Kind: "filesystem", Name: "/var/lib/mysql", FSType: "xfs", Depth: 1},
	}})
	if err := checkRedacted(p); err != nil {
		t.Fatal(err)
	}
	e := p.Layers[0].Engines[0]
	if e.Engine != "mariadb" || e.Comm != "mariadbd" || e.Settings[0].Setting != "innodb_encrypt_tables" || e.Settings[0].Value != "ON" ||
		e.Settings[1].Source != "command line" || e.Settings[1].Dev != "253:1" {
		t.Errorf("redacted too much: %+v", e)
	}
	if p.Layers[0].Note != "(redacted: names a path)" {
		t.Errorf("note %q", p.Layers[0].Note)
	}
}
