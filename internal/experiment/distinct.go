package experiment

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// ErrDuplicate is wrapped by Distinct's error for a run given twice.
var ErrDuplicate = errors.New("the same bench result is given twice")

// Distinct refuses two results that decode to the same run (profile, host,
// start and duration: a copy re-indented or with fields reordered), naming
// both by their labels: a run counted twice makes a difference look
// significant that is not.
func Distinct(labels []string, rs []*benchresult.Result) error {
	byRun := map[string]int{}
	for i, r := range rs {
		id := RunIdentity(r)
		if j, ok := byRun[id]; ok {
			return fmt.Errorf("%w: %s and %s are the same run (%s); give each run once", ErrDuplicate, label(labels, j), label(labels, i), id)
		}
		byRun[id] = i
	}
	return nil
}

func label(labels []string, i int) string {
	if i < len(labels) {
		return labels[i]
	}
	return fmt.Sprintf("result %d", i+1)
}

// RunIdentity is the digest of the decoded run re-encoded: a copy of a
// file re-indented, with fields reordered or unknown fields added decodes
// to the same run and so to the same digest.
func RunIdentity(r *benchresult.Result) string {
	b, err := json.Marshal(r)
	if err != nil {
		return "" // not reached: a decoded result re-encodes
	}
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%s started %s, sha256 of the decoded run %x", r.Profile, r.Started.UTC().Format(time.RFC3339Nano), sum[:8])
}
