// Package report renders analysis results as text, JSON or Markdown. The JSON
// form is a stable interface documented in docs/json.md.
package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/netmodel"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Report is what doctor prints. Field names are the JSON contract.
type Report struct {
	FormatVersion int    `json:"format_version"`
	Kernel        string `json:"kernel,omitempty"`
	// Cloud is "provider instance-type" when known.
	Cloud    string              `json:"cloud,omitempty"`
	Findings []check.Finding     `json:"findings"`
	Storage  []storagemodel.Path `json:"storage"`
	Network  *netmodel.Model     `json:"network,omitempty"`
	// NotCollected lists what the snapshot lacks, so a partial report says so.
	NotCollected []snapshot.CollectError `json:"not_collected,omitempty"`
}

// JSONVersion is the version of the report's JSON shape.
const JSONVersion = 1

// New assembles a report from an analysis input and its findings.
func New(in *check.Input, findings []check.Finding) *Report {
	r := &Report{FormatVersion: JSONVersion, Findings: findings, Network: in.Network}
	if r.Findings == nil {
		r.Findings = []check.Finding{}
	}
	for i := range r.Findings {
		// The contract promises a list, so consumers can iterate without a null check.
		if r.Findings[i].Evidence == nil {
			r.Findings[i].Evidence = []check.Evidence{}
		}
	}
	if in.Storage != nil {
		r.Storage = in.Storage.Paths
	}
	if r.Storage == nil {
		r.Storage = []storagemodel.Path{}
	}
	if s := in.Snapshot; s != nil {
		if s.Host != nil {
			r.Kernel = s.Host.KernelRelease
		}
		if c := s.Cloud; c != nil {
			r.Cloud = c.Provider
			if c.InstanceType != "" {
				r.Cloud += " " + c.InstanceType
			}
		}
		r.NotCollected = s.Manifest.Errors
	}
	return r
}

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
func Write(w io.Writer, r *Report, format string, o Options) error {
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
