// Package stdfile reads and writes the files a command is given, where the
// name "-" is standard input or standard output (docs/cli.md: `collect -o
// - | doctor --from -`). Every file argument of slowpath goes through it,
// so the convention holds for the domain packages' readers as well.
package stdfile

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Dash is the name that stands for standard input or output.
const Dash = "-"

// Stdin is what ReadFile reads for "-"; tests replace it.
var Stdin io.Reader = os.Stdin

// MaxStdin bounds what ReadFile takes from standard input: every file
// slowpath reads is a document that is decoded whole.
const MaxStdin = 256 << 20

// Name is name as messages show it: "stdin" for "-".
func Name(name string) string {
	if name == Dash {
		return "stdin"
	}
	return name
}

// ReadFile reads the named file, or all of Stdin for "-".
func ReadFile(name string) ([]byte, error) {
	if name != Dash {
		return os.ReadFile(name)
	}
	b, err := io.ReadAll(io.LimitReader(Stdin, MaxStdin+1))
	if err != nil {
		return nil, fmt.Errorf("read stdin: %w", err)
	}
	if len(b) > MaxStdin {
		return nil, fmt.Errorf("stdin: more than %d MiB, the most slowpath reads from a pipe", MaxStdin>>20)
	}
	return b, nil
}

// Create creates the named file, or returns stdout for "-" (Close then
// closes nothing).
func Create(name string, stdout io.Writer) (io.WriteCloser, error) {
	if name == Dash {
		if stdout == nil {
			return nil, errors.New("no standard output to write - to")
		}
		return nopCloser{stdout}, nil
	}
	return os.Create(name)
}

// WriteFile writes b to the named file (perm as os.WriteFile), or to stdout
// for "-".
func WriteFile(name string, b []byte, perm os.FileMode, stdout io.Writer) error {
	if name != Dash {
		return os.WriteFile(name, b, perm)
	}
	if stdout == nil {
		return errors.New("no standard output to write - to")
	}
	_, err := stdout.Write(b)
	return err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
