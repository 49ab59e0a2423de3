// Package storage collects mounts and block devices, with device-mapper
// tables read through the DM ioctl and key material removed at the source.
package storage

import (
	"context"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Collect fills s.Storage. Placeholder until the storage collectors land (issue 2).
func Collect(ctx context.Context, fs hostfs.FS, s *snapshot.Snapshot) {}
