package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// azureInstancePath is Azure IMDS's instance document. api-version 2021-11-01
// is the first to carry compute.securityProfile.encryptionAtHost
// (https://learn.microsoft.com/azure/virtual-machines/instance-metadata-service).
const azureInstancePath = "/metadata/instance?api-version=2021-11-01"

// azureInstance is the part of the answer slowpath reads. IMDS encodes
// booleans and sizes as strings ("true", "16384").
type azureInstance struct {
	Compute struct {
		VMSize          string `json:"vmSize"`
		Location        string `json:"location"`
		SecurityProfile struct {
			EncryptionAtHost flexString `json:"encryptionAtHost"`
		} `json:"securityProfile"`
		StorageProfile struct {
			ResourceDisk struct {
				Size flexString `json:"size"`
			} `json:"resourceDisk"`
			OSDisk struct {
				DiffDiskSettings struct {
					Option string `json:"option"`
				} `json:"diffDiskSettings"`
			} `json:"osDisk"`
		} `json:"storageProfile"`
	} `json:"compute"`
}

// flexString accepts a JSON string, number or boolean as its text, since
// IMDS versions differ in how they encode scalars.
type flexString struct {
	set bool
	s   string
}

func (f *flexString) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		f.set, f.s = true, s
		return nil
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	switch v.(type) {
	case float64, bool:
		f.set, f.s = true, strings.TrimSpace(string(b))
		return nil
	}
	return fmt.Errorf("want a string, number or boolean, got %s", b)
}

func fetchAzure(ctx context.Context, f *fetcher, c *snapshot.Cloud) error {
	body, err := f.do(ctx, "GET", azureInstancePath, map[string]string{"Metadata": "true"})
	if err != nil {
		return err
	}
	return parseAzure(body, c)
}

func parseAzure(body []byte, c *snapshot.Cloud) error {
	var inst azureInstance
	if err := json.Unmarshal(body, &inst); err != nil {
		return fmt.Errorf("azure metadata: bad JSON: %w", err)
	}
	a := &snapshot.AzureMeta{VMSize: inst.Compute.VMSize}
	if e := inst.Compute.SecurityProfile.EncryptionAtHost; e.set && e.s != "" {
		v, err := strconv.ParseBool(e.s)
		if err != nil {
			return fmt.Errorf("azure metadata: securityProfile.encryptionAtHost %q is not true or false", e.s)
		}
		a.EncryptionAtHost = &v
	}
	if sz := inst.Compute.StorageProfile.ResourceDisk.Size; sz.set && sz.s != "" {
		n, err := strconv.Atoi(sz.s)
		if err != nil || n < 0 {
			return fmt.Errorf("azure metadata: storageProfile.resourceDisk.size %q is not a non-negative whole number", sz.s)
		}
		a.ResourceDiskSizeMB = n
	}
	a.EphemeralOSDisk = strings.EqualFold(inst.Compute.StorageProfile.OSDisk.DiffDiskSettings.Option, "Local")
	c.Azure = a
	c.InstanceType = a.VMSize
	c.Region = inst.Compute.Location
	if a.VMSize == "" {
		return fmt.Errorf("azure metadata: compute.vmSize missing")
	}
	return nil
}
