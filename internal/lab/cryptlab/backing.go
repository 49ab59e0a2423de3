package cryptlab

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Backing is what the mappings sit on: a brd ramdisk or a loop device over
// a file the lab creates.
type Backing struct {
	Kind string // "ram" or "file"
	Path string // the file, for "file"
	Size int64  // bytes
}

func (b Backing) String() string {
	if b.Kind == "file" {
		return fmt.Sprintf("file:%s:%s", b.Path, formatSize(b.Size))
	}
	return "ram:" + formatSize(b.Size)
}

// ParseBacking reads ram:SIZE or file:PATH:SIZE (SIZE like 512M, 1G).
func ParseBacking(s string) (Backing, error) {
	kind, rest, _ := strings.Cut(s, ":")
	var b Backing
	switch kind {
	case "ram":
		b.Kind = "ram"
	case "file":
		i := strings.LastIndexByte(rest, ':')
		if i <= 0 {
			return b, fmt.Errorf("backing %q: want file:PATH:SIZE, e.g. file:/var/tmp/crypt.img:2G", s)
		}
		b.Kind, b.Path, rest = "file", rest[:i], rest[i+1:]
		if !filepath.IsAbs(b.Path) {
			return b, fmt.Errorf("backing %q: the file path must be absolute", s)
		}
	default:
		return b, fmt.Errorf("backing %q: want ram:SIZE or file:PATH:SIZE", s)
	}
	n, err := parseSize(rest)
	if err != nil {
		return b, fmt.Errorf("backing %q: %w", s, err)
	}
	if n < 16<<20 || n%(1<<20) != 0 {
		return b, fmt.Errorf("backing %q: size must be a whole number of MiB, at least 16M", s)
	}
	b.Size = n
	return b, nil
}

func parseSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(s, "G"):
		mult, s = 1<<30, strings.TrimSuffix(s, "G")
	case strings.HasSuffix(s, "M"):
		mult, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 || n > (1<<50)/mult {
		return 0, fmt.Errorf("size %q: want a positive number with M or G", s)
	}
	return n * mult, nil
}

func formatSize(n int64) string {
	if n%(1<<30) == 0 {
		return strconv.FormatInt(n>>30, 10) + "G"
	}
	return strconv.FormatInt(n>>20, 10) + "M"
}

// Prefill writes the whole backing device once, so reads in every run hit
// allocated ramdisk pages or file blocks, as writes do.
func (l *Lab) Prefill() error {
	f, err := os.OpenFile(l.BackingPath, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			break // ENOSPC at the end of the device
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("prefill %s: %w", l.BackingPath, err)
	}
	return f.Close()
}
