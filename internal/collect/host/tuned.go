package host

import (
	"bufio"
	"bytes"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// tunedDirs are where tuned looks for a profile NAME (NAME/tuned.conf),
// later ones winning (tuned/consts.py LOAD_DIRECTORIES; 2.23 moved them
// to profiles/ below each).
var tunedDirs = []string{"usr/lib/tuned", "usr/lib/tuned/profiles", "etc/tuned", "etc/tuned/profiles"}

// maxTunedIncludes bounds include chains: real ones are two or three deep.
const maxTunedIncludes = 16

// collectTuned reads tuned's active profile (/etc/tuned/active_profile,
// one or more names separated by spaces) and merges each profile with
// what it includes, as tuned does, keeping what slowpath also tunes: the
// [sysctl] units and the ring option of net units. pid is tuned's
// process, 0 when none runs.
func collectTuned(fs hostfs.FS, pid int, s *snapshot.Snapshot) (snapshot.Tuner, bool) {
	t := snapshot.Tuner{Name: "tuned", PID: pid}
	if pid != 0 {
		t.Seen = append(t.Seen, fs.ProcPath(strconv.Itoa(pid), "comm"))
	}
	const active = "etc/tuned/active_profile"
	b, err := fs.ReadRootFile(active)
	if err != nil {
		if hostfs.Classify(err) != hostfs.KindMissing {
			s.AddError("host.tuners", fs.RootPath(active), err)
		}
		return t, pid != 0
	}
	t.Profile = strings.Join(strings.Fields(string(b)), " ")
	if t.Profile == "" {
		return t, pid != 0
	}
	t.Seen = append(t.Seen, "/"+active)
	units, files, err := loadTunedProfiles(func(name string) ([]byte, string, error) { return readTunedProfile(fs, name) }, strings.Fields(t.Profile))
	for _, f := range files {
		t.Seen = append(t.Seen, "/"+f)
	}
	if err != nil {
		s.AddError("host.tuners", fs.RootPath(active), err)
	}
	for _, u := range units {
		if !u.enabled() {
			continue
		}
		switch u.kind() {
		case "sysctl":
			for _, o := range u.options {
				if slices.Contains(unitMeta, o.key) {
					continue
				}
				k := strings.ReplaceAll(o.key, "/", ".")
				if !validSysctlKey(k) {
					s.AddError("host.tuners", fs.RootPath(active), fmt.Errorf("tuned unit [%s]: %q is not a sysctl name", u.name, o.key))
					continue
				}
				t.Sysctls = append(t.Sysctls, snapshot.TunerSysctl{Key: k, Value: o.value})
			}
		case "net":
			if v, ok := u.option("ring"); ok && v != "" {
				dev, _ := u.option("devices")
				t.Rings = append(t.Rings, snapshot.TunerRing{Devices: dev, Value: v})
			}
		}
	}
	return t, true
}

// readTunedProfile finds NAME/tuned.conf in the last of tunedDirs that has
// it. A name is one path element: "../x" is refused, never followed.
func readTunedProfile(fs hostfs.FS, name string) ([]byte, string, error) {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return nil, "", fmt.Errorf("tuned profile %q: not a profile name", name)
	}
	for i := len(tunedDirs) - 1; i >= 0; i-- {
		rel := path.Join(tunedDirs[i], name, "tuned.conf")
		b, err := fs.ReadRootFile(rel)
		if err == nil {
			return b, rel, nil
		}
		if hostfs.Classify(err) != hostfs.KindMissing {
			return nil, rel, err
		}
	}
	return nil, "", fmt.Errorf("tuned profile %q: no tuned.conf under /%s", name, strings.Join(tunedDirs, ", /"))
}

// tunedUnit is one [section] of a profile: a plugin instance.
type tunedUnit struct {
	name    string
	options []tunedOption // in file order; a later key replaces an earlier
}

type tunedOption struct{ key, value string }

func (u *tunedUnit) option(k string) (string, bool) {
	for _, o := range u.options {
		if o.key == k {
			return o.value, true
		}
	}
	return "", false
}

func (u *tunedUnit) set(k, v string) {
	for i := range u.options {
		if u.options[i].key == k {
			u.options[i].value = v
			return
		}
	}
	u.options = append(u.options, tunedOption{k, v})
}

// kind is the plugin: type=, else the unit's name (tuned/profiles/unit.py).
func (u *tunedUnit) kind() string {
	if t, ok := u.option("type"); ok && t != "" {
		return t
	}
	return u.name
}

func (u *tunedUnit) enabled() bool {
	v, ok := u.option("enabled")
	return !ok || !slices.Contains([]string{"false", "0", "no", "off", "n", "f"}, strings.ToLower(v))
}

// unitMeta are a unit's own options, not its plugin's: they are not
// settings (tuned/profiles/unit.py).
var unitMeta = []string{"type", "enabled", "devices", "devices_udev_regex", "replace", "script_pre", "script_post", "drop", "priority", "instance"}

// parseTunedConf reads a tuned.conf: an INI file of [unit] sections with
// key=value options and # comments; [main] holds include=. It returns the
// units but main, and the included profile names.
func parseTunedConf(b []byte) ([]tunedUnit, []string, error) {
	var units []tunedUnit
	var include []string
	cur := -1 // index into units; -2 is [main]
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 4096), 64<<10)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		if line[0] == '[' {
			name, ok := strings.CutSuffix(line[1:], "]")
			name = strings.TrimSpace(name)
			if !ok || name == "" {
				return nil, nil, fmt.Errorf("line %d: %q is not a [section]", n, line)
			}
			if name == "main" {
				cur = -2
				continue
			}
			cur = slices.IndexFunc(units, func(u tunedUnit) bool { return u.name == name })
			if cur < 0 {
				units = append(units, tunedUnit{name: name})
				cur = len(units) - 1
			}
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, nil, fmt.Errorf("line %d: %q is not key=value", n, line)
		}
		// configparser's inline_comment_prefixes=('#'): a # after white
		// space ends the value.
		if i := strings.Index(v, " #"); i >= 0 {
			v = v[:i]
		}
		if i := strings.Index(v, "\t#"); i >= 0 {
			v = v[:i]
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch cur {
		case -1:
			return nil, nil, fmt.Errorf("line %d: %q comes before any [section]", n, line)
		case -2:
			if k == "include" {
				// tuned splits at \s*[,;]\s* (profiles/loader.py); a later
				// include= line replaces an earlier one (strict=False).
				include = nil
				for _, inc := range strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ';' }) {
					if inc = strings.TrimSpace(inc); inc != "" {
						include = append(include, inc)
					}
				}
			}
		default:
			units[cur].set(k, v)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, nil, err
	}
	return units, include, nil
}

// loadTunedProfiles merges the named profiles in order, each after what
// it includes, as tuned's loader and merger do (profiles/loader.py,
// merger.py): a unit new to the result is added; one already there takes
// the later unit's options, type, enabled and devices, loses the options
// its drop= names, or is replaced whole when the later unit says
// replace=1. A profile already loaded is not loaded again (tuned's guard
// against include loops); a name "-NAME" is loaded only if it exists; a
// name outside [a-zA-Z0-9_.-] is dropped, as tuned drops it. It returns
// the units and the files read; an error names the first profile that
// could not be read, the units merged so far still returned.
func loadTunedProfiles(read func(name string) ([]byte, string, error), names []string) ([]tunedUnit, []string, error) {
	var units []tunedUnit
	var files []string
	loaded := map[string]bool{}
	var walk func(name string, depth int) error
	walk = func(name string, depth int) error {
		name, optional := strings.CutPrefix(name, "-")
		if !safeTunedName(name) || loaded[name] {
			return nil
		}
		if depth > maxTunedIncludes {
			return fmt.Errorf("tuned profile %q: include chain deeper than %d", name, maxTunedIncludes)
		}
		loaded[name] = true
		b, file, err := read(name)
		if err != nil {
			if optional {
				return nil
			}
			return err
		}
		files = append(files, file)
		own, include, err := parseTunedConf(b)
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		for _, inc := range include {
			if strings.Contains(inc, "${") {
				continue // a variable or function: resolved by tuned at run time, not here
			}
			if err := walk(inc, depth+1); err != nil {
				return err
			}
		}
		for _, u := range own {
			mergeTunedUnit(&units, u)
		}
		return nil
	}
	for _, n := range names {
		if err := walk(n, 0); err != nil {
			return units, files, err
		}
	}
	return units, files, nil
}

func mergeTunedUnit(units *[]tunedUnit, u tunedUnit) {
	i := slices.IndexFunc(*units, func(x tunedUnit) bool { return x.name == u.name })
	r, _ := u.option("replace")
	switch {
	case i < 0:
		*units = append(*units, u)
	case r == "1" || strings.EqualFold(r, "true"):
		(*units)[i] = u
	default:
		old := &(*units)[i]
		if d, ok := u.option("drop"); ok {
			for _, k := range strings.FieldsFunc(d, func(r rune) bool { return r == ',' || r == ' ' || r == ';' }) {
				old.options = slices.DeleteFunc(old.options, func(o tunedOption) bool { return o.key == k })
			}
		}
		for _, o := range u.options {
			if o.key != "drop" {
				old.set(o.key, o.value)
			}
		}
	}
}

// safeTunedName is tuned's Loader.safe_name: ^[a-zA-Z0-9_.-]+$.
func safeTunedName(n string) bool {
	return n != "" && !strings.ContainsFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	})
}
