package storagemodel

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/slowpath/slowpath/internal/pathrecord"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// jsonNames are the JSON names of t's fields.
func jsonNames(t reflect.Type) map[string]bool {
	out := map[string]bool{}
	for f := range t.Fields() {
		name, _, _ := bytes.Cut([]byte(f.Tag.Get("json")), []byte(","))
		out[string(name)] = true
	}
	return out
}

// TestRecordHasEveryField holds the record to the model: a model field
// the record lacks would vanish from bench results and captures.
func TestRecordHasEveryField(t *testing.T) {
	pairs := [][2]reflect.Type{
		{reflect.TypeFor[Path](), reflect.TypeFor[pathrecord.Path]()},
		{reflect.TypeFor[Layer](), reflect.TypeFor[pathrecord.Layer]()},
		{reflect.TypeFor[CloudDisk](), reflect.TypeFor[pathrecord.CloudDisk]()},
	}
	for _, p := range pairs {
		model, record := jsonNames(p[0]), jsonNames(p[1])
		for n := range model {
			if !record[n] {
				t.Errorf("%s.%s is not in pathrecord.%s: add it there (a change of the bench result's and the capture's schema)", p[0].Name(), n, p[1].Name())
			}
		}
		if len(record) != len(model) {
			t.Errorf("pathrecord.%s has %d fields, the model's %d", p[1].Name(), len(record), len(model))
		}
	}
}

// TestRecordRoundTrip: every fixture host's paths give the same JSON as
// records and come back from them unchanged.
func TestRecordRoundTrip(t *testing.T) {
	hosts, _ := filepath.Glob("../../../testdata/hosts/*.json")
	if len(hosts) == 0 {
		t.Fatal("no fixture hosts")
	}
	n := 0
	for _, h := range hosts {
		b, err := os.ReadFile(h)
		if err != nil {
			t.Fatal(err)
		}
		s, err := snapshot.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		for _, p := range Build(s).Paths {
			want, _ := json.Marshal(p)
			got, _ := json.Marshal(p.Record())
			if !bytes.Equal(got, want) {
				t.Errorf("%s %s: record\n%s\nmodel\n%s", filepath.Base(h), p.Subject(), got, want)
			}
			if back := FromRecord(p.Record()); !reflect.DeepEqual(*back, p) {
				t.Errorf("%s %s: back from the record: %+v, want %+v", filepath.Base(h), p.Subject(), *back, p)
			}
			n++
		}
	}
	if n < 20 {
		t.Fatalf("only %d paths over the fixtures", n)
	}
}
