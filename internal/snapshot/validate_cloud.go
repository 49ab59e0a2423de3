package snapshot

import "fmt"

// Validation of the cloud section (cloud.go), shared with bench results
// (ValidateCloud). Rules and sources: docs/snapshot.md, section Validation.

// ValidateCloud checks a cloud section by the rules of Validate; prefix is
// its JSON path ("cloud", or "environment.cloud" in a bench result).
func ValidateCloud(prefix string, c *Cloud) error {
	if c == nil {
		return nil
	}
	if err := checkEnum(prefix+".provider", c.Provider, "azure", "aws", "gcp"); err != nil {
		return err
	}
	if err := checkEnum(prefix+".detected_by", c.DetectedBy, "dmi", "flag"); err != nil {
		return err
	}
	// Instance types and regions are the providers' identifiers:
	// printable words, short.
	if err := checkToken(prefix+".instance_type", c.InstanceType, maxEnumish, true); err != nil {
		return err
	}
	if err := checkToken(prefix+".region", c.Region, maxEnumish, true); err != nil {
		return err
	}
	if err := checkText(prefix+".metadata_error", c.MetadataError, maxErrText, true); err != nil {
		return err
	}
	if a := c.Azure; a != nil {
		if err := checkToken(prefix+".azure.vm_size", a.VMSize, maxEnumish, true); err != nil {
			return err
		}
		if a.ResourceDiskSizeMB < 0 {
			return invalidNumber(prefix+".azure.resource_disk_size_mb", a.ResourceDiskSizeMB, "negative", "", srcSlowpath)
		}
	}
	if a := c.AWS; a != nil {
		if err := checkToken(prefix+".aws.instance_type", a.InstanceType, maxEnumish, true); err != nil {
			return err
		}
		for _, k := range sortedKeys(a.BlockDeviceMapping) {
			if err := checkToken(prefix+".aws.block_device_mapping", k, maxEnumish, false); err != nil {
				return err
			}
			if err := checkToken(fmt.Sprintf("%s.aws.block_device_mapping[%q]", prefix, k), a.BlockDeviceMapping[k], maxEnumish, false); err != nil {
				return err
			}
		}
	}
	if g := c.GCP; g != nil {
		if err := checkToken(prefix+".gcp.machine_type", g.MachineType, maxEnumish, true); err != nil {
			return err
		}
		for i, d := range g.Disks {
			dp := fmt.Sprintf("%s.gcp.disks[%d]", prefix, i)
			for _, f := range []struct{ p, v string }{{".device_name", d.DeviceName}, {".type", d.Type}, {".interface", d.Interface}, {".mode", d.Mode}} {
				if err := checkToken(dp+f.p, f.v, maxEnumish, true); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
