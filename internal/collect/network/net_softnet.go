package network

import (
	"github.com/prometheus/procfs"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// readSoftnet reads /proc/net/softnet_stat through prometheus/procfs,
// which branches on the column count the kernel printed: 9 (2.6.23), 10
// (2.6.39 received_rps), 11 (4.18 flow_limit_count), 13 (5.14 backlog
// length and CPU index; net/core/net-procfs.c softnet_seq_show) and 15
// (input and process queue lengths, which slowpath does not need). The
// CPU index is the line number on kernels printing fewer than 13 columns,
// which is wrong when CPUs are offline: analysis only compares a CPU with
// itself across samples, so it does not matter there.
func readSoftnet(f hostfs.FS) ([]snapshot.SoftnetCPU, int, error) {
	pfs, err := procfs.NewFS(f.Proc)
	if err != nil {
		return nil, 0, err
	}
	st, err := pfs.NetSoftnetStat()
	if err != nil {
		return nil, 0, err
	}
	out := make([]snapshot.SoftnetCPU, len(st))
	width := 0
	for i, c := range st {
		out[i] = snapshot.SoftnetCPU{
			CPU:            int(c.Index),
			Processed:      uint64(c.Processed),
			Dropped:        uint64(c.Dropped),
			TimeSqueeze:    uint64(c.TimeSqueezed),
			ReceivedRPS:    uint64(c.ReceivedRps),
			FlowLimitCount: uint64(c.FlowLimitCount),
			BacklogLen:     uint64(c.SoftnetBacklogLen),
		}
		width = c.Width
	}
	return out, width, nil
}
