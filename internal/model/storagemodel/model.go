// Package storagemodel builds the storage data-path model from a snapshot: for
// every mounted filesystem and unmounted block device, the chain of layers
// down to hardware and cloud, and how many of them encrypt. It is pure: no I/O.
package storagemodel

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"github.com/slowpath/slowpath/internal/snapshot"
)

// Model is the storage data path of one host.
type Model struct {
	Paths []Path `json:"paths"`
	// Problems names what the snapshot lacked or got wrong, so a partial
	// model says where it is partial.
	Problems []string `json:"problems,omitempty"`
}

// Path is one filesystem or unmounted device and everything beneath it.
type Path struct {
	MountPoint string `json:"mountpoint,omitempty"`
	Device     string `json:"device,omitempty"`
	// AlsoMountedAt lists further mount points of the same filesystem (bind mounts).
	AlsoMountedAt []string `json:"also_mounted_at,omitempty"`
	// EncryptionLayers counts encrypting layers on the deepest chain of this
	// path (branches such as RAID legs are counted per chain, not summed).
	EncryptionLayers int `json:"encryption_layers"`
	// UnknownEncryptionLayers counts layers whose encryption cannot be known
	// from inside (e.g. EBS); they are not in EncryptionLayers.
	UnknownEncryptionLayers int     `json:"unknown_encryption_layers,omitempty"`
	Layers                  []Layer `json:"layers"`
	// Incomplete says why the chain stops early, when it does.
	Incomplete []string `json:"incomplete,omitempty"`
	// Empty marks an unmounted device of size 0: a detached loop device, an
	// uninitialised zram device, an empty drive bay. Listed, not analysed.
	Empty bool `json:"empty,omitempty"`
}

// Subject is how findings name the path: its mount point or /dev name.
func (p *Path) Subject() string {
	if p.MountPoint != "" {
		return p.MountPoint
	}
	return "/dev/" + p.Device
}

// Layer kinds.
const (
	LayerFilesystem = "filesystem"
	LayerFscrypt    = "fscrypt"
	LayerDMCrypt    = "dm-crypt"
	LayerLoop       = "loop"
	LayerMD         = "md"
	LayerPartition  = "partition"
	LayerDisk       = "disk"
	LayerZram       = "zram"
	LayerRAM        = "ram"
	LayerCloud      = "cloud-disk"
	LayerMissing    = "missing"
	// LayerEngine (engine.go) is a database engine encrypting its own
	// files above the filesystem.
	// LayerUserspace is a block device served by a process (an NVMe over
	// Fabrics target, a ublk server) that may encrypt out of the kernel's
	// sight; see userspace.go.
	LayerUserspace = "user-space-target"
	// Other device-mapper targets are "dm-<target>", e.g. dm-linear.
)

// Layer is one step of a path, top (filesystem) first.
type Layer struct {
	Kind      string `json:"kind"` // see the Layer constants; dm targets are dm-<type>
	Name      string `json:"name"`
	Encrypted bool   `json:"encrypted"`
	// EncryptedBy says where encryption of this layer runs: "service-cpu",
	// "kernel-cpu", "hypervisor-host", "drive", "cloud-storage-service".
	EncryptedBy string `json:"encrypted_by,omitempty"`
	// EncryptionUnknown is set when the layer may encrypt but this cannot be
	// seen from inside the machine (Note says how to find out).
	EncryptionUnknown bool `json:"encryption_unknown,omitempty"`
	// Depth is 0 for the top layer; a layer is built on the next layer
	// below with Depth+1 (branches such as RAID legs share a depth).
	Depth      int    `json:"depth"`
	Device     string `json:"device,omitempty"` // kernel name: dm-0, sda1, loop3
	MajorMinor string `json:"major_minor,omitempty"`
	SizeBytes  uint64 `json:"size_bytes,omitempty"`

	FSType    string            `json:"fstype,omitempty"`
	Fscrypt   *snapshot.Fscrypt `json:"fscrypt,omitempty"`
	DMUUID    string            `json:"dm_uuid,omitempty"`
	DMTargets []string          `json:"dm_targets,omitempty"` // target types when a table mixes them
	Crypt     *Crypt            `json:"crypt,omitempty"`
	// LUKS is the header beneath a LUKS mapping, as collected: what opens
	// the volume (snapshot.LUKSHeader).
	LUKS *snapshot.LUKSHeader `json:"luks,omitempty"`
	// InferredCrypt is set on a dm layer whose table was not read but whose
	// uuid names a cryptsetup dm-crypt mapping: dm-crypt for the tax span
	// only; the layer stays EncryptionUnknown.
	InferredCrypt *InferredCrypt     `json:"inferred_crypt,omitempty"`
	BackingFile   string             `json:"backing_file,omitempty"`
	DirectIO      bool               `json:"direct_io,omitempty"`
	MDLevel       string             `json:"md_level,omitempty"`
	Queue         *snapshot.Queue    `json:"queue,omitempty"`
	Ident         *snapshot.Identity `json:"identity,omitempty"`
	Cloud         *CloudDisk         `json:"cloud,omitempty"`
	// Engines are the database processes of an engine layer (engine.go).
	Engines []EngineProcess `json:"engines,omitempty"`
	Note    string          `json:"note,omitempty"`
}

// NonRotational reports whether the layer's queue says it is solid state or
// RAM; false when unknown.
func (l *Layer) NonRotational() bool {
	if l.Kind == LayerZram || l.Kind == LayerRAM {
		return true
	}
	return l.Queue != nil && l.Queue.Rotational != nil && !*l.Queue.Rotational
}

// maxDepth bounds chain walking: real stacks are a handful of layers deep;
// anything deeper is a malformed snapshot, not a storage stack.
const maxDepth = 64

// maxLayers bounds one path's layers: devices shared by many branches can
// make a malformed snapshot's tree exponentially large.
const maxLayers = 4096

type builder struct {
	s        *snapshot.Snapshot
	byName   map[string]*snapshot.BlockDevice
	byMajMin map[string]*snapshot.BlockDevice
	// mounts by major:minor, best (shortest mount point) first
	mounts   map[string][]*snapshot.Mount
	problems map[string]bool
	// partitioned holds the names of disks that have partitions.
	partitioned map[string]bool
}

// Build derives the model from a snapshot. It never fails on odd content:
// what cannot be followed ends the chain with a "missing" layer and is named
// in Path.Incomplete and Model.Problems.
func Build(s *snapshot.Snapshot) *Model {
	m := &Model{Paths: []Path{}}
	if s == nil || s.Storage == nil {
		if s != nil {
			m.Problems = append(m.Problems, "snapshot has no storage section")
		}
		return m
	}
	b := newBuilder(s)
	mounted := map[string]bool{}
	m.Paths = append(m.Paths, b.mountedPaths(mounted)...)
	m.Paths = append(m.Paths, b.unmountedPaths(mounted)...)
	b.engineLayers(m.Paths)
	sort.SliceStable(m.Paths, func(i, j int) bool {
		a, c := m.Paths[i], m.Paths[j]
		if (a.MountPoint == "") != (c.MountPoint == "") {
			return a.MountPoint != ""
		}
		if a.Empty != c.Empty {
			return c.Empty
		}
		if a.MountPoint != c.MountPoint {
			return a.MountPoint < c.MountPoint
		}
		return a.Device < c.Device
	})
	for pr := range b.problems {
		m.Problems = append(m.Problems, pr)
	}
	sort.Strings(m.Problems)
	return m
}

// newBuilder indexes the block devices of s by name and major:minor, and
// its mounts by major:minor, best first.
func newBuilder(s *snapshot.Snapshot) *builder {
	b := &builder{s: s, byName: map[string]*snapshot.BlockDevice{}, byMajMin: map[string]*snapshot.BlockDevice{},
		mounts: map[string][]*snapshot.Mount{}, problems: map[string]bool{}, partitioned: map[string]bool{}}
	for i := range s.Storage.BlockDevices {
		d := &s.Storage.BlockDevices[i]
		if d.Name == "" {
			b.problem("a block device without a name was skipped")
			continue
		}
		if _, dup := b.byName[d.Name]; dup {
			b.problem("block device " + d.Name + " listed twice; the first entry is used")
			continue
		}
		b.byName[d.Name] = d
		if d.Kind == snapshot.KindPartition && d.Parent != "" {
			b.partitioned[d.Parent] = true
		}
		if d.MajorMinor != "" {
			b.byMajMin[d.MajorMinor] = d
		}
	}
	for i := range s.Storage.Mounts {
		mt := &s.Storage.Mounts[i]
		b.mounts[mt.MajorMinor] = append(b.mounts[mt.MajorMinor], mt)
	}
	for k := range b.mounts {
		ms := b.mounts[k]
		sort.SliceStable(ms, func(i, j int) bool {
			// Prefer the mount of the filesystem root, then the shortest path.
			ri, rj := ms[i].Root == "/", ms[j].Root == "/"
			if ri != rj {
				return ri
			}
			if len(ms[i].MountPoint) != len(ms[j].MountPoint) {
				return len(ms[i].MountPoint) < len(ms[j].MountPoint)
			}
			return ms[i].MountPoint < ms[j].MountPoint
		})
	}
	return b
}

// mountedPaths walks each block-backed filesystem down to its devices,
// recording in mounted the devices that carry one.
func (b *builder) mountedPaths(mounted map[string]bool) []Path {
	var paths []Path
	keys := make([]string, 0, len(b.mounts))
	for k := range b.mounts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, mm := range keys {
		ms := b.mounts[mm]
		if isVirtualMajMin(mm) {
			continue
		}
		d := b.byMajMin[mm]
		if d == nil && !b.looksBlockBacked(ms[0]) {
			continue // e.g. a network filesystem with an anonymous device number
		}
		p := Path{MountPoint: ms[0].MountPoint}
		for _, o := range ms[1:] {
			p.AlsoMountedAt = append(p.AlsoMountedAt, o.MountPoint)
		}
		b.walkMount(&p, ms[0], 0, map[string]bool{"mount:" + mm: true})
		if d != nil {
			mounted[d.Name] = true
		}
		finish(&p)
		paths = append(paths, p)
	}
	return paths
}

// unmountedPaths are the unmounted, non-empty block devices that nothing
// is built on, and the empty ones as one-layer paths.
func (b *builder) unmountedPaths(mounted map[string]bool) []Path {
	var paths []Path
	for i := range b.s.Storage.BlockDevices {
		d := &b.s.Storage.BlockDevices[i]
		if mounted[d.Name] || len(d.Holders) > 0 || b.hasPartitions(d.Name) {
			continue
		}
		if b.byName[d.Name] != d {
			continue // duplicate entry
		}
		p := Path{Device: d.Name}
		if d.SizeBytes == 0 {
			p.Empty = true
			p.Layers = []Layer{{Kind: layerKind(d.Kind), Name: d.Name, Device: d.Name, MajorMinor: d.MajorMinor, Note: emptyNote(d)}}
			paths = append(paths, p)
			continue
		}
		b.walkDevice(&p, d, 0, map[string]bool{})
		finish(&p)
		paths = append(paths, p)
	}
	return paths
}

func (b *builder) problem(s string) { b.problems[s] = true }

// layerKind maps a snapshot device kind to a layer kind.
func layerKind(k string) string {
	switch k {
	case snapshot.KindDM:
		return "dm"
	case "":
		return snapshot.KindOther
	}
	return k // disk, partition, md, loop, zram, ram share their names
}

func emptyNote(d *snapshot.BlockDevice) string {
	switch d.Kind {
	case snapshot.KindLoop:
		return "detached, no backing file"
	case snapshot.KindZram:
		return "not initialised, disksize 0"
	}
	return "size 0"
}

// isVirtualMajMin is true for major 0: the kernel's anonymous block devices
// used by tmpfs, proc, overlay, btrfs subvolumes and network filesystems.
func isVirtualMajMin(mm string) bool { return strings.HasPrefix(mm, "0:") }

// looksBlockBacked guesses whether a mount whose device is not in the
// snapshot should have been: its source is a /dev path.
func (b *builder) looksBlockBacked(mt *snapshot.Mount) bool {
	return strings.HasPrefix(mt.Source, "/dev/")
}

func (b *builder) hasPartitions(name string) bool { return b.partitioned[name] }

// walkMount adds the filesystem (and fscrypt) layers of mt, then its device chain.
func (b *builder) walkMount(p *Path, mt *snapshot.Mount, depth int, seen map[string]bool) {
	if mt.Fscrypt != nil {
		p.Layers = append(p.Layers, Layer{Kind: LayerFscrypt, Name: mt.Fscrypt.ContentsMode, Encrypted: true,
			EncryptedBy: ByKernelCPU, Depth: depth, Fscrypt: mt.Fscrypt,
			Note: "file contents encrypted by the filesystem (fscrypt policy on the mount root)"})
		depth++
	}
	p.Layers = append(p.Layers, Layer{Kind: LayerFilesystem, Name: mt.MountPoint, FSType: mt.FSType,
		Depth: depth, MajorMinor: mt.MajorMinor})
	d := b.byMajMin[mt.MajorMinor]
	if d == nil {
		b.missing(p, depth+1, fmt.Sprintf("device %s of mount %s is not in the snapshot", mt.MajorMinor, mt.MountPoint))
		return
	}
	b.walkDevice(p, d, depth+1, seen)
}

func (b *builder) missing(p *Path, depth int, why string) {
	p.Layers = append(p.Layers, Layer{Kind: LayerMissing, Name: "?", Depth: depth, Note: why})
	p.Incomplete = append(p.Incomplete, why)
	b.problem(why)
}

// walkDevice adds d and everything below it. seen holds the devices on the
// current chain: meeting one again is a cycle, which ends the chain.
func (b *builder) walkDevice(p *Path, d *snapshot.BlockDevice, depth int, seen map[string]bool) {
	if seen[d.Name] {
		b.missing(p, depth, "cycle: "+d.Name+" is built on itself")
		return
	}
	if depth > maxDepth {
		b.missing(p, depth, fmt.Sprintf("stack deeper than %d layers below %s", maxDepth, d.Name))
		return
	}
	if len(p.Layers) >= maxLayers {
		if last := p.Layers[len(p.Layers)-1]; last.Kind != LayerMissing {
			b.missing(p, depth, fmt.Sprintf("more than %d layers: the rest of the tree is not shown", maxLayers))
		}
		return
	}
	seen[d.Name] = true
	defer delete(seen, d.Name)

	l := Layer{Name: d.Name, Device: d.Name, MajorMinor: d.MajorMinor, SizeBytes: d.SizeBytes, Depth: depth, Queue: d.Queue}
	switch d.Kind {
	case snapshot.KindDM:
		b.dmLayer(p, &l, d)
	case snapshot.KindMD:
		l.Kind = LayerMD
		if d.MD != nil {
			l.MDLevel = d.MD.Level
		}
	case snapshot.KindLoop:
		l.Kind = LayerLoop
		if d.Loop != nil {
			l.BackingFile, l.DirectIO = d.Loop.BackingFile, d.Loop.DirectIO
		}
	case snapshot.KindPartition:
		l.Kind = LayerPartition
	case snapshot.KindZram:
		l.Kind, l.Note = LayerZram, "compressed RAM"
	case snapshot.KindRAM:
		l.Kind, l.Note = LayerRAM, "RAM disk (brd)"
	case snapshot.KindDisk:
		l.Kind, l.Ident = LayerDisk, d.Ident
	default:
		l.Kind = d.Kind
		if l.Kind == "" {
			l.Kind = snapshot.KindOther
		}
		l.Ident = d.Ident
	}
	p.Layers = append(p.Layers, l)

	switch d.Kind {
	case snapshot.KindPartition:
		parent := d.Parent
		if parent == "" && len(d.Slaves) == 1 {
			parent = d.Slaves[0]
		}
		pd := b.byName[parent]
		if pd == nil {
			b.missing(p, depth+1, fmt.Sprintf("partition %s: whole disk %q is not in the snapshot", d.Name, parent))
			return
		}
		b.walkDevice(p, pd, depth+1, seen)
		return
	case snapshot.KindLoop:
		b.walkLoop(p, d, depth+1, seen)
		return
	case snapshot.KindDisk:
		if !b.userspaceLayer(p, d, depth+1) {
			b.cloudLayer(p, d, depth+1)
		}
	}
	for _, s := range d.Slaves {
		sd := b.byName[s]
		if sd == nil {
			b.missing(p, depth+1, fmt.Sprintf("%s is built on %s, which is not in the snapshot", d.Name, s))
			continue
		}
		b.walkDevice(p, sd, depth+1, seen)
	}
}

// dmLayer fills a device-mapper layer from its table.
func (b *builder) dmLayer(p *Path, l *Layer, d *snapshot.BlockDevice) {
	l.Kind = "dm"
	if d.DM == nil {
		l.Note = "device-mapper table not collected"
		p.Incomplete = append(p.Incomplete, d.Name+": device-mapper table not collected")
		return
	}
	if d.DM.Name != "" {
		l.Name = d.DM.Name
	}
	l.DMUUID = d.DM.UUID
	l.LUKS = d.DM.LUKS
	if d.DM.TableNotRead != "" {
		// Unknown, not empty: the layer may encrypt (a CRYPT- uuid says
		// it does, but not how), and the chain is a lower bound.
		l.Note = "device-mapper table not read: " + d.DM.TableNotRead
		l.EncryptionUnknown = true
		if ic := inferCrypt(d.DM.UUID, d.DM.TableNotRead); ic != nil {
			l.InferredCrypt = ic
			l.Note += "; its uuid names a cryptsetup " + ic.Type + " mapping, taken as dm-crypt for dmcrypt.tax only"
		}
		p.Incomplete = append(p.Incomplete, d.Name+": device-mapper table not read")
		return
	}
	types := map[string]bool{}
	for _, t := range d.DM.Targets {
		types[t.Type] = true
	}
	switch len(types) {
	case 0:
		l.Note = "device-mapper table is empty"
		return
	case 1:
		for t := range types {
			l.Kind = "dm-" + t
		}
	default:
		for t := range types {
			l.DMTargets = append(l.DMTargets, t)
		}
		sort.Strings(l.DMTargets)
		l.Note = "table mixes target types"
	}
	// A crypt target makes the whole device an encryption layer; the first
	// crypt line describes it (multi-line crypt tables share one cipher in
	// practice; differing lines are reported).
	for _, t := range d.DM.Targets {
		if t.Type != "crypt" {
			continue
		}
		c, err := ParseCryptParams(t.Params)
		if err != nil {
			why := fmt.Sprintf("%s (%s): %v", d.Name, l.Name, err)
			l.Note = "crypt table could not be read: " + err.Error()
			p.Incomplete = append(p.Incomplete, why)
			b.problem(why)
			// It is still a crypt target: encryption happens, details unknown.
			l.Kind, l.Encrypted, l.EncryptedBy = LayerDMCrypt, true, ByKernelCPU
			return
		}
		if l.Crypt != nil {
			if l.Crypt.CipherSpec != c.CipherSpec || l.Crypt.SectorSize != c.SectorSize {
				l.Note = "crypt table lines differ; the first is shown"
			}
			continue
		}
		l.Kind, l.Crypt, l.Encrypted, l.EncryptedBy = LayerDMCrypt, c, true, ByKernelCPU
	}
}

// walkLoop follows a loop device's backing file to the filesystem holding it.
func (b *builder) walkLoop(p *Path, d *snapshot.BlockDevice, depth int, seen map[string]bool) {
	if d.Loop == nil || d.Loop.BackingFile == "" {
		b.missing(p, depth, "loop device "+d.Name+": backing file not collected")
		return
	}
	// A loop device over a block device node continues with that device.
	if bb := d.Loop.BackingBlockDevice; bb != "" {
		bd := b.byMajMin[bb]
		if bd == nil {
			b.missing(p, depth, fmt.Sprintf("loop device %s: backing block device %s is not in the snapshot", d.Name, bb))
			return
		}
		b.walkDevice(p, bd, depth, seen)
		return
	}
	mm := d.Loop.BackingDevice
	var mt *snapshot.Mount
	if ms := b.mounts[mm]; mm != "" && len(ms) > 0 {
		mt = ms[0]
	} else {
		mt = b.mountHolding(d.Loop.BackingFile)
	}
	if mt == nil {
		b.missing(p, depth, fmt.Sprintf("loop device %s: no mount holds backing file %s", d.Name, d.Loop.BackingFile))
		return
	}
	if isVirtualMajMin(mt.MajorMinor) {
		p.Layers = append(p.Layers, Layer{Kind: LayerFilesystem, Name: mt.MountPoint, FSType: mt.FSType, Depth: depth,
			MajorMinor: mt.MajorMinor, Note: "backing file lives on a filesystem without a block device"})
		return
	}
	key := "mount:" + mt.MajorMinor
	if seen[key] {
		b.missing(p, depth, fmt.Sprintf("cycle: loop device %s is backed by a file on a filesystem it is part of", d.Name))
		return
	}
	seen[key] = true
	defer delete(seen, key)
	b.walkMount(p, mt, depth, seen)
}

// mountHolding finds the mount with the longest mount point that is a
// prefix of file: used when the snapshot lacks the backing device number.
func (b *builder) mountHolding(file string) *snapshot.Mount {
	file = strings.TrimSuffix(file, " (deleted)")
	var best *snapshot.Mount
	for i := range b.s.Storage.Mounts {
		mt := &b.s.Storage.Mounts[i]
		mp := path.Clean(mt.MountPoint)
		if mp == "/" || file == mp || strings.HasPrefix(file, mp+"/") {
			if best == nil || len(mp) > len(path.Clean(best.MountPoint)) {
				best = mt
			}
		}
	}
	return best
}

// cloudLayer appends what the cloud table says about a whole disk, one
// layer per platform encryption, nearest the VM first.
func (b *builder) cloudLayer(p *Path, d *snapshot.BlockDevice, depth int) {
	for i, cd := range lookupCloudDisk(b.s.Cloud, d) {
		l := Layer{Kind: LayerCloud, Name: cd.Provider + " " + cd.Role, Depth: depth + i, Cloud: cd, Note: cd.Note}
		switch {
		case cd.Encrypted == nil:
			l.EncryptionUnknown = true
			l.EncryptedBy = cd.EncryptedBy
		case *cd.Encrypted:
			l.Encrypted, l.EncryptedBy = true, cd.EncryptedBy
		}
		if !l.Encrypted {
			l.EncryptedBy = ""
		}
		p.Layers = append(p.Layers, l)
	}
}

// finish counts encryption layers per chain: the layers from the top to
// each leaf, where a leaf is a layer not followed by a deeper one.
func finish(p *Path) {
	known, unknown := 0, 0
	// ks[d], us[d]: known and unknown counts from the top down to the
	// current chain's layer at depth d, inclusive.
	var ks, us []int
	for i, l := range p.Layers {
		d := min(l.Depth, len(ks))
		ks, us = ks[:d], us[:d]
		k, u := 0, 0
		if d > 0 {
			k, u = ks[d-1], us[d-1]
		}
		if l.Encrypted {
			k++
		}
		if l.EncryptionUnknown {
			u++
		}
		ks, us = append(ks, k), append(us, u)
		leaf := i == len(p.Layers)-1 || p.Layers[i+1].Depth <= l.Depth
		if leaf && (k > known || (k == known && u > unknown)) {
			known, unknown = k, u
		}
	}
	p.EncryptionLayers, p.UnknownEncryptionLayers = known, unknown
}

// EncryptionChain returns the encrypting layers on the chain that gave
// EncryptionLayers, top first.
func (p *Path) EncryptionChain() []Layer {
	return p.chainOf(func(l *Layer) bool { return l.Encrypted })
}

// chainOf returns the layers that satisfy in on the chain with the most
// of them, top first.
func (p *Path) chainOf(in func(*Layer) bool) []Layer {
	// Indices, not copies of the layers: this runs per path on every
	// agent scrape, and a Layer is large.
	var cur, best, enc []int
	for i := range p.Layers {
		l := &p.Layers[i]
		for len(cur) > 0 && p.Layers[cur[len(cur)-1]].Depth >= l.Depth {
			cur = cur[:len(cur)-1]
		}
		cur = append(cur, i)
		leaf := i == len(p.Layers)-1 || p.Layers[i+1].Depth <= l.Depth
		if leaf {
			enc = enc[:0]
			for _, c := range cur {
				if in(&p.Layers[c]) {
					enc = append(enc, c)
				}
			}
			if len(enc) > len(best) {
				best = append(best[:0], enc...)
			}
		}
	}
	if len(best) == 0 {
		return nil
	}
	out := make([]Layer, len(best))
	for k, i := range best {
		out[k] = p.Layers[i]
	}
	return out
}

// Leaves returns the bottom layers of every chain (disks, RAM devices, missing).
func (p *Path) Leaves() []Layer {
	var out []Layer
	for i, l := range p.Layers {
		if i == len(p.Layers)-1 || p.Layers[i+1].Depth <= l.Depth {
			out = append(out, l)
		}
	}
	return out
}

// Below returns the layers under the layer at index i (its subtree), nil
// when none. It is p.Layers' own subslice, not a copy (its capacity ends
// with it, so an append copies): read it, do not write through it.
func (p *Path) Below(i int) []Layer {
	j := i + 1
	for j < len(p.Layers) && p.Layers[j].Depth > p.Layers[i].Depth {
		j++
	}
	if j == i+1 {
		return nil
	}
	return p.Layers[i+1 : j : j]
}
