// Package network collects interfaces, rings, softnet, snmp and sysctls.
package network

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Options configure network collection.
type Options struct{}

// Collect fills s.Net. Placeholder until the network collectors land (issue 4).
func Collect(ctx context.Context, fs hostfs.FS, o Options, s *snapshot.Snapshot) {}

// AddFlags registers the network collection flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {}
