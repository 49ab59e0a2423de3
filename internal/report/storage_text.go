package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/slowpath/slowpath/internal/analyze"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/units"
)

// writeStorageText prints each path as a chain, top layer first, one layer
// per entry with its facts and, for encrypting layers, where encryption runs.
func writeStorageText(t *textWriter, r *analyze.Report) {
	t.heading("Storage paths")
	if len(r.Storage) == 0 {
		t.printf("  none found\n")
		return
	}
	for _, p := range r.Storage {
		if p.Empty {
			continue
		}
		t.printf("\n")
		t.wrapHanging("  ", "    ", pathHeadline(p))
		var lastID storagemodel.DiskIdentity
		for _, l := range p.Layers {
			indent := strings.Repeat("  ", l.Depth)
			t.wrapHanging("    "+indent+"└ ", "    "+indent+"    ", layerLine(l))
			if l.Encrypted || l.EncryptionUnknown {
				t.wrapHanging("    "+indent+"    ", "    "+indent+"      ", t.encMark(l))
			}
			// How the cloud disk was recognised, once per disk: the
			// drive's layer under the host's shares the identity.
			if l.Cloud != nil && l.Cloud.Identity != nil && *l.Cloud.Identity != lastID {
				id := *l.Cloud.Identity
				lastID = id
				t.wrapHanging("    "+indent+"    ", "    "+indent+"      ", identityLine(id))
				if id.Corroboration != "" {
					t.wrapHanging("    "+indent+"    ", "    "+indent+"      ", "metadata: "+id.Corroboration)
				}
			}
		}
		for _, why := range p.Incomplete {
			t.wrapHanging("    ! ", "      ", "incomplete: "+why)
		}
	}
	if empty := emptyGroups(r.Storage); len(empty) > 0 {
		t.printf("\n")
		t.wrapHanging("  empty devices: ", "    ", strings.Join(empty, "; "))
	}
}

// emptyGroups lists empty devices grouped by kind and reason:
// "loop0 loop1 (loop, detached (no backing file))".
func emptyGroups(paths []storagemodel.Path) []string {
	var keys []string
	names := map[string][]string{}
	for _, p := range paths {
		if !p.Empty {
			continue
		}
		key := "size 0"
		if len(p.Layers) > 0 {
			key = p.Layers[0].Kind + ", " + p.Layers[0].Note
		}
		if _, ok := names[key]; !ok {
			keys = append(keys, key)
		}
		names[key] = append(names[key], p.Device)
	}
	var out []string
	for _, k := range keys {
		out = append(out, strings.Join(names[k], " ")+" ("+k+")")
	}
	return out
}

// pathHeadline is "/data: 2 encryption layers (kernel-cpu, hypervisor-host)".
func pathHeadline(p storagemodel.Path) string {
	subject := p.MountPoint
	if subject == "" {
		subject = "/dev/" + p.Device + " (not mounted)"
	}
	s := fmt.Sprintf("%s: %s", subject, units.Plural(p.EncryptionLayers, "encryption layer"))
	if chain := p.EncryptionChain(); len(chain) > 0 {
		var where []string
		for _, l := range chain {
			where = append(where, l.EncryptedBy)
		}
		s += " (" + strings.Join(where, ", ") + ")"
	}
	if p.UnknownEncryptionLayers > 0 {
		s += fmt.Sprintf(", %d unknown", p.UnknownEncryptionLayers)
	}
	if len(p.AlsoMountedAt) > 0 {
		s += "; also at " + strings.Join(p.AlsoMountedAt, ", ")
	}
	return s
}

// identityLine says which cloud rule named a disk and on what evidence.
func identityLine(id storagemodel.DiskIdentity) string {
	if id.Role == storagemodel.RoleUnidentified {
		return "not identified (rule " + id.Rule + "): " + id.Evidence
	}
	return "identified by " + id.Rule + ": " + id.Evidence
}

func (t *textWriter) encMark(l storagemodel.Layer) string {
	if l.EncryptionUnknown {
		s := unknownMark(l)
		// The note says how to find out; a dm layer's line already
		// carries it (its table was not read), so it is said once.
		if l.Note != "" && !strings.Contains(layerLine(l), l.Note) {
			s += ": " + l.Note
		}
		return t.paint("33", "["+s+"]")
	}
	return t.paint("35;1", "[encrypted by "+l.EncryptedBy+"]")
}

// unknownMark says why a layer's encryption is unknown: a cloud disk's
// cannot be seen from inside the machine; a dm layer's table, in this
// machine, was not read.
func unknownMark(l storagemodel.Layer) string {
	if l.Kind == storagemodel.LayerCloud {
		return "encryption unknown from inside"
	}
	return "encryption unknown"
}

// layerLine is one layer with its facts.
func layerLine(l storagemodel.Layer) string {
	var f []string
	head := l.Kind + " " + l.Name
	switch l.Kind {
	case storagemodel.LayerFilesystem:
		head = l.FSType + " filesystem " + l.Name
		if l.Note != "" {
			f = append(f, l.Note)
		}
	case storagemodel.LayerFscrypt:
		if l.Fscrypt != nil {
			f = append(f, fmt.Sprintf("v%d policy, filenames %s", l.Fscrypt.Version, l.Fscrypt.FilenamesMode))
		}
	case storagemodel.LayerDMCrypt:
		head = "dm-crypt " + l.Name
		if l.Device != "" && l.Device != l.Name {
			head += " (" + l.Device + ")"
		}
		if c := l.Crypt; c != nil {
			f = append(f, c.CipherSpec, fmt.Sprintf("%d-bit key (%s)", c.KeyBits, c.KeySource), fmt.Sprintf("%d B sectors", c.SectorSize))
			flags := "none"
			if fl := c.Flags(); len(fl) > 0 {
				flags = strings.Join(fl, " ")
			}
			f = append(f, "flags: "+flags)
		} else if l.Note != "" {
			f = append(f, l.Note)
		}
	case storagemodel.LayerLoop:
		if l.BackingFile != "" {
			f = append(f, "file "+l.BackingFile)
		}
		if l.DirectIO {
			f = append(f, "direct I/O")
		}
	case storagemodel.LayerMD:
		if l.MDLevel != "" {
			f = append(f, l.MDLevel)
		}
	case storagemodel.LayerCloud:
		if c := l.Cloud; c != nil {
			if c.Algorithm != "" {
				f = append(f, c.Algorithm)
			}
			f = append(f, "fact "+c.Fact)
			if c.Encrypted != nil && !*c.Encrypted && l.Note != "" {
				f = append(f, l.Note)
			}
		}
	case storagemodel.LayerMissing:
		head = "missing"
		if l.Note != "" {
			f = append(f, l.Note)
		}
	default:
		if strings.HasPrefix(l.Kind, "dm") {
			if l.Device != "" && l.Device != l.Name {
				head += " (" + l.Device + ")"
			}
			if len(l.DMTargets) > 0 {
				f = append(f, "targets "+strings.Join(l.DMTargets, "+"))
			}
		}
		if l.Note != "" && l.Kind != storagemodel.LayerZram && l.Kind != storagemodel.LayerRAM {
			f = append(f, l.Note)
		}
	}
	if l.Ident != nil {
		id := l.Ident.Transport
		if m := strings.TrimSpace(l.Ident.Model); m != "" {
			id = strings.TrimSpace(id + " \"" + m + "\"")
		}
		if id != "" {
			f = append(f, id)
		}
	}
	if l.Kind == storagemodel.LayerZram || l.Kind == storagemodel.LayerRAM {
		f = append(f, l.Note)
	}
	f = append(f, queueFacts(l)...)
	if l.SizeBytes > 0 && (l.Kind == storagemodel.LayerDisk || l.Kind == storagemodel.LayerZram || l.Kind == storagemodel.LayerRAM) {
		f = append(f, units.Size(l.SizeBytes))
	}
	if len(f) == 0 {
		return head
	}
	return head + ": " + strings.Join(f, ", ")
}

// queueFacts lists the queue attributes of a device; only for devices that
// do their own queueing (disks, RAM devices), since dm and md report
// inherited values that add nothing.
func queueFacts(l storagemodel.Layer) []string {
	q := l.Queue
	if q == nil || (l.Kind != storagemodel.LayerDisk && l.Kind != storagemodel.LayerZram && l.Kind != storagemodel.LayerRAM) {
		return nil
	}
	var f []string
	if q.Rotational != nil {
		if *q.Rotational {
			f = append(f, "rotational")
		} else {
			f = append(f, "non-rotational")
		}
	}
	if q.LogicalBlockSize > 0 || q.PhysicalBlockSize > 0 {
		f = append(f, fmt.Sprintf("blocks %d/%d B", q.LogicalBlockSize, q.PhysicalBlockSize))
	}
	if q.Scheduler != "" {
		f = append(f, "scheduler "+q.Scheduler)
	}
	if q.NrRequests > 0 {
		f = append(f, "nr_requests "+strconv.Itoa(q.NrRequests))
	}
	if q.ReadAheadKB > 0 {
		f = append(f, "read-ahead "+strconv.Itoa(q.ReadAheadKB)+" KiB")
	}
	return f
}

// visibleLen is the printed width of s: ANSI colour codes take no columns
// and "└" is one column in three bytes.
func visibleLen(s string) int {
	n, esc := 0, false
	for _, r := range s {
		switch {
		case esc:
			if r == 'm' {
				esc = false
			}
		case r == 0x1b:
			esc = true
		default:
			n++
		}
	}
	return n
}

// LayerLine is the one-line description of a layer the text report prints;
// the HTML diagram labels its nodes with it so both say the same.
func LayerLine(l storagemodel.Layer) string { return layerLine(l) }

// UnknownMark is what the text and Markdown reports say of a layer whose
// encryption is unknown; the HTML diagram can say the same.
func UnknownMark(l storagemodel.Layer) string { return unknownMark(l) }
