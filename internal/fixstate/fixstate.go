// Package fixstate is the record of what `slowpath fix --apply` changed on
// a host: written by internal/fix/apply, which undoes from it, and read by
// the host collector (which knows nothing of fix's steps: a step is kept
// as the JSON fix wrote, which apply decodes), so that the agent can say which node runs which
// change (slowpath_fix_applied) and a fleet can tell canaries from the
// rest.
package fixstate

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/slowpath/slowpath/internal/recordkind"
)

// DefaultPath keeps the state across reboots, because persisted files
// outlive them; runtime changes recorded under an older boot are known to
// be gone (see State.BootID).
const DefaultPath = "/var/lib/slowpath/fix/state.json"

// Kind and SchemaVersion open every state file written since they were
// added; one without them (written before) reads as version 1.
const (
	Kind          = recordkind.FixState
	SchemaVersion = 1
)

// State is what slowpath changed on this host.
type State struct {
	Kind          string `json:"kind,omitempty"`           // Kind, set by Stamp
	SchemaVersion int    `json:"schema_version,omitempty"` // SchemaVersion, set by Stamp
	// BootID is /proc/sys/kernel/random/boot_id when the runtime changes
	// were made: after a reboot they no longer hold and are dropped.
	BootID  string       `json:"boot_id"`
	Changes []Change     `json:"changes"`
	Files   []FileChange `json:"files"`
}

// Change is one runtime setting slowpath changed.
type Change struct {
	Key     string `json:"key"` // fix.Step.Key
	ID      string `json:"id"`  // the finding's check id
	Subject string `json:"subject"`
	// Step is the fix.Step that made the change, as fix encodes it.
	Step     json.RawMessage `json:"step"`
	Previous string          `json:"previous"` // the value before slowpath's first change
	Applied  string          `json:"applied"`  // the value slowpath set
	// AppliedAt is when slowpath last set it; zero in state files written
	// before it was recorded.
	AppliedAt time.Time `json:"applied_at,omitzero"`
}

// FileChange is one persistent file slowpath wrote.
type FileChange struct {
	Path     string `json:"path"`
	ID       string `json:"id"`
	Existed  bool   `json:"existed"`
	Previous string `json:"previous,omitempty"` // content before, when it existed
	Written  string `json:"written"`
}

// Stamp sets the kind and version this slowpath writes.
func (s *State) Stamp() { s.Kind, s.SchemaVersion = Kind, SchemaVersion }

// Decode reads a state file's content.
func Decode(b []byte) (*State, error) {
	env, err := recordkind.Read(b)
	if err != nil {
		return nil, fmt.Errorf("not slowpath's fix state: %w", err)
	}
	if err := env.Check(Kind, SchemaVersion, true); err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("not slowpath's fix state: %w", err)
	}
	return &s, nil
}

// Holding are the runtime changes that still hold on the boot bootID:
// none when they were recorded under another boot or an unknown one (a
// reboot may have reset them), all when bootID itself is unknown.
func (s *State) Holding(bootID string) []Change {
	if bootID != "" && s.BootID != bootID {
		return nil
	}
	return s.Changes
}
