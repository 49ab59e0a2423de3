package comparison

import (
	"fmt"
	"strings"

	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/safetext"
)

// StorageFacts turns the doctor model of a target's storage path into the
// facts a comparison lists when they differ: filesystem, encryption layers
// and where each runs, a database engine's own encryption settings, dm-crypt cipher, sector size and flags, the
// scheduler of each disk, and the cloud disk.
func StorageFacts(p storagemodel.Path) []Fact { return storageFacts(p, "") }

// storageFacts is StorageFacts with top, when set, counted as one more
// encryption layer above the path's: a bench result's database engine,
// which the storage model of its target does not hold (engineLayer).
func storageFacts(p storagemodel.Path, top string) []Fact {
	var out []Fact
	add := func(k, v string) { out = append(out, Fact{Key: k, Value: v}) }
	var enc []string
	layers := p.EncryptionLayers
	if top != "" {
		enc = append(enc, top)
		layers++
	}
	for _, l := range p.EncryptionChain() {
		if l.Kind == storagemodel.LayerEngine {
			// The database's own encryption, named: the four-way table
			// (none, engine, LUKS, both) tells its sides apart by it.
			enc = append(enc, fmt.Sprintf("%s (%s)", l.Name, l.EncryptedBy))
			continue
		}
		enc = append(enc, fmt.Sprintf("%s (%s)", l.Kind, l.EncryptedBy))
	}
	n := fmt.Sprint(layers)
	if len(enc) > 0 {
		n += ": " + strings.Join(enc, ", ")
	}
	if p.UnknownEncryptionLayers > 0 {
		n += fmt.Sprintf(" (+%d unknown from inside)", p.UnknownEncryptionLayers)
	}
	var devs, sched []string
	for _, l := range p.Layers {
		switch {
		case l.Kind == storagemodel.LayerFilesystem:
			add("filesystem", l.FSType)
		case l.Kind == storagemodel.LayerDMCrypt && l.Crypt != nil:
			c := l.Crypt
			flags := "none"
			if f := c.Flags(); len(f) > 0 {
				flags = strings.Join(f, " ")
			}
			// Flags() names a non-default sector size (sector_size:4096) itself.
			add("dm-crypt "+l.Name, fmt.Sprintf("%s, flags: %s", c.CipherSpec, flags))
		case l.Kind == storagemodel.LayerCloud && l.Cloud != nil:
			add("cloud disk", l.Cloud.Provider+" "+l.Cloud.Role)
		case l.Kind == storagemodel.LayerEngine:
			var set []string
			for _, e := range l.Engines {
				for _, st := range e.Settings {
					set = append(set, st.Setting+"="+st.Value)
				}
			}
			add("engine encryption", safetext.Clean(l.Name+": "+strings.Join(set, " ")))
		}
		if l.Queue != nil && l.Queue.Scheduler != "" && (l.Kind == storagemodel.LayerDisk || strings.HasPrefix(l.Kind, "dm-")) {
			sched = append(sched, l.Name+" "+l.Queue.Scheduler)
		}
		if l.Kind == storagemodel.LayerDisk || l.Kind == storagemodel.LayerRAM || l.Kind == storagemodel.LayerZram || l.Kind == storagemodel.LayerLoop {
			devs = append(devs, l.Kind+" "+l.Name)
		}
	}
	add("encryption layers", n)
	if len(devs) > 0 {
		add("devices", strings.Join(devs, ", "))
	}
	if len(sched) > 0 {
		add("schedulers", strings.Join(sched, ", "))
	}
	return out
}
