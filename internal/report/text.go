package report

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
)

const width = 80

type textWriter struct {
	w     *bufio.Writer
	color bool
}

func (t *textWriter) printf(format string, a ...any) { fmt.Fprintf(t.w, format, a...) }

func (t *textWriter) paint(code, s string) string {
	if !t.color {
		return s
	}
	return "\x1b[" + code + "m" + s + "\x1b[0m"
}

func (t *textWriter) heading(s string) {
	t.printf("\n%s\n%s\n", t.paint("1", s), strings.Repeat("=", len(s)))
}

// wrap prints s wrapped to the report width with the given indent.
func (t *textWriter) wrap(indent, s string) { t.wrapHanging(indent, indent, s) }

// wrapHanging prints s wrapped to the report width: the first line after
// first, continuation lines after rest.
func (t *textWriter) wrapHanging(first, rest, s string) {
	line, prefix := first, first
	for _, word := range strings.Fields(s) {
		if len(line) > len(prefix) && visibleLen(line)+1+visibleLen(word) > width {
			t.printf("%s\n", line)
			line, prefix = rest, rest
		}
		if len(line) > len(prefix) {
			line += " "
		}
		line += word
	}
	if len(line) > len(prefix) {
		t.printf("%s\n", line)
	}
}

func writeText(w io.Writer, r *analyze.Report, o Options) error {
	t := &textWriter{w: bufio.NewWriter(w), color: o.Color}
	t.printf("slowpath doctor")
	if r.Kernel != "" {
		t.printf(" — kernel %s", r.Kernel)
	}
	if r.Cloud != "" {
		t.printf(" — %s", r.Cloud)
	}
	t.printf("\n")
	writeStorageText(t, r)
	writeNetworkText(t, r)
	writeFindingsText(t, r.Findings)
	if len(r.NotCollected) > 0 {
		t.heading("Not collected")
		for _, e := range r.NotCollected {
			t.wrap("  ", fmt.Sprintf("%s: %s (%s)", e.Collector, notCollected(e), e.Kind))
		}
	}
	writeSummaryText(t, r, o)
	return t.w.Flush()
}

// GlossaryURL is where every term the reports print is explained.
const GlossaryURL = "https://github.com/slowpath/slowpath/blob/main/docs/glossary.md"

// writeSummaryText ends the report with what to do: the findings counted
// by severity, the next command and the exit status in words.
func writeSummaryText(t *textWriter, r *analyze.Report, o Options) {
	t.heading("Summary")
	t.printf("\n")
	failOn := o.FailOn
	if failOn == 0 {
		failOn = check.Warning
	}
	counts := map[check.Severity]int{}
	unknown, fixable := 0, 0
	for _, f := range r.Findings {
		switch f.Status {
		case check.Fail:
			counts[f.Severity]++
			if f.Remediation != "" {
				fixable++
			}
		case check.Unknown:
			unknown++
		}
	}
	var parts []string
	for _, s := range []check.Severity{check.Critical, check.Warning, check.Info} {
		parts = append(parts, fmt.Sprintf("%d %s", counts[s], s))
	}
	line := "Findings: " + strings.Join(parts, ", ")
	if unknown > 0 {
		line += fmt.Sprintf("; %d could not be decided (unknown)", unknown)
	}
	t.wrap("  ", line+".")
	from := ""
	if o.From != "" {
		from = " --from " + o.From
	}
	switch {
	case fixable > 0:
		t.wrap("  ", fmt.Sprintf("Next: slowpath fix%s prints the plan for the %d finding(s) with a fix; on the host itself slowpath fix --apply makes its runtime changes with verification and rollback (docs/fix.md).", from, fixable))
	case len(r.Findings) > 0:
		t.wrap("  ", "Next: measure what the path costs: slowpath bench PROFILE --dir DIR on it (slowpath bench lists the profiles; docs/bench.md).")
	default:
		t.wrap("  ", "Next: nothing to do.")
	}
	worst := check.Worst(r.Findings)
	threshold := "--fail-on " + failOn.String()
	if failOn > check.Critical {
		threshold = "--fail-on none"
	}
	if worst != 0 && worst >= failOn {
		t.wrap("  ", fmt.Sprintf("Exit status 1: a %s finding is at or above %s (0: none is; 2: an error).", worst, threshold))
	} else {
		t.wrap("  ", fmt.Sprintf("Exit status 0: no finding is at or above %s (1: one is; 2: an error).", threshold))
	}
	t.wrap("  ", "Terms (encryption layers, kernel-cpu, cloud facts, ...): "+GlossaryURL)
}

func (t *textWriter) severity(s check.Severity) string {
	label := strings.ToUpper(s.String())
	switch s {
	case check.Critical:
		return t.paint("31;1", label)
	case check.Warning:
		return t.paint("33;1", label)
	default:
		return t.paint("36", label)
	}
}

func writeFindingsText(t *textWriter, fs []check.Finding) {
	t.heading("Findings")
	if len(fs) == 0 {
		t.printf("  none\n")
		return
	}
	for _, f := range fs {
		status := ""
		if f.Status != check.Fail {
			status = " (" + string(f.Status) + ")"
		}
		t.printf("\n%s %s%s — %s\n", t.severity(f.Severity), f.ID, status, f.Subject)
		t.wrap("  ", f.Summary)
		for _, e := range f.Evidence {
			ev := e.Source
			if e.Key != "" {
				ev += " " + e.Key
			}
			ev += ": " + e.Observed
			if e.Expected != "" {
				ev += " (expected " + e.Expected + ")"
			}
			t.wrapHanging("    - ", "      ", ev)
		}
		if f.Remediation != "" {
			t.printf("  fix:\n")
			for _, line := range strings.Split(f.Remediation, "\n") {
				t.commandLine("    ", line)
			}
		}
		// What "see the kernel commit" in a summary points to.
		for _, ref := range f.References {
			t.printf("  see: %s\n", ref)
		}
	}
}

// prose is a remediation line that is a sentence: a capitalised word
// ("Confirm from the cluster:", "Longhorn formats ...") or a parenthesis.
// udev rule lines (ACTION==...) and commands start otherwise.
var prose = regexp.MustCompile(`^(\(|[A-Z][a-z]+[ ,:;'])`)

// commandLine prints one remediation line. Remediations are mostly commands
// to paste, and JSON keeps them whole, so a line too wide for the report is
// continued with a backslash (the shell and udev rules both join such lines)
// instead of being re-flowed. Breaks fall only on spaces outside quotes,
// where a backslash-newline would change the command.
func (t *textWriter) commandLine(indent, s string) {
	body := strings.TrimLeft(s, " ")
	lead := indent + s[:len(s)-len(body)]
	// A comment or a sentence is words, not a command: re-flowed, never
	// continued with a backslash (one at the end of a shell comment does
	// not join the next line to it).
	switch {
	case strings.HasPrefix(body, "# "):
		t.wrapHanging(lead+"# ", lead+"# ", strings.TrimPrefix(body, "# "))
		return
	case prose.MatchString(body):
		t.wrapHanging(lead, lead+"  ", body)
		return
	}
	prefix := lead
	for visibleLen(prefix)+visibleLen(body) > width {
		cut := -1
		var quote rune
		for i, r := range body {
			switch {
			case quote != 0:
				if r == quote {
					quote = 0
				}
			case r == '\'' || r == '"':
				quote = r
			case r == ' ' && i > 0 && visibleLen(prefix)+visibleLen(body[:i])+len(" \\") <= width:
				cut = i
			}
		}
		if cut < 0 {
			break // one word wider than the report: print it whole
		}
		t.printf("%s%s \\\n", prefix, strings.TrimRight(body[:cut], " "))
		body = strings.TrimLeft(body[cut:], " ")
		prefix = lead + "  "
	}
	t.printf("%s%s\n", prefix, body)
}
