package profile

import (
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// TestSeqRead: lab:seq-read is a lab job that reads the device
// sequentially in 1 MiB direct I/Os at queue depth 4, refuses a
// directory, and a saved result of it loads.
func TestSeqRead(t *testing.T) {
	p, ok := Lookup("lab:seq-read")
	if !ok {
		t.Fatal("lab:seq-read is not registered")
	}
	if s := p.Spec(); s.Family != LabFamily || s.IO == nil || *s.IO != (IOShape{BytesPerIO: 1 << 20, QueueDepth: 4}) {
		t.Errorf("spec %+v", s)
	}
	pl, err := New("lab:seq-read", Params{Scale: 1, Runtime: 2 * time.Second, Device: "/dev/ram0"})
	if err != nil {
		t.Fatal(err)
	}
	job := string(pl.Phases[0].JobFile)
	for _, want := range []string{"filename=/dev/ram0", "rw=read\n", "bs=1048576", "iodepth=4", "direct=1", "runtime=2000ms"} {
		if !strings.Contains(job, want) {
			t.Errorf("job file lacks %q:\n%s", want, job)
		}
	}
	if strings.Contains(job, "rwmixread") {
		t.Errorf("a read-only job with rwmixread:\n%s", job)
	}
	if _, err := New("lab:seq-read", Params{Scale: 1, Runtime: time.Second, Dir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), "needs a block device") {
		t.Errorf("on a directory: %v", err)
	}
	if err := benchresult.ValidProfile("lab:seq-read"); err != nil {
		t.Error(err)
	}
}
