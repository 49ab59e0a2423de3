package fix

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Proof is what an entry's changes do to the snapshot it was planned from,
// checked before the plan is printed: the steps and the cloud changes that
// name their setting are made to a copy of the snapshot (Change.ApplyTo),
// and every check runs again on it.
type Proof struct {
	// Result is cleared (the finding is gone on the changed snapshot),
	// remains (it is not: Remains says what the checks still say),
	// on-host (the finding stands on counters measured before the change,
	// which no snapshot can re-measure: fix --apply watches them), or
	// not-checked (the change could not be made to the snapshot: Remains
	// says why; a plan built from its own snapshot never has one).
	Result string `json:"result"`
	// Remains is the finding as the checks give it after the change, or
	// why it was not checked.
	Remains string `json:"remains,omitempty"`
}

// Proof results.
const (
	ProofCleared = "cleared"
	ProofRemains = "remains"
	ProofOnHost  = "on-host"
	ProofNotDone = "not-checked"
)

// proveOnPaper fills each entry's Proof: entries with nothing to make
// (by hand, not applicable) get none. Only copying the snapshot can fail.
func proveOnPaper(s *snapshot.Snapshot, cfg check.Config, entries []Entry) error {
	if s == nil {
		return nil
	}
	for i := range entries {
		e := &entries[i]
		if len(e.Steps) == 0 && !hasCloudSetting(e.Cloud) {
			continue
		}
		if Watched(*e) {
			e.Proof = &Proof{Result: ProofOnHost}
			continue
		}
		after, err := copySnapshot(s)
		if err != nil {
			return err
		}
		if err := applyEntry(after, *e); err != nil {
			e.Proof = &Proof{Result: ProofNotDone, Remains: err.Error()}
			continue
		}
		_, findings, err := check.Evaluate(after, cfg)
		if err != nil {
			e.Proof = &Proof{Result: ProofNotDone, Remains: "the changed snapshot: " + err.Error()}
			continue
		}
		e.Proof = &Proof{Result: ProofCleared}
		for _, f := range findings {
			if f.ID == e.ID && f.Subject == e.Subject && f.Status == check.Fail {
				e.Proof = &Proof{Result: ProofRemains, Remains: f.Summary}
			}
		}
	}
	return nil
}

func hasCloudSetting(cs []check.CloudChange) bool {
	for _, c := range cs {
		if c.Setting != "" {
			return true
		}
	}
	return false
}

// applyEntry makes e's steps and cloud settings to s.
func applyEntry(s *snapshot.Snapshot, e Entry) error {
	for _, st := range e.Steps {
		if err := st.Change.ApplyTo(s); err != nil {
			return err
		}
	}
	for _, c := range e.Cloud {
		if err := applyCloud(s, c); err != nil {
			return err
		}
	}
	return nil
}

// applyCloud makes a cloud change's setting to the snapshot's cloud facts.
func applyCloud(s *snapshot.Snapshot, c check.CloudChange) error {
	switch c.Setting {
	case "":
		return nil
	case check.CloudAzureEAHOff:
		if s.Cloud == nil || s.Cloud.Azure == nil {
			return fmt.Errorf("cloud change %s: the snapshot has no Azure metadata", c.Setting)
		}
		off := false
		s.Cloud.Azure.EncryptionAtHost = &off
		return nil
	}
	return fmt.Errorf("cloud change %q: not a setting slowpath knows", c.Setting)
}

// copySnapshot is a deep copy through the snapshot's own JSON, so a change
// to the copy never reaches the original.
func copySnapshot(s *snapshot.Snapshot) (*snapshot.Snapshot, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	var c snapshot.Snapshot
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&c); err != nil {
		return nil, err
	}
	return &c, nil
}

// proofLine is the proof in words, for the text formats.
func proofLine(p *Proof) string {
	switch p.Result {
	case ProofCleared:
		return "checked on the snapshot: after this change the finding is gone"
	case ProofOnHost:
		return "checked on the host, not the snapshot: the finding stands on counters measured before the change (fix --apply watches them)"
	case ProofNotDone:
		return "not checked on the snapshot: " + p.Remains
	}
	return "checked on the snapshot: this change does not clear the finding; after it: " + strings.TrimSpace(p.Remains)
}
