package storagemodel

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// FuzzBuild feeds arbitrary storage sections (seeded with the fixture
// hosts) to Build: whatever the snapshot says, Build must not panic or loop,
// and the counts it reports must match its own layers.
func FuzzBuild(f *testing.F) {
	hosts, _ := filepath.Glob("../../../testdata/hosts/*.json")
	for _, h := range hosts {
		if b, err := os.ReadFile(h); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"storage":{"mounts":[{"major_minor":"7:0","mount_point":"/a"}],"block_devices":[{"name":"loop0","major_minor":"7:0","kind":"loop","size_bytes":1,"loop":{"backing_file":"/a/x","backing_device":"7:0"}}]}}`))
	f.Add([]byte(`{"storage":{"block_devices":[{"name":"a","kind":"dm","size_bytes":1,"slaves":["b"]},{"name":"b","kind":"dm","size_bytes":1,"slaves":["a"]}]}}`))
	f.Add([]byte(`{"storage":{"mounts":[{"major_minor":"253:0","mount_point":"/d"}],"block_devices":[{"name":"dm-0","major_minor":"253:0","kind":"dm","size_bytes":1,"slaves":["sda"],"dm":{"name":"d","uuid":"CRYPT-LUKS2-00-d","table_not_read":"x"}},{"name":"sda","kind":"disk","size_bytes":1,"holders":["dm-0"]}]}}`))
	f.Add([]byte(`{"storage":{"mounts":[{"major_minor":"253:0","mount_point":"/d"},{"major_minor":"253:0","mount_point":"/e"}],"block_devices":[{"name":"dm-0","major_minor":"253:0","kind":"dm","size_bytes":1}]},"engines":{"processes":[{"engine":"mariadb","pid":1,"data_dev":"253:0","encryption":[{"setting":"a","enabled":true},{"setting":"b","enabled":true,"path":"/x","dev":"253:0"},{"setting":"c","enabled":true,"path":"/y"}]},{"engine":"x","data_dev":"253:0","encryption":[{"enabled":true}]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s snapshot.Snapshot
		if json.Unmarshal(b, &s) != nil {
			return
		}
		m := Build(&s)
		for _, p := range m.Paths {
			if p.EncryptionLayers < 0 || p.EncryptionLayers > len(p.Layers) {
				t.Fatalf("%s: %d encryption layers in %d layers", p.Subject(), p.EncryptionLayers, len(p.Layers))
			}
			if got := len(p.EncryptionChain()); got != p.EncryptionLayers {
				t.Fatalf("%s: chain has %d encrypting layers, count says %d", p.Subject(), got, p.EncryptionLayers)
			}
			// An engine layer is the top of its path, and only there.
			for i, l := range p.Layers {
				if l.Engines != nil && (l.Kind != LayerEngine || i != 0 || l.Depth != 0 || !l.Encrypted) {
					t.Fatalf("%s: engine layer %d %+v", p.Subject(), i, l)
				}
			}
			// A layer inferred from its uuid is dm-crypt for the span only.
			for _, l := range p.Layers {
				if ic := l.InferredCrypt; ic != nil && (l.Kind != "dm" || l.Encrypted || !l.EncryptionUnknown ||
					l.Crypt != nil || CryptsetupType(l.DMUUID) != ic.Type) {
					t.Fatalf("%s: inferred layer %+v", p.Subject(), l)
				}
			}
			if cs, ok := p.CryptSpan(); ok {
				for _, l := range cs.Crypts {
					if l.Kind != LayerDMCrypt && l.InferredCrypt == nil {
						t.Fatalf("%s: span holds a %s layer", p.Subject(), l.Kind)
					}
				}
			}
		}
	})
}
