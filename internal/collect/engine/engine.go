// Package engine finds the database servers running on the host and in
// its containers, and the encryption each does of its own files (InnoDB's,
// WiredTiger's, pg_tde's, ClickHouse's encrypted disks, CockroachDB's
// stores): the engine layer of a storage path, which the storage model
// counts over dm-crypt and the disk. One file per engine, as node_exporter
// has one collector per file; proc.go finds the processes and files.go
// reads their files through their own root.
//
// Everything read here is data: configuration files are bounded, read with
// links resolved inside the process's root, and only setting names,
// non-key values and the kind of key manager reach the snapshot, never
// key material, a key file's contents or a key's path.
package engine

import (
	"fmt"
	"os"
	"slices"
	"strconv"

	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/snapshot"
)

// Collector is the collector's name in manifest errors.
const Collector = "engine"

// Bounds slowpath sets on what one host's processes may make it read and
// record: far above any real configuration, low enough that a hostile
// one cannot grow a snapshot without limit (the validator refuses more).
const (
	maxProcesses = 256 // engines recorded per host
	maxFiles     = 64  // configuration files read per process
	maxDepth     = 8   // include nesting
	maxNotes     = 32  // notes per process
	maxSettings  = 64  // encryption settings per process (ClickHouse disks, CockroachDB stores)
	maxShown     = 200 // bytes of a path or value repeated in a note
)

// Collect fills s.Engines with every database server process under
// fs.Proc. A /proc it cannot list is a collection error; a process it
// cannot read is a note on that process, or skipped when it is gone.
func Collect(fs hostfs.FS, s *snapshot.Snapshot) {
	procs, err := listProcesses(fs)
	if err != nil {
		s.AddError(Collector, fs.ProcPath(), err)
		return
	}
	out := &snapshot.Engines{}
	for _, p := range procs {
		if len(out.Processes) == maxProcesses {
			s.AddError(Collector, fs.ProcPath(), fmt.Errorf("more than %d database processes: the rest are not recorded", maxProcesses))
			break
		}
		out.Processes = append(out.Processes, inspect(fs, p))
	}
	s.Engines = out
}

// inspect reads one process's settings through its own root.
func inspect(fs hostfs.FS, p process) snapshot.Engine {
	e := snapshot.Engine{Engine: p.engine, PID: p.pid, Comm: p.comm}
	root := fs.ProcPath(strconv.Itoa(p.pid), "root")
	r := &reader{files: belowRoot(root), e: &e}
	e.Container = containerOf(fs, p.pid, root)
	if cwd, err := os.Readlink(fs.ProcPath(strconv.Itoa(p.pid), "cwd")); err == nil {
		r.cwd = cwd
	}
	collectEngine(r, p.argv)
	return e
}

// collectEngine dispatches on the engine; tests and fuzzers call it with
// an in-memory files.
func collectEngine(r *reader, argv []string) {
	switch r.e.Engine {
	case snapshot.EngineMariaDB, snapshot.EngineMySQL:
		collectMyCnfEngine(r, argv)
	case snapshot.EnginePostgreSQL:
		collectPostgres(r, argv)
	case snapshot.EngineMongoDB:
		collectMongo(r, argv)
	case snapshot.EngineClickHouse:
		collectClickHouse(r, argv)
	case snapshot.EngineCockroachDB:
		collectCockroach(r, argv)
	}
	if r.e.DataDir != "" {
		r.e.DataDev = r.dev(r.e.DataDir)
	}
	for i := range r.e.Encryption {
		if p := r.e.Encryption[i].Path; p != "" && p != r.e.DataDir {
			r.e.Encryption[i].Dev = r.dev(p)
		} else if p == r.e.DataDir {
			r.e.Encryption[i].Path = ""
		}
	}
	if n := len(r.e.Encryption); n > maxSettings {
		r.e.Encryption = r.e.Encryption[:maxSettings]
		r.note("%d encryption settings: the first %d are recorded", n, maxSettings)
	}
	if r.dropped > 0 {
		r.e.Notes = append(r.e.Notes, fmt.Sprintf("%d more notes not recorded", r.dropped))
	}
}

// knownSetting says whether name is one the collector records: the
// fuzzers' oracle that nothing else (a key's path, a password) reaches the
// snapshot under another name.
func knownSetting(engine, name string) bool {
	switch engine {
	case snapshot.EngineMariaDB:
		return slices.ContainsFunc(mariadbSettings, func(s setting) bool { return s.name == name })
	case snapshot.EngineMySQL:
		return slices.ContainsFunc(mysqlSettings, func(s setting) bool { return s.name == name })
	case snapshot.EnginePostgreSQL:
		return slices.Contains([]string{pgPreload, pgWALEncrypt, pgEnforce, pgDefaultAM}, name)
	case snapshot.EngineMongoDB:
		return name == mongoEnable
	case snapshot.EngineClickHouse:
		return clickHouseDiskSetting(name)
	case snapshot.EngineCockroachDB:
		return name == cockroachFlag
	}
	return false
}
