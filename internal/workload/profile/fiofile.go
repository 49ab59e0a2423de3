package profile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/workload/fio"
)

// FioPrefix starts a fio:FILE profile.
const FioPrefix = "fio:"

func init() { Register(fioFile{}) }

type fioFile struct{}

// Spec: a job file has no declared purpose, so the sum of IOPS over its
// read and write groups (at a fixed queue depth the same information as
// mean latency, Little's law, and the steadiest figure a run gives), then
// the p99 of all its I/Os merged.
func (fioFile) Spec() Spec {
	return Spec{Name: FioPrefix, Usage: FioPrefix + "FILE", Arg: "the job file", Needs: Dir, Rank: 40,
		Description: "any fio job file, run as written in the run's directory",
		Metrics:     &totalMetrics}
}

// Plan runs a user's job file as written, in the run's directory. Every
// option that names a file must stay inside it (slowpath removes only its
// own directory), and nothing may run a program, touch a device or the
// network (fio.CheckJobFile, docs/bench.md). Its size cannot be known
// beforehand (SpaceBytes 0: fio's own checks).
func (fioFile) Plan(name string, p Params) (*Plan, error) {
	if len(bytes.TrimSpace(p.JobFile)) == 0 {
		return nil, fmt.Errorf("profile %s: the job file is empty", name)
	}
	dir := loaderDir(p.Dir)
	if _, err := os.Stat(dir); err != nil {
		dir = "" // bench export's placeholder: the lexical checks only
	}
	if _, err := fio.CheckJobFile(p.JobFile, dir); err != nil {
		return nil, fmt.Errorf("profile %s: %w", name, err)
	}
	return &Plan{Profile: name, Settings: map[string]string{"job_file": strings.TrimPrefix(name, FioPrefix)},
		Phases: []PhasePlan{{Name: "fio", JobFile: p.JobFile, Expected: p.Runtime}}}, nil
}

// resolve reads the job file and checks that it can be confined to the
// run's directory, before anything is created or run (docs/bench.md). The
// job file's base name becomes the profile's name in the result, reports
// and bench export's run.sh: a label, checked first.
func (fioFile) resolve(arg string) (Arg, error) {
	path := strings.TrimPrefix(arg, FioPrefix)
	a := Arg{Name: FioPrefix + filepath.Base(path)}
	if err := benchresult.ValidProfile(a.Name); err != nil {
		return Arg{}, err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return Arg{}, fmt.Errorf("profile %s: %w", arg, err)
	}
	if _, err := fio.CheckJobFile(b, ""); err != nil {
		return Arg{}, fmt.Errorf("profile %s: %w", arg, err)
	}
	a.JobFile = b
	return a, nil
}

func (fioFile) Figures(phases []benchresult.Phase, _ *benchresult.LoadTimes) []benchresult.Figure {
	return jobFigures(phases)
}
