package fio

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Option is one key=value line of a job file; an empty Value writes the
// bare key (fio's boolean options such as group_reporting).
type Option struct{ Key, Value string }

// Section is one [name] of a job file.
type Section struct {
	Name    string
	Options []Option
}

// File is a whole fio job file: a [global] section and jobs. Profiles build
// one and fio runs it as written, so `bench export` can hand the very same
// file to someone without slowpath.
type File struct {
	Global []Option
	Jobs   []Section
}

// Render writes the job file in fio's ini format. Keys and values that
// would break the format (line breaks, brackets, '=' in a key) are refused.
func (f *File) Render() ([]byte, error) {
	var b bytes.Buffer
	write := func(name string, opts []Option) error {
		if err := validName(name); err != nil && name != "global" {
			return err
		}
		fmt.Fprintf(&b, "[%s]\n", name)
		for _, o := range opts {
			if o.Key == "" || strings.ContainsAny(o.Key, "\n\r[]= \t#;") {
				return fmt.Errorf("fio section %s: bad option name %q", name, o.Key)
			}
			if strings.ContainsAny(o.Value, "\n\r") {
				return fmt.Errorf("fio section %s: option %s value %q contains a line break", name, o.Key, o.Value)
			}
			// fio cuts a line at ';' or '#' (parse.c, strip_blank_end).
			if strings.ContainsAny(o.Value, ";#") {
				return fmt.Errorf("fio section %s: option %s value %q contains ';' or '#', which fio reads as a comment", name, o.Key, o.Value)
			}
			if o.Value == "" {
				fmt.Fprintf(&b, "%s\n", o.Key)
			} else {
				fmt.Fprintf(&b, "%s=%s\n", o.Key, o.Value)
			}
		}
		return nil
	}
	if len(f.Jobs) == 0 {
		return nil, fmt.Errorf("fio job file has no jobs")
	}
	if len(f.Global) > 0 {
		if err := write("global", f.Global); err != nil {
			return nil, err
		}
		b.WriteString("\n")
	}
	for i, j := range f.Jobs {
		if i > 0 {
			b.WriteString("\n")
		}
		if err := write(j.Name, j.Options); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

func validName(n string) error {
	if n == "" || strings.ContainsFunc(n, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '.' || r == '-')
	}) {
		return fmt.Errorf("fio job name %q: use letters, digits, '_', '.', '-'", n)
	}
	return nil
}

// Version returns `fio --version` ("fio-3.33").
func Version(ctx context.Context) (string, error) {
	bin, err := exec.LookPath("fio")
	if err != nil {
		return "", ErrNotFound
	}
	out, err := exec.CommandContext(ctx, bin, "--version").Output()
	if err != nil {
		return "", fmt.Errorf("fio --version: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// Invocation runs one job file in a directory the caller owns: the job
// file, fio's JSON and any logs the job file asks for (write_bw_log=NAME
// with a relative NAME) are written there.
type Invocation struct {
	JobFile []byte
	Dir     string
	// Started, when set, is called with fio's pid once it runs, so a
	// sampler can attribute its threads.
	Started func(pid int)
	// Exited, when set, is called with fio's pid and CPU time (its own and
	// its job processes', from wait4) once it exited.
	Exited func(pid int, cpu time.Duration)
	// Stop is how long fio may take to write its result after being
	// interrupted; 10 s when zero.
	Stop time.Duration
}

// JobFileName and OutputName are the names Run uses inside Invocation.Dir.
const (
	JobFileName = "job.fio"
	OutputName  = "fio.json"
)

// Run runs fio on the job file. When ctx is cancelled fio gets SIGINT,
// which makes it stop its jobs and still write the JSON of what it did:
// Run then returns that partial result together with ctx's error.
//
// fio forks a process per job. Killing only the main process while a job
// process still waits at its start semaphore leaves that process blocked
// on the futex for good (seen on fio 3.33: SIGKILL 0.2 s after start left
// a job process in futex_wait, reparented to init), holding the device or
// file and, before this, the output pipe slowpath waited on. So fio runs
// in its own process group, signals go to the whole group, and its output
// goes to a file, not a pipe Wait could block on.
func (inv Invocation) Run(ctx context.Context) (*Result, error) {
	bin, err := exec.LookPath("fio")
	if err != nil {
		return nil, ErrNotFound
	}
	jobPath := filepath.Join(inv.Dir, JobFileName)
	outPath := filepath.Join(inv.Dir, OutputName)
	if err := os.WriteFile(jobPath, inv.JobFile, 0o600); err != nil {
		return nil, err
	}
	// fio's own messages (warnings, errors): --output keeps them out of the
	// JSON.
	msgs, err := os.CreateTemp(inv.Dir, "fio-messages-*")
	if err != nil {
		return nil, err
	}
	defer func() { msgs.Close(); os.Remove(msgs.Name()) }()
	// Not CommandContext: cancellation must be SIGINT, and only after fio
	// started; a killed fio writes nothing.
	// What fio's job processes keep from it, by which endGroup finds them.
	exe, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return nil, err
	}
	dir, err := filepath.Abs(inv.Dir)
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, Args(JobFileName, OutputName)...)
	cmd.Dir = inv.Dir
	cmd.Stdout = msgs
	cmd.Stderr = msgs
	// Its own process group, so a signal reaches every job process; the
	// main process dies with us (e.g. a test binary killed by its timeout).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	// Without it endGroup still works, waiting for init to reap instead.
	_ = becomeSubreaper()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start fio: %w", err)
	}
	pgid := cmd.Process.Pid
	if inv.Started != nil {
		inv.Started(pgid)
	}
	done := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		if inv.Exited != nil && cmd.ProcessState != nil {
			inv.Exited(cmd.Process.Pid, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
		}
		done <- err
	}()
	stderr := func() string {
		b, _ := os.ReadFile(msgs.Name())
		return strings.TrimSpace(string(b))
	}
	var runErr, ctxErr error
	select {
	case runErr = <-done:
	case <-ctx.Done():
		ctxErr = ctx.Err()
		_ = syscall.Kill(-pgid, syscall.SIGINT)
		stop := inv.Stop
		if stop == 0 {
			stop = 10 * time.Second
		}
		select {
		case runErr = <-done:
		case <-time.After(stop):
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-done
			if err := endGroup(pgid, exe, dir, groupGrace); err != nil {
				return nil, err
			}
			return nil, fmt.Errorf("fio did not stop within %v of SIGINT: %w", stop, ctxErr)
		}
	}
	// The main process is gone; a job process that outlived it (see above)
	// would hold what it had open: end the group, and return only once
	// none of it is left, so a caller can tear the device down.
	if err := endGroup(pgid, exe, dir, groupGrace); err != nil {
		return nil, err
	}
	f, err := os.Open(outPath)
	if err != nil {
		if ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("fio wrote no result: %v: %s", runErr, stderr())
	}
	defer f.Close()
	res, perr := Parse(f)
	if perr != nil {
		if ctxErr != nil {
			return nil, ctxErr
		}
		return nil, fmt.Errorf("fio: %w (exit: %v: %s)", perr, runErr, stderr())
	}
	if ctxErr != nil {
		return res, ctxErr
	}
	if err := res.Err(); err != nil {
		return res, err
	}
	if runErr != nil {
		return res, fmt.Errorf("fio: %w: %s", runErr, stderr())
	}
	return res, nil
}

// ScriptSetup is the part of an exported run.sh (bench export, replay
// export) after its argument checks: it fails without fio, makes a work
// directory $work under the script's DIR ($1) named after prefix, removed
// on exit, and $out, results/ beside the script.
func ScriptSetup(prefix string) string {
	return `command -v fio >/dev/null || { echo "fio not found: apt-get install fio" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "$1/` + prefix + `.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
out="$here/results"
mkdir -p "$out"
`
}
