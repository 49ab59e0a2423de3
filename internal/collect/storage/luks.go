package storage

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// LUKS headers (cryptsetup's "LUKS1 On-Disk Format Specification" 1.2.3
// and "LUKS2 On-Disk Format Specification" 1.1.x). Only what says how the
// volume is opened is kept: active key slots, token types and the slots
// they open, LUKS2's persistent flags. Salts, digests, key slot areas and
// token contents (a TPM2 blob, a clevis JWE) never leave this file.
var luksMagic = []byte{'L', 'U', 'K', 'S', 0xba, 0xbe}

const (
	luks1SlotsOffset  = 208 // key-slot-1
	luks1SlotSize     = 48
	luks1Slots        = 8
	luks1SlotActive   = 0x00AC71F3
	luks2BinarySize   = 4096
	luks2MaxHeader    = 4 << 20 // the largest hdr_size the format allows
	luks2MaxSlots     = 32      // LUKS2_KEYSLOTS_MAX
	luks2MaxTokens    = 32      // LUKS2_TOKENS_MAX
	luks1HeaderLength = luks1SlotsOffset + luks1Slots*luks1SlotSize
)

// parseLUKSHeader reads a LUKS header from the start of r.
func parseLUKSHeader(r io.ReaderAt) (snapshot.LUKSHeader, error) {
	var h snapshot.LUKSHeader
	bin := make([]byte, luks2BinarySize)
	n, err := r.ReadAt(bin, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return h, err
	}
	bin = bin[:n]
	if len(bin) < 6 || !bytes.Equal(bin[:6], luksMagic) {
		return h, errNoLUKS
	}
	if len(bin) < 8 {
		return h, fmt.Errorf("LUKS header truncated: %d bytes", len(bin))
	}
	switch v := binary.BigEndian.Uint16(bin[6:8]); v {
	case 1:
		return parseLUKS1(bin)
	case 2:
		if len(bin) < luks2BinarySize {
			return h, fmt.Errorf("LUKS2 header truncated: %d of %d bytes", len(bin), luks2BinarySize)
		}
		return parseLUKS2(r, bin)
	default:
		return h, fmt.Errorf("LUKS version %d: slowpath reads 1 and 2", v)
	}
}

var errNoLUKS = errors.New("no LUKS header at its start (a detached header, or not LUKS)")

func parseLUKS1(bin []byte) (snapshot.LUKSHeader, error) {
	h := snapshot.LUKSHeader{Version: 1}
	if len(bin) < luks1HeaderLength {
		return h, fmt.Errorf("LUKS1 header truncated: %d of %d bytes", len(bin), luks1HeaderLength)
	}
	for i := 0; i < luks1Slots; i++ {
		off := luks1SlotsOffset + i*luks1SlotSize
		if binary.BigEndian.Uint32(bin[off:off+4]) == luks1SlotActive {
			h.Keyslots = append(h.Keyslots, i)
		}
	}
	return h, nil
}

// luks2JSON is the part of the LUKS2 metadata slowpath reads.
type luks2JSON struct {
	Keyslots map[string]luks2Keyslot `json:"keyslots"`
	Tokens   map[string]struct {
		Type     string   `json:"type"`
		Keyslots []string `json:"keyslots"`
	} `json:"tokens"`
	Config struct {
		Flags []string `json:"flags"`
	} `json:"config"`
}

// luks2Keyslot is what decides whether a key slot can open the volume: a
// "luks2" slot (not the "reencrypt" one a reencryption keeps) whose
// priority is not 0 ("ignore": cryptsetup tries it only when named).
type luks2Keyslot struct {
	Type     string `json:"type"`
	Priority *int   `json:"priority"`
}

func (k luks2Keyslot) opens() bool {
	return k.Type == "luks2" && (k.Priority == nil || *k.Priority != 0)
}

func parseLUKS2(r io.ReaderAt, bin []byte) (snapshot.LUKSHeader, error) {
	h := snapshot.LUKSHeader{Version: 2}
	size := binary.BigEndian.Uint64(bin[8:16])
	// hdr_size is the binary header and the JSON area: 16 KiB to 4 MiB.
	if size < 4*luks2BinarySize || size > luks2MaxHeader {
		return h, fmt.Errorf("LUKS2 hdr_size %d outside 16 KiB..4 MiB", size)
	}
	area := make([]byte, size-luks2BinarySize)
	n, err := r.ReadAt(area, luks2BinarySize)
	if err != nil && !errors.Is(err, io.EOF) {
		return h, err
	}
	if n < len(area) {
		return h, fmt.Errorf("LUKS2 JSON area truncated: %d of %d bytes", n, len(area))
	}
	// The JSON is NUL-terminated; the rest of the area is zeros.
	if i := bytes.IndexByte(area, 0); i >= 0 {
		area = area[:i]
	}
	var meta luks2JSON
	if err := json.Unmarshal(area, &meta); err != nil {
		return h, fmt.Errorf("LUKS2 metadata: %w", err)
	}
	if len(meta.Keyslots) > luks2MaxSlots || len(meta.Tokens) > luks2MaxTokens {
		return h, fmt.Errorf("LUKS2 metadata: %d key slots and %d tokens, more than the format allows (%d, %d)",
			len(meta.Keyslots), len(meta.Tokens), luks2MaxSlots, luks2MaxTokens)
	}
	for id, ks := range meta.Keyslots {
		n, err := luksID(id, luks2MaxSlots)
		if err != nil {
			return h, fmt.Errorf("LUKS2 key slot %w", err)
		}
		if ks.opens() {
			h.Keyslots = append(h.Keyslots, n)
		}
	}
	slices.Sort(h.Keyslots)
	ids := make([]int, 0, len(meta.Tokens))
	byID := map[int]string{}
	for id := range meta.Tokens {
		n, err := luksID(id, luks2MaxTokens)
		if err != nil {
			return h, fmt.Errorf("LUKS2 token %w", err)
		}
		ids = append(ids, n)
		byID[n] = id
	}
	slices.Sort(ids)
	for _, n := range ids {
		t := meta.Tokens[byID[n]]
		// A type or flag is kept only as one plain word (what cryptsetup
		// and systemd write); anything else is refused rather than carried
		// into a snapshot and a plan's comments.
		if !snapshot.ValidLUKSWord(t.Type) {
			return h, fmt.Errorf("LUKS2 token %d: type %q is not a token type name", n, t.Type)
		}
		tok := snapshot.LUKSToken{Type: t.Type}
		for _, ks := range t.Keyslots {
			k, err := luksID(ks, luks2MaxSlots)
			if err != nil {
				return h, fmt.Errorf("LUKS2 token %d: key slot %w", n, err)
			}
			tok.Keyslots = append(tok.Keyslots, k)
		}
		h.Tokens = append(h.Tokens, tok)
	}
	for _, f := range meta.Config.Flags {
		if !snapshot.ValidLUKSWord(f) {
			return h, fmt.Errorf("LUKS2 flag %q is not a flag name", f)
		}
		h.Flags = append(h.Flags, f)
	}
	return h, nil
}

// luksID reads a key slot or token id: a decimal number below max, as
// LUKS2 writes object keys ("0", "1").
func luksID(s string, max int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n >= max || strconv.Itoa(n) != s {
		return 0, fmt.Errorf("id %q: want 0 to %d", s, max-1)
	}
	return n, nil
}

// readLUKSHeaders fills DM.LUKS for every LUKS mapping (uuid CRYPT-LUKS1-
// or CRYPT-LUKS2-, as cryptsetup names them) built on one device: its
// header is read from that device's node. Only on the live host: a foreign
// root's /dev is not the devices its sysfs names. A header that cannot be
// read says why (DM.LUKS.NotRead) and in the manifest.
func readLUKSHeaders(fs hostfs.FS, devs []snapshot.BlockDevice, s *snapshot.Snapshot) {
	for i := range devs {
		d := &devs[i]
		if d.DM == nil || !(strings.HasPrefix(d.DM.UUID, "CRYPT-LUKS1-") || strings.HasPrefix(d.DM.UUID, "CRYPT-LUKS2-")) {
			continue
		}
		if len(d.Slaves) != 1 {
			d.DM.LUKS = &snapshot.LUKSHeader{NotRead: fmt.Sprintf("built on %d devices, not one", len(d.Slaves))}
			continue
		}
		below := d.Slaves[0]
		h := &snapshot.LUKSHeader{Device: below}
		d.DM.LUKS = h
		if !fs.Live {
			h.NotRead = fs.NotLive().Error()
			continue
		}
		// sysfs spells a / of a device name as ! (cciss!c0d0).
		p := fs.RootPath("dev", strings.ReplaceAll(below, "!", "/"))
		hdr, err := readLUKSHeader(p)
		if err != nil {
			h.NotRead = err.Error()
			s.AddError("storage.luks", p, err)
			continue
		}
		hdr.Device = below
		*h = hdr
	}
}

func readLUKSHeader(path string) (snapshot.LUKSHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			return snapshot.LUKSHeader{}, fmt.Errorf("%w (reading a block device needs root, or CAP_DAC_READ_SEARCH)", err)
		}
		return snapshot.LUKSHeader{}, err
	}
	defer f.Close()
	return parseLUKSHeader(f)
}
