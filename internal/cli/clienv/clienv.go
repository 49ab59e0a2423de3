// Package clienv carries what every subcommand needs from its surroundings:
// output streams, whether they are terminals, and the host roots. Commands
// take it instead of reaching for globals, so tests can run them in-process.
package clienv

import (
	"io"
	"os"

	"golang.org/x/term"

	"github.com/slowpath/slowpath/internal/hostfs"
)

// Env is shared by all subcommands.
type Env struct {
	Stdout, Stderr io.Writer
	// StdoutTTY is true when stdout is a terminal: tables, colour and
	// progress are shown only then.
	StdoutTTY bool
	NoColor   bool // NO_COLOR is set and not empty (https://no-color.org)
	FS        hostfs.FS
	Version   string
}

// Default is the environment of a real process.
func Default(version string) *Env {
	// no-color.org: set and not empty, whatever the value.
	noColor := os.Getenv("NO_COLOR") != ""
	return &Env{
		Stdout:    os.Stdout,
		Stderr:    os.Stderr,
		StdoutTTY: term.IsTerminal(int(os.Stdout.Fd())),
		NoColor:   noColor,
		FS:        hostfs.Default(),
		Version:   version,
	}
}

// Color reports whether output may be coloured.
func (e *Env) Color() bool { return e.StdoutTTY && !e.NoColor }

// ExitError carries an exit code through cobra without printing twice.
type ExitError struct {
	Code int
	Err  error // nil when the command already said everything
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return "exit status"
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Exit codes, shared by every subcommand.
const (
	ExitOK       = 0 // nothing at or above --fail-on
	ExitFindings = 1 // findings at or above --fail-on
	ExitUsage    = 2 // usage or runtime error
)
