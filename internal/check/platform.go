package check

import "github.com/slowpath/slowpath/internal/snapshot"

// Platform is the operating system family that decides how a remedy is
// carried out: platforms that build dm-crypt volumes themselves keep the
// flags somewhere of their own, and some have no shell to run a command
// in. Checks word their remedies by it; fix chooses its mechanism by it.
type Platform string

const (
	PlatformOther        Platform = ""
	PlatformBottlerocket Platform = "bottlerocket"
	PlatformTalos        Platform = "talos"
	// PlatformCoreOS is Flatcar, Fedora CoreOS and RHCOS: Ignition
	// (Butane) opens the LUKS volumes it creates.
	PlatformCoreOS Platform = "coreos"
)

// PlatformOf names the platform from os-release (host.os).
func PlatformOf(s *snapshot.Snapshot) Platform {
	if s == nil || s.Host == nil || s.Host.OS == nil {
		return PlatformOther
	}
	o := s.Host.OS
	switch {
	case o.ID == "bottlerocket":
		return PlatformBottlerocket
	case o.ID == "talos":
		return PlatformTalos
	case o.ID == "flatcar", o.ID == "rhcos", o.VariantID == "coreos":
		return PlatformCoreOS
	}
	return PlatformOther
}
