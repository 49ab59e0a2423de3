package profile

import (
	"strconv"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// LabPrefix starts a lab profile (lab:randrw-4k): one fio job on a raw
// block device, direct I/O so the page cache does not hide the device:
// `slowpath lab crypt`'s workloads on its ramdisk and dm-crypt mappings.
// Each is a LabJob registered under LabFamily; a new one is a file of its
// own (lab_seqread.go).
const LabPrefix = LabFamily + ":"

// LabFamily is the lab jobs' Spec.Family.
const LabFamily = "lab"

// LabJob is one lab profile's fio job.
type LabJob struct {
	Name, Description string
	RW                string
	RWMixRead         int
	BlockSize         int
	IODepth           int
}

func init() {
	for _, j := range []LabJob{
		{"randrw-4k", "4 KiB random reads and writes (50/50), direct, queue depth 8: database pages", "randrw", 50, 4096, 8},
		{"randread-4k", "4 KiB random reads, direct, queue depth 8", "randread", 0, 4096, 8},
		{"randwrite-4k", "4 KiB random writes, direct, queue depth 8", "randwrite", 0, 4096, 8},
		{"qd1-4k", "4 KiB random reads and writes (50/50), direct, one at a time: commit latency", "randrw", 50, 4096, 1},
		{"seq-1m", "1 MiB sequential writes, direct, queue depth 4: bulk load", "write", 0, 1 << 20, 4},
	} {
		Register(j)
	}
}

// Spec: a lab job declares no verdict metrics of its own (lab crypt's
// table decides on its IOPS) and the one I/O shape the tax is computed on.
// Lab jobs rank after the bench profiles.
func (j LabJob) Spec() Spec {
	return Spec{Name: LabPrefix + j.Name, Family: LabFamily, Description: j.Description, Needs: Device, Rank: 100,
		IO: &IOShape{BytesPerIO: j.BlockSize, QueueDepth: j.IODepth}}
}

// Plan: the job as `lab crypt` has always run it (libaio, time-based, no
// logs: the instruction-count model of the VM lab counts every
// instruction fio runs).
func (j LabJob) Plan(_ string, p Params) (*Plan, error) {
	opts := []fio.Option{{Key: "filename", Value: p.Device}, {Key: "rw", Value: j.RW}, {Key: "bs", Value: strconv.Itoa(j.BlockSize)},
		{Key: "ioengine", Value: "libaio"}, {Key: "iodepth", Value: strconv.Itoa(j.IODepth)}}
	if j.RWMixRead != 0 {
		opts = append(opts, fio.Option{Key: "rwmixread", Value: strconv.Itoa(j.RWMixRead)})
	}
	opts = append(opts, fio.Option{Key: "direct", Value: "1"}, fio.Option{Key: "runtime", Value: secs(p.Runtime)}, fio.Option{Key: "time_based", Value: "1"})
	f := fio.File{Jobs: []fio.Section{{Name: "lab", Options: opts}}}
	return &Plan{Profile: LabPrefix + j.Name,
		Settings: map[string]string{"rw": j.RW, "bs": strconv.Itoa(j.BlockSize), "iodepth": strconv.Itoa(j.IODepth), "rwmixread": strconv.Itoa(j.RWMixRead)},
		Phases:   []PhasePlan{{Name: "lab", JobFile: render(f), Expected: p.Runtime}}}, nil
}

// Figures: the job's group, then the totals.
func (LabJob) Figures(phases []benchresult.Phase, _ *benchresult.LoadTimes) []benchresult.Figure {
	return jobFigures(phases)
}
