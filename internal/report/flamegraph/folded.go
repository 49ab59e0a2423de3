package flamegraph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The folded format of Brendan Gregg's stackcollapse scripts, one stack a
// line ("root;child;leaf count"): what flamegraph.pl, speedscope and
// inferno read, and what Render draws. Its writer and reader are here
// together so that what slowpath writes is what it reads back.

// WriteFolded writes stacks in the folded format, one line each, in the
// order given. Semicolons in names are replaced by colons: a semicolon
// separates frames.
func WriteFolded(w io.Writer, stacks []Stack) error {
	bw := bufio.NewWriter(w)
	for _, s := range stacks {
		for i, f := range s.Frames {
			if i > 0 {
				bw.WriteByte(';')
			}
			bw.WriteString(strings.ReplaceAll(f, ";", ":"))
		}
		fmt.Fprintf(bw, " %d\n", s.Count)
	}
	return bw.Flush()
}

// ParseFolded reads folded stacks ("frame;frame;frame count" per line, as
// written by stackcollapse-perf.pl or `slowpath net drops --folded`).
// Blank lines are skipped; equal stacks are merged.
func ParseFolded(r io.Reader) ([]Stack, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	idx := map[string]int{}
	var out []Stack
	line := 0
	for sc.Scan() {
		line++
		t := strings.TrimRight(sc.Text(), " \t\r")
		if t == "" {
			continue
		}
		sp := strings.LastIndexAny(t, " \t")
		if sp < 0 {
			return nil, fmt.Errorf("folded line %d: no count: %q", line, t)
		}
		n, err := strconv.ParseUint(t[sp+1:], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("folded line %d: count %q: %w", line, t[sp+1:], err)
		}
		stack := strings.TrimRight(t[:sp], " \t")
		if stack == "" {
			return nil, fmt.Errorf("folded line %d: no frames", line)
		}
		if i, ok := idx[stack]; ok {
			if out[i].Count+n < n {
				return nil, errors.New("folded: count overflows uint64")
			}
			out[i].Count += n
			continue
		}
		idx[stack] = len(out)
		out = append(out, Stack{Frames: strings.Split(stack, ";"), Count: n})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read folded stacks: %w", err)
	}
	return out, nil
}
