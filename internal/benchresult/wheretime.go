package benchresult

// Sections of a Result: where the run's time went (WhereTime, from the
// sampler) and its encryption tax.

// WhereTime is what the sampler saw: devices on the target's path and CPU
// per thread group, sampled every IntervalNS.
type WhereTime struct {
	IntervalNS int64 `json:"interval_ns"`
	// Summary is the one-line answer, e.g. "dm-0 await 18 ms vs sda
	// 0.4 ms; 38% of a CPU in kcryptd".
	Summary string        `json:"summary"`
	Devices []DeviceTime  `json:"devices"`
	Threads []ThreadGroup `json:"threads"`
	// SamplerCPUNS is the CPU time the sampler itself used.
	SamplerCPUNS int64 `json:"sampler_cpu_ns,omitempty"`
	// Problems name what could not be sampled (a device that vanished, a
	// /proc file unreadable).
	Problems []string `json:"problems,omitempty"`
}

// DeviceTime is one block device of the target's path over the run, from
// /proc/diskstats (Documentation/admin-guide/iostats.rst).
type DeviceTime struct {
	Device string `json:"device"` // kernel name: dm-0, sda, ram0
	Layer  string `json:"layer"`  // storage model layer kind: dm-crypt, disk, ...
	Depth  int    `json:"depth"`  // storage model depth: 0 is nearest the filesystem
	// Whole-run figures, iostat -x style.
	ReadIOPS         float64 `json:"read_iops"`
	WriteIOPS        float64 `json:"write_iops"`
	ReadBytesPerSec  float64 `json:"read_bytes_per_sec"`
	WriteBytesPerSec float64 `json:"write_bytes_per_sec"`
	// AwaitNS is the mean time per completed I/O, queue plus service
	// ((read ticks + write ticks) / (reads + writes)), -1 with no I/O.
	AwaitNS      float64 `json:"await_ns"`
	ReadAwaitNS  float64 `json:"read_await_ns"`
	WriteAwaitNS float64 `json:"write_await_ns"`
	// UtilPercent is io_ticks over wall time (100 = always busy).
	UtilPercent float64 `json:"util_percent"`
	// QueueDepth is the mean number of requests in flight (weighted
	// io_ticks / wall time, iostat's aqu-sz).
	QueueDepth float64 `json:"queue_depth"`
	// Samples are the raw per-interval deltas, enough to recompute every
	// figure above for any window.
	Samples []DeviceSample `json:"samples"`
}

// DeviceSample is one interval's /proc/diskstats deltas for one device.
type DeviceSample struct {
	TMS          int64  `json:"t_ms"` // end of the interval, from Result.Started
	IntervalMS   int64  `json:"interval_ms"`
	Reads        uint64 `json:"reads"`
	Writes       uint64 `json:"writes"`
	ReadBytes    uint64 `json:"read_bytes"`
	WriteBytes   uint64 `json:"write_bytes"`
	ReadTicksMS  uint64 `json:"read_ticks_ms"`
	WriteTicksMS uint64 `json:"write_ticks_ms"`
	IOTicksMS    uint64 `json:"io_ticks_ms"`
	QueueTicksMS uint64 `json:"queue_ticks_ms"` // weighted time in queue
	InFlight     uint64 `json:"in_flight"`      // at the end of the interval
}

// Thread groups of WhereTime.Threads.
const (
	GroupWorkload     = "workload"      // fio and slowpath's own loader threads
	GroupKcryptd      = "kcryptd"       // dm-crypt's crypto workqueue (kcryptd/*)
	GroupDmcryptWrite = "dmcrypt_write" // dm-crypt's write submission thread
	GroupKworker      = "kworker"       // kernel workqueue workers (crypto may run here)
	GroupKsoftirqd    = "ksoftirqd"     // deferred softirqs (block completion)
)

// ThreadGroup is CPU time of one group of threads over the run, from
// /proc/PID/task/TID/stat utime+stime (proc(5)).
type ThreadGroup struct {
	Group string `json:"group"` // one of the Group constants
	// Threads is how many distinct threads were seen in the group.
	Threads int   `json:"threads"`
	CPUNS   int64 `json:"cpu_ns"` // CPU time consumed during the run
	// CPUs is CPUNS over the run's wall time: 0.38 is 38% of one CPU.
	CPUs float64 `json:"cpus"`
	// Timeline is CPUs per interval.
	Timeline []Point `json:"timeline,omitempty"`
	// Top names the busiest threads of the group (comm), busiest first.
	Top []ThreadCPU `json:"top,omitempty"`
}

// ThreadCPU is one thread's share.
type ThreadCPU struct {
	Comm  string `json:"comm"`
	CPUNS int64  `json:"cpu_ns"`
}

// EncryptionTax is what the target's dm-crypt layers should cost given
// what the cipher costs on this CPU, against what the run observed
// (internal/model/cryptotax, AssessLayered): the await of the topmost
// dm-crypt device over the await of the device beneath the lowest one, and
// the CPU of the crypto threads per GiB through the top device. Figures
// that could not be computed are absent and NotComputed says why; a
// number is never guessed.
type EncryptionTax struct {
	// Line is the summary's line, e.g. "encryption tax: cipher 4.1µs/IO,
	// observed +32µs/IO (7.8x): far above what the cipher costs: ...".
	Line string `json:"line"`
	// Verdict is one of cryptotax's verdicts, or "not computed".
	Verdict string `json:"verdict"`
	// NotComputed says why the per-I/O tax is missing, when it is.
	NotComputed string `json:"not_computed,omitempty"`
	// Emulated marks a run on an emulated CPU (qemu TCG): the figures show
	// that the path works, not how fast it is.
	Emulated bool `json:"emulated_cpu,omitempty"`
	// Cipher is the cipher's cost the tax was computed from.
	Cipher *Cipher `json:"cipher,omitempty"`
	// Layers is the number of dm-crypt layers from TopDevice down to the
	// lowest; BottomDevice is the device beneath the lowest.
	Layers       int    `json:"layers"`
	TopDevice    string `json:"top_device"`
	BottomDevice string `json:"bottom_device,omitempty"`
	// The inputs taken from where_time: mean bytes per I/O and mean queue
	// depth (aqu-sz) at the top device, both awaits, and the cores.
	BytesPerIO    float64 `json:"bytes_per_io,omitempty"`
	QueueDepth    float64 `json:"queue_depth,omitempty"`
	TopAwaitNS    float64 `json:"top_await_ns,omitempty"`
	BottomAwaitNS float64 `json:"bottom_await_ns,omitempty"`
	Cores         int     `json:"cores,omitempty"`
	// Per I/O: the cipher's time (× max(1, queue depth / cores)) and the
	// observed added await; Ratio is observed / expected. Absent when
	// the verdict is "not computed".
	ExpectedPerIONS *int64   `json:"expected_per_io_ns,omitempty"`
	ObservedPerIONS *int64   `json:"observed_per_io_ns,omitempty"`
	Ratio           *float64 `json:"ratio,omitempty"`
	// The CPU form: CPU seconds per GiB through the top device that the
	// cipher needs (all layers), and what the crypto threads (kcryptd,
	// dmcrypt_write) used. Absent when no byte crossed the top device.
	ExpectedCPUPerGiB float64  `json:"expected_cpu_s_per_gib,omitempty"`
	CryptoCPUPerGiB   *float64 `json:"crypto_thread_cpu_s_per_gib,omitempty"`
	CryptoCPUNS       int64    `json:"crypto_thread_cpu_ns,omitempty"`
	CryptBytes        uint64   `json:"crypt_bytes,omitempty"`
	// Load is how hard the run pushed the dm-crypt layer; nil without a
	// cipher figure or with the top device unsampled.
	Load *CryptLoad `json:"load,omitempty"`
}

// CryptLoad is how hard a run pushed its dm-crypt layers: the bytes
// through the top device against what the cipher can do on every core,
// the crypto threads' CPU and the queue at the top device. dm-crypt's
// ceiling is the cipher on all cores (with the workqueues, kcryptd runs on
// every CPU); a run far below it measured the storage beneath and the
// queueing at that rate, so an overhead it shows says nothing about
// dm-crypt under load (harvester/harvester#11442: fio at about 75k IOPS
// saw ~1%, another tool half the read throughput).
type CryptLoad struct {
	BytesPerSec float64 `json:"bytes_per_sec"` // through the top device, over the sampled run
	// CipherShare is BytesPerSec times the layers over the cipher's rate
	// on all Cores: 1 is every core encrypting all the time.
	CipherShare float64 `json:"cipher_share"`
	// CryptoThreadCPUs is the kcryptd and dmcrypt_write threads' CPU over
	// the run's wall time (0.5: half a CPU).
	CryptoThreadCPUs float64 `json:"crypto_thread_cpus"`
	QueueDepth       float64 `json:"queue_depth"` // aqu-sz at the top device
	// Loaded is CipherShare or the crypto threads' share of the cores at
	// LoadedShare or more.
	Loaded bool `json:"loaded"`
	// Line is the summary's line; when not Loaded it is the finding
	// "this run did not load dm-crypt: ...".
	Line string `json:"line"`
}

// LoadedShare is the share of the machine's cipher capacity (or of its
// cores in crypto threads) from which a run counts as loading dm-crypt:
// slowpath's rule, a quarter, far above what an ordinary random-I/O test
// on fast storage moves through it (75k 4 KiB IOPS is about 0.3 GB/s, a
// few percent of 16 cores at 2 GB/s each).
const LoadedShare = 0.25

// Cipher is one measurement of AES-XTS on a CPU
// (internal/collect/cipherlimit, `slowpath lab crypto-limit`).
type Cipher struct {
	BytesPerSecPerCore float64 `json:"bytes_per_sec_per_core"`
	// Method is af_alg (the kernel's skcipher) or user-space (a bound).
	Method string `json:"method"`
	// What says in words what was measured; Driver is the kernel's
	// xts(aes) implementation where known.
	What       string `json:"what"`
	Driver     string `json:"driver,omitempty"`
	KeyBits    int    `json:"key_bits"`
	SectorSize int    `json:"sector_size"`
	// Source is "measured after the run" or the --cipher-limit file.
	Source string `json:"source"`
	// Note names a mismatch between the measurement and the layer (sector
	// size, key size), and the cipher assumed for a layer that is dm-crypt
	// by its uuid, its table unread (storagemodel.InferredCrypt).
	Note string `json:"note,omitempty"`
}
