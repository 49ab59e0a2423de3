package profile

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestLabJob: a lab profile is one fio job on the device, as lab crypt has
// always run it; it needs a device, and an unknown lab name is refused with
// the list.
func TestLabJob(t *testing.T) {
	p := Params{Scale: 1, Runtime: 2 * time.Second, Device: "/dev/mapper/sp-crypt-1:0", NumCPU: 2}
	for _, tc := range []struct {
		name, want string
	}{
		{"lab:randrw-4k", "[lab]\nfilename=/dev/mapper/sp-crypt-1\\:0\nrw=randrw\nbs=4096\nioengine=libaio\niodepth=8\nrwmixread=50\ndirect=1\nruntime=2000ms\ntime_based=1\n"},
		{"lab:randread-4k", "[lab]\nfilename=/dev/mapper/sp-crypt-1\\:0\nrw=randread\nbs=4096\nioengine=libaio\niodepth=8\ndirect=1\nruntime=2000ms\ntime_based=1\n"},
		{"lab:seq-1m", "[lab]\nfilename=/dev/mapper/sp-crypt-1\\:0\nrw=write\nbs=1048576\nioengine=libaio\niodepth=4\ndirect=1\nruntime=2000ms\ntime_based=1\n"},
	} {
		if !Known(tc.name) {
			t.Errorf("%s not known", tc.name)
		}
		pl, err := New(tc.name, p)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := string(pl.Phases[0].JobFile); !strings.Contains(got, tc.want) || pl.Profile != tc.name || len(pl.Phases) != 1 {
			t.Errorf("%s: job file\n%s\nwant it to hold\n%s", tc.name, got, tc.want)
		}
	}
	if Known("lab:turbo") || Known("lab:") {
		t.Error("unknown lab names known")
	}
	if _, err := New("lab:turbo", p); !errors.Is(err, ErrUnknown) || !strings.Contains(err.Error(), "lab:randrw-4k") {
		t.Errorf("unknown lab job: %v", err)
	}
	q := p
	q.Device, q.Dir = "", "/tmp"
	if _, err := New("lab:randrw-4k", q); err == nil || !strings.Contains(err.Error(), "needs a block device") {
		t.Errorf("lab job on a directory: %v", err)
	}
}
