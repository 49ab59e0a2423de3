// Package network builds the network data-path model from a snapshot. It is
// pure: no I/O. Owned by the network issue; see docs/snapshot.md.
package network

import "github.com/slowpath/slowpath/internal/snapshot"

// Model is the network data path of one host.
type Model struct{}

// Build derives the model from a snapshot. A snapshot without a network
// section gives a nil model and no error.
func Build(s *snapshot.Snapshot) (*Model, error) {
	if s.Net == nil {
		return nil, nil
	}
	return &Model{}, nil
}
