package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/safetext"
)

// ErrInvalid marks a snapshot that breaks a validation rule: a value no
// kernel would report, or one slowpath refuses to carry into a plan, a file
// or a terminal. Decode and Load return it (wrapped in a *ValidationError)
// before any model, check, plan or report sees the snapshot.
var ErrInvalid = errors.New("invalid snapshot")

// ValidationError names the first value of a snapshot that breaks a rule:
// its JSON path, the value (quoted, shortened), the rule and the rule's
// source (a kernel file and function or constant, or "slowpath" for
// slowpath's own rules). docs/snapshot.md, section Validation, lists them.
type ValidationError struct {
	Path   string // JSON path, e.g. net.interfaces[3].name
	Value  string // the value as shown: Go-quoted and shortened, or a number
	Rule   string // what the value is not, e.g. "not a valid interface name"
	Detail string // which part of the rule it breaks; may be empty
	Source string // where the rule comes from
}

func (e *ValidationError) Error() string {
	var b strings.Builder
	b.WriteString("snapshot: ")
	b.WriteString(e.Path)
	if e.Value != "" {
		b.WriteString(" ")
		b.WriteString(e.Value)
	}
	b.WriteString(": ")
	b.WriteString(e.Rule)
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	b.WriteString(" (")
	b.WriteString(e.Source)
	b.WriteString(")")
	return b.String()
}

// Unwrap lets callers test errors.Is(err, ErrInvalid).
func (e *ValidationError) Unwrap() error { return ErrInvalid }

// maxShown bounds how much of an offending value an error repeats: a
// megabyte-long name must not become a megabyte-long message.
const maxShown = 64

// showString quotes s with %q (so no control character reaches a
// terminal) after cutting it to maxShown bytes on a rune boundary.
func showString(s string) string {
	if len(s) <= maxShown {
		return strconv.Quote(s)
	}
	n := maxShown
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:n]), len(s))
}

func invalidString(p, s, rule, detail, source string) error {
	return &ValidationError{Path: p, Value: showString(s), Rule: rule, Detail: detail, Source: source}
}

func invalidNumber[N int | int64 | uint32 | uint64 | float64](p string, n N, rule, detail, source string) error {
	return &ValidationError{Path: p, Value: fmt.Sprint(n), Rule: rule, Detail: detail, Source: source}
}

// Sources of slowpath's own rules.
const (
	srcSlowpathText = "slowpath: a control character would reach a terminal, a log or a generated file"
	srcSlowpathUTF8 = "slowpath: JSON carries Unicode text; invalid UTF-8 would be rewritten to U+FFFD and name something else"
	srcSlowpathEnum = "slowpath: the values this snapshot format defines"
	srcSlowpath     = "slowpath"
)

// Validate checks every field of s against the rules in docs/snapshot.md
// (section Validation) and returns the first break as a *ValidationError
// wrapping ErrInvalid, or nil. Fields are checked in document order, so
// the error is the same on every run.
func (s *Snapshot) Validate() error {
	if s == nil {
		return &ValidationError{Path: "snapshot", Rule: "is empty", Source: srcSlowpath}
	}
	for _, f := range []func() error{
		func() error { return validateManifest(&s.Manifest) },
		func() error { return ValidateHost("host", s.Host) },
		func() error { return validateStorage(s.Storage) },
		func() error { return ValidateCloud("cloud", s.Cloud) },
		func() error { return validateNet(s.Net) },
		func() error { return validateEngines(s.Engines) },
	} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// checkText applies slowpath's one text rule (package safetext) to every
// string of a snapshot: valid UTF-8, at most maxLen bytes, and no control
// character (Unicode Cc: C0, DEL and C1, which terminals act on) or line
// separator (U+2028, U+2029), except tab and newline where multiline says
// free text may hold them (collection error messages and fixture notes).
// The kernel accepts such bytes in many names; slowpath refuses them
// because every string ends up on a terminal or in a generated file.
func checkText(p, s string, maxLen int, multiline bool) error {
	var e *safetext.Error
	if err := safetext.Check(s, maxLen, multiline); !errors.As(err, &e) {
		return nil
	}
	switch e.Err {
	case safetext.ErrTooLong:
		return invalidString(p, s, "too long", e.Detail(), srcSlowpath)
	case safetext.ErrUTF8:
		return invalidString(p, s, "not valid UTF-8", "", srcSlowpathUTF8)
	default:
		return invalidString(p, s, "holds a control character", e.Detail(), srcSlowpathText)
	}
}

// Bounds of free text, slowpath's own: far above anything a kernel or
// metadata service reports, low enough that a hostile file cannot grow
// reports without limit.
const (
	maxLine    = 1024      // one-line values: models, vendors, IRQ names
	maxMessage = 4096      // an error message or note
	maxFixture = 64 << 10  // a fixture's description of where its facts come from
	maxErrText = 64 << 10  // a collection error: a live one may join several
	maxParams  = 64 << 10  // a dm target's parameter string
	pathMax    = 4096      // PATH_MAX, include/uapi/linux/limits.h (with the NUL)
	maxWord    = 64        // a token of a space-separated list: CPU flag, scheduler
	maxEnumish = 128       // cloud instance types, regions, GCP disk fields
	maxSysctl  = 256       // a dotted sysctl name
	maxCounter = 128       // a counter's name in a sample
	maxNumCPU  = 1 << 16   // slowpath's sanity bound; NR_CPUS tops out at 8192 today
	maxColumns = 64        // softnet_stat/stat columns from a later kernel, sanity bound
	maxUint32  = 1<<32 - 1 // u32 fields of ethtool and NVMe
)

// canonicalUint reports whether s is a decimal as the kernel's %u prints
// it (no sign, no leading zero) and at most max.
func canonicalUint(s string, max uint64) bool {
	if s == "" || len(s) > 1 && s[0] == '0' {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	v, err := strconv.ParseUint(s, 10, 64)
	return err == nil && v <= max
}

func validateManifest(m *Manifest) error {
	if m.FormatVersion != FormatVersion {
		return invalidNumber("manifest.format_version", m.FormatVersion, "unsupported format version", fmt.Sprintf("this slowpath reads version %d", FormatVersion), srcSlowpathEnum)
	}
	if err := checkText("manifest.tool", m.Tool, maxLine, false); err != nil {
		return err
	}
	// sethostname(2) refuses more than __NEW_UTS_LEN 64 bytes (kernel/sys.c);
	// it accepts any byte, slowpath refuses control characters.
	if len(m.Hostname) > 64 {
		return invalidString("manifest.hostname", m.Hostname, "not a host name", fmt.Sprintf("%d bytes, at most 64", len(m.Hostname)), "kernel/sys.c sethostname, __NEW_UTS_LEN 64")
	}
	if err := checkText("manifest.hostname", m.Hostname, 64, false); err != nil {
		return err
	}
	if err := checkText("manifest.fixture", m.Fixture, maxFixture, true); err != nil {
		return err
	}
	if ls := m.LiveSources; ls != nil {
		if err := checkEnum("manifest.live_sources.mode", ls.Mode, "auto", "on", "off"); err != nil {
			return err
		}
		if err := checkText("manifest.live_sources.reason", ls.Reason, maxMessage, true); err != nil {
			return err
		}
	}
	for i, e := range m.Errors {
		p := fmt.Sprintf("manifest.errors[%d]", i)
		if err := checkToken(p+".collector", e.Collector, maxWord, false); err != nil {
			return err
		}
		if err := checkText(p+".path", e.Path, pathMax, false); err != nil {
			return err
		}
		if err := checkEnum(p+".kind", string(e.Kind), string(hostfs.KindMissing), string(hostfs.KindPermission),
			string(hostfs.KindUnsupported), string(hostfs.KindError), string(hostfs.KindSkipped)); err != nil {
			return err
		}
		if err := checkText(p+".message", e.Message, maxErrText, true); err != nil {
			return err
		}
	}
	return nil
}

// checkEnum requires one of the values the format defines.
func checkEnum(p, s string, allowed ...string) error {
	for _, a := range allowed {
		if s == a {
			return nil
		}
	}
	return invalidString(p, s, "not a known value", "want one of "+strings.Join(allowed, ", "), srcSlowpathEnum)
}

func checkOptEnum(p, s string, allowed ...string) error {
	if s == "" {
		return nil
	}
	return checkEnum(p, s, allowed...)
}

// checkToken is a word of a space-separated kernel list (cpuinfo flags,
// queue/scheduler, uname fields): non-empty unless optional, no white
// space, bounded.
func checkToken(p, s string, maxLen int, optional bool) error {
	if s == "" {
		if optional {
			return nil
		}
		return invalidString(p, s, "is empty", "", srcSlowpath)
	}
	if err := checkText(p, s, maxLen, false); err != nil {
		return err
	}
	if i := strings.IndexFunc(s, func(r rune) bool { return r < 0x80 && kernelIsSpace(byte(r)) || r == 0xa0 }); i >= 0 {
		return invalidString(p, s, "holds white space", "the kernel prints it as one word", srcSlowpath)
	}
	return nil
}

func isLowerHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' }

// sortedKeys returns m's keys in order, so the first error is the same on
// every run.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}

// eachNamed validates every element of items (at list[i]) with check and
// refuses a name (name gives it) that two elements have; what is the
// plural the error uses, src where the kernel keeps names unique.
func eachNamed[T any](list string, items []T, name func(*T) string, what, src string, check func(string, *T) error) error {
	seen := map[string]int{}
	for i := range items {
		p := fmt.Sprintf("%s[%d]", list, i)
		if err := check(p, &items[i]); err != nil {
			return err
		}
		n := name(&items[i])
		if j, dup := seen[n]; dup {
			return invalidString(p+".name", n, "names two "+what, fmt.Sprintf("also %s[%d]", list, j), src)
		}
		seen[n] = i
	}
	return nil
}

// eachString checks every string of a list (at list[i]) with check.
func eachString(list string, items []string, check func(p, s string) error) error {
	for i, s := range items {
		if err := check(fmt.Sprintf("%s[%d]", list, i), s); err != nil {
			return err
		}
	}
	return nil
}
