package storage

import (
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/hostfstest"
)

// materialise writes testdata/name (txtar) into a temporary root.
func materialise(t testing.TB, name string) hostfs.FS {
	t.Helper()
	return hostfstest.Materialise(t, filepath.Join("testdata", name))
}
