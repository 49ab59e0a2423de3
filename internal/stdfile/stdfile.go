// Package stdfile reads the files a command is given, where the name "-"
// is standard input (docs/cli.md: `collect -o - | doctor --from -`). Every
// reader of a file a user names goes through it, the domain packages'
// included; Dash also names standard output, which the writers (collect
// -o, bench -o, net drops) send to their command's stdout themselves.
// WriteFile is the one way a whole file is written (a result, a capture's
// manifest, a lab's state): whole or not at all.
package stdfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
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

// WriteFile writes path through a temporary file in the same directory,
// renamed into place (mode 0644) only when write succeeded, so a failed or
// interrupted write never leaves half a file under the name asked for.
// Errors name path.
func WriteFile(path string, write func(io.Writer) error) error {
	return WriteFileMode(path, 0o644, write)
}

// WriteFileMode is WriteFile with the file's mode: 0600 for a file that is
// no one else's business (a lab's state).
func WriteFileMode(path string, perm os.FileMode, write func(io.Writer) error) error {
	r, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	defer r.Close()
	if err := WriteFileIn(r, filepath.Base(path), perm, write); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteFileIn writes name, a path inside r, whole or not at all: through a
// temporary file beside it, made with O_EXCL under a random name (never
// through a link left at a known name), given perm past the umask and
// renamed over name. r keeps every step inside its directory (fix writes
// under a host root, where a symlink must not lead out).
func WriteFileIn(r *os.Root, name string, perm os.FileMode, write func(io.Writer) error) error {
	var tmp string
	var f *os.File
	for range 10 {
		tmp = filepath.Join(filepath.Dir(name), ".slowpath-"+strconv.FormatUint(rand.Uint64(), 36))
		var err error
		if f, err = r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm); err == nil || !errors.Is(err, os.ErrExist) {
			if err != nil {
				return err
			}
			break
		}
	}
	if f == nil {
		return errors.New("no free temporary name")
	}
	err := write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = r.Chmod(tmp, perm)
	}
	if err == nil {
		err = r.Rename(tmp, name)
	}
	if err != nil {
		r.Remove(tmp)
	}
	return err
}

// ReadDocument reads a whole document from r without the white space
// around it; an error names what when r fails or holds nothing else.
func ReadDocument(r io.Reader, what string) ([]byte, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty", what)
	}
	return b, nil
}
