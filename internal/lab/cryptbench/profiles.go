package cryptbench

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/lab/cryptlab"
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
	// Needs is what the profile runs on (its registry Spec): the raw
	// device, files on a filesystem (--fs), or either.
	Needs profile.Target
	// Arg is what a family's argument held: a fio:FILE's job file, a
	// replay:DIR's capture.
	Arg profile.Arg
}

// Profiles are the lab's workloads: the lab jobs, then slowpath bench's
// profiles (those that need files run on a filesystem the lab makes).
// The families whose name carries an argument (fio:FILE, replay:DIR) are
// not listed: Resolve reads their argument.
func Profiles() []Profile {
	var out []Profile
	for _, p := range profile.Family(profile.LabFamily) {
		s := p.Spec()
		out = append(out, Profile{Name: strings.TrimPrefix(s.Name, profile.LabPrefix), Description: s.Description, Workload: s.Name, IO: s.IO, Needs: s.Needs})
	}
	for _, p := range profile.All() {
		// A bench family's member is a profile of its own
		// (mariadb-oltp:encrypted): listed; the lab's are above.
		if s := p.Spec(); s.Family != profile.LabFamily && !strings.HasSuffix(s.Name, ":") {
			out = append(out, Profile{Name: s.Name, Description: "slowpath bench's " + s.Name + ": " + s.Description, Workload: s.Name, Needs: s.Needs})
		}
	}
	return out
}

// Resolve returns the lab profile called name: one of Profiles, or a
// member of a family whose argument it reads and checks now (the job file
// of fio:FILE, the capture of replay:DIR).
func Resolve(name string) (*Profile, error) {
	if p := Find(name); p != nil {
		return p, nil
	}
	k, ok := profile.Lookup(name)
	if !ok || k.Spec().Family != "" || !strings.HasSuffix(k.Spec().Name, ":") {
		return nil, fmt.Errorf("unknown profile %q (known: %s)", name, Names())
	}
	a, err := profile.Resolve(name)
	if err != nil {
		return nil, err
	}
	s := k.Spec()
	return &Profile{Name: a.Name, Description: "slowpath bench's " + s.Usage + ": " + s.Description, Workload: a.Name, Needs: s.Needs, Arg: a}, nil
}

// ChooseFilesystem is --fs for p: "" is the default, none for a profile
// that can run on the raw device and ext4 for one that needs files. A
// filesystem under a raw-device job, or none under a profile that needs
// files, is refused.
func ChooseFilesystem(given string, p *Profile) (*cryptlab.Filesystem, error) {
	if given == "" {
		if p.Needs&profile.Device != 0 {
			return nil, nil
		}
		given = "ext4"
	}
	f, err := cryptlab.ParseFilesystem(given)
	switch {
	case err != nil:
		return nil, err
	case f == nil && p.Needs&profile.Device == 0:
		return nil, fmt.Errorf("profile %s runs on files: give --fs %s", p.Name, strings.Join(cryptlab.Filesystems, " or "))
	case f != nil && p.Needs&profile.Dir == 0:
		return nil, fmt.Errorf("profile %s runs on the raw device: leave --fs out (none)", p.Name)
	case f != nil:
		return f, f.CheckTools()
	}
	return f, nil
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

// Names lists the lab profiles for usage messages, the families last.
func Names() string {
	var n []string
	for _, p := range Profiles() {
		n = append(n, p.Name)
	}
	for _, p := range profile.All() {
		if s := p.Spec(); s.Family == "" && strings.HasSuffix(s.Name, ":") {
			n = append(n, s.Usage)
		}
	}
	return strings.Join(n, ", ")
}
