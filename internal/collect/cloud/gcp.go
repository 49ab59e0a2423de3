package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// GCE metadata server paths; every request needs Metadata-Flavor: Google
// (https://cloud.google.com/compute/docs/metadata/predefined-metadata-keys).
const (
	gcpMachineTypePath = "/computeMetadata/v1/instance/machine-type"
	gcpZonePath        = "/computeMetadata/v1/instance/zone"
	gcpDisksPath       = "/computeMetadata/v1/instance/disks/?recursive=true"
)

type gcpDisk struct {
	DeviceName string `json:"deviceName"`
	Type       string `json:"type"`
	Interface  string `json:"interface"`
	Mode       string `json:"mode"`
}

func fetchGCP(ctx context.Context, f *fetcher, c *snapshot.Cloud) error {
	h := map[string]string{"Metadata-Flavor": "Google"}
	mt, err := f.do(ctx, "GET", gcpMachineTypePath, h)
	if err != nil {
		return err
	}
	g := &snapshot.GCPMeta{}
	c.GCP = g
	// projects/<number>/machineTypes/<type>
	full := strings.TrimSpace(string(mt))
	if !strings.Contains(full, "machineTypes/") {
		return fmt.Errorf("gcp metadata: machine-type %q is not projects/N/machineTypes/TYPE", full)
	}
	g.MachineType = path.Base(full)
	c.InstanceType = g.MachineType
	if z, err := f.do(ctx, "GET", gcpZonePath, h); err == nil {
		c.Region = path.Base(strings.TrimSpace(string(z)))
	}
	body, err := f.do(ctx, "GET", gcpDisksPath, h)
	if err != nil {
		return err
	}
	var disks []gcpDisk
	if err := json.Unmarshal(body, &disks); err != nil {
		return fmt.Errorf("gcp metadata: disks: bad JSON: %w", err)
	}
	for _, d := range disks {
		g.Disks = append(g.Disks, snapshot.GCPDisk{DeviceName: d.DeviceName, Type: d.Type, Interface: d.Interface, Mode: d.Mode})
	}
	return nil
}
