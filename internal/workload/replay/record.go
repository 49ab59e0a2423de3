package replay

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/capture"
	"github.com/slowpath/slowpath/internal/capture/capfile"
)

// RecordBlocks runs run while a block-only capture (internal/capture)
// records the requests on the storage path of the filesystem holding dir,
// and summarises those of the filesystem's device as Load does for the
// capture. recErr says why nothing could be recorded (no privilege, no
// BPF); run then still runs, unrecorded. runErr is run's.
//
// The capture is written under /dev/shm when it exists: a tmpfs, so the
// recording's own writes add no request to the device it records.
// Requests are device-wide: another process's I/O on that device counts
// too (docs/replay.md).
func RecordBlocks(ctx context.Context, dir string, run func(context.Context) error) (bt *benchresult.BlockTrace, recErr, runErr error) {
	mnt, err := capture.MountOf(dir)
	if err != nil {
		return nil, err, run(ctx)
	}
	base := os.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		base = "/dev/shm"
	}
	out, err := os.MkdirTemp(base, "slowpath-replay-blocks-")
	if err != nil {
		return nil, err, run(ctx)
	}
	defer os.RemoveAll(out)
	cctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		_, err := capture.Run(cctx, capture.Options{Mount: mnt, BlockOnly: true, Ready: func() { close(ready) }}, out)
		done <- err
	}()
	select {
	case <-ready:
	case err := <-done:
		if err == nil {
			err = errors.New("the block capture ended before it was attached")
		}
		return nil, fmt.Errorf("record the replay's block requests: %w", err), run(ctx)
	}
	runErr = run(ctx)
	stop()
	if err := <-done; err != nil {
		return nil, fmt.Errorf("record the replay's block requests: %w", err), runErr
	}
	c, err := capfile.Open(out)
	if err != nil {
		return nil, err, runErr
	}
	dev, name := fsDevice(c.Manifest)
	var blocks []capfile.Block
	if err := c.EachBlock(func(b capfile.Block) error {
		if b.Device == dev {
			blocks = append(blocks, b)
		}
		return nil
	}); err != nil {
		return nil, err, runErr
	}
	s := SummarizeBlocks(name, blocks)
	return &s, nil, runErr
}
