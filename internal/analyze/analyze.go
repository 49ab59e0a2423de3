// Package analyze turns a snapshot into models and findings. It is pure and
// is what doctor runs on both a live collection and a saved snapshot, which
// is why the two give the same report.
package analyze

import (
	"github.com/slowpath/slowpath/internal/check"
	// The check packages register their checks in init.
	_ "github.com/slowpath/slowpath/internal/check/netcheck"
	_ "github.com/slowpath/slowpath/internal/check/storagecheck"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Run builds the models from s, runs every check and assembles the report.
// A model that cannot be built is an error naming the section.
func Run(s *snapshot.Snapshot, cfg check.Config) (*Report, error) {
	in, findings, err := check.Evaluate(s, cfg)
	if err != nil {
		return nil, err
	}
	return newReport(in, findings), nil
}

// RunStorage is Run with the storage model built already from s's
// topology (check.EvaluateStorage): the agent's, once per topology read.
func RunStorage(s *snapshot.Snapshot, sm *storagemodel.Model, cfg check.Config) (*Report, error) {
	in, findings, err := check.EvaluateStorage(s, sm, cfg)
	if err != nil {
		return nil, err
	}
	return newReport(in, findings), nil
}
