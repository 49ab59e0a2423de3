package fix

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"golang.org/x/tools/txtar"
)

// Formats are the plan renderings.
var Formats = []string{"shell", "files", "kubernetes", "json"}

// Write renders p in format, the Kubernetes objects with default options.
func Write(w io.Writer, p *Plan, format string) error {
	return WriteWith(w, p, format, KubernetesOptions{})
}

// WriteWith renders p in format with k shaping the Kubernetes objects.
func WriteWith(w io.Writer, p *Plan, format string, k KubernetesOptions) error {
	switch format {
	case "shell":
		_, err := io.WriteString(w, Shell(p))
		return err
	case "files":
		_, err := w.Write(Files(p))
		return err
	case "kubernetes":
		b, err := Kubernetes(p, k)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	return fmt.Errorf("unknown --format %q: use %s", format, strings.Join(Formats, ", "))
}

// comment prefixes every line of s with "# ".
func comment(b *strings.Builder, s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+l, " ") + "\n")
	}
}

// heredoc quotes content for a shell here-document: a delimiter that no
// line of content equals.
func heredoc(content string) string {
	d := "EOF"
	for strings.Contains("\n"+content, "\n"+d+"\n") {
		d += "_"
	}
	return d
}

// Shell renders the plan as a POSIX sh script: runtime changes, then the
// persistent files, for each entry. Cloud changes and commands that need a
// passphrase are comments: the script never runs them.
func Shell(p *Plan) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("# slowpath fix plan")
	if p.Kernel != "" {
		b.WriteString(" for kernel " + p.Kernel)
	}
	b.WriteString(".\n# Review before running; `slowpath fix --apply` makes the runtime changes\n# with verification and rollback instead.\nset -eu\n")
	if len(p.Entries) == 0 {
		b.WriteString("# Nothing to fix: no finding has a host-level fix.\n")
	}
	for _, e := range p.Entries {
		fmt.Fprintf(&b, "\n# == %s on %s (%s)\n", e.ID, e.Subject, e.Severity)
		if e.NotApplicable != "" {
			comment(&b, "Not applicable here: "+e.NotApplicable)
		}
		if len(e.Steps) > 0 {
			b.WriteString("# runtime\n")
		}
		for _, s := range e.Steps {
			b.WriteString(s.Command + "\n")
		}
		for _, f := range e.Files {
			fmt.Fprintf(&b, "# persistent: %s\n", f.Why)
			switch f.Kind {
			case "crypttab":
				// cat > rather than mv keeps the file's owner and mode.
				fmt.Fprintf(&b, "# add %s to the options (fourth field) of %s in %s\n", strings.Join(f.Options, ","), f.Name, f.Path)
				fmt.Fprintf(&b, "awk -v n=%s -v o=%s '$1==n && $0 !~ /^[ \\t]*#/ {if (NF<4) {$3=($3==\"\"?\"none\":$3); $4=o} else $4=$4\",\"o} {print}' %s > %s.new && cat %s.new > %s && rm %s.new\n",
					f.Name, strings.Join(f.Options, ","), f.Path, f.Path, f.Path, f.Path, f.Path)
			default:
				d := heredoc(f.Content)
				fmt.Fprintf(&b, "mkdir -p %s\ncat > %s <<'%s'\n%s%s\n", dir(f.Path), f.Path, d, f.Content, d)
			}
		}
		for _, m := range e.Manual {
			comment(&b, "persistent, run by hand (asks for the passphrase, key file or token):\n  "+m)
		}
		for _, c := range e.Cloud {
			comment(&b, fmt.Sprintf("cloud (%s), not run by slowpath: %s", c.Provider, c.What))
			for _, cmd := range c.Commands {
				comment(&b, "  "+cmd)
			}
		}
	}
	return b.String()
}

func dir(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return "/"
}

// Files renders the persistent artifacts as a txtar archive: one section
// per file, named by its absolute path. The comment lists what is not a
// whole file (crypttab options, manual and cloud commands, entries that
// do not apply).
func Files(p *Plan) []byte {
	var a txtar.Archive
	var c strings.Builder
	c.WriteString("slowpath fix: persistent files (txtar: one section per file).\n")
	for _, e := range p.Entries {
		if e.NotApplicable != "" {
			fmt.Fprintf(&c, "%s on %s: not applicable here: %s\n", e.ID, e.Subject, e.NotApplicable)
		}
		for _, f := range e.Files {
			if f.Kind == "crypttab" {
				fmt.Fprintf(&c, "%s on %s: add %s to the options of %s in %s\n", e.ID, e.Subject, strings.Join(f.Options, ","), f.Name, f.Path)
				continue
			}
			a.Files = append(a.Files, txtar.File{Name: f.Path, Data: []byte(f.Content)})
		}
		for _, m := range e.Manual {
			fmt.Fprintf(&c, "%s on %s: run by hand: %s\n", e.ID, e.Subject, m)
		}
		for _, cl := range e.Cloud {
			fmt.Fprintf(&c, "%s on %s: cloud (%s), not run: %s\n", e.ID, e.Subject, cl.Provider, strings.Join(cl.Commands, "; "))
		}
	}
	a.Comment = []byte(c.String())
	return txtar.Format(&a)
}
