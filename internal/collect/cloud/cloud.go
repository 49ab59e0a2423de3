// Package cloud detects the cloud from DMI and reads instance metadata.
package cloud

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options configure metadata access.
type Options struct{}

// Collect fills s.Cloud. Placeholder until the cloud collector lands (issue 2).
func Collect(ctx context.Context, o Options, s *snapshot.Snapshot) {}

// AddFlags registers the metadata flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {}
