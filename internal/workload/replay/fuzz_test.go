package replay

import (
	"encoding/binary"
	"strconv"
	"strings"
	"testing"
	"time"

	"mvdan.cc/sh/v3/syntax"
)

// traceFrom builds a trace from fuzz bytes: 8-byte chunks become
// operations of two threads on two files.
func traceFrom(data []byte, names [2]string) *Trace {
	tr := &Trace{Files: []File{{Name: names[0], Size: 1 << 20, Resident: []Range{{0, 4096}}}, {Name: names[1], Size: 0}},
		Threads: []Thread{{Name: "t0001"}, {Name: "t0002"}}}
	var at [2]time.Duration
	for len(data) >= 8 {
		v := binary.LittleEndian.Uint64(data)
		data = data[8:]
		th := int(v & 1)
		at[th] += time.Duration(v>>1&0xffff) * time.Microsecond
		o := Op{Kind: Kind(v>>17%8) + 1, File: int(v >> 20 & 1), Offset: int64(v>>21&0xffff) * 512, Length: int64(v>>37&0xffff)*512 + 1,
			At: at[th], Direct: v>>53&1 == 1, Advice: uint32(v >> 54 & 7)}
		tr.Threads[th].Ops = append(tr.Threads[th].Ops, o)
	}
	return tr
}

// FuzzIolog: for every trace Validate accepts, each iolog is fio's v3
// format (a header, then `TIME NAME add|open|close` or `TIME NAME ACTION
// OFFSET LENGTH` with µs times never going back), holding every
// operation of its stream but advice; the job files render; run.sh parses
// as POSIX sh. Names Validate refuses never reach a file.
func FuzzIolog(f *testing.F) {
	f.Add([]byte("0123456789abcdef01234567"), "f0001", "f0002")
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, "f0001", "f0001")
	f.Add([]byte("xxxxxxxx"), "f0001'; rm -rf /", "f 2")
	f.Fuzz(func(t *testing.T, data []byte, n1, n2 string) {
		tr := traceFrom(data, [2]string{n1, n2})
		if err := tr.Validate(); err != nil {
			return
		}
		for _, s := range tr.Streams() {
			lines := strings.Split(strings.TrimSuffix(string(tr.Iolog(s)), "\n"), "\n")
			if lines[0] != "fio version 3 iolog" {
				t.Fatalf("header %q", lines[0])
			}
			var last int64
			ops := 0
			for _, l := range lines[1:] {
				w := strings.Split(l, " ")
				ts, err := strconv.ParseInt(w[0], 10, 64)
				if err != nil || ts < last || ts < 1 {
					t.Fatalf("line %q: time after %d", l, last)
				}
				last = ts
				if w[1] != n1 && w[1] != n2 {
					t.Fatalf("line %q names no file of the trace", l)
				}
				switch {
				case len(w) == 3 && (w[2] == "add" || w[2] == "open" || w[2] == "close"):
				case len(w) == 5 && (w[2] == "read" || w[2] == "write" || w[2] == "sync" || w[2] == "datasync"):
					ops++
				default:
					t.Fatalf("line %q is not an iolog v3 action", l)
				}
			}
			if ops != len(s.Ops) {
				t.Fatalf("stream %s: %d actions for %d operations", s.Name, ops, len(s.Ops))
			}
			for _, o := range s.Ops {
				if o.Kind == Fadvise || o.Kind == Madvise {
					t.Fatalf("stream %s holds advice", s.Name)
				}
			}
		}
		files, err := ExportFiles("replay:x", tr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := syntax.NewParser(syntax.Variant(syntax.LangPOSIX)).Parse(strings.NewReader(string(files["run.sh"])), "run.sh"); err != nil {
			t.Fatalf("run.sh does not parse: %v\n%s", err, files["run.sh"])
		}
	})
}
