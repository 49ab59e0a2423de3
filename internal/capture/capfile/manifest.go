// Package capfile is the on-disk format of a `slowpath capture` directory:
// manifest.json (what was captured, on what, with which losses) and two
// record streams, ops.bin (file-level operations per thread) and block.bin
// (block-level requests per device). docs/capture.md describes every field.
//
// The format holds no file content and no real path: files are f0001...,
// threads and processes are numbers, the mount and storage path are
// described by device names and kinds only. Decoding validates everything
// (truncation, tampering, unknown values, references outside the manifest's
// tables) and says so with a named error: ErrNotCapture, ErrVersion,
// ErrTruncated, ErrCorrupt.
//
// Stability: within SchemaVersion manifest fields are only added; record
// encodings and numbers of ops, flags and block ops never change. Anything
// else raises SchemaVersion, which readers refuse when they do not know it.
package capfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/pathrecord"
	"github.com/slowpath/slowpath/internal/recordkind"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Kind is "kind" of every manifest.
const Kind = recordkind.Capture

// SchemaVersion is the version of the manifest and of the stream headers.
const SchemaVersion = 1

// Names inside a capture directory.
const (
	ManifestName = "manifest.json"
	OpsName      = "ops.bin"
	BlockName    = "block.bin"
)

// Status of a capture.
const (
	StatusComplete    = "complete"     // ran its duration (or until asked to stop)
	StatusRecordLimit = "record-limit" // stopped early at Limits.MaxRecords
)

// Sources of page-cache misses of mapped files (Kernel.FaultSource).
const (
	FaultSourceFilemap   = "mm_filemap_fault" // filemap:mm_filemap_fault (6.17+), see docs/capture.md
	FaultSourcePageFault = "page_fault_user"  // exceptions:page_fault_user (x86) where the former is missing
	FaultSourceNone      = "none"             // not recorded on this kernel
)

// Block sources (Device.Source).
const (
	BlockSourceBio = "bio" // block_bio_queue / block_bio_complete: bio-based (dm, brd)
	BlockSourceRq  = "rq"  // block_rq_issue / block_rq_complete: request-based disks
)

// Manifest describes a capture directory.
type Manifest struct {
	Kind            string `json:"kind"`
	SchemaVersion   int    `json:"schema_version"`
	SlowpathVersion string `json:"slowpath_version,omitempty"`
	Status          string `json:"status"`
	// Started is the wall-clock start (UTC); StartMonotonicNS the same
	// instant on CLOCK_MONOTONIC, the clock of the records, whose times are
	// nanoseconds after it.
	Started          time.Time `json:"started"`
	StartMonotonicNS uint64    `json:"start_monotonic_ns"`
	DurationNS       uint64    `json:"duration_ns"`

	Kernel  Kernel  `json:"kernel"`
	Filters Filters `json:"filters"`
	Limits  Limits  `json:"limits"`
	// Path is the storage path of the captured mount as doctor models it,
	// with every real path removed (RedactPath).
	Path    *pathrecord.Path `json:"path,omitempty"`
	Devices []Device         `json:"devices"`
	Files   []File           `json:"files"`
	Threads []Thread         `json:"threads"`
	System  System           `json:"system"`
	Events  Events           `json:"events"`
	Streams Streams          `json:"streams"`
}

// Kernel is what the capture ran on and which tracepoints it used.
type Kernel struct {
	Release     string `json:"release"`
	FaultSource string `json:"fault_source"` // FaultSource*
	// AIO and IOURing say whether Linux AIO and io_uring I/O were
	// captured: AsyncCaptured, or why not (AsyncNo*). Empty in captures
	// from before they were (and for --block-only).
	AIO     string `json:"aio,omitempty"`
	IOURing string `json:"io_uring,omitempty"`
}

// Kernel.AIO and Kernel.IOURing values.
const (
	AsyncCaptured = "captured"
	// AsyncNoTracepoints: the kernel has no io_uring submission tracepoint
	// that passes the request (5.10): io_uring I/O is not captured.
	AsyncNoTracepoints = "not-captured: no io_uring submission tracepoint with the request in this kernel's BTF"
	// AsyncDisabled: kernel.io_uring_disabled is 2 (no process can set up
	// a ring) or the kernel is built without io_uring: there is nothing
	// to capture.
	AsyncDisabled = "disabled"
)

// Filters say what was captured. Zero values do not filter.
type Filters struct {
	PID uint32 `json:"pid,omitempty"` // a process (all its threads)
	// CgroupID is the cgroup v2 id (the inode of its directory): the path
	// given on the command line is not kept.
	CgroupID uint64 `json:"cgroup_id,omitempty"`
	Comm     string `json:"comm,omitempty"`
	// MountDevice is major:minor of the captured mount's filesystem: only
	// files on it were recorded.
	MountDevice string `json:"mount_device"`
	FSType      string `json:"fstype,omitempty"`
	// BlockOnly: no file-level records were taken (ops.bin is empty).
	BlockOnly bool `json:"block_only,omitempty"`
}

// Limits bound a capture.
type Limits struct {
	DurationNS uint64 `json:"duration_ns"`
	MaxRecords uint64 `json:"max_records"`
}

// Device is a block device of the captured path whose requests are in
// block.bin.
type Device struct {
	ID         uint32 `json:"id"`          // 1-based, its index in Devices + 1
	Name       string `json:"name"`        // kernel name: dm-0, sda, ram0
	MajorMinor string `json:"major_minor"` // e.g. 253:0
	Kind       string `json:"kind"`        // storagemodel layer kind: dm-crypt, disk, ram...
	Source     string `json:"source"`      // BlockSource*
	// ReadaheadKB is the queue's read_ahead_kb at the start, when it has one.
	ReadaheadKB *uint64 `json:"read_ahead_kb,omitempty"`
}

// File is one file the capture saw, under a pseudonym.
type File struct {
	ID   uint32 `json:"id"`   // 1-based, its index in Files + 1
	Name string `json:"name"` // FileName(ID): f0001...
	// SizeBytes is the size at the end of the capture (stat); SizeStartBytes
	// at the first sight of the file.
	SizeBytes      uint64 `json:"size_bytes"`
	SizeStartBytes uint64 `json:"size_start_bytes"`
	// Page-cache residency at the start: ResidentPages pages of PageSize
	// bytes, in runs [first page, page count] sorted and disjoint.
	// ResidentApprox says the runs were coarsened to stay within
	// MaxResidencyRuns (small gaps filled), so they hold more pages.
	ResidentPages  uint64      `json:"resident_pages"`
	Resident       [][2]uint64 `json:"resident,omitempty"`
	ResidentApprox bool        `json:"resident_approx,omitempty"`
	// ResidencyAtNS is set for a file first used during the capture: its
	// residency was read at that first sight, this many ns after the
	// start, less the pages the traced processes may have read from disk
	// between the event that showed the file and that reading (docs/replay.md).
	ResidencyAtNS uint64 `json:"residency_at_ns,omitempty"`
	// Unknown residency: the file could not be examined (first seen
	// through a fault or madvise with no descriptor to open it by, closed
	// before the capture could open it, or mincore failed).
	ResidencyUnknown bool `json:"residency_unknown,omitempty"`
}

// Thread is one thread that issued recorded operations.
type Thread struct {
	ID      uint32 `json:"id"`      // 1-based, its index in Threads + 1
	Process uint32 `json:"process"` // 1-based pseudonym of its process (threads of one process share it)
}

// System is the memory and writeback state at the start.
type System struct {
	PageSize          uint64 `json:"page_size"`
	MemTotalBytes     uint64 `json:"mem_total_bytes"`
	MemAvailableBytes uint64 `json:"mem_available_bytes"`
	CachedBytes       uint64 `json:"cached_bytes"`
	DirtyBytes        uint64 `json:"dirty_bytes"`
	// Sysctls holds vm.dirty_* and friends by name, as the kernel prints them.
	Sysctls map[string]string `json:"sysctls"`
}

// Events counts what the probes saw and lost.
type Events struct {
	Ops    uint64 `json:"ops"`    // records in ops.bin
	Faults uint64 `json:"faults"` // of which OpFault
	Block  uint64 `json:"block"`  // records in block.bin
	// Dropped counts events the kernel could not hand over (ring buffer
	// full): the records are incomplete by that much. A capture with drops
	// fails unless asked to keep it.
	Dropped uint64 `json:"dropped"`
	// Unmatched counts syscall exits or completions whose start was not
	// seen (they began before the capture or their entry was dropped).
	Unmatched uint64 `json:"unmatched"`
	// AIO and IOURing count the records of Linux AIO and io_uring requests
	// (of Ops).
	AIO     uint64 `json:"aio,omitempty"`
	IOURing uint64 `json:"io_uring,omitempty"`
	// RecursionMisses counts runs of the capture's programs the kernel
	// skipped (the same program already running on that CPU, as when an
	// interrupt's block completion comes during another's): events lost
	// as Dropped ones are, unseen by the ring buffer.
	RecursionMisses uint64 `json:"recursion_misses,omitempty"`
	// Missed counts I/O of captured threads on files of the mount that no
	// record describes; nil when none was seen.
	Missed *Missed `json:"missed,omitempty"`
}

// Missed is I/O the capture saw and could not record: calls and the bytes
// they asked for.
type Missed struct {
	Splice             uint64 `json:"splice,omitempty"`
	SpliceBytes        uint64 `json:"splice_bytes,omitempty"`
	Sendfile           uint64 `json:"sendfile,omitempty"`
	SendfileBytes      uint64 `json:"sendfile_bytes,omitempty"`
	CopyFileRange      uint64 `json:"copy_file_range,omitempty"`
	CopyFileRangeBytes uint64 `json:"copy_file_range_bytes,omitempty"`
	// IOURingOther: io_uring requests of opcodes other than read, write,
	// fsync and sync_file_range (and their vectored and fixed forms) on a
	// file of the mount (fallocate, splice, an opcode newer than slowpath).
	IOURingOther uint64 `json:"io_uring_other,omitempty"`
	// AIOOther: iocbs of other opcodes, or beyond the 64 read per io_submit.
	AIOOther uint64 `json:"aio_other,omitempty"`
}

// Calls is the number of calls and requests missed.
func (m *Missed) Calls() uint64 {
	if m == nil {
		return 0
	}
	return m.Splice + m.Sendfile + m.CopyFileRange + m.IOURingOther + m.AIOOther
}

// Streams are the record files, with what a reader must find in them.
type Streams struct {
	Ops   Stream `json:"ops"`
	Block Stream `json:"block"`
}

// Stream is one record file.
type Stream struct {
	File    string `json:"file"`
	Records uint64 `json:"records"`
	Bytes   uint64 `json:"bytes"`
	SHA256  string `json:"sha256"`
}

// MaxResidencyRuns bounds the residency runs of one file.
const MaxResidencyRuns = 4096

// Bounds on the manifest's tables: far above any real capture, low enough
// that a hostile manifest cannot exhaust memory.
const (
	maxManifestBytes = 256 << 20
	maxTable         = 1 << 22
)

// FileName is the pseudonym of file id: f0001, f0002... f10000.
func FileName(id uint32) string { return fmt.Sprintf("f%04d", id) }

// The manifest's value checks are plain loops, not regexps: compiling
// those (with their {64} and {1,64} repetitions) in package init made
// 1,225 allocations at every start of every command.

// isHexSHA says whether s is a SHA-256 in lower-case hex.
func isHexSHA(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// isMajMin says whether s is MAJOR:MINOR, each 1 to 10 decimal digits.
func isMajMin(s string) bool {
	major, minor, ok := strings.Cut(s, ":")
	return ok && isDigits(major, 10) && isDigits(minor, 10)
}

// isDigits says whether s is 1 to max decimal digits.
func isDigits(s string, max int) bool {
	if len(s) == 0 || len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isDevName says whether s is a block device's name as the manifest
// records it: 1 to 64 of A-Z a-z 0-9 _ . : + -.
func isDevName(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("_.:+-", c) >= 0) {
			return false
		}
	}
	return true
}

// RedactPath returns a copy of p with every real path removed: mount
// points, loop backing files, and the notes and problems that name them.
// The filesystem layer keeps its type and device.
func RedactPath(p pathrecord.Path) *pathrecord.Path {
	out := p
	out.MountPoint = ""
	out.AlsoMountedAt = nil
	out.Incomplete = nil
	for _, s := range p.Incomplete {
		out.Incomplete = append(out.Incomplete, redactText(s))
	}
	out.Layers = make([]pathrecord.Layer, len(p.Layers))
	for i, l := range p.Layers {
		if l.Kind == "filesystem" { // storagemodel.LayerFilesystem
			l.Name = "(mount)"
		}
		l.BackingFile = ""
		l.Note = redactText(l.Note)
		l.Name = redactText(l.Name)
		l.Engines = redactEngines(l.Engines)
		out.Layers[i] = l
	}
	return &out
}

// redactEngines keeps what an engine layer's processes are and which
// settings encrypt, without the directories, files and containers they
// name.
func redactEngines(es []pathrecord.EngineProcess) []pathrecord.EngineProcess {
	if es == nil {
		return nil
	}
	out := make([]pathrecord.EngineProcess, len(es))
	for i, e := range es {
		e.DataDir, e.Path, e.Container = "", "", ""
		e.Comm = redactText(e.Comm)
		sets := make([]snapshot.EngineEncryption, len(e.Settings))
		for j, st := range e.Settings {
			st.Source, st.Path = redactText(st.Source), ""
			st.Value = redactText(st.Value)
			sets[j] = st
		}
		e.Settings = sets
		out[i] = e
	}
	return out
}

// redactText drops a text that may name a path.
func redactText(s string) string {
	if strings.Contains(s, "/") {
		return "(redacted: names a path)"
	}
	return s
}

func checkRedacted(p *pathrecord.Path) error {
	if p.MountPoint != "" || len(p.AlsoMountedAt) != 0 {
		return errors.New("path names its mount point")
	}
	for _, s := range p.Incomplete {
		if strings.Contains(s, "/") {
			return errors.New("path problem names a path")
		}
	}
	for _, l := range p.Layers {
		if l.BackingFile != "" || strings.Contains(l.Name, "/") || strings.Contains(l.Note, "/") {
			return fmt.Errorf("layer %s names a path", l.Kind)
		}
		for _, e := range l.Engines {
			if e.DataDir != "" || e.Path != "" || e.Container != "" || strings.Contains(e.Comm, "/") {
				return fmt.Errorf("engine layer %s names a path or container", l.Name)
			}
			for _, st := range e.Settings {
				if st.Path != "" || strings.Contains(st.Source, "/") || strings.Contains(st.Value, "/") {
					return fmt.Errorf("engine layer %s: setting %s names a path", l.Name, st.Setting)
				}
			}
		}
	}
	return nil
}

// checkKind says whether a manifest is a capture's of this schema, naming
// what it is when it is not (recordkind).
func checkKind(env recordkind.Envelope) error {
	err := env.Check(Kind, SchemaVersion, false)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, recordkind.ErrKind) && env.What() != "":
		return fmt.Errorf("%w: the manifest is %s", ErrNotCapture, env.What())
	case errors.Is(err, recordkind.ErrKind):
		return fmt.Errorf("%w: the manifest has no \"kind\": %q", ErrNotCapture, Kind)
	case errors.Is(err, recordkind.ErrVersion):
		return fmt.Errorf("%w: manifest schema %d, this slowpath reads %d", ErrVersion, *env.SchemaVersion, SchemaVersion)
	}
	return fmt.Errorf("%w: %v", ErrNotCapture, err)
}

// Validate checks a manifest on its own (the streams are checked as they are
// read). Errors wrap ErrNotCapture, ErrVersion or ErrCorrupt.
func (m *Manifest) Validate() error {
	k, v := m.Kind, m.SchemaVersion
	if err := checkKind(recordkind.Envelope{Kind: &k, SchemaVersion: &v}); err != nil {
		return err
	}
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: manifest: %s", ErrCorrupt, fmt.Sprintf(format, a...))
	}
	switch m.Status {
	case StatusComplete, StatusRecordLimit:
	default:
		return bad("status %q", m.Status)
	}
	switch m.Kernel.FaultSource {
	case FaultSourceFilemap, FaultSourcePageFault, FaultSourceNone:
	default:
		return bad("fault source %q", m.Kernel.FaultSource)
	}
	for _, v := range []string{m.Kernel.AIO, m.Kernel.IOURing} {
		switch v {
		case "", AsyncCaptured, AsyncNoTracepoints, AsyncDisabled:
		default:
			return bad("async I/O state %q", v)
		}
	}
	if m.Events.AIO+m.Events.IOURing > m.Events.Ops {
		return bad("%d aio and %d io_uring records of %d ops", m.Events.AIO, m.Events.IOURing, m.Events.Ops)
	}
	if m.Path != nil {
		if err := checkRedacted(m.Path); err != nil {
			return bad("%v", err)
		}
	}
	if !isMajMin(m.Filters.MountDevice) {
		return bad("mount device %q is not major:minor", m.Filters.MountDevice)
	}
	if len(m.Devices) > maxTable || len(m.Files) > maxTable || len(m.Threads) > maxTable {
		return bad("tables of %d devices, %d files, %d threads", len(m.Devices), len(m.Files), len(m.Threads))
	}
	for i, d := range m.Devices {
		if d.ID != uint32(i+1) {
			return bad("device %d has id %d", i+1, d.ID)
		}
		if !isDevName(d.Name) || !isMajMin(d.MajorMinor) {
			return bad("device %d: name %q, major:minor %q", d.ID, d.Name, d.MajorMinor)
		}
		if d.Source != BlockSourceBio && d.Source != BlockSourceRq {
			return bad("device %s: source %q", d.Name, d.Source)
		}
	}
	for i, f := range m.Files {
		if f.ID != uint32(i+1) || f.Name != FileName(f.ID) {
			return bad("file %d has id %d and name %q", i+1, f.ID, f.Name)
		}
		if len(f.Resident) > MaxResidencyRuns {
			return bad("file %s: %d residency runs, at most %d", f.Name, len(f.Resident), MaxResidencyRuns)
		}
		var next, pages uint64
		for _, r := range f.Resident {
			if r[1] == 0 || r[0] < next || r[0]+r[1] < r[0] {
				return bad("file %s: residency runs overlap, are empty or unsorted", f.Name)
			}
			next = r[0] + r[1]
			pages += r[1]
		}
		if pages != f.ResidentPages {
			return bad("file %s: runs hold %d pages, resident_pages says %d", f.Name, pages, f.ResidentPages)
		}
		if f.ResidencyUnknown && (f.ResidentPages != 0 || f.ResidencyAtNS != 0) {
			return bad("file %s: unknown residency with resident pages or a time", f.Name)
		}
	}
	for i, t := range m.Threads {
		if t.ID != uint32(i+1) || t.Process == 0 || t.Process > uint32(len(m.Threads)) {
			return bad("thread %d has id %d, process %d", i+1, t.ID, t.Process)
		}
	}
	if m.System.PageSize == 0 || m.System.PageSize&(m.System.PageSize-1) != 0 {
		return bad("page size %d", m.System.PageSize)
	}
	for _, s := range []struct {
		st   Stream
		name string
		n    uint64
	}{{m.Streams.Ops, OpsName, m.Events.Ops}, {m.Streams.Block, BlockName, m.Events.Block}} {
		if s.st.File != s.name || !isHexSHA(s.st.SHA256) || s.st.Records != s.n {
			return bad("stream %q: %d records (events say %d), sha256 %q", s.st.File, s.st.Records, s.n, s.st.SHA256)
		}
	}
	if m.Events.Faults > m.Events.Ops {
		return bad("%d faults among %d ops", m.Events.Faults, m.Events.Ops)
	}
	if m.Filters.BlockOnly && m.Events.Ops != 0 {
		return bad("block-only capture with %d ops", m.Events.Ops)
	}
	if m.Limits.MaxRecords != 0 && m.Events.Ops+m.Events.Block > m.Limits.MaxRecords {
		return bad("%d records beyond the limit of %d", m.Events.Ops+m.Events.Block, m.Limits.MaxRecords)
	}
	return nil
}

// DecodeManifest reads and validates a manifest. Unknown fields are allowed
// (a newer slowpath of the same schema adds fields).
func DecodeManifest(data []byte) (*Manifest, error) {
	if len(data) > maxManifestBytes {
		return nil, fmt.Errorf("%w: manifest of %d bytes, at most %d", ErrCorrupt, len(data), maxManifestBytes)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		if env, perr := recordkind.Read(data); perr == nil {
			if kerr := checkKind(env); errors.Is(kerr, ErrNotCapture) {
				return nil, kerr
			}
		}
		// encoding/json reports a document cut short as a syntax error at
		// its end.
		var se *json.SyntaxError
		if errors.As(err, &se) && se.Offset >= int64(len(data)) {
			return nil, fmt.Errorf("%w: manifest ends mid-document", ErrTruncated)
		}
		return nil, fmt.Errorf("%w: manifest: %v", ErrCorrupt, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// EncodeManifest validates m and renders it (indented, with a final newline).
func EncodeManifest(m *Manifest) ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
