// Package nodediff compares two nodes' snapshots: what differs in findings,
// storage paths and their encryption layers, dm-crypt flags, CPU crypto,
// kernel, cloud, NIC rings and sysctls. It answers "why is node A slower
// than node B" with the differences that matter first. It is pure: both
// snapshots are analysed as doctor does and the results compared.
package nodediff

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Area ranks a difference: lower areas matter more and are listed first.
type Area int

const (
	AreaFinding    Area = iota + 1 // a check fires on one node only
	AreaEncryption                 // encryption layers of a path
	AreaDMCrypt                    // dm-crypt cipher, flags, sector size
	AreaCPUCrypto                  // AES instructions, kernel AES driver
	AreaCloud                      // provider, instance type, encryption at host
	AreaStorage                    // the rest of a path's chain
	AreaRing                       // NIC ring sizes
	AreaSysctl                     // receive-path sysctls
	AreaKernel                     // kernel release, CPU model and count
)

var areaNames = map[Area]string{
	AreaFinding: "finding", AreaEncryption: "encryption", AreaDMCrypt: "dm-crypt", AreaCPUCrypto: "cpu-crypto",
	AreaCloud: "cloud", AreaStorage: "storage", AreaRing: "ring", AreaSysctl: "sysctl", AreaKernel: "kernel",
}

func (a Area) String() string { return areaNames[a] }

// MarshalText makes Area a string in JSON.
func (a Area) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// Difference is one fact that differs; "" on a side means absent there.
type Difference struct {
	Area Area   `json:"area"`
	Item string `json:"item"` // what differs: a mount point, "dm-0 flags", "eth0 rx ring"
	A    string `json:"a"`
	B    string `json:"b"`
	// Severity orders findings within AreaFinding (the finding's severity).
	Severity check.Severity `json:"severity,omitempty"`
	// weight orders differences within an area: a changed layer count
	// before a change of where the same count of layers runs.
	weight int
}

// Compare analyses a and b and lists their differences, most important first.
func Compare(a, b *snapshot.Snapshot) ([]Difference, error) {
	ra, err := analyze.Run(a, check.Config{})
	if err != nil {
		return nil, fmt.Errorf("first snapshot: %w", err)
	}
	rb, err := analyze.Run(b, check.Config{})
	if err != nil {
		return nil, fmt.Errorf("second snapshot: %w", err)
	}
	var d diffs
	d.findings(ra.Findings, rb.Findings)
	d.storage(ra, rb)
	d.host(a, b)
	d.cloud(a.Cloud, b.Cloud)
	d.net(a, b)
	slices.SortStableFunc(d, func(x, y Difference) int {
		return cmp.Or(cmp.Compare(x.Area, y.Area), -cmp.Compare(x.Severity, y.Severity), -cmp.Compare(x.weight, y.weight), cmp.Compare(x.Item, y.Item))
	})
	return d, nil
}

type diffs []Difference

func (d *diffs) add(area Area, item, a, b string) {
	if a != b {
		*d = append(*d, Difference{Area: area, Item: item, A: a, B: b})
	}
}

func (d *diffs) findings(fa, fb []check.Finding) {
	type key struct{ id, subject string }
	index := func(fs []check.Finding) map[key]check.Finding {
		m := map[key]check.Finding{}
		for _, f := range fs {
			if f.Status == check.Fail {
				m[key{f.ID, f.Subject}] = f
			}
		}
		return m
	}
	ma, mb := index(fa), index(fb)
	for k := range keysOfEither(ma, mb) {
		a, inA := ma[k]
		b, inB := mb[k]
		if inA && inB {
			continue
		}
		sev, as, bs := a.Severity, "fires ("+a.Severity.String()+")", ""
		if !inA {
			sev, as, bs = b.Severity, "", "fires ("+b.Severity.String()+")"
		}
		item := k.id
		if k.subject != "" {
			item += " " + k.subject
		}
		*d = append(*d, Difference{Area: AreaFinding, Item: item, A: as, B: bs, Severity: sev})
	}
}

// chain is a path's layers as one line, top first: "ext4 /data → dm-crypt
// scratch [kernel-cpu] → nvme1n1".
func chain(p *storagemodel.Path) string {
	var parts []string
	for _, l := range p.Layers {
		s := l.Kind
		if l.Kind == storagemodel.LayerFilesystem && l.FSType != "" {
			s = l.FSType
		}
		if l.Name != "" && l.Kind != storagemodel.LayerFilesystem {
			s += " " + l.Name
		}
		if l.Encrypted {
			s += " [" + l.EncryptedBy + "]"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " → ")
}

func encLayers(p *storagemodel.Path) string {
	var where []string
	for _, l := range p.EncryptionChain() {
		where = append(where, l.EncryptedBy)
	}
	s := strconv.Itoa(p.EncryptionLayers)
	if len(where) > 0 {
		s += " (" + strings.Join(where, ", ") + ")"
	}
	if p.UnknownEncryptionLayers > 0 {
		s += fmt.Sprintf(" +%d unknown", p.UnknownEncryptionLayers)
	}
	return s
}

func cryptOf(p *storagemodel.Path) []*storagemodel.Layer {
	var out []*storagemodel.Layer
	for i := range p.Layers {
		if p.Layers[i].Crypt != nil {
			out = append(out, &p.Layers[i])
		}
	}
	return out
}

func cryptLine(ls []*storagemodel.Layer) (cipher, flags, sector string) {
	var c, f, s []string
	for _, l := range ls {
		c = append(c, l.Crypt.CipherSpec+" "+strconv.Itoa(l.Crypt.KeyBits)+"-bit")
		fl := l.Crypt.Flags()
		if len(fl) == 0 {
			fl = []string{"none"}
		}
		f = append(f, strings.Join(fl, ","))
		ss := l.Crypt.SectorSize
		if ss == 0 {
			ss = 512
		}
		s = append(s, strconv.Itoa(ss))
	}
	return strings.Join(c, " | "), strings.Join(f, " | "), strings.Join(s, " | ")
}

func (d *diffs) storage(ra, rb *analyze.Report) {
	index := func(r *analyze.Report) map[string]*storagemodel.Path {
		m := map[string]*storagemodel.Path{}
		for i := range r.Storage {
			p := &r.Storage[i]
			if p.Empty {
				continue
			}
			m[p.Subject()] = p
		}
		return m
	}
	ma, mb := index(ra), index(rb)
	for k := range keysOfEither(ma, mb) {
		a, b := ma[k], mb[k]
		switch {
		case a == nil:
			d.add(AreaStorage, k, "", chain(b))
			if b.EncryptionLayers > 0 {
				d.add(AreaEncryption, k+" layers", "", encLayers(b))
			}
			continue
		case b == nil:
			d.add(AreaStorage, k, chain(a), "")
			if a.EncryptionLayers > 0 {
				d.add(AreaEncryption, k+" layers", encLayers(a), "")
			}
			continue
		}
		d.add(AreaEncryption, k+" layers", encLayers(a), encLayers(b))
		if n := len(*d); n > 0 && (*d)[n-1].Item == k+" layers" {
			(*d)[n-1].weight = abs(a.EncryptionLayers - b.EncryptionLayers)
		}
		ca, fa, sa := cryptLine(cryptOf(a))
		cb, fb, sb := cryptLine(cryptOf(b))
		d.add(AreaDMCrypt, k+" cipher", ca, cb)
		d.add(AreaDMCrypt, k+" flags", fa, fb)
		d.add(AreaDMCrypt, k+" sector size", sa, sb)
		d.add(AreaStorage, k, chain(a), chain(b))
	}
}

func aesFlags(h *snapshot.Host) string {
	if h == nil {
		return ""
	}
	var out []string
	for _, f := range []string{"aes", "vaes", "avx2", "avx512f", "pmull", "sha2"} {
		if slices.Contains(h.CPUFlags, f) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, " ")
}

// aesDriver is the kernel's highest-priority implementation of xts(aes),
// which dm-crypt's default cipher uses.
func aesDriver(h *snapshot.Host) string {
	if h == nil {
		return ""
	}
	best, prio := "", -1
	for _, c := range h.Crypto {
		if c.Name == "xts(aes)" && c.Priority > prio {
			best, prio = c.Driver, c.Priority
		}
	}
	return best
}

func (d *diffs) host(a, b *snapshot.Snapshot) {
	d.add(AreaCPUCrypto, "CPU crypto flags", aesFlags(a.Host), aesFlags(b.Host))
	d.add(AreaCPUCrypto, "xts(aes) driver", aesDriver(a.Host), aesDriver(b.Host))
	get := func(h *snapshot.Host, f func(*snapshot.Host) string) string {
		if h == nil {
			return ""
		}
		return f(h)
	}
	d.add(AreaKernel, "kernel", get(a.Host, func(h *snapshot.Host) string { return h.KernelRelease }), get(b.Host, func(h *snapshot.Host) string { return h.KernelRelease }))
	d.add(AreaKernel, "CPU model", get(a.Host, func(h *snapshot.Host) string { return h.CPUModel }), get(b.Host, func(h *snapshot.Host) string { return h.CPUModel }))
	d.add(AreaKernel, "CPUs", get(a.Host, func(h *snapshot.Host) string { return strconv.Itoa(h.NumCPU) }), get(b.Host, func(h *snapshot.Host) string { return strconv.Itoa(h.NumCPU) }))
}

func (d *diffs) cloud(a, b *snapshot.Cloud) {
	f := func(c *snapshot.Cloud) (provider, itype, eah string) {
		if c == nil {
			return "none", "", ""
		}
		if c.Azure != nil && c.Azure.EncryptionAtHost != nil {
			eah = strconv.FormatBool(*c.Azure.EncryptionAtHost)
		}
		return c.Provider, c.InstanceType, eah
	}
	pa, ia, ea := f(a)
	pb, ib, eb := f(b)
	d.add(AreaCloud, "provider", pa, pb)
	d.add(AreaCloud, "instance type", ia, ib)
	d.add(AreaCloud, "encryption at host", ea, eb)
}

func ringLine(r *snapshot.Ring) string {
	if r == nil {
		return "unsupported"
	}
	return fmt.Sprintf("rx %d/%d tx %d/%d", r.RX, r.RXMax, r.TX, r.TXMax)
}

func (d *diffs) net(a, b *snapshot.Snapshot) {
	rings := func(s *snapshot.Snapshot) map[string]string {
		m := map[string]string{}
		if s.Net == nil {
			return m
		}
		for _, i := range s.Net.Interfaces {
			if i.Name == "lo" {
				continue
			}
			m[i.Name] = ringLine(i.Ring)
		}
		return m
	}
	sysctls := func(s *snapshot.Snapshot) map[string]string {
		m := map[string]string{}
		if s.Net == nil {
			return m
		}
		for k, v := range s.Net.Sysctls {
			m[k] = strconv.FormatInt(v, 10)
		}
		return m
	}
	pairs := func(area Area, suffix string, ma, mb map[string]string) {
		for k := range keysOfEither(ma, mb) {
			d.add(area, k+suffix, ma[k], mb[k])
		}
	}
	pairs(AreaRing, " ring (current/max)", rings(a), rings(b))
	// Without a network section on one side every sysctl would differ:
	// that is one fact, said once.
	if (a.Net == nil) != (b.Net == nil) {
		d.add(AreaSysctl, "network section", present(a.Net != nil), present(b.Net != nil))
		return
	}
	pairs(AreaSysctl, "", sysctls(a), sysctls(b))
}

func present(b bool) string {
	if b {
		return "collected"
	}
	return "not collected"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// keysOfEither is the set of keys in a, b or both.
func keysOfEither[K comparable, V any](a, b map[K]V) map[K]bool {
	keys := make(map[K]bool, len(a)+len(b))
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	return keys
}
