package clienv

import (
	"fmt"
	"slices"
	"strings"
	"unicode"

	"github.com/spf13/pflag"
)

// Formats is a command's --format: the formats it takes and its default.
// Every command registers and checks the flag here, so its help names
// what it takes and an unknown format is refused in the same words
// everywhere.
type Formats struct {
	// Names are the formats, in the order the usage line names them.
	Names []string
	// Default is the flag's default, one of Names.
	Default string
	// Notes say more about a format in the usage line, in parentheses
	// after its name.
	Notes map[string]string
	// Also are taken but not named: an alias (md for markdown), or ""
	// where options built in code leave the format to the default.
	Also []string
	// Usage replaces the usage line built from Names and Notes where the
	// list alone does not say it; it must still name every format.
	Usage string
}

// AddFlag registers --format on fs, into p. A Usage that does not name a
// format, or a Default not among Names, is a bug in the command: it
// panics, so that building the command tree in any test finds it.
func (f *Formats) AddFlag(fs *pflag.FlagSet, p *string) {
	if !slices.Contains(f.Names, f.Default) {
		panic(fmt.Sprintf("--format default %q is not among %q", f.Default, f.Names))
	}
	usage := f.Usage
	if usage == "" {
		named := make([]string, len(f.Names))
		for i, n := range f.Names {
			named[i] = n
			if note := f.Notes[n]; note != "" {
				named[i] += " (" + note + ")"
			}
		}
		usage = "output format: " + orList(named)
	}
	words := strings.FieldsFunc(usage, func(r rune) bool { return !unicode.IsLetter(r) })
	for _, n := range f.Names {
		if !slices.Contains(words, n) {
			panic(fmt.Sprintf("--format usage %q does not name %q", usage, n))
		}
	}
	fs.StringVar(p, "format", f.Default, usage)
	// What docs/cli.md's table of formats is generated from.
	_ = fs.SetAnnotation("format", FormatsAnnotation, f.Names)
}

// FormatsAnnotation is the --format flag's annotation naming the formats
// the command takes, in Names' order.
const FormatsAnnotation = "slowpath_formats"

// Check refuses a format the command does not take, naming those it does.
func (f *Formats) Check(format string) error {
	if slices.Contains(f.Names, format) || slices.Contains(f.Also, format) {
		return nil
	}
	return fmt.Errorf("unknown --format %q: use %s", format, orList(f.Names))
}

// orList is "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
