package storagemodel

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// LayerEngine is a database engine encrypting its own files (InnoDB's,
// WiredTiger's, pg_tde's encryption) above the filesystem that holds them.
const LayerEngine = "engine"

// ByServiceCPU is where an engine layer's encryption runs: in the database
// server's own threads on this machine's CPUs. It costs CPU like
// kernel-cpu, but the service's, not kcryptd's, so no dm-crypt flag moves
// or removes it.
const ByServiceCPU = "service-cpu"

// EngineProcess is one database process encrypting files of a path: the
// settings of snapshot.Engines that are on and hold data on it.
type EngineProcess struct {
	Engine    string `json:"engine"` // snapshot.Engine* constants
	Product   string `json:"product,omitempty"`
	PID       int    `json:"pid"`
	Comm      string `json:"comm"`
	Container string `json:"container,omitempty"`
	// DataDir is the engine's data directory as the process sees it.
	DataDir string `json:"data_dir,omitempty"`
	// Path is the directory the settings apply to, as the process sees
	// it: its data directory, or a setting's own path (a ClickHouse
	// encrypted disk).
	Path string `json:"path,omitempty"`
	// Settings are the engine's settings that encrypt on this path.
	Settings []snapshot.EngineEncryption `json:"settings"`
}

// engineNames are what doctor calls each engine's own encryption.
var engineNames = map[string]string{
	snapshot.EngineMariaDB:     "MariaDB InnoDB",
	snapshot.EngineMySQL:       "MySQL InnoDB",
	snapshot.EngineMongoDB:     "MongoDB WiredTiger",
	snapshot.EnginePostgreSQL:  "PostgreSQL pg_tde",
	snapshot.EngineClickHouse:  "ClickHouse encrypted disk",
	snapshot.EngineCockroachDB: "CockroachDB encryption at rest",
}

// EngineName names an engine's encryption for people ("MariaDB InnoDB").
func EngineName(engine string) string {
	if n, ok := engineNames[engine]; ok {
		return n
	}
	return engine + " encryption"
}

// Covers lists, once each and sorted, what the process's settings encrypt.
func (e *EngineProcess) Covers() []string {
	var out []string
	for _, s := range e.Settings {
		for _, c := range s.Covers {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out
}

// KeyManagers lists, once each, the key manager kinds its settings name.
func (e *EngineProcess) KeyManagers() []string {
	var out []string
	for _, s := range e.Settings {
		if s.KeyManager != "" && !slices.Contains(out, s.KeyManager) {
			out = append(out, s.KeyManager)
		}
	}
	sort.Strings(out)
	return out
}

// engineLayers puts an engine layer at the top of each path holding files
// an engine encrypts, found by the major:minor of the path's filesystem.
// An engine's data on no path is a problem, never dropped silently; an
// engine that encrypts nothing adds no layer.
func (b *builder) engineLayers(paths []Path) {
	if b.s.Engines == nil {
		return
	}
	// byDev: the processes encrypting on each major:minor, in snapshot order.
	byDev := map[string][]EngineProcess{}
	var devs []string
	for _, e := range b.s.Engines.Processes {
		groups := map[string]*EngineProcess{}
		var order []string
		for _, s := range e.Encryption {
			if !s.Enabled {
				continue
			}
			dev, where := e.DataDev, e.DataDir
			if s.Path != "" {
				dev, where = s.Dev, s.Path
			}
			if dev == "" {
				b.problem(safetext.Clean(fmt.Sprintf("engine %s: %s encrypts %s, whose device is unknown: its encryption layer is not counted",
					engineWho(e), s.Setting, orUnknown(where))))
				continue
			}
			g := groups[dev]
			if g == nil {
				g = &EngineProcess{Engine: e.Engine, Product: e.Product, PID: e.PID, Comm: e.Comm,
					Container: e.Container, DataDir: e.DataDir, Path: where}
				groups[dev] = g
				order = append(order, dev)
			}
			g.Settings = append(g.Settings, s)
		}
		for _, dev := range order {
			if _, ok := byDev[dev]; !ok {
				devs = append(devs, dev)
			}
			byDev[dev] = append(byDev[dev], *groups[dev])
		}
	}
	for _, dev := range devs {
		procs := byDev[dev]
		i := pathOfFilesystem(paths, dev)
		if i < 0 {
			for _, pr := range procs {
				why := "no storage path holds it"
				if ms := b.mounts[dev]; len(ms) > 0 && isVirtualMajMin(dev) {
					why = fmt.Sprintf("the %s filesystem at %s, which the storage model does not follow to a block device",
						orUnknown(ms[0].FSType), ms[0].MountPoint)
				} else if isVirtualMajMin(dev) {
					why = "a filesystem without a block device (overlay, tmpfs, a btrfs subvolume)"
				}
				b.problem(safetext.Clean(fmt.Sprintf("engine %s: %s is on device %s, %s: its encryption layer is not counted",
					engineWho(snapshot.Engine{Engine: pr.Engine, PID: pr.PID, Comm: pr.Comm, Container: pr.Container}),
					orUnknown(pr.Path), dev, why)))
			}
			continue
		}
		p := &paths[i]
		for j := range p.Layers {
			p.Layers[j].Depth++
		}
		p.Layers = append([]Layer{engineLayer(procs)}, p.Layers...)
		finish(p)
	}
}

// engineLayer is the one layer the engines on a path make: each encrypts
// its own files, so a block is encrypted by one of them at most, and
// several engines on one filesystem are one layer of the path.
func engineLayer(procs []EngineProcess) Layer {
	var names, notes []string
	for _, pr := range procs {
		n := EngineName(pr.Engine)
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
		note := fmt.Sprintf("%s (pid %d) encrypts %s of %s in its own threads",
			orUnknown(pr.Comm), pr.PID, orNothing(strings.Join(pr.Covers(), ", ")), orUnknown(pr.Path))
		if pr.Container != "" {
			note += ", in container " + pr.Container
		}
		if km := pr.KeyManagers(); len(km) > 0 {
			note += "; keys: " + strings.Join(km, ", ")
		}
		notes = append(notes, note)
	}
	// Comm and paths are the host's data: cleaned where they become text.
	return Layer{Kind: LayerEngine, Name: safetext.Clean(strings.Join(names, " + ")), Encrypted: true, EncryptedBy: ByServiceCPU,
		Engines: procs, Note: safetext.Clean(strings.Join(notes, "; "))}
}

// pathOfFilesystem finds the mounted path whose filesystem is dev.
func pathOfFilesystem(paths []Path, dev string) int {
	for i, p := range paths {
		if p.MountPoint == "" {
			continue
		}
		for _, l := range p.Layers {
			if l.Kind == LayerFilesystem {
				if l.MajorMinor == dev {
					return i
				}
				break // the path's own filesystem is its first
			}
		}
	}
	return -1
}

// engineWho names a process for a problem: "mariadb (pid 4242, mariadbd)".
func engineWho(e snapshot.Engine) string {
	s := fmt.Sprintf("%s (pid %d, %s", e.Engine, e.PID, orUnknown(e.Comm))
	if e.Container != "" {
		s += ", container " + e.Container
	}
	return s + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "?"
	}
	return s
}

func orNothing(s string) string {
	if s == "" {
		return "files"
	}
	return s
}
