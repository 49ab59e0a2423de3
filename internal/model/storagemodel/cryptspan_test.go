package storagemodel

import (
	"strings"
	"testing"
)

func TestCryptSpan(t *testing.T) {
	aes := &Crypt{CipherSpec: "aes-xts-plain64", Cipher: "aes", ChainMode: "xts"}
	crypt := func(dev, name string, depth int) Layer {
		return Layer{Kind: LayerDMCrypt, Device: dev, Name: name, Encrypted: true, Crypt: aes, Depth: depth}
	}
	fs := Layer{Kind: LayerFilesystem}
	for _, tc := range []struct {
		name            string
		layers          []Layer
		ok              bool
		top, low, below string
		noBeneath       string
	}{
		{"one", []Layer{fs, crypt("dm-0", "data", 1), {Kind: LayerDisk, Device: "sda", Depth: 2}}, true, "dm-0", "dm-0", "sda", ""},
		{"stacked", []Layer{fs, crypt("dm-1", "outer", 1), crypt("dm-0", "inner", 2), {Kind: LayerDisk, Device: "sda", Depth: 3}}, true, "dm-1", "dm-0", "sda", ""},
		// Beneath is the device directly under the lowest crypt, not the disks.
		{"over raid", []Layer{fs, crypt("dm-0", "data", 1), {Kind: "md", Device: "md0", Depth: 2}, {Kind: LayerDisk, Device: "sda", Depth: 3}, {Kind: LayerDisk, Device: "sdb", Depth: 3}}, true, "dm-0", "dm-0", "md0", ""},
		{"over two devices", []Layer{fs, crypt("dm-0", "data", 1), {Kind: LayerDisk, Device: "sda", Depth: 2}, {Kind: LayerDisk, Device: "sdb", Depth: 2}}, true, "dm-0", "dm-0", "", "maps onto 2 devices"},
		{"nothing beneath", []Layer{fs, crypt("dm-0", "data", 1)}, true, "dm-0", "dm-0", "", "maps onto 0 devices"},
		{"beneath is no device", []Layer{fs, crypt("dm-0", "data", 1), {Kind: LayerMissing, Name: "?", Depth: 2}}, true, "dm-0", "dm-0", "", "not a block device"},
		{"plain", []Layer{fs, {Kind: LayerDisk, Device: "sda", Depth: 1}}, false, "", "", "", ""},
		// A cloud disk that encrypts on the host costs this kernel nothing.
		{"cloud", []Layer{fs, {Kind: LayerCloud, Device: "nvme0n1", Encrypted: true, Depth: 1}}, false, "", "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &Path{Layers: tc.layers}
			s, ok := p.CryptSpan()
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, s)
			}
			if !ok {
				return
			}
			if s.Top().Device != tc.top || s.Lowest().Device != tc.low {
				t.Errorf("top %s lowest %s, want %s %s", s.Top().Device, s.Lowest().Device, tc.top, tc.low)
			}
			switch {
			case tc.below != "" && (s.Beneath == nil || s.Beneath.Device != tc.below || s.NoBeneath != ""):
				t.Errorf("beneath %+v (%q), want %s", s.Beneath, s.NoBeneath, tc.below)
			case tc.below == "" && (s.Beneath != nil || !strings.Contains(s.NoBeneath, tc.noBeneath)):
				t.Errorf("beneath %+v, reason %q, want none because %q", s.Beneath, s.NoBeneath, tc.noBeneath)
			}
		})
	}
}
