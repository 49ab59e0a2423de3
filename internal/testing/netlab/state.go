package netlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/stdfile"
)

// stateFile records what a lab created and the sysctl values it must put
// back, so that a lab whose process died before Close (SIGKILL, a `go test`
// timeout) is cleaned by the next Setup.
type stateFile struct{ path string }

type labState struct {
	PID        int               `json:"pid"`
	Namespaces []string          `json:"namespaces"`
	Sysctls    map[string]string `json:"sysctls"` // path -> original value
}

func newStateFile(id string) *stateFile {
	return &stateFile{path: filepath.Join(stateDir, "lab-"+id+".json")}
}

func (s *stateFile) save(namespaces []string, sysctls map[string]string) error {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(labState{PID: os.Getpid(), Namespaces: namespaces, Sysctls: sysctls})
	if err != nil {
		return err
	}
	if err := stdfile.WriteFileMode(s.path, 0o600, func(w io.Writer) error { _, err := w.Write(b); return err }); err != nil {
		return fmt.Errorf("netlab state: %w", err)
	}
	return nil
}

func (s *stateFile) remove() error {
	if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netlab state: %w", err)
	}
	return nil
}

// recoverStale undoes labs whose process died before Close. The caller holds
// the lock, so no state file belongs to a live lab. Only names recorded by a
// lab (and carrying the prefix) are deleted.
func recoverStale(ctx context.Context) error {
	files, err := filepath.Glob(filepath.Join(stateDir, "lab-*.json"))
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var st labState
		if err := json.Unmarshal(b, &st); err != nil {
			// Unreadable (torn write): nothing we can trust to undo.
			_ = os.Remove(f)
			continue
		}
		var ferrs []error
		for _, ns := range slices.Backward(st.Namespaces) {
			if !strings.HasPrefix(ns, NamePrefix) {
				continue
			}
			if err := removeNamespace(ctx, ns); err != nil {
				ferrs = append(ferrs, err)
			}
		}
		for p, v := range st.Sysctls {
			if !strings.HasPrefix(p, "/proc/sys/") {
				continue
			}
			if err := writeSysctl(p, v); err != nil {
				ferrs = append(ferrs, err)
			}
		}
		if len(ferrs) == 0 {
			_ = os.Remove(f)
		}
		errs = append(errs, ferrs...)
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up a previous netlab that did not close: %w", err)
	}
	return nil
}
