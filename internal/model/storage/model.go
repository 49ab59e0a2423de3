// Package storage builds the storage data-path model from a snapshot: for
// every mounted filesystem and unmounted block device, the chain of layers
// down to hardware and cloud, and how many of them encrypt. It is pure: no I/O.
package storage

import "github.com/slowpath/slowpath/internal/snapshot"

// Model is the storage data path of one host.
type Model struct {
	Paths []Path `json:"paths"`
}

// Path is one filesystem or unmounted device and everything beneath it.
type Path struct {
	MountPoint       string  `json:"mountpoint,omitempty"`
	Device           string  `json:"device,omitempty"`
	EncryptionLayers int     `json:"encryption_layers"`
	Layers           []Layer `json:"layers"`
}

// Layer is one step of a path, top (filesystem) first.
type Layer struct {
	Kind      string `json:"kind"` // filesystem, dm-crypt, dm-linear, loop, md, partition, disk, cloud-disk, ...
	Name      string `json:"name"`
	Encrypted bool   `json:"encrypted"`
	// EncryptedBy says where encryption of this layer runs: "kernel-cpu",
	// "hypervisor-host", "drive", "cloud-storage-service".
	EncryptedBy string `json:"encrypted_by,omitempty"`
}

// Build derives the model from a snapshot.
func Build(s *snapshot.Snapshot) (*Model, error) {
	return &Model{}, nil
}
