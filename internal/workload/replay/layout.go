package replay

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// ErrNoSpace is wrapped by Layout when the capture's files do not fit.
var ErrNoSpace = errors.New("not enough free space for the capture's files")

// Layout recreates t's files in dir (which the caller owns) at their sizes
// with incompressible data, then restores the captured page-cache
// residency: everything is written back and dropped
// (POSIX_FADV_DONTNEED, mm/fadvise.c), then the resident ranges are read
// in again. It refuses, with the numbers, a trace that needs more than
// dir's free space. Validate t first.
func Layout(ctx context.Context, dir string, t *Trace) error {
	need := t.Space()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("statfs %s: %w", dir, err)
	}
	free := st.Bavail * uint64(st.Bsize)
	if need > free {
		return fmt.Errorf("%w: the capture's files need %d MiB (%d bytes) and %s has %d MiB (%d bytes) free: replay on a larger filesystem",
			ErrNoSpace, need>>20, need, dir, free>>20, free)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	// A seeded ChaCha8 stream: incompressible (dm-crypt, compression and
	// dedup see what they would see of real data) and cheap.
	rng := rand.NewChaCha8([32]byte{'s', 'l', 'o', 'w', 'p', 'a', 't', 'h'})
	buf := make([]byte, 1<<20)
	for _, f := range t.Files {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := layoutFile(ctx, root, f, rng, buf); err != nil {
			return fmt.Errorf("lay out %s: %w", filepath.Join(dir, f.Name), err)
		}
	}
	return nil
}

func layoutFile(ctx context.Context, root *os.Root, f File, rng *rand.ChaCha8, buf []byte) error {
	// Names are pseudonyms (Validate): the root keeps them in dir anyway.
	fh, err := root.OpenFile(f.Name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	defer fh.Close()
	for off := int64(0); off < f.Size; off += int64(len(buf)) {
		if err := ctx.Err(); err != nil {
			return err
		}
		n := min(int64(len(buf)), f.Size-off)
		_, _ = rng.Read(buf[:n])
		if _, err := fh.WriteAt(buf[:n], off); err != nil {
			return err
		}
	}
	if err := fh.Sync(); err != nil {
		return err
	}
	fd := int(fh.Fd())
	// Clean pages only are dropped: hence the Sync above.
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("fadvise DONTNEED: %w", err)
	}
	// Readahead off while the resident ranges are read, so only they
	// come in (FMODE_RANDOM, mm/readahead.c page_cache_sync_ra).
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_RANDOM); err != nil {
		return fmt.Errorf("fadvise RANDOM: %w", err)
	}
	for _, r := range f.Resident {
		for off := r.Offset; off < r.Offset+r.Length; off += int64(len(buf)) {
			n := min(int64(len(buf)), r.Offset+r.Length-off)
			if _, err := fh.ReadAt(buf[:n], off); err != nil {
				return fmt.Errorf("read resident range %d+%d: %w", r.Offset, r.Length, err)
			}
		}
	}
	return nil
}

// WriteIologs writes every stream's iolog into dir, next to the files
// Layout made, and returns the streams for JobFile.
func WriteIologs(dir string, t *Trace, mode Mode) ([]Stream, error) {
	streams := t.StreamsFor(mode)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	for _, s := range streams {
		if err := root.WriteFile(s.IologName(), t.Iolog(s), 0o600); err != nil {
			return nil, err
		}
	}
	return streams, nil
}
