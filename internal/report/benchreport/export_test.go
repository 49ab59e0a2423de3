package benchreport

import (
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/workload/profile"
)

// TestExportREADME: the README names every job file and setting, and
// shows the result's environment and figures with what the result holds
// escaped (it may come from another machine).
func TestExportREADME(t *testing.T) {
	res, err := benchresult.ReadFile("../../experiment/testdata/result-tax.json")
	if err != nil {
		t.Fatal(err)
	}
	res.Environment.Host = &snapshot.Host{KernelRelease: "6.1.0", NumCPU: 4, CPUModel: "Xeon | <script>"}
	plan, err := profile.New(res.Profile, profile.Params{Scale: 0.05, Runtime: time.Second, Dir: profile.ExportDir, SlowLoad: 10 * time.Millisecond, NumCPU: 4})
	if err != nil {
		t.Fatal(err)
	}
	_, jobs := profile.ExportFiles(plan)
	got := string(ExportREADME(Export{Plan: plan, Jobs: jobs, Scale: 0.05, Runtime: time.Second, Result: res}))
	want := []string{"# Reproduction: " + res.Profile + "\n", "`slowpath bench export " + res.Profile + " --scale 0.05 --runtime 1s`",
		"./run.sh /path/on/the/filesystem/to/test", "## This machine's result (`result.json`)", "| phase | figure | value |"}
	for _, j := range jobs {
		want = append(want, "- `"+j+"`: phase ")
	}
	for k, v := range plan.Settings {
		want = append(want, "- "+k+": "+v+"\n")
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("README lacks %q:\n%s", w, got)
		}
	}
	if strings.Contains(got, "<script>") || strings.Contains(got, "Xeon | ") {
		t.Errorf("the result's CPU model is not escaped:\n%s", got)
	}
	if without := string(ExportREADME(Export{Plan: plan, Jobs: jobs, Scale: 0.05, Runtime: time.Second})); strings.Contains(without, "result.json") {
		t.Errorf("README without a result names result.json:\n%s", without)
	}
}
