package storagecheck

import (
	"fmt"
	"slices"
	"strings"

	"github.com/slowpath/slowpath/internal/check"
	"github.com/slowpath/slowpath/internal/model/storagemodel"
	"github.com/slowpath/slowpath/internal/safetext"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// storage.engine-encryption: the database engines found and the encryption
// each does of its own files (InnoDB's, WiredTiger's, pg_tde's). That
// layer runs in the service's threads on this machine's CPUs, above
// everything the block layer shows, so doctor names it apart: which
// settings encrypt what, on which path, on which CPUs. The telemetry
// incident measured WiredTiger's own encryption against LUKS on one
// MongoDB (issue 42). It fires, at info, where an engine encrypts;
// storage.stacked-encryption weighs the layer against the ones below.
func init() {
	check.Register(check.Check{
		ID:       "storage.engine-encryption",
		Title:    "A database engine encrypts its own files on this machine's CPUs",
		Severity: check.Info,
		Run:      runEngineEncryption,
	})
}

func runEngineEncryption(in *check.Input) []check.Finding {
	s := in.Snapshot
	if s == nil || s.Engines == nil || len(s.Engines.Processes) == 0 {
		if s != nil {
			for _, e := range s.Manifest.Errors {
				if strings.HasPrefix(e.Collector, "engine") {
					return []check.Finding{{Status: check.Unknown, Severity: check.Info, Subject: "engines",
						Summary: "database engines not collected: " + safetext.Clean(e.Message)}}
				}
			}
		}
		return []check.Finding{{Status: check.Pass, Subject: "engines", Summary: "no database engine found"}}
	}
	var out []check.Finding
	for _, e := range s.Engines.Processes {
		out = append(out, engineFinding(in.Storage, e))
	}
	return out
}

// engineSubject names an engine stably across restarts (no pid): its
// engine, data directory and container.
func engineSubject(e snapshot.Engine) string {
	s := e.Engine
	if e.DataDir != "" {
		s += " " + e.DataDir
	}
	if e.Container != "" {
		s += " (container " + e.Container + ")"
	}
	return safetext.Clean(s)
}

func engineFinding(m *storagemodel.Model, e snapshot.Engine) check.Finding {
	f := check.Finding{Subject: engineSubject(e), Evidence: settingsEvidence(e)}
	who := fmt.Sprintf("%s (%s, pid %d)", storagemodel.EngineName(e.Engine), safetext.Clean(e.Comm), e.PID)
	var on []snapshot.EngineEncryption
	for _, s := range e.Encryption {
		if s.Enabled {
			on = append(on, s)
		}
	}
	if e.DataDir == "" && e.DataDev == "" {
		f.Status, f.Severity = check.Unknown, check.Info
		f.Summary = who + ": its data directory was not found, so the path its files are on is unknown" + notesSuffix(e)
		return f
	}
	if len(on) == 0 {
		f.Status = check.Pass
		f.Summary = fmt.Sprintf("%s encrypts none of its files itself (%s)", who, orDash(e.DataDir))
		return f
	}
	paths := enginePaths(m, e.PID)
	if len(paths) == 0 {
		f.Status, f.Severity = check.Unknown, check.Info
		f.Summary = fmt.Sprintf("%s encrypts %s, but no storage path holds its data (device %s): "+
			"the layer is not counted on any path%s", who, coverList(on), orDash(e.DataDev), notesSuffix(e))
		return f
	}
	f.Status, f.Severity = check.Fail, check.Info
	var where []string
	for _, p := range paths {
		w := p.Subject()
		if below := belowEngine(p); below != "" {
			w += ", over " + below
		}
		where = append(where, w)
	}
	f.Summary = fmt.Sprintf("%s encrypts %s in its own threads on this machine's CPUs (%s), on %s.",
		who, coverList(on), storagemodel.ByServiceCPU, strings.Join(where, "; "))
	if fact, ok := engineFacts[e.Engine]; ok {
		f.References = []string{fact.ref}
		f.Remediation = "Confirm it from the database (storage.stacked-encryption weighs the\n" +
			"layer against the layers below it):\n  " +
			strings.Join(fact.confirm, "\n    ")
	}
	return f
}

// enginePaths are the model's paths whose engine layer holds pid.
func enginePaths(m *storagemodel.Model, pid int) []*storagemodel.Path {
	if m == nil {
		return nil
	}
	var out []*storagemodel.Path
	for i := range m.Paths {
		p := &m.Paths[i]
		if len(p.Layers) == 0 || p.Layers[0].Kind != storagemodel.LayerEngine {
			continue
		}
		for _, pr := range p.Layers[0].Engines {
			if pr.PID == pid {
				out = append(out, p)
				break
			}
		}
	}
	return out
}

// belowEngine names the encrypting layers under a path's engine layer:
// "dm-crypt (kernel-cpu), cloud-disk (drive)", "" when none.
func belowEngine(p *storagemodel.Path) string {
	var out []string
	for _, l := range p.EncryptionChain() {
		if l.Kind != storagemodel.LayerEngine {
			out = append(out, layerWhere(l))
		}
	}
	return strings.Join(out, ", ")
}

// coverList says what the settings encrypt: "tables, logs, temp files".
func coverList(on []snapshot.EngineEncryption) string {
	var out []string
	for _, s := range on {
		for _, c := range s.Covers {
			if !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return "its files"
	}
	return safetext.Clean(strings.Join(out, ", "))
}

// settingsEvidence lists every encryption setting found, on or off, the
// configuration files read and what could not be read.
func settingsEvidence(e snapshot.Engine) []check.Evidence {
	var ev []check.Evidence
	for _, s := range e.Encryption {
		obs := safetext.Clean(s.Value)
		if s.Enabled {
			obs += " (on)"
		} else {
			obs += " (off)"
		}
		if len(s.Covers) > 0 {
			obs += ": " + safetext.Clean(strings.Join(s.Covers, ", "))
		}
		if s.Path != "" {
			obs += " of " + safetext.Clean(s.Path)
		}
		if s.KeyManager != "" {
			obs += ", keys: " + safetext.Clean(s.KeyManager)
		}
		if s.Cipher != "" {
			obs += ", cipher " + safetext.Clean(s.Cipher)
		}
		src := storagemodel.EngineProcess{Container: e.Container}
		ev = append(ev, check.Evidence{Source: safetext.Clean(settingSource(src, s)), Key: safetext.Clean(s.Setting), Observed: obs})
	}
	if len(e.ConfigFiles) > 0 {
		ev = append(ev, check.Evidence{Source: fmt.Sprintf("/proc/%d", e.PID), Key: "configuration files read",
			Observed: safetext.Clean(strings.Join(e.ConfigFiles, ", "))})
	}
	if e.DataDir != "" || e.DataDev != "" {
		ev = append(ev, check.Evidence{Source: fmt.Sprintf("/proc/%d/root", e.PID), Key: "data directory",
			Observed: safetext.Clean(orDash(e.DataDir) + " on device " + orDash(e.DataDev))})
	}
	for _, n := range e.Notes {
		ev = append(ev, check.Evidence{Source: "engines collector", Key: "note", Observed: safetext.Clean(n)})
	}
	return ev
}

func notesSuffix(e snapshot.Engine) string {
	if len(e.Notes) == 0 {
		return ""
	}
	return " (" + safetext.Clean(strings.Join(e.Notes, "; ")) + ")"
}

func orDash(s string) string {
	if s == "" {
		return "?"
	}
	return s
}
