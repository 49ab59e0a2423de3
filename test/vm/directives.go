package vm

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
)

// scanDirectives is the one reader of the lab's line files (kernels/*.pin
// and kernels/*.expect): '#' starts a comment, blank lines are skipped, and
// each is called with the 1-based line number n, the line without its
// comment, and its words. The first error each returns stops the scan.
func scanDirectives(r io.Reader, each func(n int, line string, f []string) error) error {
	sc := bufio.NewScanner(r)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if err := each(n, line, f); err != nil {
			return err
		}
	}
	return sc.Err()
}

// parseFile opens path and parses it, naming the file in a parse error.
func parseFile[T any](path string, parse func(io.Reader) (T, error)) (T, error) {
	f, err := os.Open(path)
	if err != nil {
		var zero T
		return zero, err
	}
	defer f.Close()
	v, err := parse(f)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("%s: %w", path, err)
	}
	return v, nil
}
