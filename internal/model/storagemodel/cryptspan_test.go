package storagemodel

import (
	"strings"
	"testing"

	"github.com/slowpath/slowpath/internal/snapshot"
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

func TestCryptsetupType(t *testing.T) {
	for _, tc := range []struct{ uuid, want string }{
		{"CRYPT-LUKS2-0123456789abcdef0123456789abcdef-data", "LUKS2"},
		{"CRYPT-LUKS1-0123456789abcdef0123456789abcdef-root_crypt", "LUKS1"},
		{"CRYPT-PLAIN-swap", "PLAIN"},
		{"CRYPT-TCRYPT-vault", "TCRYPT"},
		{"CRYPT-BITLK-0123456789abcdef0123456789abcdef-win", "BITLK"},
		{"CRYPT-LUKS2-OPAL-0123456789abcdef0123456789abcdef-sed", "LUKS2-OPAL"},
		{"CRYPT-SUBDEV-0123456789abcdef0123456789abcdef-data_dif", "SUBDEV"},
		{"CRYPT-VERITY-0123456789abcdef0123456789abcdef-usr", "VERITY"},
		{"LVM-abcdefABCDEF0123456789", ""},
		{"CRYPT-", ""},
		{"CRYPT-LUKS2", ""},
		{"crypt-LUKS2-0123-data", ""},
		{"", ""},
	} {
		if got := CryptsetupType(tc.uuid); got != tc.want {
			t.Errorf("CryptsetupType(%q) = %q, want %q", tc.uuid, got, tc.want)
		}
	}
}

// TestCryptSpanInferred: a dm device whose table was not read is in the
// span when its uuid names a cryptsetup dm-crypt mapping, labelled as
// inferred with the cipher assumed from the type; any other uuid leaves no
// span; a read table is as before, never inferred.
func TestCryptSpanInferred(t *testing.T) {
	const notRead = "DM_TABLE_STATUS 253:0: operation not permitted (run as root: it needs CAP_SYS_ADMIN)"
	unread := func(uuid string) snapshot.BlockDevice {
		d := crypt("dm-0", "253:0", "data", "", []string{"nvme0n1"})
		d.DM.UUID, d.DM.Targets, d.DM.TableNotRead = uuid, nil, notRead
		return d
	}
	read := crypt("dm-0", "253:0", "data", luksDefault, []string{"nvme0n1"})
	for _, tc := range []struct {
		name   string
		dm     snapshot.BlockDevice
		span   bool
		typ    string // InferredCrypt.Type; "" when the span is read from the table
		cipher string
	}{
		{"LUKS2 uuid, table unread", unread("CRYPT-LUKS2-0123456789abcdef0123456789abcdef-data"), true, "LUKS2", "aes-xts-plain64"},
		{"LUKS1 uuid, table unread", unread("CRYPT-LUKS1-0123456789abcdef0123456789abcdef-data"), true, "LUKS1", "aes-xts-plain64"},
		{"PLAIN uuid, table unread", unread("CRYPT-PLAIN-data"), true, "PLAIN", "aes-xts-plain64"},
		// TrueCrypt/VeraCrypt have no AES default: in the span, cipher unknown.
		{"TCRYPT uuid, table unread", unread("CRYPT-TCRYPT-data"), true, "TCRYPT", ""},
		{"LVM uuid, table unread", unread("LVM-abcdefABCDEF0123456789"), false, "", ""},
		{"no uuid, table unread", unread(""), false, "", ""},
		{"dm-verity, table unread", unread("CRYPT-VERITY-0123456789abcdef0123456789abcdef-data"), false, "", ""},
		{"dm-integrity helper, table unread", unread("CRYPT-SUBDEV-0123456789abcdef0123456789abcdef-data"), false, "", ""},
		// May be dm-linear over a self-encrypting drive.
		{"LUKS2 over OPAL, table unread", unread("CRYPT-LUKS2-OPAL-0123456789abcdef0123456789abcdef-data"), false, "", ""},
		{"LUKS2, table read", read, true, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := Build(snap([]snapshot.Mount{mount(1, "253:0", "/data", "xfs")},
				disk("nvme0n1", "259:0", "NVMe", 1<<30, "dm-0"), tc.dm))
			p := pathFor(t, m, "/data")
			l := p.Layers[1]
			s, ok := p.CryptSpan()
			if ok != tc.span {
				t.Fatalf("span %v, want %v (layer %+v)", ok, tc.span, l)
			}
			if tc.dm.DM.TableNotRead != "" {
				// Everything but the span is as unknown as before.
				if l.Kind != "dm" || l.Encrypted || !l.EncryptionUnknown || l.Crypt != nil ||
					p.EncryptionLayers != 0 || p.UnknownEncryptionLayers != 1 || len(p.EncryptionChain()) != 0 {
					t.Errorf("unread table: layer %+v, %d known %d unknown", l, p.EncryptionLayers, p.UnknownEncryptionLayers)
				}
			}
			if !ok {
				if l.InferredCrypt != nil {
					t.Errorf("no span but inferred %+v", l.InferredCrypt)
				}
				return
			}
			if s.Top().Device != "dm-0" || s.Beneath == nil || s.Beneath.Device != "nvme0n1" {
				t.Errorf("span %+v", s)
			}
			inf := s.Inferred()
			if tc.typ == "" {
				if len(inf) != 0 || l.Kind != LayerDMCrypt || l.Crypt == nil {
					t.Errorf("read table: inferred %+v, layer %+v", inf, l)
				}
				return
			}
			if len(inf) != 1 || inf[0].InferredCrypt.Type != tc.typ || inf[0].InferredCrypt.AssumedCipher != tc.cipher ||
				inf[0].InferredCrypt.TableNotRead != notRead {
				t.Fatalf("inferred %+v, want %s assuming %q", inf, tc.typ, tc.cipher)
			}
			if want := "dm-crypt inferred from uuid " + tc.dm.DM.UUID + "; table not read: " + notRead; inf[0].InferredCrypt.Label(inf[0].DMUUID) != want {
				t.Errorf("label %q, want %q", inf[0].InferredCrypt.Label(inf[0].DMUUID), want)
			}
			if !strings.Contains(l.Note, "device-mapper table not read: "+notRead) || !strings.Contains(l.Note, "cryptsetup "+tc.typ+" mapping") {
				t.Errorf("note %q", l.Note)
			}
		})
	}
}

// TestCryptSpanInferredUnderRead: an inferred layer under a read dm-crypt
// makes a two-layer span, the lowest inferred.
func TestCryptSpanInferredUnderRead(t *testing.T) {
	inf := &InferredCrypt{Type: "LUKS2", AssumedCipher: "aes-xts-plain64", TableNotRead: "x"}
	p := &Path{Layers: []Layer{{Kind: LayerFilesystem},
		{Kind: LayerDMCrypt, Device: "dm-1", Name: "inner", Encrypted: true, Crypt: &Crypt{Cipher: "aes"}, Depth: 1},
		{Kind: "dm", Device: "dm-0", Name: "outer", EncryptionUnknown: true, InferredCrypt: inf, Depth: 2},
		{Kind: LayerDisk, Device: "sda", Depth: 3}}}
	s, ok := p.CryptSpan()
	if !ok || len(s.Crypts) != 2 || s.Lowest().Device != "dm-0" || s.Beneath == nil || s.Beneath.Device != "sda" || len(s.Inferred()) != 1 {
		t.Fatalf("span %+v", s)
	}
	if c := p.EncryptionChain(); len(c) != 1 || c[0].Device != "dm-1" {
		t.Errorf("encryption chain %+v: the inferred layer is not in it", c)
	}
}
