package labcmd

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/hostfs"
	"github.com/slowpath/slowpath/internal/lab/cryptlab"
	"github.com/slowpath/slowpath/internal/testing/testenv"
)

func testEnv() (*clienv.Env, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return &clienv.Env{Stdout: &out, Stderr: &errb, FS: hostfs.Default()}, &out, &errb
}

func TestCryptFlags(t *testing.T) {
	env, _, _ := testEnv()
	var got *CryptOptions
	cmd := NewCmdCrypt(env, func(_ context.Context, o *CryptOptions) error { got = o; return nil })
	cmd.SetArgs([]string{"--backing", "file:/var/tmp/l.img:256M", "--variants", "default,stacked", "--runs", "3", "--runtime", "2s", "--profile", "qd1-4k"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if got.Backing != "file:/var/tmp/l.img:256M" || !cmp.Equal(got.Variants, []string{"default", "stacked"}) || got.Runs != 3 || got.Profile != "qd1-4k" {
		t.Errorf("%+v", got)
	}
	// The defaults are the matrix.
	cmd = NewCmdCrypt(env, func(_ context.Context, o *CryptOptions) error { got = o; return nil })
	cmd.SetArgs(nil)
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(got.Variants, cryptlab.DefaultVariants) || got.Backing != "" || got.Runs != 5 || got.Profile != "db-commit" {
		t.Errorf("defaults %+v", got)
	}
}

// TestCryptRefusals: usage errors exit 2 with a message naming the fix,
// before anything touches the host.
func TestCryptRefusals(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--variants", "default,turbo"}, `unknown variant "turbo" (known: default, same_cpu_crypt`},
		{[]string{"--backing", "disk:1G"}, "want ram:SIZE or file:PATH:SIZE"},
		{[]string{"--profile", "oltp"}, `unknown profile "oltp" (known: randrw-4k`},
		{[]string{"--runs", "0"}, "--runs must be at least 1"},
		// The default profile, db-commit, writes at least 128 MiB.
		{[]string{"--backing", "ram:32M"}, "and --backing ram:32M has 32 MiB: use --backing ram:"},
		{[]string{"--backing", "file:/var/tmp/x.img:32M", "--profile", "telemetry-ingest"}, "use --backing file:/var/tmp/x.img:320M"},
		{[]string{"--format", "xml"}, "use text, markdown, json or html"},
		{[]string{"--icount-shift", "11"}, "qemu's -icount shift is 0 to 10"},
		// A filesystem where the profile needs files, none where it runs
		// on the device; a family's argument is read before anything runs.
		{[]string{"--profile", "search-index", "--fs", "none"}, "profile search-index runs on files: give --fs ext4 or xfs"},
		{[]string{"--profile", "randrw-4k", "--fs", "ext4"}, "profile randrw-4k runs on the raw device: leave --fs out"},
		{[]string{"--fs", "btrfs"}, `--fs "btrfs": use ext4, xfs or none`},
		{[]string{"--profile", "fio:/nonexistent/job.fio"}, "/nonexistent/job.fio"},
		{[]string{"--profile", "replay:/nonexistent"}, "/nonexistent"},
		{[]string{"--profile", "db-commit", "--fs", "xfs", "--backing", "ram:256M"}, "mkfs.xfs makes nothing smaller than 300 MiB"},
	} {
		env, _, _ := testEnv()
		called := false
		cmd := NewCmdCrypt(env, func(context.Context, *CryptOptions) error { called = true; return nil })
		cmd.SetArgs(tc.args)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.Execute()
		var ee *clienv.ExitError
		if err == nil || called || !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, ran %v; want exit 2 with %q", tc.args, err, called, tc.want)
		}
	}
}

// TestRefusalsOfTheBinary runs the real command: not root (as nobody via
// setpriv), and a kernel without device-mapper (this machine's).
func TestRefusalsOfTheBinary(t *testing.T) {
	testenv.RequireRoot(t)
	setpriv := testenv.RequireTool(t, "setpriv", "util-linux")
	bin := testenv.BuildSlowpath(t)
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	testenv.RequireTool(t, "fio", "fio")
	out, err := exec.Command(setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", bin, "lab", "crypt", "--runs", "1", "--runtime", "1s").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "needs root") {
		t.Errorf("as nobody: %v: %s", err, out)
	}
	if _, err := os.Stat("/sys/module/dm_mod"); err == nil {
		// The no-dm refusal exists only on kernels without it (this CI
		// host's); the refusal as nobody above was still checked.
		t.Log("this kernel has device-mapper: the no-dm refusal is not checked here")
		return
	}
	out, err = exec.Command(bin, "lab", "crypt", "--runs", "1", "--runtime", "1s", "--variants", "default").CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || !strings.Contains(string(out), "no dm-crypt target") {
		t.Errorf("without device-mapper: %v: %s", err, out)
	}
	if entries, _ := filepath.Glob(filepath.Join(cryptlab.StateDir, "lab-*.json")); len(entries) != 0 {
		t.Errorf("a refused run left state: %v", entries)
	}
}

func TestCryptoLimitText(t *testing.T) {
	env, out, _ := testEnv()
	cmd := NewCmdCryptoLimit(env, nil)
	cmd.SetArgs([]string{"--duration", "100ms", "--method", "user-space"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"xts(aes), 512-bit key, 512-byte sectors", "user-space bound, not the kernel", "one core:", "all cores (", "cipher time per 4 KiB"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
}

// TestCryptoLimitMarkdown: --format markdown measures as text does and
// prints cipherreport's table; an unknown format names markdown.
func TestCryptoLimitMarkdown(t *testing.T) {
	env, out, _ := testEnv()
	cmd := NewCmdCryptoLimit(env, nil)
	cmd.SetArgs([]string{"--duration", "50ms", "--method", "user-space", "--format", "markdown"})
	if err := cmd.Execute(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"**slowpath lab crypto-limit**: xts(aes), 512-bit key, 512-byte sectors", "| what | figure |\n|---|---|\n", "| one core | ", "| all cores (", "| cipher time per 4 KiB | "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("no %q in:\n%s", want, out)
		}
	}
	env, _, _ = testEnv()
	cmd = NewCmdCryptoLimit(env, func(context.Context, *CryptoLimitOptions) error { t.Error("ran"); return nil })
	cmd.SetArgs([]string{"--format", "xml"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "use text, json or markdown") {
		t.Errorf("--format xml: %v", err)
	}
}

func TestCryptoLimitRefusesBadShift(t *testing.T) {
	env, _, _ := testEnv()
	cmd := NewCmdCryptoLimit(env, func(context.Context, *CryptoLimitOptions) error { t.Error("ran"); return nil })
	cmd.SetArgs([]string{"--icount-shift", "-2"})
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	var ee *clienv.ExitError
	if err := cmd.Execute(); !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || !strings.Contains(err.Error(), "0 to 10") {
		t.Errorf("err %v, want exit 2", err)
	}
}
