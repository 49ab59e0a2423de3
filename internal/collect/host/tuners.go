package host

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// collectTuners looks for other programs that set the knobs slowpath
// tunes: bpftune and tuned by their processes (/proc/PID/comm) and files,
// and the node-tuning DaemonSet of `slowpath fix --format kubernetes` by
// the marker its init container writes. What each tuner drives is
// analysis (internal/model/tuners); this records only what was seen.
func collectTuners(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) {
	procs, err := tunerProcesses(fs)
	if err != nil {
		s.AddError("host.tuners", fs.ProcPath(), err)
	}
	if pid, ok := procs["bpftune"]; ok {
		t := snapshot.Tuner{Name: "bpftune", PID: pid, Seen: []string{fs.ProcPath(strconv.Itoa(pid), "comm")}}
		t.Plugins = bpftunePlugins(fs)
		h.Tuners = append(h.Tuners, t)
	}
	if t, ok := collectTuned(fs, procs["tuned"], s); ok {
		h.Tuners = append(h.Tuners, t)
	}
	if t, ok := collectNodeTuning(fs, h, s); ok {
		h.Tuners = append(h.Tuners, t)
	}
}

// tunerComms are the process names looked for. bpftune is a C daemon;
// tuned is a Python script run through its #! line, which the kernel
// names after the script (comm is the basename execve was given).
var tunerComms = []string{"bpftune", "tuned"}

// tunerProcesses maps each tuner name to the lowest pid whose comm is it.
func tunerProcesses(fs hostfs.FS) (map[string]int, error) {
	ents, err := os.ReadDir(fs.ProcPath())
	if err != nil {
		return nil, err
	}
	found := map[string]int{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue
		}
		comm, err := hostfs.ReadValue(fs.ProcPath(e.Name(), "comm"))
		if err != nil || !slices.Contains(tunerComms, comm) {
			continue // gone since the listing, or another program
		}
		if old, ok := found[comm]; !ok || pid < old {
			found[comm] = pid
		}
	}
	return found, nil
}

// bpftunePlugins lists the tuner plug-ins bpftune loads at start: the
// *_tuner.so files of its plug-in directory (src/bpftune.c init()).
func bpftunePlugins(fs hostfs.FS) []string {
	var out []string
	for _, dir := range bpftuneLibDirs(fs) {
		ents, err := fs.ReadRootDir(dir)
		if err != nil {
			continue
		}
		for _, e := range ents {
			if name, ok := strings.CutSuffix(e.Name(), "_tuner.so"); ok && name != "" && !strings.ContainsAny(name, " \t\n") {
				out = append(out, name+"_tuner")
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// bpftuneLibDirs are where bpftune's plug-ins live: BPFTUNER_LIB_DIR is
// /usr/<libdir>/bpftune, lib64 upstream and in RPMs, lib/<multiarch> in
// Debian's and Ubuntu's libbpftune0, lib in upstream's debian/rules; and
// BPFTUNER_LOCAL_LIB_DIR below /usr/local (include/bpftune/libbpftune.h).
func bpftuneLibDirs(fs hostfs.FS) []string {
	dirs := []string{"usr/lib64/bpftune", "usr/lib/bpftune", "usr/local/lib64/bpftune", "usr/local/lib/bpftune"}
	if ents, err := fs.ReadRootDir("usr/lib"); err == nil {
		for _, e := range ents {
			if n := e.Name(); e.IsDir() && (strings.HasSuffix(n, "-linux-gnu") || strings.HasSuffix(n, "-linux-gnueabihf")) {
				dirs = append(dirs, "usr/lib/"+n+"/bpftune")
			}
		}
	}
	return dirs
}

// nodeTuningMarker is written by the init container of the DaemonSet that
// `slowpath fix --format kubernetes` renders (internal/fix/kubernetes.go):
// one "sysctl KEY=VALUE", "ring IFACE rx N" or "scheduler DEV NAME" line
// per setting and a "fix
// UNIX-TIME ID KEY VALUE SUBJECT" line per setting (older markers have
// none).
const nodeTuningMarker = "run/slowpath/node-tuning"

func collectNodeTuning(fs hostfs.FS, h *snapshot.Host, s *snapshot.Snapshot) (snapshot.Tuner, bool) {
	b, err := fs.ReadRootFile(nodeTuningMarker)
	if err != nil {
		if hostfs.Classify(err) != hostfs.KindMissing {
			s.AddError("host.tuners", fs.RootPath(nodeTuningMarker), err)
		}
		return snapshot.Tuner{}, false
	}
	t := snapshot.Tuner{Name: "slowpath-node-tuning", Seen: []string{"/" + nodeTuningMarker}}
	for i, line := range strings.Split(string(b), "\n") {
		kind, rest, _ := strings.Cut(strings.TrimSpace(line), " ")
		switch kind {
		case "", "#":
		case "fix":
			// fix UNIX-TIME ID KEY VALUE [SUBJECT]: which finding a
			// setting fixes, since when. The marker is on /run, emptied
			// at boot: what it names holds on this boot.
			f := strings.SplitN(rest, " ", 5)
			var sec int64 // 0: no time, refused
			if len(f) >= 4 {
				if v, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					sec = v
				}
			}
			if sec <= 0 {
				s.AddError("host.tuners", fs.RootPath(nodeTuningMarker), fmt.Errorf("line %d: %q is not UNIX-TIME ID KEY VALUE SUBJECT", i+1, rest))
				continue
			}
			af := snapshot.AppliedFix{ID: f[1], Key: f[2], Value: f[3], AppliedAt: time.Unix(sec, 0).UTC()}
			if len(f) == 5 {
				af.Subject = f[4]
			}
			h.Fixes = append(h.Fixes, af)
		case "sysctl":
			k, v, ok := strings.Cut(rest, "=")
			if !ok || !validSysctlKey(k) {
				s.AddError("host.tuners", fs.RootPath(nodeTuningMarker), fmt.Errorf("line %d: %q is not KEY=VALUE", i+1, rest))
				continue
			}
			t.Sysctls = append(t.Sysctls, snapshot.TunerSysctl{Key: k, Value: v})
		case "ring":
			dev, v, ok := strings.Cut(rest, " ")
			if !ok {
				s.AddError("host.tuners", fs.RootPath(nodeTuningMarker), fmt.Errorf("line %d: %q is not IFACE rx N", i+1, rest))
				continue
			}
			t.Rings = append(t.Rings, snapshot.TunerRing{Devices: dev, Value: v})
		case "scheduler":
			// scheduler DEV NAME: no other tuner slowpath knows sets a
			// scheduler, so there is no claim to record; a line of
			// another shape is still an error.
			if f := strings.Fields(rest); len(f) != 2 {
				s.AddError("host.tuners", fs.RootPath(nodeTuningMarker), fmt.Errorf("line %d: %q is not DEVICE SCHEDULER", i+1, rest))
			}
		default:
			if !strings.HasPrefix(kind, "#") {
				s.AddError("host.tuners", fs.RootPath(nodeTuningMarker), fmt.Errorf("line %d: unknown setting %q", i+1, kind))
			}
		}
	}
	return t, true
}

// validSysctlKey is the snapshot's rule for sysctl names (dotted,
// components of [A-Za-z0-9_-]); tuned also accepts slashes, which
// normSysctlKey turns into dots first.
func validSysctlKey(k string) bool {
	if len(k) > 256 {
		return false
	}
	comps := strings.Split(k, ".")
	if len(comps) < 2 {
		return false
	}
	for _, c := range comps {
		if c == "" || strings.IndexFunc(c, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-')
		}) >= 0 {
			return false
		}
	}
	return true
}
