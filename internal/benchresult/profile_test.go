package benchresult_test

import (
	"testing"

	"github.com/slowpath/slowpath/internal/benchresult"
	// The profiles register the names a result may carry; this test
	// binary's internal tests decode results of them too.
	_ "github.com/slowpath/slowpath/internal/workload/profile"
)

func TestValidProfile(t *testing.T) {
	for p, ok := range map[string]bool{"search-index": true, "db-commit": true, "telemetry-ingest": true, "fio:x.fio": true,
		"replay:cap": true, "replay-afap:cap": true, "lab:randrw-4k": true, "lab:older-job": true,
		"fio:": false, "fio:a b": false, "fio:-x": false, "replay:": false, "lab:": false, "other": false, "": false} {
		if err := benchresult.ValidProfile(p); (err == nil) != ok {
			t.Errorf("%q: %v", p, err)
		}
	}
}
