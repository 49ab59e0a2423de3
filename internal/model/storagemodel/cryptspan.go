package storagemodel

import "fmt"

// CryptSpan is the dm-crypt part of a path's encryption chain (the chain
// with the most encrypting layers, as EncryptionChain): where the
// encryption tax is read, from the await of the topmost dm-crypt device
// against the one device beneath the lowest (internal/model/cryptotax).
// bench reads it over one run, the dmcrypt.tax check since boot.
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

// CryptSpan returns the dm-crypt span of p; false when its encryption
// chain has no dm-crypt layer. Other encrypting layers (fscrypt, a cloud
// disk) cost no kernel cipher time on this path's devices and are not in it.
func (p *Path) CryptSpan() (CryptSpan, bool) {
	var s CryptSpan
	for _, l := range p.EncryptionChain() {
		if l.Kind == LayerDMCrypt {
			s.Crypts = append(s.Crypts, l)
		}
	}
	if len(s.Crypts) == 0 {
		return s, false
	}
	low := s.Lowest()
	for i, l := range p.Layers {
		if l.Device != low.Device || l.Depth != low.Depth || l.Kind != LayerDMCrypt {
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
