package apply

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/fix"
	"github.com/slowpath/slowpath/internal/stdfile"
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

// ErrOutsideRoot marks a path that would leave the host root
// (--path.rootfs): through .., or through a symlink that points out.
var ErrOutsideRoot = errors.New("would leave --path.rootfs: refused")

// rootRel is the path of p relative to the host root. p must be absolute
// and clean, with no .. component: fix writes only where it means to.
func rootRel(p string) (string, error) {
	rel := strings.TrimPrefix(p, "/")
	if !strings.HasPrefix(p, "/") || rel == "" || !filepath.IsLocal(rel) || filepath.Clean(rel) != rel {
		return "", fmt.Errorf("%q: %w", p, ErrOutsideRoot)
	}
	return rel, nil
}

// openRoot opens the host root as an os.Root: every file fix writes or
// restores is opened through it, so neither .. nor a symlink under the
// root (an /etc/udev/rules.d -> /elsewhere) leads outside it.
func (a *Applier) openRoot() (*os.Root, error) {
	r, err := os.OpenRoot(a.Host.FS.Root)
	if err != nil {
		return nil, fmt.Errorf("open --path.rootfs %s: %w", a.Host.FS.Root, err)
	}
	return r, nil
}

// inRoot wraps an error of an os.Root operation on rel, naming the full
// path and saying when the cause is a symlink that leads out of the root.
// os does not export its "path escapes from parent" error (os/root.go
// errPathEscapes), so this is the one place that reads the message.
func (a *Applier) inRoot(op, rel string, err error) error {
	full := a.rootPath("/" + rel)
	if err != nil && strings.Contains(err.Error(), "path escapes from parent") {
		return fmt.Errorf("%s %s: %w (a symlink on the way is absolute or points outside %s)", op, full, ErrOutsideRoot, a.Host.FS.Root)
	}
	return fmt.Errorf("%s %s: %w", op, full, err)
}

// writeAtomic writes content to rel whole or not at all (stdfile.WriteFileIn). The
// file keeps the permissions of the one it replaces (an /etc/crypttab of
// mode 0600 stays 0600).
func writeAtomic(r *os.Root, rel, content string) error {
	mode := os.FileMode(0o644)
	if fi, err := r.Stat(rel); err == nil {
		mode = fi.Mode().Perm()
	}
	return stdfile.WriteFileIn(r, rel, mode, func(w io.Writer) error {
		_, err := io.WriteString(w, content)
		return err
	})
}

// Persist writes the persistent files of e under the host root and
// records them, so Rollback removes or restores them.
//
// Every path stays inside the host root: a plan path that is not absolute
// and clean, or one whose way leads out through a symlink, is refused
// with ErrOutsideRoot and the path.
func (a *Applier) Persist(e fix.Entry) ([]Persisted, error) {
	var out []Persisted
	r, err := a.openRoot()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	for _, f := range e.Files {
		rel, err := rootRel(f.Path)
		if err != nil {
			return out, err
		}
		old, err := r.ReadFile(rel)
		existed := err == nil
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return out, a.inRoot("read", rel, err)
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
		if err := r.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return out, a.inRoot("mkdir", filepath.Dir(rel), err)
		}
		if err := writeAtomic(r, rel, content); err != nil {
			return out, a.inRoot("write", rel, err)
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
// The paths come from the state file and go through the same root as
// Persist's.
func (a *Applier) unpersist(force bool) error {
	if len(a.state.Files) == 0 {
		return nil
	}
	r, err := a.openRoot()
	if err != nil {
		return err
	}
	defer r.Close()
	var errs []error
	for i := len(a.state.Files) - 1; i >= 0; i-- {
		fc := a.state.Files[i]
		rel, err := rootRel(fc.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		cur, err := r.ReadFile(rel)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, a.inRoot("read", rel, err))
			continue
		}
		if err == nil && string(cur) != fc.Written && !force {
			errs = append(errs, fmt.Errorf("%s: %w (--force restores it anyway)", fc.Path, ErrChangedSince))
			continue
		}
		if fc.Existed {
			err = writeAtomic(r, rel, fc.Previous)
		} else {
			err = r.Remove(rel)
			if errors.Is(err, os.ErrNotExist) {
				err = nil
			}
		}
		if err != nil {
			errs = append(errs, a.inRoot("restore", rel, err))
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
