package cryptbench

import (
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/workload/profile"
)

// Profile is a workload the lab runs on every target: a lab job (fio on
// the raw device, direct I/O so the page cache does not hide the device)
// or a bench profile that runs on a device. The catalogue is read from
// the profile registry (internal/workload/profile).
type Profile struct {
	// Name is what --profile takes: a lab job's name without
	// profile.LabPrefix, a bench profile's own.
	Name, Description string
	// Workload is the registry's name, as the experiment engine runs it
	// ("lab:randrw-4k", "db-commit").
	Workload string
	// IO is a lab job's one I/O size and queue depth, on which the tax is
	// computed; nil for a bench profile (its tax shape is its own).
	IO *profile.IOShape
}

// Profiles are the lab's workloads: the lab jobs, then the bench profiles
// that run on a block device.
func Profiles() []Profile {
	var out []Profile
	for _, p := range profile.Family(profile.LabFamily) {
		s := p.Spec()
		out = append(out, Profile{Name: strings.TrimPrefix(s.Name, profile.LabPrefix), Description: s.Description, Workload: s.Name, IO: s.IO})
	}
	for _, p := range profile.All() {
		if s := p.Spec(); s.Family == "" && s.Needs&profile.Device != 0 {
			out = append(out, Profile{Name: s.Name, Description: "slowpath bench's " + s.Name + ": " + s.Description, Workload: s.Name})
		}
	}
	return out
}

// Find returns the lab profile called name, nil when there is none.
func Find(name string) *Profile {
	ps := Profiles()
	i := slices.IndexFunc(ps, func(p Profile) bool { return p.Name == name })
	if i < 0 {
		return nil
	}
	return &ps[i]
}

// Names lists the lab profiles for usage messages.
func Names() string {
	var n []string
	for _, p := range Profiles() {
		n = append(n, p.Name)
	}
	return strings.Join(n, ", ")
}
