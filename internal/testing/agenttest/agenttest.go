// Package agenttest starts `slowpath agent` in the test process on a
// loopback port, as httptest starts servers: for tests of the agent, fleet
// and the deployment's rules and dashboard against real scrapes.
package agenttest

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/cli/agentcmd"
	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/testing/lockedbuf"
)

// Start runs the agent with args (plus --web.listen-address 127.0.0.1:0)
// until the test ends and returns the address it listens on.
func Start(t testing.TB, args ...string) string {
	t.Helper()
	// The agent's HTTP server and metrics handler log from their own goroutines.
	env := &clienv.Env{Stdout: io.Discard, Stderr: &lockedbuf.Buffer{}, FS: hostfs.Default(), Version: "test"}
	return start(t, env, nil, args...)
}

// start runs the command with runF (nil: the agent itself).
func start(t testing.TB, env *clienv.Env, runF func(context.Context, *agentcmd.Options) error, args ...string) string {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "addr")
	stderr := env.Stderr.(*lockedbuf.Buffer)
	cmd := agentcmd.NewCmdAgent(env, runF)
	cmd.SetArgs(append([]string{"--web.listen-address", "127.0.0.1:0", "--ready-file", ready}, args...))
	cmd.SetOut(env.Stdout)
	cmd.SetErr(env.Stderr)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("agent %v: %v (stderr: %s)", args, err, stderr.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(ready); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return strings.TrimSpace(string(b))
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("agent %v exited: %v (stderr: %s)", args, err, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("agent %v did not listen within 10 s", args)
	return ""
}

// StartRoot runs the agent on another root (a tree fs reads), as a
// DaemonSet reads the node's: nothing live is asked, no cloud.
func StartRoot(t testing.TB, fs hostfs.FS, args ...string) string {
	t.Helper()
	env := &clienv.Env{Stdout: io.Discard, Stderr: &lockedbuf.Buffer{}, FS: fs, Version: "test"}
	return start(t, env, nil, append([]string{"--live-sources", "off", "--cloud", "none"}, args...)...)
}
