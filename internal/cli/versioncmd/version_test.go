package versioncmd

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/common/version"

	"github.com/slowpath/slowpath/internal/cli/clienv"
)

func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := NewCmdVersion(&clienv.Env{Stdout: &out, Stderr: &out})
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	err := cmd.Execute()
	return out.String(), err
}

// TestStamped: the Makefile's -X values come out in both formats.
func TestStamped(t *testing.T) {
	old := []string{version.Version, version.Revision, version.Branch, version.BuildUser, version.BuildDate}
	t.Cleanup(func() {
		version.Version, version.Revision, version.Branch, version.BuildUser, version.BuildDate = old[0], old[1], old[2], old[3], old[4]
	})
	version.Version, version.Revision, version.Branch, version.BuildUser, version.BuildDate = "v1.2.3", "abc123", "main", "root@ci", "20261126-15:00:00"

	out, err := run(t, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got Info
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := Info{"v1.2.3", "abc123", "main", "root@ci", "20261126-15:00:00", runtime.Version(), runtime.GOOS + "/" + runtime.GOARCH}
	if got != want {
		t.Errorf("json %+v, want %+v", got, want)
	}
	if !strings.HasPrefix(out, "{\n  \"format_version\": 1,\n") {
		t.Errorf("json does not start with format_version:\n%s", out)
	}
	for _, k := range []string{`"version"`, `"revision"`, `"buildDate"`, `"goVersion"`, `"platform"`} {
		if !strings.Contains(out, k) {
			t.Errorf("json lacks %s:\n%s", k, out)
		}
	}
	text, err := run(t)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(text, "slowpath, version v1.2.3 (branch: main, revision: abc123)\n") || !strings.Contains(text, "platform:         "+want.Platform) {
		t.Errorf("text:\n%s", text)
	}
}

// TestUnstamped: a plain go build says dev, not an empty version.
func TestUnstamped(t *testing.T) {
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	version.Version = ""
	if v := Current().Version; v != "dev" {
		t.Errorf("unstamped version %q, want dev (a test binary has no module version)", v)
	}
}

func TestBadFormat(t *testing.T) {
	if _, err := run(t, "--format", "yaml"); err == nil {
		t.Error("--format yaml accepted")
	}
}
