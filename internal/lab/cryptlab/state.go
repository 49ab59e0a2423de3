package cryptlab

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/lab/hostlock"
	"github.com/slowpath/slowpath/internal/stdfile"
)

// StateDir holds the host-wide lock and one state file per live lab. /run
// is a tmpfs: a reboot clears it, as it clears brd, loop and dm devices.
// Tests point it elsewhere.
var StateDir = "/run/slowpath/cryptlab"

// Name and UUID prefixes of every dm device the lab creates. Recovery
// removes a device only when its name has NamePrefix and its uuid and
// device number are the ones the state file recorded: a device that merely
// looks like ours (a canary) is left alone.
const (
	NamePrefix = "sp-crypt-"
	UUIDPrefix = "SLOWPATH-CRYPTLAB-"
)

// labState is what a lab created, written before each creation (intent) and
// after it (device numbers), so that a lab killed with SIGKILL is undone by
// the next one.
type labState struct {
	PID int    `json:"pid"`
	ID  string `json:"id"`
	// Brd is set when this lab loaded the brd module; BrdParams are the
	// module parameters it loaded it with (rd_nr, rd_size), checked again
	// before unloading.
	Brd       bool              `json:"brd,omitempty"`
	BrdParams map[string]string `json:"brd_params,omitempty"`
	Loop      *loopRecord       `json:"loop,omitempty"`
	// File is a backing file the lab created (removed at teardown).
	File string     `json:"file,omitempty"`
	DM   []dmRecord `json:"dm,omitempty"` // in creation order
	// Mounts are the filesystems mounted on the lab's devices now
	// (Filesystem), undone before the devices.
	Mounts []mountRecord `json:"mounts,omitempty"`
}

type loopRecord struct {
	Device string `json:"device"` // /dev/loopN
	Dev    string `json:"dev"`    // major:minor
	File   string `json:"file"`   // its backing file
}

type dmRecord struct {
	Name string `json:"name"`
	UUID string `json:"uuid"`
	Dev  string `json:"dev,omitempty"` // major:minor once created
}

func statePath(id string) string { return filepath.Join(StateDir, "lab-"+id+".json") }

func (s *labState) save() error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	err = stdfile.WriteFileMode(statePath(s.ID), 0o600, func(w io.Writer) error { _, err := w.Write(b); return err })
	if err != nil {
		return fmt.Errorf("cryptlab state: %w", err)
	}
	return nil
}

// acquireLock takes the host-wide crypt lab lock: one crypt lab per host at
// a time (brd is a single module, and two labs would measure each other).
func acquireLock(ctx context.Context) (*hostlock.Lock, error) {
	return hostlock.Acquire(ctx, StateDir, "another crypt lab is running")
}

// Observed is a block device as sysfs shows it, for the ownership checks.
type Observed struct {
	Name    string // kernel name: dm-3, loop0, ram0
	Dev     string // major:minor
	DMName  string
	DMUUID  string
	Backing string // loop backing file
	// Holders are the kernel names of the devices stacked on this one
	// (/sys/block/NAME/holders: a dm table or md array using it).
	Holders []string
}

// hostView is what recovery sees of the host. observeHost reads it;
// planRecovery decides on it alone, so the rules are tested on fixtures.
type hostView struct {
	Devs []Observed // dm-*, loop* and ram* block devices
	// Brd holds brd's module parameters (/sys/module/brd/parameters); nil
	// when brd is not loaded.
	Brd map[string]string
	// Mounted is the device number (major:minor) of every mount in this
	// process's and PID 1's mount tables; MountErr says why they could not
	// be read (then no ramdisk can be shown to be unmounted).
	Mounted  []string
	MountErr error
	// MountPoints maps the mount points of this process's mount table to
	// their device numbers.
	MountPoints map[string]string
}

// Action is one undo step recovery decided on.
type Action struct {
	Kind   string // "umount", "dir", "dm", "loop", "file", "brd"
	Target string // dm uuid, loop device, file path, "brd"
}

// Skipped is a recorded device recovery leaves alone, and why.
type Skipped struct {
	Record string
	Reason string
}

// planRecovery decides what to undo for a dead lab's state given the
// host as it is now. It is pure, so the ownership rules are tested
// without a kernel: a dm device is removed only when its name carries
// NamePrefix, its uuid is the recorded one (UUIDPrefix + lab id) and, when
// the state holds a device number, that number too; a loop device only when
// its number and backing file match; brd as brdVerdict says.
func planRecovery(st labState, h hostView) ([]Action, []Skipped) {
	var acts []Action
	var skip []Skipped
	removedDM := map[string]bool{} // kernel names (dm-N) of the lab devices removed
	for _, r := range slices.Backward(st.DM) {
		if !strings.HasPrefix(r.Name, NamePrefix) || !strings.HasPrefix(r.UUID, UUIDPrefix+st.ID+"-") {
			skip = append(skip, Skipped{r.Name, "recorded name or uuid is not a crypt lab's"})
			continue
		}
		i := slices.IndexFunc(h.Devs, func(o Observed) bool { return o.DMName == r.Name })
		if i < 0 {
			continue // never created, or already gone
		}
		o := h.Devs[i]
		switch {
		case o.DMUUID != r.UUID:
			skip = append(skip, Skipped{r.Name, fmt.Sprintf("uuid %q is not the recorded %q", o.DMUUID, r.UUID)})
		case r.Dev != "" && o.Dev != r.Dev:
			skip = append(skip, Skipped{r.Name, fmt.Sprintf("device %s is not the recorded %s", o.Dev, r.Dev)})
		default:
			acts = append(acts, Action{"dm", r.UUID})
			removedDM[o.Name] = true
		}
	}
	if l := st.Loop; l != nil {
		i := slices.IndexFunc(h.Devs, func(o Observed) bool { return "/dev/"+o.Name == l.Device })
		switch {
		case i < 0:
		case h.Devs[i].Dev != l.Dev || h.Devs[i].Backing != l.File:
			skip = append(skip, Skipped{l.Device, fmt.Sprintf("now %s over %q, recorded %s over %q", h.Devs[i].Dev, h.Devs[i].Backing, l.Dev, l.File)})
		default:
			acts = append(acts, Action{"loop", l.Device})
		}
	}
	if st.File != "" {
		acts = append(acts, Action{"file", st.File})
	}
	if st.Brd && h.Brd != nil {
		if why := brdVerdict(st, h, removedDM); len(why) > 0 {
			for _, w := range why {
				skip = append(skip, Skipped{"brd", w + "; brd stays loaded (rmmod brd once nothing uses it)"})
			}
		} else {
			acts = append(acts, Action{"brd", "brd"})
		}
	}
	return acts, skip
}

// planUnmounts decides which of a lab's recorded mounts to undo: one under
// the lab's own mount directory that is mounted from the recorded device
// (a directory only made, or already unmounted, is just removed); a
// recorded mount anywhere else, or of another device now, is left alone.
// Devices are removed only after, on a fresh look at the host.
func planUnmounts(st labState, h hostView) ([]Action, []Skipped) {
	var acts []Action
	var skip []Skipped
	root := mountRoot(st.ID)
	for _, m := range slices.Backward(st.Mounts) {
		switch {
		case !validID(st.ID) || filepath.Dir(m.Dir) != root || filepath.Clean(m.Dir) != m.Dir:
			skip = append(skip, Skipped{m.Dir, "recorded mount is not a directory of the lab's own " + root})
			continue
		case h.MountErr != nil:
			skip = append(skip, Skipped{m.Dir, fmt.Sprintf("cannot tell whether it is mounted: %v", h.MountErr)})
			continue
		}
		dev, mounted := h.MountPoints[m.Dir]
		switch {
		case !mounted:
			acts = append(acts, Action{"dir", m.Dir})
		case dev != m.Dev:
			skip = append(skip, Skipped{m.Dir, fmt.Sprintf("mounted from %s, recorded %s", dev, m.Dev)})
		default:
			acts = append(acts, Action{"umount", m.Dir})
		}
	}
	return acts, skip
}

// mountRoot is the directory under which lab id mounts its sides.
func mountRoot(id string) string { return filepath.Join(StateDir, "mnt-"+id) }

// validID says whether id is a lab id: the 6 hex digits Setup makes, so
// that no state file can name a path with it.
func validID(id string) bool {
	if len(id) != 6 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// ramdiskMajor is brd's block major, RAMDISK_MAJOR
// (include/uapi/linux/major.h; drivers/block/brd.c registers it).
const ramdiskMajor = "1"

// brdVerdict lists why brd must stay loaded, if anything: rmmod frees
// every ramdisk with its data, and brd holds no reference for a ramdisk
// that is merely written and closed, so the module going away must harm
// no one but the lab. It stays when its parameters are not the ones the
// lab loaded it with (someone reloaded it); when a ramdisk exists beyond
// the lab's rd_nr (brd creates one on the first open of a /dev/ramN node
// past rd_nr, drivers/block/brd.c brd_probe: someone else made it); when a
// ramdisk has a holder other than the lab's own dm devices, removed first;
// when a ramdisk is mounted, or the mount tables cannot be read; and when
// a lab device on it could not be removed.
func brdVerdict(st labState, h hostView, removedDM map[string]bool) []string {
	var why []string
	for _, k := range slices.Sorted(maps.Keys(st.BrdParams)) {
		if v := st.BrdParams[k]; h.Brd[k] != v {
			why = append(why, fmt.Sprintf("brd parameter %s is %q, recorded %q: not the module this lab loaded", k, h.Brd[k], v))
		}
	}
	nr, err := strconv.Atoi(st.BrdParams["rd_nr"])
	if err != nil {
		why = append(why, fmt.Sprintf("the state records no ramdisk count (rd_nr %q): the lab's ramdisks cannot be told from others", st.BrdParams["rd_nr"]))
		nr = 0
	}
	names := map[string]string{} // kernel name -> dm name, for the reasons
	for _, o := range h.Devs {
		names[o.Name] = o.DMName
		if o.DMName != "" && !removedDM[o.Name] && strings.HasPrefix(o.DMName, NamePrefix+st.ID) {
			why = append(why, fmt.Sprintf("lab device %s (%s) could not be removed", o.DMName, o.Name))
		}
	}
	for _, o := range h.Devs {
		n, ok := ramIndex(o.Name)
		if !ok {
			continue
		}
		if n >= nr {
			why = append(why, fmt.Sprintf("ramdisk %s exists beyond the %d this lab loaded brd with: someone else created it", o.Name, nr))
		}
		for _, hd := range o.Holders {
			if removedDM[hd] {
				continue
			}
			who := hd
			if dm := names[hd]; dm != "" {
				who += fmt.Sprintf(" (dm name %q)", dm)
			}
			why = append(why, fmt.Sprintf("%s is held by %s, which this lab did not create", o.Name, who))
		}
	}
	if h.MountErr != nil {
		why = append(why, fmt.Sprintf("cannot tell whether a ramdisk is mounted: %v", h.MountErr))
	}
	byDev := map[string]string{}
	for _, o := range h.Devs {
		byDev[o.Dev] = o.Name
	}
	seen := map[string]bool{}
	for _, d := range h.Mounted {
		if major, _, _ := strings.Cut(d, ":"); major != ramdiskMajor || seen[d] {
			continue
		}
		seen[d] = true
		name := byDev[d]
		if name == "" {
			name = "a ramdisk"
		}
		why = append(why, fmt.Sprintf("%s (%s) is mounted", name, d))
	}
	return why
}

// ramIndex returns N of a brd disk's kernel name "ramN".
func ramIndex(name string) (int, bool) {
	digits, ok := strings.CutPrefix(name, "ram")
	if !ok || digits == "" {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 || digits[0] == '+' {
		return 0, false
	}
	return n, true
}
