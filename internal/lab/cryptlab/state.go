package cryptlab

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/lab/hostlock"
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
	p := statePath(s.ID)
	if err := os.WriteFile(p+".tmp", b, 0o600); err != nil {
		return fmt.Errorf("write cryptlab state: %w", err)
	}
	if err := os.Rename(p+".tmp", p); err != nil {
		return fmt.Errorf("write cryptlab state: %w", err)
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
}

// Action is one undo step recovery decided on.
type Action struct {
	Kind   string // "dm", "loop", "file", "brd"
	Target string // dm uuid, loop device, file path, "brd"
}

// Skipped is a recorded device recovery leaves alone, and why.
type Skipped struct {
	Record string
	Reason string
}

// planRecovery decides what to undo for a dead lab's state given the
// devices present now. It is pure, so the ownership rules are tested
// without a kernel: a dm device is removed only when its name carries
// NamePrefix, its uuid is the recorded one (UUIDPrefix + lab id) and, when
// the state holds a device number, that number too; a loop device only when
// its number and backing file match; brd only when this lab loaded it, no
// other block device sits on it and its parameters are the recorded ones.
func planRecovery(st labState, devs []Observed, brdParams map[string]string) ([]Action, []Skipped) {
	var acts []Action
	var skip []Skipped
	removedDM := map[string]bool{}
	for _, r := range slices.Backward(st.DM) {
		if !strings.HasPrefix(r.Name, NamePrefix) || !strings.HasPrefix(r.UUID, UUIDPrefix+st.ID+"-") {
			skip = append(skip, Skipped{r.Name, "recorded name or uuid is not a crypt lab's"})
			continue
		}
		i := slices.IndexFunc(devs, func(o Observed) bool { return o.DMName == r.Name })
		if i < 0 {
			continue // never created, or already gone
		}
		o := devs[i]
		switch {
		case o.DMUUID != r.UUID:
			skip = append(skip, Skipped{r.Name, fmt.Sprintf("uuid %q is not the recorded %q", o.DMUUID, r.UUID)})
		case r.Dev != "" && o.Dev != r.Dev:
			skip = append(skip, Skipped{r.Name, fmt.Sprintf("device %s is not the recorded %s", o.Dev, r.Dev)})
		default:
			acts = append(acts, Action{"dm", r.UUID})
			removedDM[r.Name] = true
		}
	}
	if l := st.Loop; l != nil {
		i := slices.IndexFunc(devs, func(o Observed) bool { return "/dev/"+o.Name == l.Device })
		switch {
		case i < 0:
		case devs[i].Dev != l.Dev || devs[i].Backing != l.File:
			skip = append(skip, Skipped{l.Device, fmt.Sprintf("now %s over %q, recorded %s over %q", devs[i].Dev, devs[i].Backing, l.Dev, l.File)})
		default:
			acts = append(acts, Action{"loop", l.Device})
		}
	}
	if st.File != "" {
		acts = append(acts, Action{"file", st.File})
	}
	if st.Brd && brdParams != nil {
		ok := true
		for k, v := range st.BrdParams {
			if brdParams[k] != v {
				skip = append(skip, Skipped{"brd", fmt.Sprintf("parameter %s is %q, recorded %q: not the module this lab loaded", k, brdParams[k], v)})
				ok = false
				break
			}
		}
		// A dm device we did not remove may sit on a ramdisk: leave brd.
		for _, o := range devs {
			if ok && o.DMName != "" && !removedDM[o.DMName] && strings.HasPrefix(o.DMName, NamePrefix+st.ID) {
				skip = append(skip, Skipped{"brd", "a lab device on it could not be removed"})
				ok = false
			}
		}
		if ok {
			acts = append(acts, Action{"brd", "brd"})
		}
	}
	return acts, skip
}
