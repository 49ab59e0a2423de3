package fix

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"golang.org/x/tools/txtar"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/quote"
)

// Formats are the plan renderings.
var Formats = []string{"shell", "files", "kubernetes", "tuned", "json"}

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
		return writeOut(w)(Files(p))
	case "kubernetes":
		return writeOut(w)(Kubernetes(p, k))
	case "tuned":
		return writeOut(w)(Tuned(p))
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(p)
	}
	return fmt.Errorf("unknown --format %q: use %s", format, strings.Join(Formats, ", "))
}

// writeOut writes a renderer's bytes, or returns its error.
func writeOut(w io.Writer) func([]byte, error) error {
	return func(b []byte, err error) error {
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
}

// comment prefixes every line of s with "# ". Each line is made safe
// with quote.Comment, so no character of s can end the comment early: a
// newline in s only starts another comment line.
func comment(b *strings.Builder, s string) {
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(strings.TrimRight("# "+quote.Comment(l), " ") + "\n")
	}
}

// indent puts two spaces before each line of s, so a remedy's lines stand
// apart from the text around them.
func indent(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = "  " + l
	}
	return strings.Join(lines, "\n")
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
	title := "slowpath fix plan"
	if p.Kernel != "" {
		title += " for kernel " + quote.Comment(p.Kernel)
	}
	comment(&b, title+".")
	b.WriteString("# Review before running; `slowpath fix --apply` makes the runtime changes\n# with verification and rollback instead.\nset -eu\n")
	if len(p.Entries) == 0 {
		b.WriteString("# Nothing to fix: no finding has a host-level fix.\n")
	} else {
		b.WriteString("# In order: worst first; then changes that clear their finding; then the\n# largest expected gain, as measured on this host (docs/fix.md).\n")
	}
	for _, e := range p.Entries {
		b.WriteString("\n")
		comment(&b, fmt.Sprintf("== %s on %s (%s)", quote.Comment(e.ID), quote.Comment(e.Subject), quote.Comment(fmt.Sprint(e.Severity))))
		if e.Gain != nil {
			comment(&b, GainLine(e.Gain))
		}
		if e.NotApplicable != "" {
			comment(&b, "Not applicable here: "+e.NotApplicable)
		}
		if e.ByHand != "" {
			comment(&b, "By hand (slowpath makes no change for it here); the remedy, as doctor prints it:")
			comment(&b, indent(e.ByHand))
		}
		if len(e.Steps) > 0 {
			b.WriteString("# runtime\n")
		}
		for _, s := range e.Steps {
			if _, ok := s.Change.(Crypt); ok {
				comment(&b, cryptPipeNote)
			}
			b.WriteString(StepCommand(s) + "\n")
		}
		for _, f := range e.Files {
			comment(&b, "persistent: "+quote.Comment(f.Why))
			switch f.Kind {
			case "crypttab":
				comment(&b, fmt.Sprintf("add %s to the options (fourth field) of %s in %s", quote.Comment(strings.Join(f.Options, ",")), quote.Comment(f.Name), quote.Comment(f.Path)))
				b.WriteString(crypttabEdit(f) + "\n")
			default:
				d := heredoc(f.Content)
				fmt.Fprintf(&b, "mkdir -p %s\ncat > %s <<'%s'\n%s%s\n", quote.Shell(dir(f.Path)), quote.Shell(f.Path), d, f.Content, d)
			}
		}
		for _, m := range e.Manual {
			comment(&b, "persistent, run by hand ("+asksOf(e)+"):\n  "+m)
		}
		if e.Butane != "" {
			comment(&b, "nodes provisioned from now on: add to the Butane config\n"+indent(e.Butane))
		}
		for _, c := range e.Cloud {
			comment(&b, fmt.Sprintf("cloud (%s), not run by slowpath: %s", c.Provider, c.What))
			for _, cmd := range c.Commands {
				comment(&b, "  "+cmd)
			}
		}
		if e.Proof != nil {
			comment(&b, proofLine(e.Proof))
		}
	}
	return b.String()
}

// crypttabEdit adds f's options to the fourth field of f.Name's line. The
// name and options reach awk through the environment (ENVIRON, POSIX awk)
// rather than -v, which would interpret backslash escapes in them; cat >
// rather than mv keeps the file's owner and mode.
// cryptPipeNote says, above dmsetup's reload, why a pipe that carries the
// key is safe and what awk does to the table, for whoever reviews the plan.
const cryptPipeNote = "The live table, key included, goes from dmsetup through awk to dmsetup\n" +
	"by pipes only: nothing is written to disk or shown. awk adds the new flags'\n" +
	"number to the count of optional parameters (field 9, 0 when absent) and\n" +
	"appends the flags; every other field passes unchanged."

func crypttabEdit(f File) string {
	t := quote.Shell(f.Path)
	tn := quote.Shell(f.Path + ".new")
	return fmt.Sprintf("n=%s o=%s awk '$1==ENVIRON[\"n\"] && $0 !~ /^[ \\t]*#/ {if (NF<4) {$3=($3==\"\"?\"none\":$3); $4=ENVIRON[\"o\"]} else $4=$4\",\"ENVIRON[\"o\"]} {print}' %s > %s && cat %s > %s && rm %s",
		quote.Shell(f.Name), quote.Shell(strings.Join(f.Options, ",")), t, tn, tn, t, tn)
}

func dir(p string) string {
	if i := strings.LastIndex(p, "/"); i > 0 {
		return p[:i]
	}
	return "/"
}

// Files renders the persistent artifacts as a txtar archive: one section
// per file, named by its absolute path. The comment lists what is not a
// whole file (runtime changes, crypttab options, manual and cloud
// commands, entries that do not apply).
//
// txtar has no escaping: a file name is the rest of its "-- NAME --" line
// and a data line of that shape starts a new file. So every comment line is
// made one line with quote.Comment, and a name or a content line that
// txtar would read differently is refused.
func Files(p *Plan) ([]byte, error) {
	var a txtar.Archive
	var c strings.Builder
	c.WriteString("slowpath fix: persistent files (txtar: one section per file).\n")
	line := func(format string, args ...any) {
		c.WriteString(quote.Comment(fmt.Sprintf(format, args...)) + "\n")
	}
	for _, e := range p.Entries {
		if e.Gain != nil {
			line("%s on %s: %s", e.ID, e.Subject, GainLine(e.Gain))
		}
		if e.NotApplicable != "" {
			line("%s on %s: not applicable here: %s", e.ID, e.Subject, e.NotApplicable)
		}
		if e.ByHand != "" {
			line("%s on %s: by hand, no file (the remedy as doctor prints it):", e.ID, e.Subject)
			for _, l := range strings.Split(indent(e.ByHand), "\n") {
				line("%s", l)
			}
		}
		for _, s := range e.Steps {
			if len(e.Files) > 0 {
				break // the entry's files are its persistent form
			}
			line("%s on %s: runtime %s change, not a file (use --format shell or fix --apply): %s", e.ID, e.Subject, s.Change.Kind(), StepCommand(s))
		}
		for _, f := range e.Files {
			if f.Kind == "crypttab" {
				line("%s on %s: add %s to the options of %s in %s", e.ID, e.Subject, strings.Join(f.Options, ","), f.Name, f.Path)
				continue
			}
			if err := txtarSafe(f); err != nil {
				return nil, err
			}
			a.Files = append(a.Files, txtar.File{Name: f.Path, Data: []byte(f.Content)})
		}
		for _, m := range e.Manual {
			line("%s on %s: run by hand (%s): %s", e.ID, e.Subject, asksOf(e), m)
		}
		if e.Butane != "" {
			line("%s on %s: nodes provisioned from now on: add to the Butane config:", e.ID, e.Subject)
			for _, l := range strings.Split(indent(e.Butane), "\n") {
				line("%s", l)
			}
		}
		for _, cl := range e.Cloud {
			line("%s on %s: cloud (%s), not run: %s", e.ID, e.Subject, cl.Provider, strings.Join(cl.Commands, "; "))
		}
		if e.Proof != nil && e.Proof.Result == ProofRemains {
			line("%s on %s: %s", e.ID, e.Subject, proofLine(e.Proof))
		}
	}
	a.Comment = []byte(c.String())
	return txtar.Format(&a), nil
}

// txtarSafe refuses a file txtar cannot hold as it is: a name that is not
// one clean line, or a content line that reads as a file marker.
func txtarSafe(f File) error {
	if f.Path == "" || quote.Comment(f.Path) != f.Path || strings.TrimSpace(f.Path) != f.Path || strings.Contains(f.Path, " --") {
		return fmt.Errorf("file name %q cannot be a txtar section name: use --format shell", f.Path)
	}
	for _, l := range strings.Split(f.Content, "\n") {
		if strings.HasPrefix(l, "-- ") && strings.HasSuffix(l, " --") {
			return fmt.Errorf("%s: line %q would start a new txtar section: use --format shell", f.Path, l)
		}
	}
	return nil
}

// asksOf says what an entry's manual commands ask for: from the volume's
// LUKS header when it was read (Entry.Asks), else what any of them may.
func asksOf(e Entry) string {
	if e.Asks != "" {
		return e.Asks
	}
	return check.AsksAnything
}
