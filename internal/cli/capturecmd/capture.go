// Package capturecmd implements `slowpath capture`: record the I/O of a
// running service on one mount with eBPF into a capture directory
// (internal/capture, docs/capture.md).
package capturecmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/capture"
	"github.com/slowpath/slowpath/internal/capture/capfile"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/units"
)

// Options are the flags of `slowpath capture`.
type Options struct {
	Duration    time.Duration
	PID         uint32
	Cgroup      string
	Comm        string
	Mount       string
	Output      string
	BlockOnly   bool
	MaxRecords  uint64
	AcceptDrops bool
	RingMiB     uint32
	ReadyFile   string
	Format      string
}

// NewCmdCapture builds the command; runF replaces the action in tests.
func NewCmdCapture(env *clienv.Env, runF func(context.Context, *Options) error) *cobra.Command {
	o := &Options{}
	cmd := &cobra.Command{
		Use:   "capture -o DIR",
		Short: "Record a running service's I/O on one mount with eBPF, for replay (no data, no names)",
		Long: `Capture records, for --duration, the file-level I/O that the selected
processes issue on the filesystem mounted at --mount (read, write and their
positional and vectored forms, fsync, fdatasync, sync_file_range, fadvise,
madvise, mmap, opens with O_DIRECT/O_SYNC, page-cache misses of mapped files),
and as ground truth every block request on the devices beneath that mount,
with flags and latency. It writes a capture directory that 'slowpath bench
replay:DIR' replays on its captured schedule with slowpath's own replayer
('replay-afap:DIR': back to back, with fio; docs/replay.md).

No file content, file name or path is recorded: files are f0001..., the
mount is a device number, threads are numbers. Memory stays bounded: events stream to
disk. A capture that lost events (ring buffer full) says so and fails unless
--accept-drops.

Needs root, or CAP_BPF and CAP_PERFMON, and kernel BTF. See docs/capture.md.`,
		Example: `  slowpath capture --duration 60s --pid 1234 --mount /srv -o capture/
  slowpath capture --cgroup /sys/fs/cgroup/system.slice/search.service --mount /data -o cap/
  slowpath capture --comm postgres --mount /var/lib/postgresql -o pg-capture/`,
		Args: cobra.NoArgs,
		RunE: clienv.Action(o, func([]string) error { return o.validate() }, runF,
			func(ctx context.Context) error { return run(ctx, env, o) }),
	}
	f := cmd.Flags()
	f.DurationVar(&o.Duration, "duration", 60*time.Second, "how long to capture; 0 captures until Ctrl-C (Ctrl-C also ends a timed capture early, keeping what was captured)")
	f.Uint32Var(&o.PID, "pid", 0, "capture process `PID` (all its threads)")
	f.StringVar(&o.Cgroup, "cgroup", "", "capture the processes of cgroup v2 directory `PATH` and its descendants")
	f.StringVar(&o.Comm, "comm", "", "capture threads named `NAME` (as in /proc/PID/comm, at most 15 bytes)")
	f.StringVar(&o.Mount, "mount", "/", "capture files on the filesystem mounted at `DIR` (a mount point)")
	f.StringVarP(&o.Output, "output", "o", "", "write the capture into `DIR` (new or empty)")
	f.BoolVar(&o.BlockOnly, "block-only", false, "record block requests only (no file-level records)")
	f.Uint64Var(&o.MaxRecords, "max-records", capture.DefaultMaxRecords, "stop after `N` records (file-level and block together)")
	f.BoolVar(&o.AcceptDrops, "accept-drops", false, "keep a capture that lost events instead of failing (the manifest says how many)")
	f.Uint32Var(&o.RingMiB, "ring-size", 16, "kernel ring buffer size in `MiB` (a power of two)")
	f.StringVar(&o.ReadyFile, "ready-file", "", "create `FILE` once the tracer is attached (for scripts)")
	formats.AddFlag(f, &o.Format)
	cmd.MarkFlagsMutuallyExclusive("pid", "cgroup", "comm")
	_ = cmd.MarkFlagRequired("output")
	return cmd
}

// formats are capture's --format values.
var formats = clienv.Formats{Names: []string{"text", "json"}, Default: "text", Notes: map[string]string{"json": "the manifest"}}

func (o *Options) validate() error {
	if err := formats.Check(o.Format); err != nil {
		return err
	}
	if o.Duration < 0 {
		return fmt.Errorf("--duration %v is negative", o.Duration)
	}
	if o.Output == "" {
		return errors.New("-o DIR is required: the directory to write the capture into")
	}
	if len(o.Comm) > 15 {
		return fmt.Errorf("--comm %q is longer than the 15 bytes the kernel keeps of a thread name", o.Comm)
	}
	if o.RingMiB == 0 || o.RingMiB&(o.RingMiB-1) != 0 || o.RingMiB > 1024 {
		return fmt.Errorf("--ring-size %d: want a power of two from 1 to 1024 (MiB)", o.RingMiB)
	}
	if o.MaxRecords == 0 {
		return errors.New("--max-records 0: want at least 1")
	}
	if o.BlockOnly && (o.PID != 0 || o.Cgroup != "" || o.Comm != "") {
		return errors.New("--block-only records every request on the devices: --pid, --cgroup and --comm do not apply")
	}
	return nil
}

// checkSpace refuses a capture whose largest size does not fit where it is
// written, with the numbers.
func checkSpace(dir string, maxRecords uint64) error {
	probe := dir
	for {
		if _, err := os.Stat(probe); err == nil {
			break
		}
		parent := filepath.Dir(probe)
		if parent == probe {
			return nil
		}
		probe = parent
	}
	var st unix.Statfs_t
	if err := unix.Statfs(probe, &st); err != nil {
		return nil
	}
	free := st.Bavail * uint64(st.Bsize)
	need := maxRecords * capture.RecordBytes
	if need > free {
		return fmt.Errorf("%s has %s free; a capture of up to %d records may take %s: lower --max-records (counted at 32 bytes each; 20-21 on average) or write elsewhere",
			probe, units.Size(free), maxRecords, units.Size(need))
	}
	return nil
}

func run(ctx context.Context, env *clienv.Env, o *Options) error {
	if ctx == nil {
		ctx = context.Background()
	}
	if err := checkSpace(o.Output, o.MaxRecords); err != nil {
		return err
	}
	ctx, stop := clienv.Interruptible(ctx)
	defer stop()
	opts := capture.Options{
		Mount: o.Mount, Duration: o.Duration, PID: o.PID, Cgroup: o.Cgroup, Comm: o.Comm,
		BlockOnly: o.BlockOnly, MaxRecords: o.MaxRecords, AcceptDrops: o.AcceptDrops,
		RingBytes: o.RingMiB << 20, SlowpathVersion: env.Version, FS: env.FS,
		Log: func(msg string) { fmt.Fprintf(env.Stderr, "capture: %s\n", msg) },
	}
	var readyErr error
	opts.Ready = func() {
		if o.ReadyFile != "" {
			readyErr = os.WriteFile(o.ReadyFile, nil, 0o644)
		}
		if env.StdoutTTY {
			fmt.Fprintf(env.Stderr, "capturing on %s for %v (Ctrl-C ends it early)...\n", o.Mount, o.Duration)
		}
	}
	res, err := capture.Run(ctx, opts, o.Output)
	if readyErr != nil {
		return fmt.Errorf("--ready-file: %w", readyErr)
	}
	if res == nil {
		return err
	}
	if o.Format == "json" {
		// The manifest (kind, schema_version) after format_version.
		if e := clienv.EncodeJSON(env.Stdout, 1, res.Manifest, true); e != nil {
			return e
		}
	} else {
		writeText(env, o.Output, res.Manifest)
	}
	return err
}

func writeText(env *clienv.Env, dir string, m *capfile.Manifest) {
	w := env.Stdout
	fmt.Fprintf(w, "capture\t%s\n", dir)
	fmt.Fprintf(w, "duration\t%v\n", time.Duration(m.DurationNS).Round(time.Millisecond))
	fmt.Fprintf(w, "status\t%s\n", m.Status)
	fmt.Fprintf(w, "file-level records\t%d (%d page-cache faults of mapped files, source %s)\n", m.Events.Ops, m.Events.Faults, m.Kernel.FaultSource)
	if m.Kernel.IOURing != "" {
		fmt.Fprintf(w, "asynchronous records\t%d Linux AIO, %d io_uring (io_uring: %s)\n", m.Events.AIO, m.Events.IOURing, m.Kernel.IOURing)
	}
	if ms := m.Events.Missed; ms != nil {
		// I/O on captured files that no record describes: its block
		// requests are in block.bin with no file-level cause.
		fmt.Fprintf(w, "not recorded\t%d splice (%d B), %d sendfile (%d B), %d copy_file_range (%d B), %d io_uring and %d aio requests of other opcodes\n",
			ms.Splice, ms.SpliceBytes, ms.Sendfile, ms.SendfileBytes, ms.CopyFileRange, ms.CopyFileRangeBytes, ms.IOURingOther, ms.AIOOther)
	}
	fmt.Fprintf(w, "block records\t%d\n", m.Events.Block)
	for _, d := range m.Devices {
		fmt.Fprintf(w, "device\t%s (%s, %s)\n", d.Name, d.Kind, d.Source)
	}
	fmt.Fprintf(w, "files\t%d\n", len(m.Files))
	fmt.Fprintf(w, "threads\t%d\n", len(m.Threads))
	fmt.Fprintf(w, "dropped events\t%d\n", m.Events.Dropped)
	if m.Events.Unmatched > 0 {
		fmt.Fprintf(w, "requests not seen completing\t%d\n", m.Events.Unmatched)
	}
}
