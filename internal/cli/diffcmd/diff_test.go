package diffcmd_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestDiffGolden runs the command on archives of two fixture hosts: its
// text is internal/report/diffreport's golden for the pair (the renderer's
// tests render every pair), and --format json is the same document, format_version first.
func TestDiffGolden(t *testing.T) {
	const pa, pb = "azure-e16dv5-eah", "azure-e16dv5-noeah" // the Azure incident: one setting apart
	a, b := archive(t, pa), archive(t, pb)
	got, err := diff(t, a, b)
	if err != nil {
		t.Fatal(err)
	}
	got = strings.ReplaceAll(strings.ReplaceAll(got, a, pa+".tar.gz"), b, pb+".tar.gz")
	golden.Compare(t, filepath.Join("../../report/diffreport/testdata", pa+"_vs_"+pb+".txt"), []byte(got))

	js, err := diff(t, a, b, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		FormatVersion int    `json:"format_version"`
		A             string `json:"a"`
		B             string `json:"b"`
		Differences   []struct {
			Area string `json:"area"`
			Item string `json:"item"`
		} `json:"differences"`
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || doc.FormatVersion != 1 || doc.A != a || doc.B != b ||
		len(doc.Differences) == 0 || doc.Differences[0].Area != "finding" {
		t.Errorf("--format json: %v %+v\n%s", err, doc, js)
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
