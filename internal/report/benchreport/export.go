package benchreport

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/report/table"
	"github.com/slowpath/slowpath/internal/workload/profile"
	"github.com/slowpath/slowpath/internal/workload/replay"
)

// Export is what the README of a profile's reproduction describes.
type Export struct {
	Plan *profile.Plan
	// Jobs are the job files' names, in phase order (profile.ExportFiles).
	Jobs []string
	// Scale and Runtime are the plan's --scale and --runtime, as the
	// command line to write it again gives them.
	Scale   float64
	Runtime time.Duration
	// Result, when set, is this machine's run of the profile, shipped
	// alongside as result.json.
	Result *benchresult.Result
}

// ExportREADME is the README.md of a profile's reproduction: how to run
// it, its job files and settings and, with a result, this machine's
// environment and figures. What the result holds is Markdown-escaped.
func ExportREADME(e Export) []byte {
	plan, jobs, res := e.Plan, e.Jobs, e.Result
	var b strings.Builder
	fmt.Fprintf(&b, "# Reproduction: %s\n\n", plan.Profile)
	fmt.Fprintf(&b, "Written by `slowpath bench export %s --scale %g --runtime %v`. It runs with fio alone:\n\n    ./run.sh /path/on/the/filesystem/to/test\n\n", plan.Profile, e.Scale, e.Runtime)
	b.WriteString("Each job file is run with `fio --output-format=json+`; results land in `results/`.\n\n## Job files\n\n")
	for i, j := range jobs {
		fmt.Fprintf(&b, "- `%s`: phase %s\n", j, plan.Phases[i].Name)
	}
	b.WriteString("\n## Settings\n\n")
	for _, k := range slices.Sorted(maps.Keys(plan.Settings)) {
		fmt.Fprintf(&b, "- %s: %s\n", k, plan.Settings[k])
	}
	if plan.IndexLoads() {
		b.WriteString("\nIndex loads: while the writers write, each finished file (`writers.*` at its full size) is evicted from the page cache and read once, at most 4 per second; run.sh times each with `dd` and lists them in `results/loads.txt` (slowpath maps the file and touches every page instead).\n")
	}
	if res != nil {
		b.WriteString("\n## This machine's result (`result.json`)\n\n")
		// The result may come from another machine: its facts are
		// Markdown-escaped like compare's cells.
		md := table.MarkdownCell
		if h := res.Environment.Host; h != nil {
			fmt.Fprintf(&b, "- kernel %s, %d CPUs, %s\n", md(h.KernelRelease), h.NumCPU, md(h.CPUModel))
		}
		if c := res.Environment.Cloud; c != nil {
			fmt.Fprintf(&b, "- cloud %s %s %s\n", md(c.Provider), md(c.InstanceType), md(c.Region))
		}
		if t := res.Environment.Target; t != nil && t.Storage != nil {
			fmt.Fprintf(&b, "- storage path: %s (%d encryption layers)\n", md(pathLine(t.Storage)), t.Storage.EncryptionLayers)
		}
		b.WriteString("\n")
		t := table.NewMarkdown(&b)
		t.Row("phase", "figure", "value")
		for _, f := range res.Figures {
			if f.Phase != "" {
				t.Row(f.Phase, f.Name, benchresult.FormatValue(f.Value, f.Unit))
			}
		}
		_ = t.Flush() // a strings.Builder does not fail
		if res.WhereTime != nil {
			fmt.Fprintf(&b, "\nWhere the time went: %s\n", md(res.WhereTime.Summary))
		}
	}
	return []byte(b.String())
}

// ReplayREADME is the README.md of a capture's reproduction
// (replay.ExportFiles): how to run it and what its files are.
func ReplayREADME(name string, t *replay.Trace) []byte {
	var r strings.Builder
	fmt.Fprintf(&r, "# Replay: %s\n\nWritten by `slowpath bench export %s`. It runs with fio alone:\n\n    ./run.sh /path/on/the/filesystem/to/test\n\n", name, name)
	fmt.Fprintf(&r, "run.sh recreates the capture's %d files (%d bytes, random data) with the captured page-cache residency, then runs `%s` (each thread's operations back to back) and `%s` (fio's own timed replay, which drifts from the captured schedule on fio 3.33: slowpath's timed replay is its own). Results land in `results/`.\n\n",
		len(t.Files), t.Space(), replay.ExportAFAPJob, replay.ExportTimedJob)
	fmt.Fprintf(&r, "One iolog per thread (`tNNNN.iolog`; `tNNNN-direct.iolog` for its O_DIRECT operations): fio version 3 iologs, timestamps in microseconds. Page-cache misses of mapped files are replayed as reads of the page (fio 3.33 cannot replay an iolog through mmap).\n")
	return []byte(r.String())
}
