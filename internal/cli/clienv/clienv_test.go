package clienv

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/slowpath/slowpath/internal/testing/testenv"
)

// openPTY returns the terminal end of a new pseudo-terminal, so the test
// sees a real TTY rather than a flag set by hand.
func openPTY(t *testing.T) *os.File {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Unavailable(t, "no pseudo-terminals (/dev/ptmx): "+err.Error())
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestDefaultColor checks the acceptance rule: colour only on a TTY and
// never with NO_COLOR set to a non-empty value (https://no-color.org).
func TestDefaultColor(t *testing.T) {
	pipeR, pipeW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pipeR.Close()
	defer pipeW.Close()
	tty := openPTY(t)
	tests := []struct {
		name    string
		stdout  *os.File
		noColor *string
		want    bool
	}{
		{"tty", tty, nil, true},
		{"tty NO_COLOR=1", tty, ptr("1"), false},
		{"tty NO_COLOR empty", tty, ptr(""), true},
		{"pipe", pipeW, nil, false},
		{"pipe NO_COLOR=1", pipeW, ptr("1"), false},
	}
	saved := os.Stdout
	t.Cleanup(func() { os.Stdout = saved })
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.noColor != nil {
				t.Setenv("NO_COLOR", *tt.noColor)
			} else {
				t.Setenv("NO_COLOR", "")
				os.Unsetenv("NO_COLOR")
			}
			os.Stdout = tt.stdout
			env := Default("test")
			os.Stdout = saved
			if got := env.Color(); got != tt.want {
				t.Errorf("Color() = %v, want %v (StdoutTTY %v, NoColor %v)", got, tt.want, env.StdoutTTY, env.NoColor)
			}
		})
	}
}

func ptr(s string) *string { return &s }
