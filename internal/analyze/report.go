package analyze

import (
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

// newReport assembles a report from an analysis input and its findings.
func newReport(in *check.Input, findings []check.Finding) *Report {
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
