package profile

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/benchresult"
)

// TestRegistry: the registry lists the bench profiles in their order, finds
// a family by its prefix only with an argument, and every profile's
// results load (benchresult reads the same registry).
func TestRegistry(t *testing.T) {
	want := []string{"search-index", "db-commit", "telemetry-ingest", "fio:FILE", "pgbench", "mariadb-oltp", "replay:DIR", "replay-afap:DIR", "replay-span:DIR"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	for name, want := range map[string]string{"db-commit": "db-commit", "fio:x.fio": "fio:", "replay:cap": "replay:",
		"replay-afap:cap": "replay-afap:", "lab:randrw-4k": "lab:randrw-4k", "mariadb-oltp:encrypted": "mariadb-oltp:encrypted", "mariadb-oltp:x": "", "fio:": "", "lab:": "", "lab:turbo": "", "replay": "", "": ""} {
		p, ok := Lookup(name)
		switch {
		case want == "" && ok:
			t.Errorf("Lookup(%q) = %s, want none", name, p.Spec().Name)
		case want != "" && (!ok || p.Spec().Name != want):
			t.Errorf("Lookup(%q) = %v, %v, want %s", name, p, ok, want)
		}
	}
	for _, p := range All() {
		s := p.Spec()
		name := s.Name
		if strings.HasSuffix(name, ":") {
			name += "x"
		}
		if err := benchresult.ValidProfile(name); err != nil {
			t.Errorf("a result of %s would not load: %v", name, err)
		}
		if s.Description == "" {
			t.Errorf("%s has no description (usage and docs list it)", s.Name)
		}
	}
}

// TestLabFamily: every lab job runs on a device with one I/O shape, and
// its fio job says that shape.
func TestLabFamily(t *testing.T) {
	jobs := Family(LabFamily)
	if len(jobs) < 5 || jobs[0].Spec().Name != "lab:randrw-4k" {
		t.Fatalf("lab jobs %v", jobs)
	}
	for _, p := range jobs {
		s := p.Spec()
		if s.Needs != Device || s.IO == nil || s.Metrics != nil {
			t.Errorf("%s: %+v", s.Name, s)
			continue
		}
		pl, err := New(s.Name, Params{Scale: 1, Runtime: time.Second, Device: "/dev/ram0"})
		if err != nil {
			t.Fatal(err)
		}
		if job := string(pl.Phases[0].JobFile); !strings.Contains(job, "iodepth="+strconv.Itoa(s.IO.QueueDepth)) || !strings.Contains(job, "bs="+strconv.Itoa(s.IO.BytesPerIO)) {
			t.Errorf("%s: job file %s does not say %+v", s.Name, job, *s.IO)
		}
	}
}

// TestRegisterRefuses: a duplicate name, or a family member not named
// after its family, is a programming error caught at init.
func TestRegisterRefuses(t *testing.T) {
	for _, p := range []Profile{dbCommit{}, LabJob{Name: "randrw-4k"}, badFamily{}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Register(%s) did not panic", p.Spec().Name)
				}
			}()
			Register(p)
		}()
	}
}

type badFamily struct{ LabJob }

func (badFamily) Spec() Spec { return Spec{Name: "seq", Family: LabFamily, Needs: Device} }
