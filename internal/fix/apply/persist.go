package apply

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/fix"
)

// Persisted is one file Persist looked at.
type Persisted struct {
	Path    string
	ID      string
	Changed bool   // false when the file already had the content
	Skipped string // why nothing was written, when nothing was
}

func (a *Applier) rootPath(p string) string {
	return filepath.Join(a.Host.FS.Root, filepath.FromSlash(p))
}

// Persist writes the persistent files of e under the host root and
// records them, so Rollback removes or restores them.
func (a *Applier) Persist(e fix.Entry) ([]Persisted, error) {
	var out []Persisted
	for _, f := range e.Files {
		full := a.rootPath(f.Path)
		old, err := os.ReadFile(full)
		existed := err == nil
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, fmt.Errorf("read %s: %w", full, err)
		}
		content := f.Content
		if f.Kind == "crypttab" {
			if !existed {
				out = append(out, Persisted{Path: f.Path, ID: e.ID, Skipped: fmt.Sprintf("%s does not exist: add %s with options %s yourself", f.Path, f.Name, strings.Join(f.Options, ","))})
				continue
			}
			c, ok := crypttabWithOptions(string(old), f.Name, f.Options)
			if !ok {
				out = append(out, Persisted{Path: f.Path, ID: e.ID, Skipped: fmt.Sprintf("%s has no line for %s: add it with options %s yourself", f.Path, f.Name, strings.Join(f.Options, ","))})
				continue
			}
			content = c
		}
		if existed && string(old) == content {
			out = append(out, Persisted{Path: f.Path, ID: e.ID})
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return out, err
		}
		tmp := full + ".slowpath-tmp"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
			return out, fmt.Errorf("write %s: %w", full, err)
		}
		if err := os.Rename(tmp, full); err != nil {
			return out, err
		}
		i := slices.IndexFunc(a.state.Files, func(c FileChange) bool { return c.Path == f.Path })
		if i >= 0 {
			a.state.Files[i].Written = content
		} else {
			fc := FileChange{Path: f.Path, ID: e.ID, Existed: existed, Written: content}
			if existed {
				fc.Previous = string(old)
			}
			a.state.Files = append(a.state.Files, fc)
		}
		if err := a.save(); err != nil {
			return out, err
		}
		out = append(out, Persisted{Path: f.Path, ID: e.ID, Changed: true})
	}
	return out, nil
}

// unpersist restores or removes every recorded file, last first. A file
// whose content is no longer what slowpath wrote is left alone unless forced.
func (a *Applier) unpersist(force bool) error {
	var errs []error
	for i := len(a.state.Files) - 1; i >= 0; i-- {
		fc := a.state.Files[i]
		full := a.rootPath(fc.Path)
		cur, err := os.ReadFile(full)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
			continue
		}
		if err == nil && string(cur) != fc.Written && !force {
			errs = append(errs, fmt.Errorf("%s: %w (--force restores it anyway)", fc.Path, ErrChangedSince))
			continue
		}
		if fc.Existed {
			err = os.WriteFile(full, []byte(fc.Previous), 0o644)
		} else {
			err = os.Remove(full)
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		fmt.Fprintf(a.Log, "%s: %s %s\n", fc.ID, map[bool]string{true: "restored", false: "removed"}[fc.Existed], fc.Path)
		a.state.Files = slices.Delete(a.state.Files, i, i+1)
		if err := a.save(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// crypttabWithOptions adds opts to the options (fourth field) of name's
// line in an /etc/crypttab (crypttab(5): name device key options); options
// already there are not repeated. ok is false when no line names it.
func crypttabWithOptions(tab, name string, opts []string) (string, bool) {
	lines := strings.SplitAfter(tab, "\n")
	found := false
	for i, l := range lines {
		body := strings.TrimRight(l, "\n")
		f := strings.Fields(body)
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || f[0] != name {
			continue
		}
		found = true
		for len(f) < 3 {
			f = append(f, "none")
		}
		var have []string
		if len(f) >= 4 {
			have = strings.Split(f[3], ",")
		}
		for _, o := range opts {
			if !slices.Contains(have, o) {
				have = append(have, o)
			}
		}
		f = append(f[:3], append([]string{strings.Join(have, ",")}, f[min(4, len(f)):]...)...)
		lines[i] = strings.Join(f, " ") + strings.TrimPrefix(l, body)
	}
	return strings.Join(lines, ""), found
}
