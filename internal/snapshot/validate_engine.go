package snapshot

import "fmt"

// Validation of the engines section (engine.go). Rules and sources:
// docs/snapshot.md, section Validation.

// Bounds of the engines section, slowpath's own (the collector stops at
// them too): far above a real host, low enough that a hostile one cannot
// grow a snapshot without limit.
const (
	maxEngines       = 256
	maxEngineFiles   = 64
	maxEngineEncs    = 64
	maxEngineNotes   = 33 // 32 notes and the one saying more were dropped
	maxEngineSetting = 256
	pidMaxLimit      = 4194304 // include/linux/threads.h PID_MAX_LIMIT
	taskCommLen      = 15      // include/linux/sched.h TASK_COMM_LEN 16, with its NUL
)

func validateEngines(e *Engines) error {
	if e == nil {
		return nil
	}
	if len(e.Processes) > maxEngines {
		return invalidNumber("engines.processes", len(e.Processes), "too many", fmt.Sprintf("at most %d", maxEngines), srcSlowpath)
	}
	for i := range e.Processes {
		if err := validateEngine(fmt.Sprintf("engines.processes[%d]", i), &e.Processes[i]); err != nil {
			return err
		}
	}
	return nil
}

func validateEngine(p string, e *Engine) error {
	if err := checkEnum(p+".engine", e.Engine, EngineMariaDB, EngineMySQL, EnginePostgreSQL, EngineMongoDB, EngineClickHouse, EngineCockroachDB); err != nil {
		return err
	}
	if err := checkText(p+".product", e.Product, maxLine, false); err != nil {
		return err
	}
	if e.PID <= 0 || e.PID > pidMaxLimit {
		return invalidNumber(p+".pid", e.PID, "not a pid", "want 1 to 4194304", "include/linux/threads.h PID_MAX_LIMIT")
	}
	if e.Comm == "" || len(e.Comm) > taskCommLen {
		return invalidString(p+".comm", e.Comm, "not a comm", "1 to 15 bytes", "include/linux/sched.h TASK_COMM_LEN")
	}
	if err := checkText(p+".comm", e.Comm, taskCommLen, false); err != nil {
		return err
	}
	if err := checkText(p+".container", e.Container, maxLine, false); err != nil {
		return err
	}
	if err := checkOptAbsPath(p+".data_dir", e.DataDir); err != nil {
		return err
	}
	if err := checkOptMajMin(p+".data_dev", e.DataDev); err != nil {
		return err
	}
	if len(e.ConfigFiles) > maxEngineFiles {
		return invalidNumber(p+".config_files", len(e.ConfigFiles), "too many", fmt.Sprintf("at most %d", maxEngineFiles), srcSlowpath)
	}
	if err := eachString(p+".config_files", e.ConfigFiles, checkAbsPath); err != nil {
		return err
	}
	if len(e.Encryption) > maxEngineEncs {
		return invalidNumber(p+".encryption", len(e.Encryption), "too many", fmt.Sprintf("at most %d", maxEngineEncs), srcSlowpath)
	}
	for i := range e.Encryption {
		if err := validateEngineEncryption(fmt.Sprintf("%s.encryption[%d]", p, i), &e.Encryption[i]); err != nil {
			return err
		}
	}
	if len(e.Notes) > maxEngineNotes {
		return invalidNumber(p+".notes", len(e.Notes), "too many", fmt.Sprintf("at most %d", maxEngineNotes), srcSlowpath)
	}
	return eachString(p+".notes", e.Notes, func(p, s string) error { return checkText(p, s, maxMessage, false) })
}

func validateEngineEncryption(p string, x *EngineEncryption) error {
	if err := checkToken(p+".setting", x.Setting, maxEngineSetting, false); err != nil {
		return err
	}
	if err := checkText(p+".value", x.Value, maxLine, false); err != nil {
		return err
	}
	// Source is a file as the process sees it, or one of two words.
	if x.Source != "command line" && x.Source != "default" {
		if err := checkAbsPath(p+".source", x.Source); err != nil {
			return err
		}
	}
	for i, c := range x.Covers {
		if err := checkEnum(fmt.Sprintf("%s.covers[%d]", p, i), c, CoversTables, CoversLogs, CoversTemp, CoversAll); err != nil {
			return err
		}
	}
	if len(x.Covers) > 4 {
		return invalidNumber(p+".covers", len(x.Covers), "too many", "at most one of each", srcSlowpathEnum)
	}
	if err := checkOptAbsPath(p+".path", x.Path); err != nil {
		return err
	}
	if err := checkOptMajMin(p+".dev", x.Dev); err != nil {
		return err
	}
	if err := checkOptEnum(p+".key_manager", x.KeyManager, KeyManagerKeyfile, KeyManagerKMIP, KeyManagerVault, KeyManagerCloudKMS, KeyManagerKeyring); err != nil {
		return err
	}
	return checkToken(p+".cipher", x.Cipher, maxWord, true)
}

func checkOptAbsPath(p, s string) error {
	if s == "" {
		return nil
	}
	return checkAbsPath(p, s)
}

func checkOptMajMin(p, s string) error {
	if s == "" {
		return nil
	}
	return checkMajMin(p, s)
}
