// Package dbserver runs the throwaway database servers of bench's
// database profiles (pgbench, mariadb-oltp): a PostgreSQL 15 cluster or a
// MariaDB server created in the run's directory, reachable only on a unix
// socket (no TCP), run as the engine's own system user when slowpath is
// root, and stopped and removed however the run ends; and the clients that
// load them (pgbench, sysbench), whose output it parses into bench
// result streams.
package dbserver

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/slowpath/slowpath/internal/collect/sampler"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// Account is who a server runs as: the engine's system user when slowpath
// runs as root (PostgreSQL refuses root, MariaDB asks for --user), else
// slowpath's own user.
type Account struct {
	Name     string
	UID, GID int
	// cred switches the server's processes to the account (nil: run as
	// ourselves).
	cred *syscall.Credential
}

// accountFor returns the account to run engine's server as: system user
// name when we are root. pkg names the Debian package that creates it.
func accountFor(engine, name, pkg string) (Account, error) {
	if os.Geteuid() != 0 {
		return Account{Name: "(this user)", UID: os.Geteuid(), GID: os.Getegid()}, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return Account{}, fmt.Errorf("%s refuses to run as root and there is no %q system user to run it as: apt-get install %s creates it (or useradd --system %s)", engine, name, pkg, name)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err := errors.Join(err1, err2); err != nil {
		return Account{}, fmt.Errorf("user %s: %w", name, err)
	}
	return Account{Name: name, UID: uid, GID: gid, cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}}, nil
}

// mkdirFor creates dir (0700) owned by a.
func (a Account) mkdirFor(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	return a.chown(dir)
}

func (a Account) chown(path string) error {
	if a.cred == nil {
		return nil
	}
	return os.Chown(path, a.UID, a.GID)
}

// reach lets a enter the server's directory: the directories slowpath
// made for the run (phaseDir and its parent, the run's own directory:
// 0700 as made) become 0711, enter but not list; a directory above them
// that a cannot enter is an error naming it, since its mode is the user's.
func (a Account) reach(phaseDir string) error {
	if a.cred == nil {
		return nil
	}
	for _, d := range []string{phaseDir, filepath.Dir(phaseDir)} {
		if err := os.Chmod(d, 0o711); err != nil {
			return err
		}
	}
	for d := filepath.Dir(filepath.Dir(phaseDir)); ; d = filepath.Dir(d) {
		var st syscall.Stat_t
		if err := syscall.Stat(d, &st); err != nil {
			return err
		}
		// Owner, group or other bits, as the kernel picks them (ACLs
		// and supplementary groups aside: the server's error then says).
		bit := uint32(0o001)
		switch {
		case int(st.Uid) == a.UID:
			bit = 0o100
		case int(st.Gid) == a.GID:
			bit = 0o010
		}
		if st.Mode&bit == 0 {
			return fmt.Errorf("the server runs as user %s, which cannot enter %s (mode %o): choose a --dir below directories it can enter, or chmod o+x %s",
				a.Name, d, st.Mode&0o777, d)
		}
		if d == "/" || d == "." {
			return nil
		}
	}
}

// command is a server-side program run as a.
func (a Account) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	// Its own process group: a terminal's ^C reaches slowpath, which
	// stops the server in order, not the server directly.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: a.cred}
	return cmd
}

// runTool runs cmd to its end; the error carries the end of its output.
func runTool(cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Path), err, tail(out.Bytes()))
	}
	return nil
}

// tail is the last lines of a tool's output, on one line, for an error.
func tail(b []byte) string {
	const max = 1500
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return strings.Join(strings.Fields(strings.ToValidUTF8(string(b), "?")), " ")
}

// server is a running server process.
type server struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error // Wait's, once done is closed
	log  string
	// stopSig asks for a clean shutdown (PostgreSQL: SIGINT, fast;
	// MariaDB: SIGTERM).
	stopSig syscall.Signal
}

// start starts cmd with its output to logPath.
func start(cmd *exec.Cmd, logPath string, stopSig syscall.Signal) (*server, error) {
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	cmd.Stdout, cmd.Stderr = f, f
	// Not killed with the context: stop shuts it down in order.
	cmd.Cancel = func() error { return nil }
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: logPath, stopSig: stopSig}
	go func() { s.err = cmd.Wait(); close(s.done) }()
	return s, nil
}

// PID is the server's main process.
func (s *server) PID() int { return s.cmd.Process.Pid }

// exited says whether the server ended, with its log's end.
func (s *server) exited() error {
	select {
	case <-s.done:
		b, _ := os.ReadFile(s.log)
		return fmt.Errorf("%s exited (%v): %s", filepath.Base(s.cmd.Path), s.err, tail(b))
	default:
		return nil
	}
}

// waitReady polls ready until it says yes, the server exits or the time
// is up.
func (s *server) waitReady(ctx context.Context, ready func() bool) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if err := s.exited(); err != nil {
			return err
		}
		if ready() {
			return nil
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(s.log)
			return fmt.Errorf("%s not ready after 2 minutes: %s", filepath.Base(s.cmd.Path), tail(b))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// stop shuts the server down cleanly, then harder: its signal, a minute;
// SIGKILL to its process group.
func (s *server) stop() error {
	if s == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	pid := s.cmd.Process.Pid
	_ = syscall.Kill(pid, s.stopSig)
	select {
	case <-s.done:
		return nil
	case <-time.After(time.Minute):
	}
	// What it was doing, before the kill ends it: its threads' states
	// and wait channels, and its log's end.
	threads, err := sampler.ThreadStates(hostfs.Default(), pid)
	if err != nil {
		threads = err.Error()
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	<-s.done
	b, _ := os.ReadFile(s.log)
	return fmt.Errorf("%s did not stop within a minute of %v: killed; its threads were %s; its log ends: %s",
		filepath.Base(s.cmd.Path), s.stopSig, threads, tail(b))
}

// lookBin finds a program on PATH or in dirs (/usr/sbin is not on every
// PATH), with the package to install when it is missing.
func lookBin(name, pkg string, dirs ...string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found: apt-get install %s", name, pkg)
}

// socketDir is where a server's unix socket goes: in the run's directory
// when the socket's path fits sun_path (108 bytes with its NUL), else a
// private temporary directory, removed by the returned function.
func socketDir(a Account, phaseDir, sockName string) (string, func() error, error) {
	d := filepath.Join(phaseDir, "sock")
	if len(filepath.Join(d, sockName)) >= 100 {
		t, err := os.MkdirTemp("", "slowpath-sock-")
		if err != nil {
			return "", nil, err
		}
		if err := os.Chmod(t, 0o711); err != nil {
			os.RemoveAll(t)
			return "", nil, err
		}
		d = filepath.Join(t, "sock")
		if err := a.mkdirFor(d); err != nil {
			os.RemoveAll(t)
			return "", nil, err
		}
		return d, func() error { return os.RemoveAll(t) }, nil
	}
	if err := a.mkdirFor(d); err != nil {
		return "", nil, err
	}
	return d, func() error { return os.RemoveAll(d) }, nil
}

// removeIfThere removes a file that may not have been made yet.
func removeIfThere(p string) error {
	if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// instance is what both engines' throwaway servers share: the account
// they run as, their data directory, the running server and what to undo,
// last made first.
type instance struct {
	acct    Account
	data    string
	srv     *server
	cleanup []func() error
}

// layout is where an engine's server lives and whom it runs as.
type layout struct {
	engine, user, pkg string // accountFor's
	data              string // the data directory, in the phase's
	sock              string // the socket's name
}

// launch sets in up in phaseDir as l says (the account, phaseDir made
// reachable by it, the data directory and the socket's) and calls start
// with the socket's directory to make and start the server; on an error
// of either, what was made is undone and nothing is left running.
func (in *instance) launch(l layout, phaseDir string, start func(sockDir string) error) (err error) {
	a, err := accountFor(l.engine, l.user, l.pkg)
	if err != nil {
		return err
	}
	in.acct = a
	defer func() {
		if err != nil {
			err = errors.Join(err, in.close())
		}
	}()
	if err := a.reach(phaseDir); err != nil {
		return err
	}
	in.data = filepath.Join(phaseDir, l.data)
	if err := a.mkdirFor(in.data); err != nil {
		return err
	}
	in.undo(func() error { return os.RemoveAll(in.data) })
	sock, rm, err := socketDir(a, phaseDir, l.sock)
	if err != nil {
		return err
	}
	in.undo(rm)
	return start(sock)
}

// undo adds f to what close undoes.
func (in *instance) undo(f func() error) { in.cleanup = append(in.cleanup, f) }

// run starts cmd with its output to outPath (removed by close) and waits
// until ready says yes; errLog, when set, is the log whose end an early
// exit reports (MariaDB writes its errors to a file of its own).
func (in *instance) run(ctx context.Context, cmd *exec.Cmd, outPath, errLog string, stopSig syscall.Signal, ready func() bool) error {
	in.undo(func() error { return removeIfThere(outPath) })
	srv, err := start(cmd, outPath, stopSig)
	if err != nil {
		return err
	}
	in.srv = srv
	if errLog != "" {
		srv.log = errLog
	}
	return srv.waitReady(ctx, ready)
}

// close stops the server and undoes the rest, last made first.
func (in *instance) close() error {
	err := in.srv.stop()
	for i := len(in.cleanup) - 1; i >= 0; i-- {
		err = errors.Join(err, in.cleanup[i]())
	}
	in.cleanup = nil
	return err
}

// DataDir is the server's data directory.
func (in *instance) DataDir() string { return in.data }
