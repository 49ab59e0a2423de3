package profile

// seq-read: 1 MiB sequential reads of the raw device, direct, queue depth
// 4: a scan or a restore reading a volume back. Lab crypt prefills the
// device before its runs, so the reads decrypt real data.
func init() {
	Register(LabJob{Name: "seq-read", Description: "1 MiB sequential reads, direct, queue depth 4: a scan or a restore", RW: "read", BlockSize: 1 << 20, IODepth: 4})
}
