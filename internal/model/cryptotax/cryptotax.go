// Package cryptotax is the expected encryption tax: what encryption should
// cost a workload given what the cipher costs on this CPU, set against the
// overhead observed. It is pure: figures in, verdict out.
//
// The model. Every byte that crosses an encryption layer is encrypted (on
// write) or decrypted (on read) once per layer; with AES-NI both directions
// cost about the same. So the cipher needs
//
//	CPU seconds = bytes moved × layers / cipher bytes per second per core
//
// and, per I/O, bytes per I/O × layers / throughput of one core: the time
// one I/O spends in the cipher if nothing else stands in its way. The
// observed overhead per I/O comes from Little's law: at a fixed queue
// depth QD, mean latency is QD / IOPS, so encryption added
// QD × (1/IOPS_encrypted − 1/IOPS_plain) to each I/O. With QD I/Os in
// flight and P cores to encrypt them, an I/O may also wait for the cipher
// to finish the others, so the expected figure is the cipher's time times
// max(1, QD/P): the most a cipher-bound run can add. An observed overhead
// many times the cipher's is the symptom of time spent waiting, not
// encrypting: dm-crypt's workqueues queueing I/O behind each other, or a
// second encryption layer nobody meant to have.
package cryptotax

import (
	"fmt"
	"math"
	"time"
)

// FarAbove is the ratio of observed to expected overhead above which the
// overhead is called far above the cipher's cost. The kernel's AES-XTS is
// usually faster than the user-space bound, which makes expected too high,
// not too low, so a ratio above this is not an artefact of the bound.
const FarAbove = 4.0

// The evidence a layered tax needs before it is judged: dmcrypt.tax, the
// agent's scrape-interval figure and the alert in
// deploy/kubernetes/prometheusrule.yaml use these (a test there holds the
// rule file to them).
const (
	// MinIOs is the I/Os each device must have completed in the span
	// judged. Below it a few slow I/Os (a journal replay at boot, a
	// flush) can make the mean.
	MinIOs = 1000
	// MinAdded is the smallest added await per I/O called far above. The
	// kernel's counters are milliseconds summed over I/Os, so over MinIOs
	// the mean is resolved to 1 µs; 20 µs is 20 times that, and still below
	// the smallest overhead that matters: the PostgreSQL ramdisk's 4 KiB
	// I/O at 171k IOPS plain and 26.6k through dm-crypt is +32 µs per I/O
	// at one I/O in flight (1/26.6k − 1/171k s;
	// https://blog.gonchik.com/2021/03/yet-another-compliance-request-can.html).
	MinAdded = 20 * time.Microsecond
)

// Limit is the cipher's cost on this CPU (from `slowpath lab crypto-limit`).
type Limit struct {
	BytesPerSecPerCore float64
	Source             string // what was measured: kernel driver via AF_ALG, or the user-space bound
	// Driver is the kernel's xts(aes) implementation, the highest-priority
	// /proc/crypto entry (what dm-crypt uses): which one depends on the
	// kernel as well as the CPU. On x86, 6.1 has xts-aes-aesni only;
	// 6.12 registers xts-aes-aesni-avx (priority 500), xts-aes-vaes-avx2
	// (600) and the avx10 variants (700, 800) above xts-aes-aesni (401)
	// where the CPU allows (arch/x86/crypto/aesni-intel_glue.c,
	// DEFINE_XTS_ALG), so one CPU's cost differs between kernels. Empty
	// when unknown.
	Driver string
}

// Observation is one encrypted configuration against the plain baseline.
type Observation struct {
	Layers     int     // encryption layers on the path (2 for crypt on crypt)
	BytesPerIO float64 // mean bytes per I/O
	QueueDepth int     // I/Os in flight (iodepth × jobs)
	// Cores that can encrypt; 0 (unknown) counts as 1, which expects the
	// most and so calls "far above" least often.
	Cores     int
	PlainIOPS float64
	IOPS      float64
	// CPU of the whole machine during each run, in CPUs (1 = one CPU
	// busy), and bytes moved per second in each; used for the CPU form.
	PlainCPU, CPU               float64
	PlainBytesPerSec, BytesPerS float64
}

// Tax is the assessment.
type Tax struct {
	// Per I/O: the cipher's time and the observed added latency.
	ExpectedPerIO time.Duration `json:"expected_per_io_ns"`
	ObservedPerIO time.Duration `json:"observed_per_io_ns"`
	// Ratio is observed / expected per I/O; NaN when not computable.
	Ratio float64 `json:"ratio"`
	// CPU seconds per GiB moved: what the cipher needs and what the
	// machine spent beyond the plain run.
	ExpectedCPUPerGiB float64 `json:"expected_cpu_s_per_gib"`
	ObservedCPUPerGiB float64 `json:"observed_extra_cpu_s_per_gib"`
	Verdict           string  `json:"verdict"`
	// Driver names the kernel's xts(aes) driver the expectation is for
	// (Limit.Driver); empty when unknown.
	Driver string `json:"driver,omitempty"`
}

// Verdicts.
const (
	VerdictNoOverhead = "no measurable overhead"
	VerdictCipher     = "about what the cipher costs"
	VerdictAbove      = "above the cipher's cost"
	VerdictFarAbove   = "far above what the cipher costs: queueing (dm-crypt workqueues) or more than one encryption layer"
	VerdictUnknown    = "unknown"
)

// Assess computes the tax of o under l.
func Assess(l Limit, o Observation) (Tax, error) {
	t := Tax{Ratio: math.NaN(), Verdict: VerdictUnknown, Driver: l.Driver}
	if !(l.BytesPerSecPerCore > 0) {
		return t, fmt.Errorf("no cipher throughput (run slowpath lab crypto-limit)")
	}
	if o.Layers < 1 || !(o.BytesPerIO > 0) || o.QueueDepth < 1 || !(o.PlainIOPS > 0) || !(o.IOPS > 0) {
		return t, fmt.Errorf("incomplete observation %+v", o)
	}
	layers := float64(o.Layers)
	exp := expectedPerIO(l, o.Layers, o.BytesPerIO, float64(o.QueueDepth), o.Cores)
	obs := float64(o.QueueDepth) * (1/o.IOPS - 1/o.PlainIOPS)
	t.ExpectedCPUPerGiB = layers * (1 << 30) / l.BytesPerSecPerCore
	if o.BytesPerS > 0 && o.PlainBytesPerSec > 0 {
		t.ObservedCPUPerGiB = (o.CPU/o.BytesPerS - o.PlainCPU/o.PlainBytesPerSec) * (1 << 30)
	}
	t.judge(exp, obs)
	return t, nil
}

// expectedPerIO is the cipher's time for one I/O of bytes through layers,
// times max(1, qd/cores) for the I/Os ahead of it.
func expectedPerIO(l Limit, layers int, bytes, qd float64, cores int) float64 {
	p := float64(max(cores, 1))
	return bytes * float64(layers) / l.BytesPerSecPerCore * max(1, qd/p)
}

func (t *Tax) judge(exp, obs float64) {
	t.ExpectedPerIO = seconds(exp)
	t.ObservedPerIO = seconds(obs)
	t.Ratio = obs / exp
	switch {
	case obs <= 0:
		t.Verdict = VerdictNoOverhead
	case t.Ratio <= 2:
		t.Verdict = VerdictCipher
	case t.Ratio <= FarAbove:
		t.Verdict = VerdictAbove
	default:
		t.Verdict = VerdictFarAbove
	}
}

// Layered is the overhead seen inside one run or since boot, with no plain
// run to compare: the await of the topmost encrypting device against the
// await of the device beneath the lowest one, which is how the search
// incident was read off iostat (dm-0 18 ms against 0.45 ms beneath).
// The difference is what the encryption layers (and any dm layer between
// them) added to each I/O.
type Layered struct {
	Layers      int     // encrypting layers between Top and Bottom
	BytesPerIO  float64 // mean bytes per I/O at the top device
	TopAwait    time.Duration
	BottomAwait time.Duration
	// QueueDepth is the top device's mean queue depth (iostat's aqu-sz);
	// below 1 counts as 1.
	QueueDepth float64
	Cores      int // as in Observation
}

// AssessLayered computes the tax of o under l.
func AssessLayered(l Limit, o Layered) (Tax, error) {
	t := Tax{Ratio: math.NaN(), Verdict: VerdictUnknown, Driver: l.Driver}
	if !(l.BytesPerSecPerCore > 0) {
		return t, fmt.Errorf("no cipher throughput (run slowpath lab crypto-limit)")
	}
	if o.Layers < 1 || !(o.BytesPerIO > 0) || o.TopAwait <= 0 || o.BottomAwait < 0 || math.IsNaN(o.QueueDepth) {
		return t, fmt.Errorf("incomplete observation %+v", o)
	}
	exp := expectedPerIO(l, o.Layers, o.BytesPerIO, max(o.QueueDepth, 1), o.Cores)
	t.ExpectedCPUPerGiB = float64(o.Layers) * (1 << 30) / l.BytesPerSecPerCore
	t.judge(exp, (o.TopAwait - o.BottomAwait).Seconds())
	return t, nil
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// Line renders t as the one-line tax the tables print.
func (t Tax) Line() string {
	if math.IsNaN(t.Ratio) {
		return "tax: " + t.Verdict
	}
	cipher := "cipher"
	if t.Driver != "" {
		cipher += " (" + t.Driver + ")"
	}
	// A run through encryption may be faster than the plain one (noise):
	// the sign is the observed one, never "+-".
	sign := "+"
	if t.ObservedPerIO < 0 {
		sign = ""
	}
	return fmt.Sprintf("%s %v/IO, observed %s%v/IO (%.1fx): %s", cipher, t.ExpectedPerIO, sign, t.ObservedPerIO, t.Ratio, t.Verdict)
}

// Who pays the cipher's CPU.
const (
	// PaidByKernel: dm-crypt and fscrypt encrypt in the kernel, in
	// kcryptd workqueues or the submitting thread, and the dm-crypt flags
	// (no_read_workqueue, no_write_workqueue, same_cpu_crypt,
	// submit_from_crypt_cpus) move where that runs.
	PaidByKernel = "kernel"
	// PaidByService: a database engine encrypts its own pages in its own
	// threads before the kernel sees them; no dm-crypt flag moves or
	// removes that CPU, and it is not in the block devices' awaits.
	PaidByService = "service"
)

// Share is the cipher's CPU per GiB moved that one payer carries.
type Share struct {
	PaidBy    string  `json:"paid_by"` // PaidByKernel or PaidByService
	Layers    int     `json:"layers"`
	CPUPerGiB float64 `json:"cpu_s_per_gib"`
}

// SplitCPU divides what the cipher costs per GiB moved through a path
// between the kernel's layers and the service's (an engine layer), each at
// the same cost per byte: l is the kernel's AES-XTS, and an engine's AES
// (CBC, CTR or GCM through OpenSSL's AES-NI code) is taken to cost about
// as much, an estimate and no more. A payer with no layer is left out.
func SplitCPU(l Limit, kernelLayers, serviceLayers int) ([]Share, error) {
	if !(l.BytesPerSecPerCore > 0) {
		return nil, fmt.Errorf("no cipher throughput (run slowpath lab crypto-limit)")
	}
	if kernelLayers < 0 || serviceLayers < 0 {
		return nil, fmt.Errorf("negative layer count (%d kernel, %d service)", kernelLayers, serviceLayers)
	}
	var out []Share
	for _, s := range []Share{{PaidBy: PaidByService, Layers: serviceLayers}, {PaidBy: PaidByKernel, Layers: kernelLayers}} {
		if s.Layers == 0 {
			continue
		}
		s.CPUPerGiB = float64(s.Layers) * (1 << 30) / l.BytesPerSecPerCore
		out = append(out, s)
	}
	return out, nil
}
