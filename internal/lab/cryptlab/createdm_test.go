package cryptlab

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestKeyOnlyOnStdin runs createDM against a stand-in dmsetup (this kernel
// has no device-mapper) that records its argument vector, environment and
// standard input. The key must arrive on stdin, in the table, and nowhere
// else: not in argv (readable by anyone in /proc/PID/cmdline), not in the
// environment, not in the state file.
func TestKeyOnlyOnStdin(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	dev := filepath.Join(dir, "dev")
	rec := filepath.Join(dir, "rec")
	for _, d := range []string{bin, filepath.Join(dev, "mapper"), rec} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	script := `#!/bin/sh
printf '%s\n' "$@" > ` + rec + `/argv
env > ` + rec + `/env
cat > ` + rec + `/stdin
[ "$FAKE_REFUSE" = enoent ] && { echo "device-mapper: reload ioctl on $2 (254:4) failed: No such file or directory" >&2; exit 1; }
[ -n "$FAKE_REFUSE" ] && { echo "device-mapper: reload ioctl on $2 failed: Invalid argument" >&2; exit 1; }
[ "$1" = create ] && : > ` + dev + `/mapper/"$2"
exit 0
`
	if err := os.WriteFile(filepath.Join(bin, "dmsetup"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	old := StateDir
	StateDir = filepath.Join(dir, "state")
	t.Cleanup(func() { StateDir = old })
	os.MkdirAll(StateDir, 0o700)

	l := &Lab{ID: "abc123", Sectors: 65536, opts: Options{Dev: dev}, log: t.Logf, state: labState{ID: "abc123"}}
	vs, _ := ParseVariants([]string{"no_workqueue"})
	if err := l.createDM(context.Background(), "sp-crypt-abc123-0", vs[0], "1:0"); err != nil {
		t.Fatal(err)
	}
	stdin, _ := os.ReadFile(filepath.Join(rec, "stdin"))
	m := regexp.MustCompile(`^0 65536 crypt aes-xts-plain64 ([0-9a-f]{128}) 0 1:0 0 2 no_read_workqueue no_write_workqueue\n$`).FindSubmatch(stdin)
	if m == nil {
		t.Fatalf("dmsetup's stdin %q is not the table", stdin)
	}
	key := m[1]
	argv, _ := os.ReadFile(filepath.Join(rec, "argv"))
	if want := "create\nsp-crypt-abc123-0\n--uuid\nSLOWPATH-CRYPTLAB-abc123-0\n"; string(argv) != want {
		t.Errorf("argv %q, want %q", argv, want)
	}
	env, _ := os.ReadFile(filepath.Join(rec, "env"))
	state, _ := os.ReadFile(statePath("abc123"))
	for name, b := range map[string][]byte{"argv": argv, "env": env, "state": state} {
		if bytes.Contains(b, key) {
			t.Errorf("the key is in dmsetup's %s", name)
		}
	}
	if !strings.Contains(string(state), `"uuid":"SLOWPATH-CRYPTLAB-abc123-0"`) {
		t.Errorf("state does not record the device: %s", state)
	}
	// A second mapping gets another key.
	if err := l.createDM(context.Background(), "sp-crypt-abc123-1", vs[0], "1:0"); err != nil {
		t.Fatal(err)
	}
	stdin2, _ := os.ReadFile(filepath.Join(rec, "stdin"))
	if bytes.Contains(stdin2, key) {
		t.Error("two mappings share a key")
	}

	// The kernel refusing a table (an unknown cipher) makes the variant
	// unsupported, not the lab fail.
	t.Setenv("FAKE_REFUSE", "1")
	c, _ := ParseVariants([]string{"cipher:serpent-xts-plain64:512"})
	err := l.createDM(context.Background(), "sp-crypt-abc123-2", c[0], "1:0")
	var refused *refusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "kernel refused the table (serpent-xts-plain64)") {
		t.Errorf("refused table: %v", err)
	}
	// A cipher the kernel does not have (no module, ENOENT from the crypto
	// API): the variant cannot run, and the reason names the module.
	t.Setenv("FAKE_REFUSE", "enoent")
	n, _ := ParseVariants([]string{"null_cipher"})
	err = l.createDM(context.Background(), "sp-crypt-abc123-3", n[0], "1:0")
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "kernel has no cipher_null-ecb") || !strings.Contains(err.Error(), "crypto_null") {
		t.Errorf("missing cipher: %v", err)
	}
}
