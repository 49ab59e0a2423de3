package benchcmd

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/slowpath/slowpath/internal/cli/clienv"
	"github.com/slowpath/slowpath/internal/cli/labcmd"
	"github.com/slowpath/slowpath/internal/experiment"
	"github.com/slowpath/slowpath/internal/hostfs"
)

// --cipher-limit reads what `lab crypto-limit --format json` really prints
// (measured here, briefly); a file that is not such JSON is refused with
// the flag named.
func TestCipherLimitFile(t *testing.T) {
	var out bytes.Buffer
	cmd := labcmd.NewCmdCryptoLimit(&clienv.Env{Stdout: &out, Stderr: &out, FS: hostfs.Default()}, nil)
	cmd.SetArgs([]string{"--format", "json", "--duration", "50ms", "--sector-size", "4096"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("crypto-limit: %v\n%s", err, out.String())
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "limit.json")
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	c, _, err := experiment.ReadCipherLimit(path)
	if err != nil {
		t.Fatal(err)
	}
	if !(c.BytesPerSecPerCore > 0) || c.SectorSize != 4096 || c.KeyBits != 512 || c.Method == "" || c.What == "" || c.Source != "file "+path {
		t.Errorf("cipher %+v", c)
	}
	// bench refuses a file that is not such JSON before anything runs.
	bad := filepath.Join(dir, "other.json")
	if err := os.WriteFile(bad, []byte(`{"kind": "slowpath-bench-result"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	o := &Options{Profile: "db-commit", Dir: dir, Scale: 1, Runtime: time.Second, Interval: time.Second, CipherLimit: bad}
	err = run(t.Context(), &clienv.Env{Stdout: &out, Stderr: &out, FS: hostfs.Default()}, o)
	if err == nil || !strings.Contains(err.Error(), "--cipher-limit: "+bad+" is a slowpath bench result; want the JSON of slowpath lab crypto-limit --format json") {
		t.Errorf("not a crypto-limit file: %v", err)
	}
}
