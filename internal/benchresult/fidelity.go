package benchresult

// A section of a Result: how faithful a replay was to its capture.

// Fidelity says how faithful a replay of a capture was: the block-level
// requests the replay caused on the filesystem's device against those the
// capture recorded on its own (docs/replay.md).
type Fidelity struct {
	Mode string `json:"mode"` // timed, afap or span
	// Capture summarises the capture's block trace of the device nearest
	// its filesystem; Replay the replay's, recorded the same way. Replay
	// is nil when it could not be recorded (Problems say why).
	Capture BlockTrace  `json:"capture"`
	Replay  *BlockTrace `json:"replay,omitempty"`
	// Timing is the timed replayer's lateness against the schedule.
	Timing *ReplayTiming `json:"timing,omitempty"`
	// Skipped counts captured operations a replay does not perform, by
	// kind (failed calls, sync_file_range, advice).
	Skipped  map[string]uint64 `json:"skipped,omitempty"`
	Problems []string          `json:"problems,omitempty"`
}

// BlockTrace summarises block-level requests on one device.
type BlockTrace struct {
	Device     string `json:"device"` // kernel name: dm-0, vda
	IOs        uint64 `json:"ios"`    // reads + writes + flushes + others
	Bytes      uint64 `json:"bytes"`
	ReadIOs    uint64 `json:"read_ios"`
	WriteIOs   uint64 `json:"write_ios"`
	FlushIOs   uint64 `json:"flush_ios"` // empty flushes
	OtherIOs   uint64 `json:"other_ios"` // discard, write zeroes, other
	ReadBytes  uint64 `json:"read_bytes"`
	WriteBytes uint64 `json:"write_bytes"`
	// Sizes counts reads and writes by size: each bucket holds the
	// requests above the previous bucket's MaxBytes up to its own
	// (powers of two), ascending, empty buckets left out.
	Sizes []SizeBucket `json:"sizes"`
	// DurationNS is from the first issue to the last completion;
	// IOPS and BytesPerSec are over it.
	DurationNS  int64   `json:"duration_ns"`
	IOPS        float64 `json:"iops"`
	BytesPerSec float64 `json:"bytes_per_sec"`
	// Latency from issue (or bio queue) to completion, reads and writes.
	P50NS int64 `json:"p50_ns"`
	P99NS int64 `json:"p99_ns"`
}

// SizeBucket is one bucket of BlockTrace.Sizes.
type SizeBucket struct {
	MaxBytes uint64 `json:"max_bytes"`
	Count    uint64 `json:"count"`
}

// ReplayTiming is how late a timed replay issued its operations after
// their captured times since the start.
type ReplayTiming struct {
	Ops       uint64 `json:"ops"`
	LateP50NS int64  `json:"late_p50_ns"`
	LateP99NS int64  `json:"late_p99_ns"`
	LateMaxNS int64  `json:"late_max_ns"`
}
