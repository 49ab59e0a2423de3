// Package stdfile reads the files a command is given, where the name "-"
// is standard input (docs/cli.md: `collect -o - | doctor --from -`). Every
// reader of a file a user names goes through it, the domain packages'
// included; Dash also names standard output, which the writers (collect
// -o, bench -o, net drops) send to their command's stdout themselves.
package stdfile

import (
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
