// Package report renders analysis results (analyze.Report) as text, JSON
// or Markdown. The JSON form is a stable interface documented in
// docs/json.md.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// notCollected is the text of one manifest error. Errors from files name
// their path already; those from ioctls, netlink or HTTP often do not, and
// without it "no such device" leaves the reader guessing which one.
func notCollected(e snapshot.CollectError) string {
	msg := e.Message
	if e.Path != "" && !strings.Contains(msg, e.Path) {
		msg = e.Path + ": " + msg
	}
	return msg
}

// Options control rendering.
type Options struct {
	Color bool // ANSI colour; only on a TTY and never with NO_COLOR
	// FailOn is doctor's --fail-on, for the exit status the text's summary
	// puts in words; 0 is the command's default, warning.
	FailOn check.Severity
	// From is the snapshot doctor read (--from), so the next command the
	// summary gives works on it; empty for the live host.
	From string
}

// Write renders r in the named format: text, json or markdown.
func Write(w io.Writer, r *analyze.Report, format string, o Options) error {
	switch format {
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	case "text", "":
		return writeText(w, r, o)
	case "markdown", "md":
		return writeMarkdown(w, r)
	default:
		return fmt.Errorf("unknown format %q: use text, json or markdown", format)
	}
}
