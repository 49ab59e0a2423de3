package diffcmd_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/diffcmd"
	"github.com/slowpath/slowpath/internal/snapshot"
	"github.com/slowpath/slowpath/internal/testing/golden"
)

const hostsDir = "../../../testdata/hosts"

// archive writes a fixture host as a .tar.gz, as `slowpath collect` does.
func archive(t *testing.T, name string) string {
	t.Helper()
	s, err := snapshot.Load(filepath.Join(hostsDir, name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".tar.gz")
	if err := snapshot.Save(p, s); err != nil {
		t.Fatal(err)
	}
	return p
}

func diff(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := diffcmd.NewCmdDiff(&clienv.Env{Stdout: &out, Stderr: &out}, nil)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

// TestDiffGolden compares node pairs that differ the way the incidents did.
func TestDiffGolden(t *testing.T) {
	for _, pair := range [][2]string{
		{"azure-e16dv5-eah", "azure-e16dv5-noeah"},         // the Azure incident: one setting apart
		{"aws-i4i-luks-default", "aws-r6i-ebs-luks-tuned"}, // default vs tuned dm-crypt flags
		{"net-aws-ena", "net-healthy"},
		{"plain-host", "plain-host"},
	} {
		t.Run(pair[0]+"_vs_"+pair[1], func(t *testing.T) {
			a, b := archive(t, pair[0]), archive(t, pair[1])
			got, err := diff(t, a, b)
			if err != nil {
				t.Fatal(err)
			}
			got = strings.ReplaceAll(strings.ReplaceAll(got, a, pair[0]+".tar.gz"), b, pair[1]+".tar.gz")
			// Every line fits 100 columns, however long a storage path.
			for _, l := range strings.Split(got, "\n") {
				if n := utf8.RuneCountInString(l); n > diffcmd.Width {
					t.Errorf("line of %d columns, want at most %d: %q", n, diffcmd.Width, l)
				}
			}
			golden.Compare(t, filepath.Join("testdata", pair[0]+"_vs_"+pair[1]+".txt"), []byte(got))
		})
	}
}

// TestDiffOrder: the finding that explains the incident comes first, the
// encryption layer count right after it.
func TestDiffOrder(t *testing.T) {
	got, err := diff(t, archive(t, "azure-e16dv5-eah"), archive(t, "azure-e16dv5-noeah"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(got, "\n")
	var rows []string
	for _, l := range lines[3:] {
		// A table row, or a block's first line (the one-block-per-
		// difference form when the table would be too wide).
		if l != "" && !strings.HasPrefix(l, " ") && !strings.HasPrefix(l, "AREA") {
			rows = append(rows, l)
		}
	}
	if len(rows) < 2 || !strings.HasPrefix(rows[0], "finding") || !strings.Contains(rows[0], "storage.stacked-encryption /mnt/data") ||
		!strings.HasPrefix(rows[1], "encryption") || !strings.Contains(rows[1], "/mnt/data layers") {
		t.Errorf("want the stacked-encryption finding then the layer count first:\n%s", got)
	}
}

func TestDiffBadInput(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.tar.gz")
	if err := os.WriteFile(bad, []byte{0x1f, 0x8b, 0, 1}, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := diff(t, bad, archive(t, "plain-host"))
	var ee *clienv.ExitError
	if !errors.As(err, &ee) || ee.Code != clienv.ExitUsage || !strings.Contains(err.Error(), "bad.tar.gz") {
		t.Errorf("truncated archive: want exit 2 naming the file, got %v", err)
	}
	if _, err := diff(t, "only-one"); err == nil {
		t.Error("one argument accepted")
	}
}
