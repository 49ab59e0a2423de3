package storagemodel

import "fmt"

// CryptSpan is the dm-crypt part of a path's encryption chain (the chain
// with the most encrypting layers, as EncryptionChain): where the
// encryption tax is read, from the await of the topmost dm-crypt device
// against the one device beneath the lowest (internal/model/cryptotax).
// bench reads it over one run, the dmcrypt.tax check since boot.
//
// A dm layer whose table was not read but whose uuid names a cryptsetup
// dm-crypt mapping (Layer.InferredCrypt) is in the span as dm-crypt: the
// awaits the tax is read from need no table, and without this an agent
// without CAP_SYS_ADMIN would read no tax at all. Its cipher and flags stay
// unknown; Inferred lists such layers so every reader can say so.
type CryptSpan struct {
	Crypts []Layer // dm-crypt layers, top first
	// Beneath is the one device directly beneath the lowest dm-crypt
	// layer; nil when there is not exactly one, and NoBeneath says why.
	Beneath   *Layer
	NoBeneath string
}

// Top is the topmost dm-crypt layer.
func (s CryptSpan) Top() Layer { return s.Crypts[0] }

// Lowest is the lowest dm-crypt layer.
func (s CryptSpan) Lowest() Layer { return s.Crypts[len(s.Crypts)-1] }

// Inferred returns the span's layers taken as dm-crypt from their uuid,
// their tables unread; none when every table was read.
func (s CryptSpan) Inferred() []Layer {
	var out []Layer
	for _, l := range s.Crypts {
		if l.InferredCrypt != nil {
			out = append(out, l)
		}
	}
	return out
}

// CryptSpan returns the dm-crypt span of p; false when its encryption
// chain has no dm-crypt layer. Other encrypting layers (fscrypt, a cloud
// disk) cost no kernel cipher time on this path's devices and are not in
// it. The chain counts inferred dm-crypt layers as encrypting; with every
// table read it is EncryptionChain.
func (p *Path) CryptSpan() (CryptSpan, bool) {
	var s CryptSpan
	for _, l := range p.chainOf(func(l *Layer) bool { return l.Encrypted || l.InferredCrypt != nil }) {
		if l.crypts() {
			s.Crypts = append(s.Crypts, l)
		}
	}
	if len(s.Crypts) == 0 {
		return s, false
	}
	low := s.Lowest()
	for i, l := range p.Layers {
		if l.Device != low.Device || l.Depth != low.Depth || !l.crypts() {
			continue
		}
		var children []Layer
		for _, b := range p.Below(i) {
			if b.Depth == l.Depth+1 {
				children = append(children, b)
			}
		}
		switch {
		case len(children) != 1:
			s.NoBeneath = fmt.Sprintf("dm-crypt %s maps onto %d devices, so no one device's await is the one beneath", low.Name, len(children))
		case children[0].Device == "":
			s.NoBeneath = fmt.Sprintf("what is beneath dm-crypt %s is not a block device in the snapshot (%s %s)", low.Name, children[0].Kind, children[0].Name)
		default:
			s.Beneath = &children[0]
		}
		break
	}
	if s.Beneath == nil && s.NoBeneath == "" {
		s.NoBeneath = "the device beneath dm-crypt " + low.Name + " is not in the path"
	}
	return s, true
}
