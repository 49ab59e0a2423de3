package profile

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestExportFiles: one job file per phase, in order, each holding the
// directory's placeholder that run.sh substitutes before running it.
func TestExportFiles(t *testing.T) {
	plan, err := New(SearchIndex, Params{Scale: 0.05, Runtime: time.Second, Dir: ExportDir, SlowLoad: 10 * time.Millisecond, NumCPU: 4})
	if err != nil {
		t.Fatal(err)
	}
	files, jobs := ExportFiles(plan)
	if len(jobs) != len(plan.Phases) || len(files) != len(jobs)+1 {
		t.Fatalf("%d phases: jobs %v, %d files", len(plan.Phases), jobs, len(files))
	}
	sh := string(files["run.sh"])
	if !strings.HasPrefix(sh, "#!/bin/sh\n") {
		t.Errorf("run.sh starts %.40q", sh)
	}
	for i, j := range jobs {
		if want := fmt.Sprintf("%d-%s.fio", i+1, plan.Phases[i].Name); j != want {
			t.Errorf("job %d named %s, phase %s", i, j, plan.Phases[i].Name)
		}
		if !bytes.Contains(files[j], []byte(ExportDir)) {
			t.Errorf("%s does not hold %s:\n%s", j, ExportDir, files[j])
		}
		if !strings.Contains(sh, `sed "s|`+ExportDir+`|$work|g" "$here"/`+j+` > "$work"/`+j+"\n") {
			t.Errorf("run.sh does not run %s:\n%s", j, sh)
		}
	}
	if !strings.Contains(sh, "# Index loads:") {
		t.Errorf("search-index's run.sh has no index loads:\n%s", sh)
	}
}
