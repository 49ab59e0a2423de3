package benchresult

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// A result file may come from another machine (compare reads files passed
// around by people): every string in it reaches a text, Markdown or HTML
// report, a README or a file name. Validate refuses at decode what no
// slowpath writes: names outside their alphabet, and text with control
// characters or invalid UTF-8. Renderers still escape what they embed;
// these rules keep a hostile file from reaching them at all.

// ErrInvalidString is wrapped by the error for a string that breaks its
// rule; the message names the field.
var ErrInvalidString = errors.New("invalid string in bench result")

// MaxLabel is the longest name (profile, phase, stream, figure, setting).
const MaxLabel = 128

// maxText bounds one free-text string; the verbatim job files and an
// error (which may hold fio's output) may be longer.
const (
	maxText     = 4096
	maxLongText = 1 << 20
)

// ValidLabel checks a name: 1 to MaxLabel of letters, digits and
// . _ - : + ! @, starting with a letter or digit. It holds every name
// slowpath writes: figure names ("await.dm-0"), fio job names, kernel
// device names (cciss!c0d0), settings keys.
func ValidLabel(s string) error {
	if s == "" || len(s) > MaxLabel {
		return fmt.Errorf("%q: want 1-%d characters", s, MaxLabel)
	}
	for i, r := range s {
		ok := r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || i > 0 && strings.ContainsRune("._-:+!@", r))
		if !ok {
			return fmt.Errorf("%q: use letters, digits and . _ - : + ! @, starting with a letter or digit", s)
		}
	}
	return nil
}

// The profile names a result may carry, registered by each profile
// (internal/workload/profile registers every profile it plans): a name,
// or a family whose names are PREFIX:NAME, NAME a label.
var (
	profileNames    = map[string]bool{}
	profileFamilies = map[string]string{} // prefix -> what NAME is named after
)

// RegisterProfileName lets results of profile name load.
func RegisterProfileName(name string) { profileNames[name] = true }

// RegisterProfileFamily lets results of profiles family:NAME load, NAME a
// label; arg is what NAME is taken from ("the job file"), for the error
// that asks to rename it, or "" when the name is slowpath's own.
func RegisterProfileFamily(family, arg string) { profileFamilies[family+":"] = arg }

// ValidProfile checks a profile name: a registered one, or PREFIX:NAME of
// a registered family, NAME a label (fio:NAME: the job file's base name;
// replay:NAME, replay-afap:NAME and replay-span:NAME: the capture
// directory's).
func ValidProfile(p string) error {
	if profileNames[p] {
		return nil
	}
	if i := strings.IndexByte(p, ':'); i >= 0 {
		prefix, name := p[:i+1], p[i+1:]
		if arg, ok := profileFamilies[prefix]; ok {
			err := ValidLabel(name)
			switch {
			case err == nil:
				return nil
			case arg != "":
				return fmt.Errorf("profile %sNAME, NAME %w (rename %s)", prefix, err, arg)
			}
		}
	}
	return fmt.Errorf("unknown profile %q", p)
}

// validText checks free text by slowpath's one text rule (package
// safetext, the snapshot's too): valid UTF-8 without control characters
// or line separators (line breaks and tabs too, unless multiline), at most
// maxText bytes, or maxLongText where multiline.
func validText(s string, multiline bool) error {
	max := maxText
	if multiline {
		max = maxLongText
	}
	return safetext.Check(s, max, multiline)
}

var knownUnits = map[string]bool{UnitIOPS: true, UnitBytesPerSec: true, UnitOpsPerSec: true, UnitNanoseconds: true, UnitBytes: true,
	UnitCount: true, UnitPercent: true, UnitCPUs: true, UnitRequests: true, UnitSeconds: true, UnitFraction: true, UnitMilliseconds: true}

// validateStrings applies the rules: names by ValidLabel, units and
// directions by their lists, every other string of the whole result
// (environment facts included, however deep) by validText.
func (r *Result) validateStrings() error {
	bad := func(field, s string, err error) error {
		return fmt.Errorf("%w: %s %q: %v", ErrInvalidString, field, s, err)
	}
	if err := ValidProfile(r.Profile); err != nil {
		return bad("profile", r.Profile, err)
	}
	// The environment carries a snapshot's host and cloud sections, from
	// another machine: they obey the snapshot's rules (docs/snapshot.md,
	// section Validation).
	if err := snapshot.ValidateHost("environment.host", r.Environment.Host); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidString, err)
	}
	if err := snapshot.ValidateCloud("environment.cloud", r.Environment.Cloud); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidString, err)
	}
	for k := range r.Parameters.Settings {
		if err := ValidLabel(k); err != nil {
			return bad("parameters.settings key", k, err)
		}
	}
	for i, f := range r.Figures {
		if err := ValidLabel(f.Name); err != nil {
			return bad(fmt.Sprintf("figures[%d].name", i), f.Name, err)
		}
		if f.Phase != "" {
			if err := ValidLabel(f.Phase); err != nil {
				return bad(fmt.Sprintf("figures[%d].phase", i), f.Phase, err)
			}
		}
		if !knownUnits[f.Unit] {
			return bad(fmt.Sprintf("figures[%d].unit", i), f.Unit, errors.New("not a unit this slowpath knows"))
		}
		if f.Better != HigherIsBetter && f.Better != LowerIsBetter && f.Better != NoBetter {
			return bad(fmt.Sprintf("figures[%d].better", i), f.Better, errors.New("want higher, lower or empty"))
		}
	}
	if e := r.Engine; e != nil {
		// Names that become report cells and facts: labels; values are
		// text, checked below with the rest.
		if err := ValidLabel(e.Engine); err != nil {
			return bad("engine.engine", e.Engine, err)
		}
		for i, x := range e.Encryption {
			if err := ValidLabel(x.Setting); err != nil {
				return bad(fmt.Sprintf("engine.encryption[%d].setting", i), x.Setting, err)
			}
			for _, c := range x.Covers {
				if err := ValidLabel(c); err != nil {
					return bad(fmt.Sprintf("engine.encryption[%d].covers", i), c, err)
				}
			}
		}
	}
	for i, p := range r.Phases {
		if err := ValidLabel(p.Name); err != nil {
			return bad(fmt.Sprintf("phases[%d].name", i), p.Name, err)
		}
		for j, s := range p.Streams {
			if err := ValidLabel(s.Name); err != nil {
				return bad(fmt.Sprintf("phases[%d].streams[%d].name", i, j), s.Name, err)
			}
			if err := ValidLabel(s.Op); err != nil {
				return bad(fmt.Sprintf("phases[%d].streams[%d].op", i, j), s.Op, err)
			}
		}
	}
	return walkStrings(reflect.ValueOf(r).Elem(), "", false, func(path, s string, multiline bool) error {
		if err := validText(s, multiline); err != nil {
			return bad(path, s, err)
		}
		return nil
	})
}

// walkStrings calls f on every string under v (struct fields by their
// JSON names, map keys and values, slice elements). The verbatim job files
// and the run's error may span lines.
func walkStrings(v reflect.Value, path string, multiline bool, f func(path, s string, multiline bool) error) error {
	switch v.Kind() {
	case reflect.String:
		return f(path, v.String(), multiline)
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		return walkStrings(v.Elem(), path, multiline, f)
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			sf := t.Field(i)
			if !sf.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
			if name == "" {
				name = sf.Name
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			ml := name == "job_file" || (path == "" && name == "error")
			if err := walkStrings(v.Field(i), p, ml, f); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return nil // []byte: not text
		}
		for i := range v.Len() {
			if err := walkStrings(v.Index(i), fmt.Sprintf("%s[%d]", path, i), multiline, f); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for it.Next() {
			k := it.Key()
			if k.Kind() == reflect.String {
				if err := f(path+" key", k.String(), false); err != nil {
					return err
				}
			}
			if err := walkStrings(it.Value(), fmt.Sprintf("%s[%v]", path, k), multiline, f); err != nil {
				return err
			}
		}
	}
	return nil
}
